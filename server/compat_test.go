package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/tme"
)

// telegram-me 1.x's response models (app/telegram/models/*.py), key by key.
// FastAPI validates each answer through the route's response model and
// dumps every field of it, so a key the model has is always sent; an
// Optional field with nothing in it is sent as null. Keys of tmefeed's own
// may come beside them and are not listed here.

type jsonKind int

const (
	jString jsonKind = iota
	jNumber
	jBool
	jObject
	jArray
)

type tmKey struct {
	kind jsonKind
	elem string // the model of an object, or of an array's items ("" for strings)
	// null: the model allows null, and tmefeed sends null when the value
	// is missing. known: telegram-me allows null but tmefeed always has the
	// value, so null is never seen.
	null, known bool
}

func req(k jsonKind, elem string) tmKey { return tmKey{kind: k, elem: elem} }
func opt(k jsonKind, elem string) tmKey { return tmKey{kind: k, elem: elem, null: true} }
func always(k jsonKind) tmKey           { return tmKey{kind: k, null: true, known: true} }
func rich() tmKey                       { return req(jObject, "ParsedAndRaw") }
func optRich() tmKey                    { return opt(jObject, "ParsedAndRaw") }
func str() tmKey                        { return req(jString, "") }
func optStr() tmKey                     { return opt(jString, "") }
func num() tmKey                        { return req(jNumber, "") }
func list(elem string, null bool) tmKey { return tmKey{kind: jArray, elem: elem, null: null} }

// unknown is a key telegram-me's model requires that tmefeed sends as null
// when t.me's page has no value at all (docs/compat-telegram-me.md,
// "Remaining differences"): a post's number that the page names nowhere,
// a date it does not write and no neighbour dates.
func unknown(k jsonKind) tmKey { return tmKey{kind: k, null: true} }

var telegramMe = map[string]map[string]tmKey{
	"ChannelBody": {"channel": req(jObject, "Channel"), "content": req(jObject, "Content"), "meta": req(jObject, "Meta")},
	"More":        {"posts": list("Post", false), "meta": req(jObject, "Meta")},
	// tmefeed answers 404 for a name that is no channel, as telegram-me
	// does once its parser finds none, so the channel is always there.
	"Preview":      {"channel": tmKey{kind: jObject, elem: "PreviewChannel", null: true, known: true}},
	"ParsedAndRaw": {"string": str(), "html": str()},
	"Channel": {"username": str(), "title": rich(), "description": optRich(), "avatar": optStr(),
		"counters": req(jObject, "Counter"), "labels": list("", true)},
	"Counter": {"subscribers": str(), "photos": optStr(), "videos": optStr(), "files": optStr(), "links": optStr()},
	"Content": {"posts": list("Post", false)},
	"Meta":    {"offset": req(jObject, "OffsetItem")},
	"OffsetItem": {
		"before": opt(jNumber, ""), "after": opt(jNumber, "")},
	"Post": {"id": unknown(jNumber), "content": req(jObject, "ContentPost"), "footer": req(jObject, "Footer"),
		"forwarded": opt(jObject, "Forwarded"), "view": str()},
	"ContentPost": {"text": opt(jObject, "Text"), "media": list("MediaItem", true), "poll": opt(jObject, "Poll"),
		"inline": list("Inline", true), "reply": opt(jObject, "Reply"), "preview_link": opt(jObject, "PreviewLink"),
		"reacts": list("Reacts", true)},
	"Text":         {"string": str(), "html": str(), "entities": list("TextEntities", true)},
	"TextEntities": {"offset": num(), "length": num(), "type": str(), "language": optStr(), "url": optStr()},
	"MediaItem": {"url": optStr(), "thumb": optStr(), "waves": optStr(), "duration": opt(jObject, "Duration"),
		"type": str(), "available": always(jBool)},
	"Duration":    {"formatted": str(), "raw": num()},
	"Poll":        {"question": str(), "type": optStr(), "votes": str(), "options": list("PollOptions", false)},
	"PollOptions": {"name": str(), "percent": num()},
	"Inline":      {"title": str(), "url": str()},
	"Reply":       {"cover": optStr(), "name": rich(), "text": rich(), "to_message": num()},
	"PreviewLink": {"title": optStr(), "url": str(), "site_name": optStr(), "description": optRich(), "thumb": optStr()},
	"Reacts":      {"count": str(), "type": str(), "emoji": optStr(), "emoji_id": optStr(), "emoji_image": optStr()},
	"Footer":      {"views": optStr(), "edited": always(jBool), "author": optRich(), "date": req(jObject, "Date")},
	"Date":        {"string": unknown(jString), "unix": unknown(jNumber)},
	"Forwarded":   {"name": rich(), "url": optStr()},
	"PreviewChannel": {"title": str(), "subscribers": str(), "description": optStr(), "avatar": optStr(),
		"is_verified": req(jBool, "")},
}

