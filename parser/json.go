package parser

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// REST v1 answers in telegram-me 1.x's shape, whose models send a missing
// optional value as null: the key is always there. encoding/json can only
// drop such a key (omitempty) or send "" and 0, so the types below that hold
// optional strings or numbers write themselves. Keys telegram-me does not
// have (tmefeed's additions) are still left out when empty. Key names are
// the fields' json tags; TestMarshalKeysFollowTags holds the two together.
//
// The output is compact and leaves <, > and & as they are: the encoder
// calling MarshalJSON compacts it and applies its own HTML-escaping choice.
//
// AppendPageJSON, AppendPostJSON, AppendPreviewJSON and AppendMetaJSON write
// the same bytes as encoding/json with HTML escaping off, without its
// reflection and without compacting each MarshalJSON result again: the REST
// server renders its answers with them. TestAppendJSONMatchesEncodingJSON
// holds the two paths together.

// object appends one JSON object to b.
type object struct {
	b []byte
	n int
}

func openObject(b []byte) object { return object{b: append(b, '{')} }

func (o *object) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *object) str(k, v string) {
	o.key(k)
	o.b = appendString(o.b, v)
}

// opt writes v, or null when it is empty.
func (o *object) opt(k, v string) {
	if v == "" {
		o.null(k)
		return
	}
	o.str(k, v)
}

// extra writes v unless it is empty: a key of tmefeed's own.
func (o *object) extra(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

func (o *object) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// optInt writes v, or null when it is zero.
func (o *object) optInt(k string, v int64) {
	if v == 0 {
		o.null(k)
		return
	}
	o.int(k, v)
}

// extraInt writes v unless it is zero: a key of tmefeed's own.
func (o *object) extraInt(k string, v int64) {
	if v != 0 {
		o.int(k, v)
	}
}

func (o *object) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *object) rich(k string, r Rich) {
	o.key(k)
	o.b = appendRich(o.b, r)
}

func (o *object) null(k string) {
	o.key(k)
	o.b = append(o.b, "null"...)
}

// optRich writes *r, or null when r is nil.
func (o *object) optRich(k string, r *Rich) {
	if r == nil {
		o.null(k)
		return
	}
	o.rich(k, *r)
}

func (o *object) done() []byte { return append(o.b, '}') }

func appendRich(b []byte, r Rich) []byte {
	b = append(b, `{"string":`...)
	b = appendString(b, r.String)
	b = append(b, `,"html":`...)
	b = appendString(b, r.HTML)
	return append(b, '}')
}

// appendString appends s as a JSON string exactly as encoding/json writes it
// with HTML escaping off: short escapes for \b \f \n \r \t, \u00XX for other
// control characters, \ufffd for invalid UTF-8, and U+2028 and U+2029
// escaped because JavaScript source cannot hold them raw.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendList writes items as a JSON array, or null when there are none:
// telegram-me sends a missing list as null.
func appendList[T any](b []byte, items []T, each func([]byte, *T) []byte) []byte {
	if len(items) == 0 {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, &items[i])
	}
	return append(b, ']')
}

// AppendPageJSON appends p as the REST API writes a channel page.
func AppendPageJSON(b []byte, p *Page) []byte {
	w := openObject(b)
	if p.Channel != nil {
		w.key("channel")
		w.b = appendChannel(w.b, p.Channel)
	}
	w.key("content")
	w.b = append(w.b, `{"posts":`...)
	w.b = appendPosts(w.b, p.Content.Posts)
	w.b = append(w.b, '}')
	w.key("meta")
	w.b = AppendMetaJSON(w.b, p.Meta)
	return w.done()
}

