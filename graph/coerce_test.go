package graph_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/graph"
)

// TestVariablesCoercedAsTheSpecSays: a variable whose value does not
// coerce to its type, as the GraphQL spec's input coercion has it, is a
// request error naming the variable, the value and what the type takes:
// 400 under application/graphql-response+json, 200 without data under
// application/json, never INTERNAL_SERVER_ERROR; over GET as over POST,
// and for a subscription as for a query.
func TestVariablesCoercedAsTheSpecSays(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{})
	const (
		order  = `query($o: FeedOrder) { feed(channels: ["tmefeed_news"], order: $o) { totalCount } }`
		first  = `query($n: Int) { feed(channels: ["tmefeed_news"], first: $n) { totalCount } }`
		name   = `query($u: String!) { channel(username: $u) { title } }`
		since  = `query($d: DateTime) { feed(channels: ["tmefeed_news"], filter: {since: $d}) { totalCount } }`
		filter = `query($f: FeedFilter) { feed(channels: ["tmefeed_news"], filter: $f) { totalCount } }`
		ids    = `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
	)
	cases := []struct {
		name    string
		query   string
		vars    map[string]any
		message string // the whole message
	}{
		{"lower-case enum", order, map[string]any{"o": "newest"},
			`Variable "$o" got "newest": FeedOrder must be one of NEWEST, RANKED, spelt exactly so`},
		{"enum as a number", order, map[string]any{"o": 1},
			`Variable "$o" got 1: FeedOrder must be one of NEWEST, RANKED, spelt exactly so`},
		{"lower-case enum in an input object's list", filter, map[string]any{"f": map[string]any{"mediaKinds": []any{"IMAGE", "video"}}},
			`Variable "$f.mediaKinds[1]" got "video": MediaKind must be one of IMAGE, VIDEO, GIF, VOICE, ROUND_VIDEO, STICKER, DOCUMENT, AUDIO, UNSUPPORTED, spelt exactly so`},
		{"lower-case enum standing for a list of one", filter, map[string]any{"f": map[string]any{"mediaKinds": "gif"}},
			`Variable "$f.mediaKinds[0]" got "gif": MediaKind must be one of IMAGE, VIDEO, GIF, VOICE, ROUND_VIDEO, STICKER, DOCUMENT, AUDIO, UNSUPPORTED, spelt exactly so`},
		{"string as an Int", first, map[string]any{"n": "3"},
			`Variable "$n" got "3": Int must be a whole number between -2^31 and 2^31-1`},
		{"number as a String", name, map[string]any{"u": 12345},
			`Variable "$u" got 12345: String must be a string`},
		{"number as a String in an input object", filter, map[string]any{"f": map[string]any{"query": 7}},
			`Variable "$f.query" got 7: String must be a string`},
		{"boolean as a String in a list", filter, map[string]any{"f": map[string]any{"hashtags": []any{"go", true}}},
			`Variable "$f.hashtags[1]" got true: String must be a string`},
		{"string as a Boolean", filter, map[string]any{"f": map[string]any{"excludeReplies": "true"}},
			`Variable "$f.excludeReplies" got "true": Boolean must be true or false`},
		{"malformed DateTime", since, map[string]any{"d": "yesterday"},
			`Variable "$d" got "yesterday": DateTime must be an RFC 3339 string, e.g. 2024-05-01T12:30:00Z`},
		{"DateTime without a zone", filter, map[string]any{"f": map[string]any{"since": "2024-05-01T12:30:00"}},
			`Variable "$f.since" got "2024-05-01T12:30:00": DateTime must be an RFC 3339 string, e.g. 2024-05-01T12:30:00Z`},
		{"DateTime as a number", since, map[string]any{"d": 1714566600},
			`Variable "$d" got 1714566600: DateTime must be an RFC 3339 string, e.g. 2024-05-01T12:30:00Z`},
		{"fraction as an ID", ids, map[string]any{"ids": []any{1.5}},
			`Variable "$ids[0]" got 1.5: ID must be a string or a whole number`},
	}
	for _, c := range cases {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			for _, accept := range []string{acceptJSON, acceptResponse} {
				var r reply
				if method == http.MethodPost {
					r = e.send(t, method, "/graphql", postBody(c.query, c.vars, nil), "Content-Type", "application/json", "Accept", accept)
				} else {
					r = e.send(t, method, getURL(c.query, c.vars, nil), "", "Accept", accept)
				}
				want := http.StatusOK
				if accept == acceptResponse {
					want = http.StatusBadRequest
				}
				resp, hasData := r.parsed(t)
				if r.status != want || hasData {
					t.Errorf("%s, %s %s: status %d (data %v), want %d without data; %s", c.name, method, accept, r.status, hasData, want, r.body)
				}
				if !slices.Equal(resp.codes(), []string{graph.CodeValidationFailed}) || resp.Errors[0].Message != c.message {
					t.Errorf("%s, %s %s: %s\nwant the message %q", c.name, method, accept, r.body, c.message)
				}
			}
		}
	}

	// Values that coerce are taken, spelt as the spec has them.
	good := []struct {
		query string
		vars  map[string]any
	}{
		{order, map[string]any{"o": "NEWEST"}},
		{first, map[string]any{"n": 3}},
		{since, map[string]any{"d": "2024-05-01T12:30:00+02:00"}},
		{filter, map[string]any{"f": map[string]any{"mediaKinds": "IMAGE", "hashtags": []any{"go"}, "excludeReplies": true}}},
		{order, map[string]any{"o": nil}},
	}
	for _, g := range good {
		r := e.send(t, http.MethodPost, "/graphql", postBody(g.query, g.vars, nil), "Content-Type", "application/json", "Accept", acceptResponse)
		if resp, _ := r.parsed(t); r.status != http.StatusOK || len(resp.Errors) > 0 {
			t.Errorf("%v: %d %s", g.vars, r.status, r.body)
		}
	}

	// A subscription's variables are held to the same rules, over
	// WebSocket (an error message) and event streams.
	c := e.connect(t)
	c.subscribe("1", updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}, "filter": map[string]any{"mediaKinds": []string{"image"}}})
	errs := c.errorsOf("1")
	const kindMessage = `Variable "$filter.mediaKinds[0]" got "image": MediaKind must be one of`
	if len(errs) != 1 || errs[0].code() != graph.CodeValidationFailed || !strings.HasPrefix(errs[0].Message, kindMessage) {
		t.Errorf("WebSocket: %+v, want %s %q…", errs, graph.CodeValidationFailed, kindMessage)
	}
	s := e.postSSE(t, request{Query: updatesQuery, Variables: map[string]any{"channels": []string{"tmefeed_news"}, "filter": map[string]any{"since": "soon"}}})
	if ev, data := s.event(); !strings.Contains(string(data), graph.CodeValidationFailed) || !strings.Contains(string(data), `Variable \"$filter.since\" got \"soon\": DateTime must be an RFC 3339 string`) {
		t.Errorf("event stream: %s %s", ev, data)
	}
}
