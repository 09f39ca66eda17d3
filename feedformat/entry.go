package feedformat

import (
	"html"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/internal/medialink"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/sanitize"
)

// maxTitleRunes bounds an item's title: readers show titles on one line,
// and the whole text is in the content anyway.
const maxTitleRunes = 100

// entry is one post as every format needs it: computed once, written
// three ways.
type entry struct {
	id          string // https://t.me/<channel>/<id>: the post's own link, stable
	num         int    // the post's number; 0 when t.me names it nowhere
	link        string // id, or for a post t.me names nowhere the channel's page
	title       string
	content     string    // safe HTML
	date        time.Time // zero when the page does not date the post
	author      string    // the channel's title
	authorURL   string    // https://t.me/<channel>
	attachments []attachment
	image       string // the first picture, for JSON Feed's image
}

// attachment is a media file of a post with a URL to fetch it from.
type attachment struct {
	url      string
	mimeType string
	title    string
	duration int // seconds; 0 when unknown
}

// newEntry reads a feed item. The HTML Telegram wrote goes through
// package sanitize, as the widget's does; the markup added here is built
// from escaped values and checked URLs only.
func newEntry(it feed.Item, o *Options) entry {
	p := it.Post
	ch := channelName(it)
	e := entry{
		num:       p.ID,
		id:        postURL(ch, p.ID),
		authorURL: "https://t.me/" + ch,
	}
	e.link = e.id
	if p.ID == 0 {
		// No link leads to the post itself: it is read on the channel's
		// page, and its id comes from what it shows (it never changes
		// unless the post does).
		e.link = "https://t.me/s/" + ch
		e.id = e.link + "#unnamed-" + p.UnnamedKey()
	}
	if p.Footer.Date.Known() {
		// An estimate (Date.Estimated) too: readers sort by it, and it
		// places the post among its neighbours.
		e.date = time.Unix(p.Footer.Date.Unix, 0).UTC()
	}
	e.author = "@" + ch
	if it.Channel != nil && strings.TrimSpace(it.Channel.Title.String) != "" {
		e.author = clean(strings.TrimSpace(it.Channel.Title.String))
	}
	e.title = clean(title(p))

	var b strings.Builder
	c := &p.Content
	if f := p.Forwarded; f != nil {
		b.WriteString("<p>Forwarded from ")
		link(&b, f.URL, f.Name.String)
		b.WriteString("</p>")
	}
	if r := c.Reply; r != nil {
		b.WriteString("<blockquote><p>")
		link(&b, postURL(ch, r.ToMessage), r.Name.String)
		if r.Text.String != "" {
			b.WriteString(": ")
			b.WriteString(html.EscapeString(r.Text.String))
		}
		b.WriteString("</p></blockquote>")
	}
	if s := p.Service; s != nil && s.Text != "" {
		b.WriteString("<p><i>" + html.EscapeString(s.Text) + "</i></p>")
	}
	if t := c.Text; t != nil && t.HTML != "" {
		// A div: the text may hold blockquotes and pre blocks.
		b.WriteString("<div>" + hideSpoilers(sanitize.Post(t.HTML, ch)) + "</div>")
	}
	for i, m := range c.Media {
		for _, a := range mediaAttachments(ch, p.ID, i, m, o.MediaBase) {
			e.attachments = append(e.attachments, a)
			if e.image == "" && strings.HasPrefix(a.mimeType, "image/") {
				e.image = a.url
			}
		}
		writeMedia(&b, ch, p.ID, i, m, o.MediaBase, e.link)
	}
	if pl := c.Poll; pl != nil {
		b.WriteString("<p>" + html.EscapeString(pl.Question) + "</p><ul>")
		for _, op := range pl.Options {
			b.WriteString("<li>" + html.EscapeString(op.Name) + " — " + strconv.Itoa(op.Percent) + "%</li>")
		}
		b.WriteString("</ul>")
	}
	if l := c.Location; l != nil && (l.URL != "" || l.Address != "") {
		b.WriteString("<p>")
		name := l.Address
		if name == "" {
			name = "Location"
		}
		link(&b, l.URL, name)
		b.WriteString("</p>")
	}
	if l := c.PreviewLink; l != nil && l.URL != "" {
		b.WriteString("<blockquote><p>")
		name := l.Title
		if name == "" {
			name = l.URL
		}
		link(&b, l.URL, name)
		b.WriteString("</p>")
		if d := l.Description; d != nil && d.HTML != "" {
			b.WriteString("<div>" + hideSpoilers(sanitize.Post(d.HTML, ch)) + "</div>")
		}
		b.WriteString("</blockquote>")
	}
	if len(c.Inline) > 0 {
		b.WriteString("<p>")
		for i, in := range c.Inline {
			if i > 0 {
				b.WriteString(" · ")
			}
			link(&b, in.URL, in.Title)
		}
		b.WriteString("</p>")
	}
	if b.Len() == 0 {
		// Content is required by JSON Feed and expected by every reader.
		b.WriteString("<p>")
		link(&b, e.id, e.title)
		b.WriteString("</p>")
	}
	e.content = clean(b.String())
	return e
}