// MarshalJSON writes the post as AppendPostJSON does, through encoding/json
// (so the tests can hold the two together): id is null for a post t.me
// names nowhere.
func (p Post) MarshalJSON() ([]byte, error) {
	type plain Post
	var id *int
	if p.ID != 0 {
		id = &p.ID
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the calling encoder applies its own choice
	if err := enc.Encode(struct {
		ID *int `json:"id"`
		plain
	}{id, plain(p)}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// appendPosts writes posts as an array; a page without posts has null, as
// encoding/json writes a nil slice.
func appendPosts(b []byte, posts []Post) []byte {
	if posts == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range posts {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendPostJSON(b, &posts[i])
	}
	return append(b, ']')
}

// AppendMetaJSON appends the cursors object {"offset": {...}}.
func AppendMetaJSON(b []byte, m Meta) []byte {
	b = append(b, `{"offset":`...)
	b = appendOffset(b, m.Offset)
	return append(b, '}')
}

// AppendPostJSON appends p as the REST API writes a post.
func AppendPostJSON(b []byte, p *Post) []byte {
	w := openObject(b)
	w.optInt("id", int64(p.ID))
	w.str("view", p.View)
	if p.Service != nil {
		w.key("service")
		w.b = append(w.b, `{"type":`...)
		w.b = appendString(w.b, p.Service.Type)
		w.b = append(w.b, `,"text":`...)
		w.b = appendString(w.b, p.Service.Text)
		w.b = append(w.b, '}')
	}
	w.key("content")
	w.b = appendContent(w.b, &p.Content)
	w.key("footer")
	w.b = appendFooter(w.b, &p.Footer)
	w.key("forwarded")
	if p.Forwarded == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = appendForwarded(w.b, p.Forwarded)
	}
	return w.done()
}

func appendContent(b []byte, c *PostContent) []byte {
	w := openObject(b)
	w.key("text")
	if c.Text == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, `{"string":`...)
		w.b = appendString(w.b, c.Text.String)
		w.b = append(w.b, `,"html":`...)
		w.b = appendString(w.b, c.Text.HTML)
		w.b = append(w.b, `,"entities":`...)
		w.b = appendList(w.b, c.Text.Entities, appendEntity)
		w.b = append(w.b, '}')
	}
	w.key("media")
	w.b = appendList(w.b, c.Media, appendMedia)
	if c.Location != nil {
		w.key("location")
		w.b = appendLocation(w.b, c.Location)
	}
	w.key("poll")
	if c.Poll == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = appendPoll(w.b, c.Poll)
	}
	w.key("inline")
	w.b = appendList(w.b, c.Inline, func(b []byte, in *Inline) []byte {
		b = append(b, `{"title":`...)
		b = appendString(b, in.Title)
		b = append(b, `,"url":`...)
		b = appendString(b, in.URL)
		return append(b, '}')
	})
	w.key("reply")
	if c.Reply == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = appendReply(w.b, c.Reply)
	}
	w.key("preview_link")
	if c.PreviewLink == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = appendPreviewLink(w.b, c.PreviewLink)
	}
	w.key("reacts")
	w.b = appendList(w.b, c.Reacts, appendReact)
	return w.done()
}

// appendLocation writes a map point with tmefeed's keys, all left out when
// empty, numbers as encoding/json formats them.
func appendLocation(b []byte, l *Location) []byte {
	w := openObject(b)
	for _, f := range [...]struct {
		k string
		v float64
	}{{"latitude", l.Latitude}, {"longitude", l.Longitude}} {
		if f.v != 0 {
			w.key(f.k)
			w.b = appendFloat(w.b, f.v)
		}
	}
	w.extra("address", l.Address)
	w.extra("url", l.URL)
	w.extra("map", l.Map)
	return w.done()
}

// appendFloat formats f as encoding/json does: plain digits between 1e-6
// and 1e21, an exponent without leading zeros outside. NaN and infinities,
// which JSON cannot hold, are null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// MarshalJSON writes the cursors, null where there is no neighbouring page.
func (o Offset) MarshalJSON() ([]byte, error) { return appendOffset(make([]byte, 0, 40), o), nil }

func appendOffset(b []byte, o Offset) []byte {
	w := openObject(b)
	w.optInt("before", int64(o.Before))
	w.optInt("after", int64(o.After))
	return w.done()
}

// MarshalJSON writes the channel header; a description, avatar or labels
// the channel does not have are null.
func (c Channel) MarshalJSON() ([]byte, error) {
	return appendChannel(make([]byte, 0, 512+len(c.Title.HTML)+len(c.Avatar)), &c), nil
}

