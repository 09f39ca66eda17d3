package parser

import (
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

// object appends one JSON object.
type object struct {
	b []byte
	n int
}

func newObject(size int) object {
	o := object{b: make([]byte, 0, size)}
	o.b = append(o.b, '{')
	return o
}

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
		o.key(k)
		o.b = append(o.b, "null"...)
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
		o.key(k)
		o.b = append(o.b, "null"...)
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

// optRich writes *r, or null when r is nil.
func (o *object) optRich(k string, r *Rich) {
	if r == nil {
		o.key(k)
		o.b = append(o.b, "null"...)
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

// MarshalJSON writes the cursors, null where there is no neighbouring page.
func (o Offset) MarshalJSON() ([]byte, error) {
	w := newObject(40)
	w.optInt("before", int64(o.Before))
	w.optInt("after", int64(o.After))
	return w.done(), nil
}

// MarshalJSON writes the channel header; a description, avatar or labels
// the channel does not have are null.
func (c Channel) MarshalJSON() ([]byte, error) {
	w := newObject(512 + len(c.Title.HTML) + len(c.Avatar))
	w.str("username", c.Username)
	w.rich("title", c.Title)
	w.optRich("description", c.Description)
	w.opt("avatar", c.Avatar)
	w.key("counters")
	w.b = c.Counters.appendJSON(w.b)
	w.key("labels")
	if len(c.Labels) == 0 {
		w.b = append(w.b, "null"...)
	} else {
		w.b = append(w.b, '[')
		for i, l := range c.Labels {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, l)
		}
		w.b = append(w.b, ']')
	}
	return w.done(), nil
}

// MarshalJSON writes the counters; subscribers is always there, a counter
// Telegram does not show is null.
func (c Counters) MarshalJSON() ([]byte, error) { return c.appendJSON(nil), nil }

func (c Counters) appendJSON(b []byte) []byte {
	w := object{b: append(b, '{')}
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
	w := newObject(256 + len(p.Avatar))
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
	return w.done(), nil
}

// MarshalJSON writes the entity; url and language are null where they do
// not apply.
func (e Entity) MarshalJSON() ([]byte, error) {
	w := newObject(64 + len(e.URL))
	w.int("offset", int64(e.Offset))
	w.int("length", int64(e.Length))
	w.str("type", e.Type)
	w.opt("url", e.URL)
	w.opt("language", e.Language)
	w.extra("emoji_id", e.EmojiID)
	return w.done(), nil
}

// MarshalJSON writes the attachment; addresses and a duration it does not
// have are null.
func (m Media) MarshalJSON() ([]byte, error) {
	w := newObject(96 + len(m.URL) + len(m.Thumb) + len(m.Waves) + len(m.Title))
	w.str("type", m.Type)
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
	return w.done(), nil
}

// MarshalJSON writes the poll; type is null for a plain poll.
func (p Poll) MarshalJSON() ([]byte, error) {
	w := newObject(128 + len(p.Question) + 48*len(p.Options))
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
	return w.done(), nil
}

// MarshalJSON writes the replied-to message; cover is null without a thumbnail.
func (r Reply) MarshalJSON() ([]byte, error) {
	w := newObject(96 + len(r.Cover) + len(r.Name.HTML) + len(r.Text.String) + len(r.Text.HTML))
	w.opt("cover", r.Cover)
	w.rich("name", r.Name)
	w.rich("text", r.Text)
	w.int("to_message", int64(r.ToMessage))
	return w.done(), nil
}

// MarshalJSON writes the link preview; parts the card does not show are null.
func (l PreviewLink) MarshalJSON() ([]byte, error) {
	n := 96 + len(l.Title) + len(l.URL) + len(l.SiteName) + len(l.Thumb)
	if l.Description != nil {
		n += len(l.Description.String) + len(l.Description.HTML)
	}
	w := newObject(n)
	w.opt("title", l.Title)
	w.str("url", l.URL)
	w.opt("site_name", l.SiteName)
	w.optRich("description", l.Description)
	w.opt("thumb", l.Thumb)
	return w.done(), nil
}

// starEmoji is what telegram-me names the paid (Telegram Stars) reaction.
const starEmoji = "⭐"

// MarshalJSON writes the reaction; fields of the other reaction kinds are null.
func (r React) MarshalJSON() ([]byte, error) {
	w := newObject(96 + len(r.EmojiImage))
	w.str("count", r.Count)
	w.int("count_value", r.CountValue)
	w.str("type", r.Type)
	emoji := r.Emoji
	if emoji == "" && r.Type == ReactStars {
		emoji = starEmoji
	}
	w.opt("emoji", emoji)
	w.opt("emoji_id", r.EmojiID)
	w.opt("emoji_image", r.EmojiImage)
	return w.done(), nil
}

// MarshalJSON writes the footer; views and author are null when not shown.
func (f Footer) MarshalJSON() ([]byte, error) {
	n := 128 + len(f.Date.String)
	if f.Author != nil {
		n += len(f.Author.String) + len(f.Author.HTML)
	}
	w := newObject(n)
	w.opt("views", f.Views)
	w.extraInt("views_count", f.ViewsCount)
	w.bool("edited", f.Edited)
	w.optRich("author", f.Author)
	w.key("date")
	w.b = append(w.b, `{"string":`...)
	w.b = appendString(w.b, f.Date.String)
	w.b = append(w.b, `,"unix":`...)
	w.b = strconv.AppendInt(w.b, f.Date.Unix, 10)
	w.b = append(w.b, '}')
	return w.done(), nil
}

// MarshalJSON writes the source; url is null for a hidden sender.
func (f Forwarded) MarshalJSON() ([]byte, error) {
	w := newObject(64 + len(f.Name.String) + len(f.Name.HTML) + len(f.URL))
	w.rich("name", f.Name)
	w.opt("url", f.URL)
	return w.done(), nil
}
