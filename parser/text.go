package parser

import (
	"bytes"
	"html"
	"net/url"
	"strings"
	"unicode/utf8"
)

// capture collects the text (and optionally the inner HTML and entities) of
// one element while the tokenizer walks through it.
type capture struct {
	depth     int // stack depth of the element that opened it
	plain     []byte
	html      []byte
	u16       int // length of plain in UTF-16 code units
	withHTML  bool
	rich      bool // collect entities
	inPre     int  // >0 inside <pre>: whitespace is kept as is
	entities  []Entity
	pendingWS bool // a collapsed whitespace run waiting to become one space

	// t.me nests copies of a block inside itself (album text in a second
	// text div) and wraps names in <span dir="auto">. Such leading elements
	// are noted while they open, and innerHTML drops those that turn out to
	// enclose all the captured text, so the field holds the innermost markup.
	wraps   []wrapper
	leading bool // only whitespace and wrapper start tags so far
	gen     uint32
}

// wrapper is an element opened at the start of a capture's HTML.
type wrapper struct {
	inner    int // offset in html just past its start tag
	endStart int // offset of its end tag; -1 while open
	endEnd   int // offset just past its end tag
	plainEnd int // length of plain when it closed
}

// maxWrappers bounds the wrappers noted per capture (frame.wrap is a uint8).
const maxWrappers = 255

func (c *capture) reset(depth int, withHTML, rich bool) {
	c.depth = depth
	c.plain = c.plain[:0]
	c.html = c.html[:0]
	c.u16 = 0
	c.withHTML = withHTML
	c.rich = rich
	c.inPre = 0
	c.entities = nil
	c.pendingWS = false
	c.wraps = c.wraps[:0]
	c.leading = withHTML
	c.gen++
}

// openWrapper notes an element that may enclose the rest of the capture and
// returns its index+1, or 0 when the capture's leading run is over.
func (c *capture) openWrapper(eligible bool) uint8 {
	if !c.leading {
		return 0
	}
	if !eligible || len(c.wraps) >= maxWrappers {
		c.leading = false
		return 0
	}
	c.wraps = append(c.wraps, wrapper{inner: len(c.html), endStart: -1})
	return uint8(len(c.wraps))
}

// closeWrapper records where wrapper i (index+1) ends: at the current end of
// the HTML, before its end tag if it has one of its own.
func (c *capture) closeWrapper(i uint8, gen uint32) {
	if c.depth == 0 || gen != c.gen || int(i) > len(c.wraps) {
		return // the capture it belonged to is over
	}
	w := &c.wraps[i-1]
	w.endStart, w.endEnd, w.plainEnd = len(c.html), len(c.html), len(c.plain)
}

// endTagAppended extends wrapper i (index+1) over its own end tag, which
// the caller has just appended to the HTML.
func (c *capture) endTagAppended(i uint8, gen uint32) {
	if c.depth == 0 || gen != c.gen || int(i) > len(c.wraps) {
		return
	}
	c.wraps[i-1].endEnd = len(c.html)
}

// innerHTML is the captured HTML without the wrappers that enclose all of
// its text, whatever their depth, trimmed of surrounding whitespace. What
// follows a wrapper and adds no text is layout (t.me's spacer for the time
// overlay) and goes with it.
func (c *capture) innerHTML() string {
	lo, hi, plainHi := 0, len(c.html), len(c.plain)
	for _, w := range c.wraps {
		if w.endStart < w.inner || w.endEnd < w.endStart || w.endEnd > hi {
			break // still open, or not inside the previous wrapper
		}
		// Trailing spaces inside the wrapper may have been trimmed since.
		plainEnd := min(w.plainEnd, plainHi)
		if !isBlank(c.plain[plainEnd:plainHi]) {
			break // text follows it: not a wrapper
		}
		lo, hi, plainHi = w.inner, w.endStart, plainEnd
	}
	return strings.TrimSpace(string(c.html[lo:hi]))
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// addRaw appends the text of a raw text token, decoding character
// references when there are any.
func (c *capture) addRaw(raw []byte) {
	if bytes.IndexByte(raw, '&') >= 0 {
		c.addText(html.UnescapeString(string(raw)))
		return
	}
	if !c.pendingWS {
		if units, ok := plainUnits(raw, c.inPre > 0); ok {
			c.plain = append(c.plain, raw...)
			c.u16 += units
			return
		}
	}
	c.addText(string(raw))
}

// plainUnits reports the UTF-16 length of b when b is valid UTF-8 that needs
// no normalising (no source line breaks outside <pre>, no no-break spaces),
// which is most message text.
func plainUnits(b []byte, inPre bool) (int, bool) {
	units := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c < 0x80:
			if (c == '\n' || c == '\r' || c == '\t') && !inPre {
				return 0, false
			}
			units++
		case c >= 0xF0:
			units += 2 // a 4-byte sequence is a surrogate pair in UTF-16
		case c >= 0xC0:
			if c == 0xC2 && i+1 < len(b) && b[i+1] == 0xA0 {
				return 0, false // a no-break space becomes a space
			}
			units++
		}
	}
	return units, utf8.Valid(b)
}