// shapeWalk checks JSON values against the models and notes which
// optional keys it saw as null.
type shapeWalk struct {
	t        *testing.T
	seenNull map[string]bool // "Model.key"
}

func (w *shapeWalk) value(where string, v any, k tmKey) {
	if v == nil {
		if !k.null {
			w.t.Errorf("%s: null, telegram-me's model does not allow it", where)
		}
		return
	}
	switch k.kind {
	case jString:
		if _, ok := v.(string); !ok {
			w.t.Errorf("%s: %T, want a string", where, v)
		}
	case jNumber:
		if _, ok := v.(float64); !ok {
			w.t.Errorf("%s: %T, want a number", where, v)
		}
	case jBool:
		if _, ok := v.(bool); !ok {
			w.t.Errorf("%s: %T, want a boolean", where, v)
		}
	case jObject:
		w.object(where, v, k.elem)
	case jArray:
		a, ok := v.([]any)
		if !ok {
			w.t.Errorf("%s: %T, want an array", where, v)
			return
		}
		if len(a) == 0 && k.null {
			w.t.Errorf("%s: [], want null for an empty optional list", where)
		}
		item := str()
		if k.elem != "" {
			item = req(jObject, k.elem)
		}
		for i, x := range a {
			w.value(where+"["+strconv.Itoa(i)+"]", x, item)
		}
	}
}

func (w *shapeWalk) object(where string, v any, model string) {
	o, ok := v.(map[string]any)
	if !ok {
		w.t.Errorf("%s: %T, want a %s object", where, v, model)
		return
	}
	for key, k := range telegramMe[model] {
		x, ok := o[key]
		if !ok {
			w.t.Errorf("%s: no key %q (%s.%s)", where, key, model, key)
			continue
		}
		if x == nil {
			w.seenNull[model+"."+key] = true
		}
		w.value(where+"."+key, x, k)
	}
	w.values(where, o, model)
}

