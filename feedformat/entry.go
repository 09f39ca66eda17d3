package feedformat

import (
	"html"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
		b.WriteString("<div>" + sanitize.Post(t.HTML, ch) + "</div>")
	}
	for i, m := range c.Media {
		if a, ok := mediaAttachment(ch, p.ID, i, m, o.MediaBase); ok {
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
			b.WriteString("<div>" + sanitize.Post(d.HTML, ch) + "</div>")
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

// title is the first non-empty line of the post's text, bounded, or a
// description of what the post holds when it has no text.
func title(p *parser.Post) string {
	c := &p.Content
	if c.Text != nil {
		for line := range strings.SplitSeq(c.Text.String, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				return bound(line)
			}
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

func kindName(k parser.MediaKind) string {
	switch k {
	case parser.MediaImage:
		return "Photo"
	case parser.MediaVideo:
		return "Video"
	case parser.MediaGIF:
		return "GIF"
	case parser.MediaVoice:
		return "Voice message"
	case parser.MediaRoundVideo:
		return "Video message"
	case parser.MediaSticker:
		return "Sticker"
	case parser.MediaDocument:
		return "File"
	case parser.MediaAudio:
		return "Audio"
	}
	return "Media not shown on the web"
}

// mediaURLs are the media file's URL and its preview picture's: Telegram's
// own, or the durable links under base (see Options.MediaBase).
func mediaURLs(channel string, id, index int, m parser.Media, base string) (file, thumb string) {
	return medialink.Links(base, channel, id, index, safeURL(m.URL), safeURL(m.Thumb))
}

// mediaAttachment is the file of m, or its preview picture when Telegram
// shows only that; false when neither can be fetched.
func mediaAttachment(channel string, id, index int, m parser.Media, base string) (attachment, bool) {
	if !m.Available || m.Type == parser.MediaUnsupported {
		return attachment{}, false
	}
	file, thumb := mediaURLs(channel, id, index, m, base)
	a := attachment{title: m.Title}
	if m.Duration != nil {
		a.duration = m.Duration.Raw
	}
	switch {
	case file != "":
		a.url, a.mimeType = file, mimeType(m.URL, m.Type)
	case thumb != "":
		a.url, a.mimeType, a.duration = thumb, mimeType(m.Thumb, parser.MediaImage), 0
	default:
		return attachment{}, false
	}
	return a, true
}

// writeMedia shows m in the content: pictures as <img>, playable media as
// a picture or a name linking to the file, anything unavailable as a link
// to the post.
func writeMedia(b *strings.Builder, channel string, id, index int, m parser.Media, base, post string) {
	file, thumb := mediaURLs(channel, id, index, m, base)
	name := kindName(m.Type)
	if m.Title != "" {
		name = m.Title
		if m.Extra != "" {
			name += " (" + m.Extra + ")"
		}
	}
	b.WriteString("<p>")
	switch {
	case !m.Available || file == "" && thumb == "":
		link(b, post, name+": open in Telegram")
	case m.Type == parser.MediaImage || m.Type == parser.MediaSticker:
		src := file
		if src == "" {
			src = thumb
		}
		b.WriteString(`<img src="` + html.EscapeString(src) + `" alt="` + html.EscapeString(kindName(m.Type)) + `">`)
	case thumb != "":
		target := file
		if target == "" {
			target = post
		}
		b.WriteString(`<a href="` + html.EscapeString(target) + `"><img src="` + html.EscapeString(thumb) + `" alt="` + html.EscapeString(name) + `"></a>`)
	default:
		link(b, file, name)
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
	case parser.MediaSticker:
		return "image/webp"
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