// channelName is the item's channel as t.me links name it, lower-cased so
// that ids stay the same however the page spells the name.
func channelName(it feed.Item) string {
	ch := it.Post.Channel
	if ch == "" && it.Channel != nil {
		ch = it.Channel.Username
	}
	return strings.ToLower(ch)
}

func postURL(channel string, id int) string {
	return "https://t.me/" + channel + "/" + strconv.Itoa(id)
}

// minTitleRunes is how long a title grows before it stops at the end of
// a line: a first line like "Minister:" says little on its own, and every
// post that opens with it would share it.
const minTitleRunes = 40

// title is the start of the post's text with its spoilers hidden: its
// first non-empty line, and the next ones while it is shorter than
// minTitleRunes, bounded; or a description of what the post holds when
// it has no text.
func title(p *parser.Post) string {
	c := &p.Content
	if c.Text != nil {
		var t strings.Builder
		for line := range strings.SplitSeq(plainText(c.Text), "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			if t.Len() > 0 {
				if last, _ := utf8.DecodeLastRuneInString(t.String()); unicode.IsPunct(last) {
					t.WriteString(" ")
				} else {
					t.WriteString(" — ")
				}
			}
			t.WriteString(line)
			if utf8.RuneCountInString(t.String()) >= minTitleRunes {
				break
			}
		}
		if t.Len() > 0 {
			return bound(t.String())
		}
	}
	switch {
	case c.Poll != nil && strings.TrimSpace(c.Poll.Question) != "":
		return bound("Poll: " + strings.TrimSpace(c.Poll.Question))
	case p.Service != nil && strings.TrimSpace(p.Service.Text) != "":
		return bound(strings.TrimSpace(p.Service.Text))
	case len(c.Media) > 0:
		return mediaTitle(c.Media)
	case c.PreviewLink != nil && strings.TrimSpace(c.PreviewLink.Title) != "":
		return bound(strings.TrimSpace(c.PreviewLink.Title))
	case c.Location != nil:
		return "Location"
	}
	if p.ID == 0 {
		return "Post"
	}
	return "Post " + strconv.Itoa(p.ID)
}

// spoilerText stands for a spoiler's text, which readers would show: they
// drop the markup that hides it on Telegram.
const spoilerText = "[spoiler]"

// plainText is t's plain text with each spoiler replaced by spoilerText.
// Entities count UTF-16 code units.
func plainText(t *parser.Text) string {
	var spans [][2]int
	for _, e := range t.Entities {
		if e.Type == parser.EntitySpoiler && e.Length > 0 {
			spans = append(spans, [2]int{e.Offset, e.Offset + e.Length})
		}
	}
	if len(spans) == 0 {
		return t.String
	}
	var b strings.Builder
	unit := 0 // UTF-16 offset of r
	hidden := false
	for _, r := range t.String {
		in := false
		for _, sp := range spans {
			in = in || unit >= sp[0] && unit < sp[1]
		}
		switch {
		case in && !hidden:
			b.WriteString(spoilerText)
		case !in:
			b.WriteRune(r)
		}
		hidden = in
		unit += utf16.RuneLen(r)
	}
	return b.String()
}

// hideSpoilers replaces every spoiler of sanitized HTML (<tg-spoiler>, or
// <span class="tg-spoiler">) and all it holds with spoilerText. The
// sanitizer's output is balanced, so an element's end is found by
// counting the opens and closes of its name.
func hideSpoilers(s string) string {
	if !strings.Contains(s, "spoiler") {
		return s
	}
	var out strings.Builder
	z := xhtml.NewTokenizer(strings.NewReader(s))
	var in string // the spoiler element's name while inside one
	depth := 0
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return out.String()
		}
		raw := string(z.Raw()) // before Token, which may reuse its bytes
		tok := z.Token()
		if in != "" {
			switch {
			case tt == xhtml.StartTagToken && tok.Data == in:
				depth++
			case tt == xhtml.EndTagToken && tok.Data == in:
				if depth--; depth == 0 {
					in = ""
				}
			}
			continue
		}
		if tt == xhtml.StartTagToken && isSpoiler(tok) {
			in, depth = tok.Data, 1
			out.WriteString("<i>" + spoilerText + "</i>")
			continue
		}
		out.WriteString(raw)
	}
}