// values checks what telegram-me 1.x puts in some keys, beyond their type.
func (w *shapeWalk) values(where string, o map[string]any, model string) {
	switch model {
	case "Date":
		if o["string"] == nil && o["unix"] == nil {
			return // unknown: both null
		}
		s, _ := o["string"].(string)
		unix, _ := o["unix"].(float64)
		if at, err := time.Parse(time.RFC3339, s); err != nil || at.Unix() != int64(unix) || strings.HasSuffix(s, "Z") {
			w.t.Errorf("%s: string %q, want the page's datetime (+00:00) naming unix %.0f", where, s, unix)
		}
	case "Reacts":
		if o["type"] == "telegram_stars" && o["emoji"] != "⭐" {
			w.t.Errorf("%s: Telegram Stars reaction with emoji %v, want ⭐", where, o["emoji"])
		}
	case "Channel", "PreviewChannel":
		if a, _ := o["avatar"].(string); strings.HasPrefix(a, "data:") {
			w.t.Errorf("%s: avatar is a data: placeholder, want null", where)
		}
	case "ParsedAndRaw":
		if h, _ := o["html"].(string); strings.HasPrefix(h, "<span") && strings.HasSuffix(h, "</span>") {
			w.t.Errorf("%s: html %q keeps its wrapping span", where, h)
		}
	}
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

// Every REST answer has telegram-me's keys with its types, and the optional
// ones are present as null when the page has nothing for them.
func TestRESTShapeIsTelegramMe(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, feed: true})
	w := &shapeWalk{t: t, seenNull: map[string]bool{}}
	get := func(target string) any {
		rec := e.get(target)
		wantOK(t, rec, nil)
		return decodeAny(t, rec.Body.Bytes())
	}

	var channels []string
	for _, f := range fixtureFiles(t, "s/*.html") {
		ch := strings.TrimSuffix(path.Base(f), ".html")
		channels = append(channels, ch)
		w.object("/v1/body/"+ch, get("/v1/body/"+ch), "ChannelBody")
	}
	for _, f := range fixtureFiles(t, "s/*/*.html") {
		ch, id := path.Base(path.Dir(f)), strings.TrimSuffix(path.Base(f), ".html")
		w.object("/v1/body/"+ch+"?position="+id, get("/v1/body/"+ch+"?position="+id), "ChannelBody")
		w.object("/v1/post/"+ch+"/"+id, get("/v1/post/"+ch+"/"+id), "Post")
	}
	for _, f := range fixtureFiles(t, "more/*/*.json") {
		dir, pos, _ := strings.Cut(strings.TrimSuffix(path.Base(f), ".json"), "-")
		target := "/v1/more/" + path.Base(path.Dir(f)) + "/" + dir + "/" + pos
		w.object(target, get(target), "More")
	}
	var names []string
	for _, f := range fixtureFiles(t, "preview/*.html") {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if rec := e.get("/v1/preview/" + name); rec.Code == http.StatusOK {
			names = append(names, name)
			w.object("/v1/preview/"+name, decodeAny(t, rec.Body.Bytes()), "Preview")
		}
	}
	body, _ := json.Marshal(map[string][]string{"channels": names})
	rec := e.do(http.MethodPost, "/v1/previews", body)
	wantOK(t, rec, nil)
	for name, v := range decodeAny(t, rec.Body.Bytes()).(map[string]any) {
		w.object("/v1/previews "+name, v, "Preview")
	}
	// telegram-me's feed passes its parser's dicts through; tmefeed's feed
	// posts are /v1/post's, each with its channel header.
	body, _ = json.Marshal(map[string][]string{"channels": channels})
	rec = e.do(http.MethodPost, "/v1/feed", body)
	wantOK(t, rec, nil)
	feed, _ := decodeAny(t, rec.Body.Bytes()).(map[string]any)
	posts, _ := feed["result"].([]any)
	if len(posts) == 0 {
		t.Fatalf("feed of %v has no posts", channels)
	}
	for i, p := range posts {
		where := fmt.Sprintf("/v1/feed result[%d]", i)
		w.object(where, p, "Post")
		w.object(where+".channel", p.(map[string]any)["channel"], "Channel")
	}

	// Values the recorded pages always have (a poll's type, a link
	// preview's title...) are left empty in a page made for the purpose.
	sparse := newEnv(t, envOptions{refresh: 10 * time.Second, pages: sparsePages{}})
	for _, target := range []string{"/v1/body/sparse", "/v1/more/sparse/before/9"} {
		rec := sparse.get(target)
		wantOK(t, rec, nil)
		model := "ChannelBody"
		if strings.Contains(target, "/more/") {
			model = "More"
		}
		w.object(target, decodeAny(t, rec.Body.Bytes()), model)
	}

	// Each optional key must have been seen as null at least once, so that
	// a key dropped when empty (omitempty) cannot pass unnoticed.
	for model, keys := range telegramMe {
		for key, k := range keys {
			if k.null && !k.known && !w.seenNull[model+"."+key] {
				t.Errorf("%s.%s: never seen as null in the fixtures' answers", model, key)
			}
		}
	}
	if t.Failed() {
		return
	}
	var seen []string
	for k := range w.seenNull {
		seen = append(seen, k)
	}
	slices.Sort(seen)
	t.Logf("optional keys seen as null: %s", strings.Join(seen, " "))
}