func appendChannel(b []byte, c *Channel) []byte {
	w := openObject(b)
	w.str("username", c.Username)
	w.rich("title", c.Title)
	w.optRich("description", c.Description)
	w.opt("avatar", c.Avatar)
	w.key("counters")
	w.b = appendCounters(w.b, &c.Counters)
	w.key("labels")
	w.b = appendList(w.b, c.Labels, func(b []byte, l *string) []byte { return appendString(b, *l) })
	return w.done()
}

// MarshalJSON writes the counters; subscribers is always there, a counter
// Telegram does not show is null.
func (c Counters) MarshalJSON() ([]byte, error) { return appendCounters(make([]byte, 0, 192), &c), nil }

func appendCounters(b []byte, c *Counters) []byte {
	w := openObject(b)
	w.str("subscribers", c.Subscribers)
	w.opt("photos", c.Photos)
	w.opt("videos", c.Videos)
	w.opt("files", c.Files)
	w.opt("links", c.Links)
	w.extraInt("subscribers_count", c.SubscribersCount)
	w.extraInt("photos_count", c.PhotosCount)
	w.extraInt("videos_count", c.VideosCount)
	w.extraInt("files_count", c.FilesCount)
	w.extraInt("links_count", c.LinksCount)
	return w.done()
}

// MarshalJSON writes the preview card. Its description is the plain text,
// a string as telegram-me sends it, not the {string, html} pair of a
// channel page.
func (p Preview) MarshalJSON() ([]byte, error) {
	return AppendPreviewJSON(make([]byte, 0, 256+len(p.Avatar)), &p), nil
}

// AppendPreviewJSON appends p as the REST API writes a preview card.
func AppendPreviewJSON(b []byte, p *Preview) []byte {
	w := openObject(b)
	w.str("username", p.Username)
	w.str("title", p.Title)
	w.str("subscribers", p.Subscribers)
	w.extraInt("subscribers_count", p.SubscribersCount)
	desc := ""
	if p.Description != nil {
		desc = p.Description.String
	}
	w.opt("description", desc)
	w.opt("avatar", p.Avatar)
	w.bool("is_verified", p.IsVerified)
	return w.done()
}

// MarshalJSON writes the entity; url and language are null where they do
// not apply.
func (e Entity) MarshalJSON() ([]byte, error) {
	return appendEntity(make([]byte, 0, 96+len(e.URL)), &e), nil
}

func appendEntity(b []byte, e *Entity) []byte {
	w := openObject(b)
	w.int("offset", int64(e.Offset))
	w.int("length", int64(e.Length))
	w.str("type", string(e.Type))
	w.opt("url", e.URL)
	w.opt("language", e.Language)
	w.extra("emoji_id", e.EmojiID)
	return w.done()
}

// MarshalJSON writes the attachment; addresses and a duration it does not
// have are null.
func (m Media) MarshalJSON() ([]byte, error) {
	return appendMedia(make([]byte, 0, 128+len(m.URL)+len(m.Thumb)+len(m.Waves)+len(m.Title)), &m), nil
}

func appendMedia(b []byte, m *Media) []byte {
	w := openObject(b)
	w.str("type", string(m.Type))
	w.opt("url", m.URL)
	w.opt("thumb", m.Thumb)
	w.opt("waves", m.Waves)
	w.key("duration")
	if m.Duration == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, `{"formatted":`...)
		w.b = appendString(w.b, m.Duration.Formatted)
		w.b = append(w.b, `,"raw":`...)
		w.b = strconv.AppendInt(w.b, int64(m.Duration.Raw), 10)
		w.b = append(w.b, '}')
	}
	w.extra("title", m.Title)
	w.extra("extra", m.Extra)
	w.bool("available", m.Available)
	return w.done()
}

// MarshalJSON writes the poll; type is null for a plain poll.
func (p Poll) MarshalJSON() ([]byte, error) {
	return appendPoll(make([]byte, 0, 128+len(p.Question)+48*len(p.Options)), &p), nil
}

func appendPoll(b []byte, p *Poll) []byte {
	w := openObject(b)
	w.str("question", p.Question)
	w.opt("type", p.Type)
	w.str("votes", p.Votes)
	w.extraInt("votes_count", p.VotesCount)
	w.key("options")
	w.b = append(w.b, '[') // a list even when empty, as telegram-me's model requires
	for i, op := range p.Options {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, `{"name":`...)
		w.b = appendString(w.b, op.Name)
		w.b = append(w.b, `,"percent":`...)
		w.b = strconv.AppendInt(w.b, int64(op.Percent), 10)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ']')
	return w.done()
}