func isSpoiler(t xhtml.Token) bool {
	if t.Data == "tg-spoiler" {
		return true
	}
	for _, a := range t.Attr {
		if a.Key == "class" && slices.Contains(strings.Fields(a.Val), "tg-spoiler") {
			return true
		}
	}
	return false
}

// bound cuts s to maxTitleRunes, at a word boundary when there is one in
// the second half, marking the cut with an ellipsis.
func bound(s string) string {
	if utf8.RuneCountInString(s) <= maxTitleRunes {
		return s
	}
	n, cut := 0, len(s)
	for i := range s {
		if n == maxTitleRunes-1 {
			cut = i
			break
		}
		n++
	}
	s = s[:cut]
	if sp := strings.LastIndexFunc(s, unicode.IsSpace); sp > len(s)/2 {
		s = s[:sp]
	}
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) + "…"
}

// mediaTitle names a post by its media: "Photo", "3 photos", "Video and 2 more".
func mediaTitle(ms []parser.Media) string {
	if len(ms) == 1 && ms[0].Title != "" && (ms[0].Type == parser.MediaDocument || ms[0].Type == parser.MediaAudio) {
		return bound(ms[0].Title)
	}
	name := kindName(ms[0].Type)
	same := true
	for _, m := range ms[1:] {
		same = same && m.Type == ms[0].Type
	}
	switch {
	case len(ms) == 1:
		return name
	case same && ms[0].Type == parser.MediaImage:
		return strconv.Itoa(len(ms)) + " photos"
	case same && ms[0].Type == parser.MediaVideo:
		return strconv.Itoa(len(ms)) + " videos"
	}
	return name + " and " + strconv.Itoa(len(ms)-1) + " more"
}

// kindName is what a reader shows for a medium of kind k.
func kindName(k parser.MediaKind) string { return feed.NameOfMediaKind(k).Label }

// fileKind says what a medium's file is to a feed reader.
type fileKind uint8

const (
	noFile    fileKind = iota // nothing to fetch: a page, an animation only Telegram plays
	imageFile                 // shown as <img>
	mediaFile                 // played or downloaded: an enclosure
)

// classify is what a reader can do with m's file: Telegram links some
// documents and audio files to the post's own page, which is no file, and
// animated stickers (.tgs) play only in Telegram's own player.
func classify(m parser.Media) fileKind {
	u := safeURL(m.URL)
	switch {
	case u == "" || isPostPage(u):
		return noFile
	case m.Type == parser.MediaSticker:
		switch ext(u) {
		case ".webp", ".png", ".jpg", ".jpeg", ".gif":
			return imageFile
		case ".webm", ".mp4":
			return mediaFile
		}
		return noFile
	case m.Type == parser.MediaImage:
		return imageFile
	}
	return mediaFile
}

// isPostPage reports whether u is a post's page on t.me rather than a file.
func isPostPage(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch strings.ToLower(p.Hostname()) {
	case "t.me", "telegram.me", "www.t.me":
		return true
	}
	return false
}

func ext(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(path.Ext(u.Path))
}

// mediaURLs are the media file's URL ("" when it is no file, see
// classify) and its preview picture's: Telegram's own, or the durable
// links under base (see Options.MediaBase).
func mediaURLs(channel string, id, index int, m parser.Media, base string) (file, thumb string) {
	if classify(m) != noFile {
		file = safeURL(m.URL)
	}
	return medialink.Links(base, channel, id, index, file, safeURL(m.Thumb))
}

// mediaAttachments are what a reader attaches of m: its file when a
// reader can show or play it, typed as what it is, and its preview
// picture when Telegram shows one (the only attachment of a video too
// big for the web, a sticker with only a picture).
func mediaAttachments(channel string, id, index int, m parser.Media, base string) []attachment {
	if m.Type == parser.MediaUnsupported {
		return nil
	}
	file, thumb := mediaURLs(channel, id, index, m, base)
	var out []attachment
	if file != "" && m.Available {
		a := attachment{url: file, title: m.Title, mimeType: mimeType(m.URL, m.Type)}
		if m.Duration != nil {
			a.duration = m.Duration.Raw
		}
		out = append(out, a)
	}
	if thumb != "" && (len(out) == 0 || !strings.HasPrefix(out[0].mimeType, "image/")) {
		out = append(out, attachment{url: thumb, mimeType: mimeType(m.Thumb, parser.MediaImage)})
	}
	return out
}