// sparsePages serves one page whose posts hold only what telegram-me's
// models require, so every optional value in them is missing.
type sparsePages struct{}

func (sparsePages) RenderedRepFor(_ context.Context, _ string, _ tme.Request, _ pages.ClientNamer, render func(pages.Result) ([]byte, error)) (pages.Rendered, pages.Representation, error) {
	date := parser.Date{String: "2024-05-01T12:30:00+00:00", Unix: 1714566600}
	footer := parser.Footer{Date: date}
	page := &parser.Page{
		Channel: &parser.Channel{Username: "sparse", Title: parser.Rich{String: "Sparse", HTML: "Sparse"}},
		Content: parser.Content{Posts: []parser.Post{
			{ID: 1, View: "v1", Footer: footer, Content: parser.PostContent{
				Poll:        &parser.Poll{Question: "Q?", Votes: "1", Options: []parser.PollOption{{Name: "A", Percent: 100}}},
				PreviewLink: &parser.PreviewLink{URL: "https://example.com/"},
			}},
			{ID: 2, View: "v2", Footer: footer, Content: parser.PostContent{
				Media: []parser.Media{{Type: parser.MediaVideo, Available: true}},
				Reply: &parser.Reply{Name: parser.Rich{String: "A", HTML: "A"}, Text: parser.Rich{String: "B", HTML: "B"}, ToMessage: 1},
			}},
			// t.me names this post nowhere and nothing dates it.
			{View: "v3", Content: parser.PostContent{Text: &parser.Text{String: "C", HTML: "C"}}},
		}},
	}
	b, err := render(pages.Result{Page: page, FetchedAt: time.Now()})
	return pages.Rendered{Value: b, FetchedAt: time.Now()}, nil, err
}

// EncodeJSON writes pages, posts, more chunks and previews without
// encoding/json; the bytes must be the ones encoding/json gives (its path
// still serves indented output).
func TestEncodeJSONFastPathMatchesEncodingJSON(t *testing.T) {
	var values []any
	for _, f := range append(fixtureFiles(t, "*/*.*"), fixtureFiles(t, "*/*/*.*")...) {
		b, err := fs.ReadFile(fixtures.Pages(), f)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(f, "s/"):
			if p, err := parser.ParseBody(b); err == nil {
				values = append(values, server.BodyView(p), server.MoreView(p))
				for i := range p.Content.Posts {
					values = append(values, &p.Content.Posts[i])
				}
			}
		case strings.HasPrefix(f, "more/"):
			if p, err := parser.ParseMore(b); err == nil {
				values = append(values, server.MoreView(p))
			}
		case strings.HasPrefix(f, "preview/"):
			if p, err := parser.ParsePreview(b); err == nil {
				values = append(values, &server.PreviewResponse{Channel: p})
			}
		}
	}
	values = append(values, &server.PreviewResponse{}, &server.MoreResponse{}, &parser.Page{}, &parser.Post{})
	if len(values) < 50 {
		t.Fatalf("only %d answers from the fixtures", len(values))
	}
	for i, v := range values {
		fast, err := server.EncodeJSON(v, false)
		if err != nil {
			t.Fatal(err)
		}
		indented, err := server.EncodeJSON(v, true)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, indented); err != nil {
			t.Fatal(err)
		}
		want.WriteByte('\n')
		if !bytes.Equal(fast, want.Bytes()) {
			t.Errorf("answer %d (%T): EncodeJSON differs from encoding/json:\n got  %.300s\n want %.300s", i, v, fast, want.Bytes())
		}
	}
}