// addText appends already unescaped text. Runs of whitespace that contain a
// line break come from the page source's indentation, not from the message
// (Telegram writes message line breaks as <br/>), so they collapse to one
// space; other spaces are kept as typed.
func (c *capture) addText(s string) {
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if c.inPre == 0 && (r == '\n' || r == '\r' || r == '\t') {
			// drop trailing spaces already written before the break
			for len(c.plain) > 0 && c.plain[len(c.plain)-1] == ' ' {
				c.plain = c.plain[:len(c.plain)-1]
				c.u16--
			}
			c.pendingWS = true
			s = s[size:]
			continue
		}
		if c.pendingWS {
			if r == ' ' {
				s = s[size:]
				continue
			}
			c.pendingWS = false
			if len(c.plain) > 0 && c.plain[len(c.plain)-1] != '\n' {
				c.plain = append(c.plain, ' ')
				c.u16++
			}
		}
		if r == '\u00a0' {
			r = ' '
		}
		if r == utf8.RuneError && size == 1 {
			s = s[1:]
			continue
		}
		c.plain = utf8.AppendRune(c.plain, r)
		if r >= 0x10000 {
			c.u16 += 2
		} else {
			c.u16++
		}
		s = s[size:]
	}
}

func (c *capture) lineBreak() {
	c.pendingWS = false
	c.leading = false
	c.plain = append(c.plain, '\n')
	c.u16++
}

// finish returns the captured plain text with surrounding whitespace trimmed
// and the entities shifted and clamped to the trimmed text.
func (c *capture) finish() (string, []Entity) {
	s := string(c.plain)
	lead := len(s) - len(strings.TrimLeft(s, " \n"))
	trimmed := strings.TrimRight(s[lead:], " \n")
	if len(c.entities) == 0 {
		return trimmed, nil
	}
	leadU := lead // leading whitespace is ASCII: one unit per byte
	total := utf16Len(trimmed)
	ents := c.entities[:0]
	for _, e := range c.entities {
		if e.Length < 0 {
			continue // never closed: truncated markup
		}
		start, end := e.Offset-leadU, e.Offset+e.Length-leadU
		start = max(start, 0)
		end = min(end, total)
		if end <= start {
			continue
		}
		e.Offset, e.Length = start, end-start
		ents = append(ents, e)
	}
	if len(ents) == 0 {
		ents = nil
	}
	return trimmed, ents
}

// result returns the captured text as plain string and inner HTML.
func (c *capture) result() Rich {
	s, _ := c.finish()
	return Rich{String: s, HTML: c.innerHTML()}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// unescape decodes character references once. Raw text without '&' is
// returned without copying.
func unescape(raw []byte) string {
	for _, b := range raw {
		if b == '&' {
			return html.UnescapeString(string(raw))
		}
	}
	return string(raw)
}

// classifyLink decides what an <a> inside message text is, from its text and
// href, the way Telegram's own clients would have sent it.
func classifyLink(text, href string) (kind EntityKind, link string) {
	switch {
	case strings.HasPrefix(text, "#") && (strings.HasPrefix(href, "?q=") || strings.Contains(href, "?q=%23")):
		return EntityHashtag, ""
	case strings.HasPrefix(text, "$") && strings.HasPrefix(href, "?q="):
		return EntityCashtag, ""
	case strings.HasPrefix(text, "@") && !strings.ContainsAny(text, " \n"):
		return EntityMention, ""
	}
	if href == "" {
		return "", ""
	}
	if sameURL(text, href) {
		return EntityURL, ""
	}
	return EntityTextLink, href
}

// sameURL reports whether the visible text is the link itself (a bare URL
// that Telegram auto-linked), allowing for the scheme it adds.
func sameURL(text, href string) bool {
	if text == href {
		return true
	}
	t := strings.TrimSuffix(text, "/")
	h := strings.TrimSuffix(href, "/")
	for _, p := range [...]string{"https://", "http://"} {
		if strings.TrimPrefix(h, p) == strings.TrimPrefix(t, p) {
			return true
		}
	}
	if u, err := url.QueryUnescape(h); err == nil && (u == t || strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://") == t) {
		return true
	}
	// Telegram shortens long auto-links with an ellipsis.
	if strings.HasSuffix(t, "…") {
		base := strings.TrimSuffix(t, "…")
		return strings.HasPrefix(h, base) || strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(h, "https://"), "http://"), base)
	}
	return false
}

// cssURL extracts the URL from a style attribute such as
// "background-image:url('//cdn/x.jpg')", turning protocol-relative URLs into
// https. Only the URL is copied out of the attribute.
func cssURL(style []byte) string {
	i := bytes.Index(style, []byte("url("))
	if i < 0 {
		return ""
	}
	b := style[i+4:]
	j := bytes.IndexByte(b, ')')
	if j < 0 {
		return ""
	}
	b = bytes.Trim(bytes.TrimSpace(b[:j]), `'"`)
	if bytes.HasPrefix(b, []byte("data:")) {
		return "" // inline placeholders are not media addresses
	}
	if bytes.HasPrefix(b, []byte("//")) {
		return "https:" + string(b)
	}
	return string(b)
}

// avatarURL is the address of a channel photo. A channel without a photo
// shows an inline data: placeholder (its initials), which is no photo.
func avatarURL(src []byte) string {
	if bytes.HasPrefix(src, []byte("data:")) {
		return ""
	}
	return absURL(string(src))
}

func absURL(s string) string {
	if strings.HasPrefix(s, "//") {
		return "https:" + s
	}
	return s
}
