package graph_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmefeed/tmefeed/graph"
)

// A body or URL parameter that is not exactly one JSON value is a JSON
// parsing failure, refused 400 under both media types; one of the wrong
// type says which key and what it must be.
func TestMalformedJSONRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	get := func(vars, ext string) string {
		v := url.Values{"query": {`{ __typename }`}}
		if vars != "" {
			v.Set("variables", vars)
		}
		if ext != "" {
			v.Set("extensions", ext)
		}
		return "/graphql?" + v.Encode()
	}
	for _, c := range []struct {
		name, method, target, body, want string
	}{
		{"text after the body", http.MethodPost, "/graphql", `{"query":"{ __typename }"} x`, "more follows"},
		{"two bodies", http.MethodPost, "/graphql", `{"query":"{ __typename }"}{"query":"{ x }"}`, "more follows"},
		{"text after variables", http.MethodGet, get(`{"a":1}x`, ""), "", "more follows"},
		{"text after extensions", http.MethodGet, get("", `{} {}`), "", "more follows"},
		{"query a number", http.MethodPost, "/graphql", `{"query":1}`, `"query" must be a string, not a number`},
		{"variables a string", http.MethodPost, "/graphql", `{"query":"{ __typename }","variables":"{}"}`, `"variables" must be an object, not a string`},
		{"body a boolean", http.MethodPost, "/graphql", `true`, "must be an object, not a boolean"},
		{"empty body", http.MethodPost, "/graphql", "", "the request has no query"},
		{"blank body", http.MethodPost, "/graphql", " \n", "the request has no query"},
		{"GET variables an array", http.MethodGet, get(`[1]`, ""), "", "must be an object, not an array"},
	} {
		for _, accept := range []string{acceptJSON, acceptResponse} {
			r := e.send(t, c.method, c.target, c.body, "Accept", accept, "Content-Type", "application/json")
			resp, hasData := r.parsed(t)
			if r.status != http.StatusBadRequest || hasData || !slices.Equal(resp.codes(), []string{graph.CodeBadRequest}) {
				t.Errorf("%s (%s): %d %s, want 400 BAD_REQUEST without data", c.name, accept, r.status, r.body)
				continue
			}
			if msg := resp.Errors[0].Message; !strings.Contains(msg, c.want) || strings.Contains(msg, "Go ") {
				t.Errorf("%s: message %q, want it to say %q", c.name, msg, c.want)
			}
		}
	}
	// Whitespace after the value is not more.
	if r := e.send(t, http.MethodPost, "/graphql", "{\"query\":\"{ __typename }\"}\n \t", "Content-Type", "application/json"); r.status != http.StatusOK {
		t.Errorf("trailing whitespace: %d %s", r.status, r.body)
	}
}

// Answers echo what the request holds (a name in failedChannels or a
// preview result), so a request that is not UTF-8 is refused rather than
// answered with bytes that are not UTF-8, or changed unseen.
func TestRequestsMustBeUTF8(t *testing.T) {
	e := newEnv(t, envOptions{})
	q := `{ previews(usernames: ["ab` + "\xff" + `cd"]) { username } }`
	for _, c := range []struct{ name, method, target, body string }{
		{"GET query", http.MethodGet, "/graphql?query=" + url.QueryEscape(q), ""},
		{"GET variables", http.MethodGet, "/graphql?query=" + url.QueryEscape(`query($n: [String!]!) { previews(usernames: $n) { username } }`) + "&variables=" + url.QueryEscape(`{"n":["ab`+"\xff"+`cd"]}`), ""},
		{"POST body", http.MethodPost, "/graphql", `{"query":"{ previews(usernames: [\"ab` + "\xff" + `cd\"]) { username } }"}`},
	} {
		for _, accept := range []string{acceptJSON, acceptResponse} {
			r := e.send(t, c.method, c.target, c.body, "Accept", accept, "Content-Type", "application/json")
			if !utf8.Valid(r.body) {
				t.Errorf("%s (%s): the answer is not UTF-8: %q", c.name, accept, r.body)
			}
			resp, hasData := r.parsed(t)
			if r.status != http.StatusBadRequest || hasData || !slices.Equal(resp.codes(), []string{graph.CodeBadRequest}) {
				t.Errorf("%s (%s): %d %q, want 400 BAD_REQUEST", c.name, accept, r.status, r.body)
			}
		}
	}
}

// A range (application/*, */*) covers the GraphQL response type too: a
// client that refuses JSON but accepts the range gets that type, not 406.
// The range alone still means JSON.
func TestAcceptRangeCoversResponseType(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, c := range []struct{ accept, want string }{
		{acceptJSON + ";q=0, application/*", acceptResponse},
		{acceptJSON + ";q=0, */*;q=0.1", acceptResponse},
		{"application/*;q=0.5, " + acceptJSON + ";q=0", acceptResponse},
		{"application/*", acceptJSON},
		{"*/*", acceptJSON},
		{acceptResponse + ";q=0, application/*", acceptJSON},
	} {
		r := e.send(t, http.MethodPost, "/graphql", `{"query":"{ __typename }"}`, "Content-Type", "application/json", "Accept", c.accept)
		if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || !strings.HasPrefix(ct, c.want+";") {
			t.Errorf("Accept %q: %d %q, want 200 %s", c.accept, r.status, ct, c.want)
		}
	}
}