// writeMedia shows m in the content: pictures as <img>, playable media
// as their preview picture (or name) linking to the file, a preview
// picture of what only Telegram plays linking to the post, and what has
// no file as a link to the post or the page Telegram names.
func writeMedia(b *strings.Builder, channel string, id, index int, m parser.Media, base, post string) {
	file, thumb := mediaURLs(channel, id, index, m, base)
	kind := classify(m)
	name := kindName(m.Type)
	switch {
	case m.Type == parser.MediaSticker && kind == mediaFile:
		name = "Video sticker"
	case m.Title != "":
		name = m.Title
		if m.Extra != "" {
			name += " (" + m.Extra + ")"
		}
	}
	if d := m.Duration; d != nil && d.Formatted != "" && m.Title == "" {
		name += " (" + d.Formatted + ")"
	}
	target := file
	if target == "" || !m.Available {
		// Telegram's page for the medium (a document's post), else the post.
		target = safeURL(m.URL)
		if target == "" || !isPostPage(target) {
			target = post
		}
	}
	b.WriteString("<p>")
	switch {
	case m.Type == parser.MediaUnsupported:
		link(b, post, name+": open in Telegram")
	case kind == imageFile && file != "" && m.Available:
		b.WriteString(`<img src="` + html.EscapeString(file) + `" alt="` + html.EscapeString(kindName(m.Type)) + `">`)
	case thumb != "":
		b.WriteString(`<a href="` + html.EscapeString(target) + `"><img src="` + html.EscapeString(thumb) + `" alt="` + html.EscapeString(name) + `"></a>`)
		if target != file {
			b.WriteString("<br>")
			link(b, target, name+": open in Telegram")
		}
	case file != "" && m.Available:
		link(b, file, name)
	default:
		link(b, target, name+": open in Telegram")
	}
	b.WriteString("</p>")
}

// link writes an <a> to href with text, or only the text when href is
// not an http(s) URL.
func link(b *strings.Builder, href, text string) {
	if text == "" {
		text = href
	}
	u := safeURL(href)
	if u == "" {
		b.WriteString(html.EscapeString(text))
		return
	}
	b.WriteString(`<a href="` + html.EscapeString(u) + `">` + html.EscapeString(text) + "</a>")
}

// safeURL returns s as an absolute http(s) URL ("//host/..." becomes
// https), or "" for anything else: a page is not trusted to hold only
// harmless URLs.
func safeURL(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "//") {
		s = "https:" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.String()
}

// mimeType is the type of a media file by its URL's extension, else by
// its kind: what Telegram serves for each.
func mimeType(rawURL string, k parser.MediaKind) string {
	if u, err := url.Parse(rawURL); err == nil {
		switch strings.ToLower(path.Ext(u.Path)) {
		case ".jpg", ".jpeg":
			return "image/jpeg"
		case ".png":
			return "image/png"
		case ".webp":
			return "image/webp"
		case ".gif":
			return "image/gif"
		case ".mp4":
			return "video/mp4"
		case ".webm":
			return "video/webm"
		case ".ogg", ".oga":
			return "audio/ogg"
		case ".mp3":
			return "audio/mpeg"
		case ".m4a":
			return "audio/mp4"
		case ".pdf":
			return "application/pdf"
		}
	}
	switch k {
	case parser.MediaImage:
		return "image/jpeg"
	case parser.MediaVideo, parser.MediaGIF, parser.MediaRoundVideo:
		return "video/mp4"
	case parser.MediaVoice:
		return "audio/ogg"
	case parser.MediaAudio:
		return "audio/mpeg"
	}
	return "application/octet-stream"
}

// clean removes what XML 1.0 cannot hold (control characters other than
// tab and newlines, U+FFFE/U+FFFF, surrogates, invalid UTF-8), which a
// post's text may contain; encoding/xml would otherwise write U+FFFD.
func clean(s string) string {
	for i, r := range s {
		if !xmlChar(r) || r == utf8.RuneError && isBadByte(s, i) {
			return strings.Map(func(r rune) rune {
				if !xmlChar(r) {
					return -1
				}
				return r
			}, strings.ToValidUTF8(s, ""))
		}
	}
	return s
}

func isBadByte(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}

func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