// MarshalJSON writes the replied-to message; cover is null without a thumbnail.
func (r Reply) MarshalJSON() ([]byte, error) {
	n := 128 + len(r.Cover) + len(r.Name.String) + len(r.Name.HTML) + len(r.Text.String) + len(r.Text.HTML)
	return appendReply(make([]byte, 0, n), &r), nil
}

func appendReply(b []byte, r *Reply) []byte {
	w := openObject(b)
	w.opt("cover", r.Cover)
	w.rich("name", r.Name)
	w.rich("text", r.Text)
	w.int("to_message", int64(r.ToMessage))
	return w.done()
}

// MarshalJSON writes the link preview; parts the card does not show are null.
func (l PreviewLink) MarshalJSON() ([]byte, error) {
	n := 128 + len(l.Title) + len(l.URL) + len(l.SiteName) + len(l.Thumb)
	if l.Description != nil {
		n += len(l.Description.String) + len(l.Description.HTML)
	}
	return appendPreviewLink(make([]byte, 0, n), &l), nil
}

func appendPreviewLink(b []byte, l *PreviewLink) []byte {
	w := openObject(b)
	w.opt("title", l.Title)
	w.str("url", l.URL)
	w.opt("site_name", l.SiteName)
	w.optRich("description", l.Description)
	w.opt("thumb", l.Thumb)
	return w.done()
}

// starEmoji is what telegram-me names the paid (Telegram Stars) reaction.
const starEmoji = "⭐"

// MarshalJSON writes the reaction; fields of the other reaction kinds are null.
func (r React) MarshalJSON() ([]byte, error) {
	return appendReact(make([]byte, 0, 128+len(r.EmojiImage)), &r), nil
}

func appendReact(b []byte, r *React) []byte {
	w := openObject(b)
	w.str("count", r.Count)
	w.int("count_value", r.CountValue)
	w.str("type", string(r.Type))
	emoji := r.Emoji
	if emoji == "" && r.Type == ReactStars {
		emoji = starEmoji
	}
	w.opt("emoji", emoji)
	w.opt("emoji_id", r.EmojiID)
	w.opt("emoji_image", r.EmojiImage)
	return w.done()
}

// MarshalJSON writes the footer; views and author are null when not shown.
func (f Footer) MarshalJSON() ([]byte, error) {
	n := 160 + len(f.Date.String)
	if f.Author != nil {
		n += len(f.Author.String) + len(f.Author.HTML)
	}
	return appendFooter(make([]byte, 0, n), &f), nil
}

func appendFooter(b []byte, f *Footer) []byte {
	w := openObject(b)
	w.opt("views", f.Views)
	w.extraInt("views_count", f.ViewsCount)
	w.bool("edited", f.Edited)
	w.optRich("author", f.Author)
	w.key("date")
	w.b = appendDate(w.b, &f.Date)
	return w.done()
}

// MarshalJSON writes the date; an unknown one is {"string": null, "unix":
// null}, an estimate carries "estimated": true.
func (d Date) MarshalJSON() ([]byte, error) {
	return appendDate(make([]byte, 0, 64+len(d.String)), &d), nil
}

func appendDate(b []byte, d *Date) []byte {
	w := openObject(b)
	w.opt("string", d.String)
	if !d.Known() {
		w.null("unix")
	} else {
		w.int("unix", d.Unix)
	}
	if d.Estimated {
		w.bool("estimated", true)
	}
	return w.done()
}

// MarshalJSON writes the source; url is null for a hidden sender.
func (f Forwarded) MarshalJSON() ([]byte, error) {
	return appendForwarded(make([]byte, 0, 64+len(f.Name.String)+len(f.Name.HTML)+len(f.URL)), &f), nil
}

func appendForwarded(b []byte, f *Forwarded) []byte {
	w := openObject(b)
	w.rich("name", f.Name)
	w.opt("url", f.URL)
	return w.done()
}
