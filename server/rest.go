package server

import (
	"bytes"
	"encoding/json"

	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/server/restjson"
	"github.com/tmefeed/tmefeed/tme"
)

// The REST v1 response shapes, as telegram-me 1.x answers them. restjson
// writes the parser model as telegram-me does (its keys, null for a
// missing optional value); these types add the envelopes around it.

// MoreResponse is the answer of GET /v1/more/...: posts and cursors, no
// channel header.
type MoreResponse struct {
	Posts []parser.Post `json:"posts"`
	Meta  parser.Meta   `json:"meta"`
}

// PreviewResponse is the answer of GET /v1/preview/{channel} and one value
// of POST /v1/previews.
type PreviewResponse struct {
	Channel *parser.Preview `json:"channel"`
}

// ErrorBody is the JSON body of every error answer, and of a failed name
// in POST /v1/previews.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is a machine-readable code and a human-readable message.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BodyView is the value GET /v1/body/{channel} encodes:
// {"channel": …, "content": {"posts": […]}, "meta": {"offset": …}}.
func BodyView(p *parser.Page) *parser.Page {
	if p.Content.Posts != nil {
		return p
	}
	page := *p
	page.Content.Posts = []parser.Post{}
	return &page
}

// MoreView is the value GET /v1/more/... encodes: {"posts": […], "meta": …}.
func MoreView(p *parser.Page) *MoreResponse {
	m := &MoreResponse{Posts: p.Content.Posts, Meta: p.Meta}
	if m.Posts == nil {
		m.Posts = []parser.Post{}
	}
	return m
}

// renderKey is the name an answer rendered for a route's key is kept
// under: the REST shape's version (tme.ShapeREST), so that an answer
// rendered in an earlier shape is never served as this one.
func renderKey(key string) string {
	// The keys of the newest page and of a preview, the most read, are
	// constants: no string is built on their hits.
	switch key {
	case "body:0":
		return tme.ShapeREST + "body:0"
	case "preview":
		return tme.ShapeREST + "preview"
	}
	return tme.ShapeREST + key
}

// EncodeJSON encodes v as the API does: HTML left unescaped (the "html"
// fields stay readable), a newline at the end, indented when indent is set.
// The model's answers are written by restjson; any other value (errors,
// lists of answers already written) by encoding/json.
func EncodeJSON(v any, indent bool) ([]byte, error) {
	if b, ok := appendAnswer(v); ok {
		if !indent {
			return append(b, '\n'), nil
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			return nil, err
		}
		return append(buf.Bytes(), '\n'), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendAnswer writes the page, post, more and preview answers with
// restjson; ok is false for any other value. The cases are concrete
// types, not an interface, so that a type embedding *parser.Post (a feed
// post with its channel) is never written as a bare post.
func appendAnswer(v any) (b []byte, ok bool) {
	switch v := v.(type) {
	case *parser.Page:
		return restjson.AppendPage(make([]byte, 0, answerSize(len(v.Content.Posts))), v), true
	case *parser.Post:
		return restjson.AppendPost(make([]byte, 0, answerSize(1)), v), true
	case *MoreResponse:
		b = make([]byte, 0, answerSize(len(v.Posts)))
		b = append(b, `{"posts":`...)
		if v.Posts == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i := range v.Posts {
				if i > 0 {
					b = append(b, ',')
				}
				b = restjson.AppendPost(b, &v.Posts[i])
			}
			b = append(b, ']')
		}
		b = append(b, `,"meta":`...)
		b = restjson.AppendMeta(b, v.Meta)
		return append(b, '}'), true
	case *PreviewResponse:
		b = append(make([]byte, 0, 1024), `{"channel":`...)
		if v.Channel == nil {
			b = append(b, "null"...)
		} else {
			b = restjson.AppendPreview(b, v.Channel)
		}
		return append(b, '}'), true
	}
	return nil, false
}

// answerSize guesses an answer's length from its post count (posts with
// text, media and reactions run to a few KB), so that it is rarely grown.
func answerSize(posts int) int { return 2048 + 2048*posts }

// findPost returns the post with the given id on the page, or nil.
func findPost(p *parser.Page, id int) *parser.Post {
	for i := range p.Content.Posts {
		if p.Content.Posts[i].ID == id {
			return &p.Content.Posts[i]
		}
	}
	return nil
}
