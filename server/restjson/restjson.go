// Package restjson is the REST v1 wire format of the parser's model:
// answers in telegram-me 1.x's shape, whose models send a missing optional
// value as null, so that the key is always there (encoding/json can only
// drop such a key, omitempty, or send "" and 0). Keys telegram-me does not
// have (tmefeed's additions) are left out when empty. Key names are the
// model's json tags; TestKeysFollowTags holds the two together.
//
// The output is compact, leaves <, > and & as they are, and is appended
// to a caller's buffer without reflection: a cache miss of the REST API
// renders a page with it (BenchmarkPage, against encoding/json).
package restjson

import (
	"math"
	"strconv"

	"github.com/tmefeed/tmefeed/internal/jsonstr"
	"github.com/tmefeed/tmefeed/parser"
)

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
	o.b = jsonstr.Append(o.b, v)
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

func (o *object) rich(k string, r parser.Rich) {
	o.key(k)
	o.b = appendRich(o.b, r)
}

func (o *object) null(k string) {
	o.key(k)
	o.b = append(o.b, "null"...)
}

// optRich writes *r, or null when r is nil.
func (o *object) optRich(k string, r *parser.Rich) {
	if r == nil {
		o.null(k)
		return
	}
	o.rich(k, *r)
}

func (o *object) done() []byte { return append(o.b, '}') }

func appendRich(b []byte, r parser.Rich) []byte {
	b = append(b, `{"string":`...)
	b = jsonstr.Append(b, r.String)
	b = append(b, `,"html":`...)
	b = jsonstr.Append(b, r.HTML)
	return append(b, '}')
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

// AppendPage appends p as the REST API writes a channel page.
func AppendPage(b []byte, p *parser.Page) []byte {
	w := openObject(b)
	if p.Channel != nil {
		w.key("channel")
		w.b = AppendChannel(w.b, p.Channel)
	}
	w.key("content")
	w.b = append(w.b, `{"posts":`...)
	w.b = appendPosts(w.b, p.Content.Posts)
	w.b = append(w.b, '}')
	w.key("meta")
	w.b = AppendMeta(w.b, p.Meta)
	return w.done()
}

// appendPosts writes posts as an array; a page without posts has null, as
// encoding/json writes a nil slice.
func appendPosts(b []byte, posts []parser.Post) []byte {
	if posts == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range posts {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendPost(b, &posts[i])
	}
	return append(b, ']')
}

// AppendMeta appends the cursors object {"offset": {...}}.
func AppendMeta(b []byte, m parser.Meta) []byte {
	b = append(b, `{"offset":`...)
	b = appendOffset(b, m.Offset)
	return append(b, '}')
}

// AppendPost appends p as the REST API writes a post.
func AppendPost(b []byte, p *parser.Post) []byte {
	w := openObject(b)
	w.optInt("id", int64(p.ID))
	w.str("view", p.View)
	if p.Service != nil {
		w.key("service")
		w.b = append(w.b, `{"type":`...)
		w.b = jsonstr.Append(w.b, p.Service.Type)
		w.b = append(w.b, `,"text":`...)
		w.b = jsonstr.Append(w.b, p.Service.Text)
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

func appendContent(b []byte, c *parser.PostContent) []byte {
	w := openObject(b)
	w.key("text")
	if c.Text == nil {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, `{"string":`...)
		w.b = jsonstr.Append(w.b, c.Text.String)
		w.b = append(w.b, `,"html":`...)
		w.b = jsonstr.Append(w.b, c.Text.HTML)
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
	w.b = appendList(w.b, c.Inline, func(b []byte, in *parser.Inline) []byte {
		b = append(b, `{"title":`...)
		b = jsonstr.Append(b, in.Title)
		b = append(b, `,"url":`...)
		b = jsonstr.Append(b, in.URL)
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
func appendLocation(b []byte, l *parser.Location) []byte {
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

func AppendChannel(b []byte, c *parser.Channel) []byte {
	w := openObject(b)
	w.str("username", c.Username)
	w.rich("title", c.Title)
	w.optRich("description", c.Description)
	w.opt("avatar", c.Avatar)
	w.key("counters")
	w.b = appendCounters(w.b, &c.Counters)
	w.key("labels")
	w.b = appendList(w.b, c.Labels, func(b []byte, l *string) []byte { return jsonstr.Append(b, *l) })
	return w.done()
}

// AppendPreview appends p as the REST API writes a preview card.
func AppendPreview(b []byte, p *parser.Preview) []byte {
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

func appendEntity(b []byte, e *parser.Entity) []byte {
	w := openObject(b)
	w.int("offset", int64(e.Offset))
	w.int("length", int64(e.Length))
	w.str("type", string(e.Type))
	w.opt("url", e.URL)
	w.opt("language", e.Language)
	w.extra("emoji_id", e.EmojiID)
	return w.done()
}

func appendMedia(b []byte, m *parser.Media) []byte {
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
		w.b = jsonstr.Append(w.b, m.Duration.Formatted)
		w.b = append(w.b, `,"raw":`...)
		w.b = strconv.AppendInt(w.b, int64(m.Duration.Raw), 10)
		w.b = append(w.b, '}')
	}
	w.extra("title", m.Title)
	w.extra("extra", m.Extra)
	w.bool("available", m.Available)
	return w.done()
}

func appendPoll(b []byte, p *parser.Poll) []byte {
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
		w.b = jsonstr.Append(w.b, op.Name)
		w.b = append(w.b, `,"percent":`...)
		w.b = strconv.AppendInt(w.b, int64(op.Percent), 10)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ']')
	return w.done()
}

func appendReply(b []byte, r *parser.Reply) []byte {
	w := openObject(b)
	w.opt("cover", r.Cover)
	w.rich("name", r.Name)
	w.rich("text", r.Text)
	w.int("to_message", int64(r.ToMessage))
	return w.done()
}

func appendPreviewLink(b []byte, l *parser.PreviewLink) []byte {
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

func appendReact(b []byte, r *parser.React) []byte {
	w := openObject(b)
	w.str("count", r.Count)
	w.int("count_value", r.CountValue)
	w.str("type", string(r.Type))
	emoji := r.Emoji
	if emoji == "" && r.Type == parser.ReactStars {
		emoji = starEmoji
	}
	w.opt("emoji", emoji)
	w.opt("emoji_id", r.EmojiID)
	w.opt("emoji_image", r.EmojiImage)
	return w.done()
}

func appendFooter(b []byte, f *parser.Footer) []byte {
	w := openObject(b)
	w.opt("views", f.Views)
	w.extraInt("views_count", f.ViewsCount)
	w.bool("edited", f.Edited)
	w.optRich("author", f.Author)
	w.key("date")
	w.b = appendDate(w.b, &f.Date)
	return w.done()
}

func appendDate(b []byte, d *parser.Date) []byte {
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

func appendForwarded(b []byte, f *parser.Forwarded) []byte {
	w := openObject(b)
	w.rich("name", f.Name)
	w.opt("url", f.URL)
	return w.done()
}

func appendOffset(b []byte, o parser.Offset) []byte {
	w := openObject(b)
	w.optInt("before", int64(o.Before))
	w.optInt("after", int64(o.After))
	return w.done()
}

func appendCounters(b []byte, c *parser.Counters) []byte {
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
