package graph_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph"
)

// reply is one HTTP answer, as sent.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send sends one request over loopback with the given headers, name and
// value pairs.
func (e *env) send(t *testing.T, method, target, body string, header ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+target, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// parsed decodes a GraphQL answer, noting whether it has a data entry.
func (r reply) parsed(t *testing.T) (resp response, hasData bool) {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &keys); err != nil {
		t.Fatalf("%d %q: body is not a JSON object: %v", r.status, r.body, err)
	}
	if err := json.Unmarshal(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	_, hasData = keys["data"]
	return resp, hasData
}

func getURL(q string, vars map[string]any, ext map[string]any) string {
	v := url.Values{}
	if q != "" {
		v.Set("query", q)
	}
	if vars != nil {
		b, _ := json.Marshal(vars)
		v.Set("variables", string(b))
	}
	if ext != nil {
		b, _ := json.Marshal(ext)
		v.Set("extensions", string(b))
	}
	return "/graphql?" + v.Encode()
}

func postBody(q string, vars map[string]any, ext map[string]any) string {
	b, _ := json.Marshal(map[string]any{"query": q, "variables": vars, "extensions": ext})
	return string(b)
}

func apqExt(q string) map[string]any {
	sum := sha256.Sum256([]byte(q))
	return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
}

const (
	acceptJSON     = "application/json"
	acceptResponse = "application/graphql-response+json"
)

// The status rules of the GraphQL-over-HTTP draft, for both media types:
// with application/json every well-formed request is answered 200, errors
// in the body; with application/graphql-response+json an answer without
// data is 4xx. Request errors never carry a data entry; field errors do.
func TestSpecStatusRules(t *testing.T) {
	e := newEnv(t, envOptions{})
	twoOps := `query Feed { __typename } query Channel { __typename }`
	var manyAliases strings.Builder
	for i := range 40 {
		manyAliases.WriteString("a" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": __typename ")
	}
	intVar := `query($first: Int) { feed(channels: ["tmefeed_news"], first: $first) { totalCount } }`
	cases := []struct {
		name       string
		body       string // a POST body
		jsonStatus int    // with Accept: application/json
		respStatus int    // with Accept: application/graphql-response+json
		code       string // "" for an answer with data and no errors
		data       bool   // the answer has a data entry
		message    string // the first error's message holds it
	}{
		{name: "success", body: postBody(`{ __typename }`, nil, nil), jsonStatus: 200, respStatus: 200, data: true},
		{name: "field error", body: postBody(`{ channel(username: "nobody_at_all_here") { title } }`, nil, nil), jsonStatus: 200, respStatus: 200, code: graph.CodeNotFound, data: true},
		{name: "bad argument", body: postBody(`{ channel(username: "a!") { title } }`, nil, nil), jsonStatus: 200, respStatus: 200, code: graph.CodeBadUserInput, data: true},
		{name: "parse error", body: postBody(`{ channel(`, nil, nil), jsonStatus: 200, respStatus: 400, code: graph.CodeParseFailed},
		{name: "validation error", body: postBody(`{ nope }`, nil, nil), jsonStatus: 200, respStatus: 400, code: graph.CodeValidationFailed},
		{name: "variable coercion", body: `{"query":` + quote(intVar) + `,"variables":{"first":1e40}}`, jsonStatus: 200, respStatus: 400, code: graph.CodeValidationFailed,
			message: `Variable "$first" got 1e40: Int must be a whole number between -2^31 and 2^31-1`},
		{name: "variable of the wrong type", body: postBody(intVar, map[string]any{"first": "ten"}, nil), jsonStatus: 200, respStatus: 400, code: graph.CodeValidationFailed,
			message: `Variable "$first" got "ten": Int must be a whole number`},
		{name: "enum variable", body: postBody(`query($o: FeedOrder) { feed(channels: ["tmefeed_news"], order: $o) { totalCount } }`, map[string]any{"o": "OLDEST"}, nil), jsonStatus: 200, respStatus: 400, code: graph.CodeValidationFailed,
			message: `Variable "$o" got "OLDEST": FeedOrder must be one of `},
		{name: "required variable missing", body: postBody(`query($c: [String!]!) { feed(channels: $c) { totalCount } }`, nil, nil), jsonStatus: 200, respStatus: 400, code: graph.CodeValidationFailed,
			message: `Variable "$c" of type [String!]! was not given`},
		{name: "operation not determined", body: postBody(twoOps, nil, nil), jsonStatus: 200, respStatus: 400, code: graph.CodeValidationFailed,
			message: "operationName is required when the document has 2 operations (Feed, Channel)"},
		{name: "unknown operation", body: `{"query":` + quote(twoOps) + `,"operationName":"Posts"}`, jsonStatus: 200, respStatus: 400, code: graph.CodeValidationFailed,
			message: `operationName "Posts" names no operation of the document; it has Feed, Channel`},
		{name: "complexity", body: postBody("{"+manyAliases.String()+"}", nil, nil), jsonStatus: 200, respStatus: 400, code: graph.CodeComplexity},
		{name: "persisted query not known", body: postBody("", nil, apqExt(`{ __typename __typename }`)), jsonStatus: 200, respStatus: 400, code: graph.CodePersistedQueryNotFound},
		{name: "body not JSON", body: `{"query": `, jsonStatus: 400, respStatus: 400, code: graph.CodeBadRequest},
		{name: "no query", body: `{"qeury": "{ __typename }"}`, jsonStatus: 400, respStatus: 400, code: graph.CodeBadRequest, message: "no query"},
		{name: "query not a string", body: `{"query": 42}`, jsonStatus: 400, respStatus: 400, code: graph.CodeBadRequest},
		{name: "persisted query hash mismatch", body: postBody(`{ __typename }`, nil, apqExt(`{ other }`)), jsonStatus: 400, respStatus: 400, code: graph.CodeBadRequest},
	}
	for _, c := range cases {
		for _, accept := range []string{acceptJSON, acceptResponse} {
			r := e.send(t, http.MethodPost, "/graphql", c.body, "Content-Type", "application/json", "Accept", accept)
			resp, hasData := r.parsed(t)
			want := c.jsonStatus
			if accept == acceptResponse {
				want = c.respStatus
			}
			if r.status != want {
				t.Errorf("%s, %s: status %d, want %d; %s", c.name, accept, r.status, want, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, accept+";") {
				t.Errorf("%s, %s: Content-Type %q", c.name, accept, ct)
			}
			if hasData != c.data {
				t.Errorf("%s, %s: data entry %v, want %v; %s", c.name, accept, hasData, c.data, r.body)
			}
			switch {
			case c.code == "" && len(resp.Errors) > 0:
				t.Errorf("%s, %s: errors %+v", c.name, accept, resp.Errors)
			case c.code != "" && !slices.Equal(resp.codes(), []string{c.code}):
				t.Errorf("%s, %s: codes %v, want %s; %s", c.name, accept, resp.codes(), c.code, r.body)
			case c.message != "" && !strings.Contains(resp.Errors[0].Message, c.message):
				t.Errorf("%s, %s: message %q does not say %q", c.name, accept, resp.Errors[0].Message, c.message)
			}
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The response media type follows Accept: the GraphQL response type when
// named and weighed at least as much as JSON, JSON for legacy clients and
// wildcards, 406 when neither is acceptable.
func TestAcceptNegotiation(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, c := range []struct {
		accept string
		want   string // Content-Type prefix; "" for 406
	}{
		{"", acceptJSON},
		{"*/*", acceptJSON},
		{"application/*", acceptJSON},
		{"text/html,application/xhtml+xml,*/*;q=0.8", acceptJSON},
		{acceptJSON, acceptJSON},
		{acceptResponse, acceptResponse},
		{acceptResponse + ", " + acceptJSON + ";q=0.9", acceptResponse},
		{acceptJSON + ", " + acceptResponse, acceptResponse},
		{acceptJSON + ", " + acceptResponse + ";q=0.5", acceptJSON},
		{acceptResponse + ";q=0, " + acceptJSON, acceptJSON},
		{acceptResponse + "; charset=utf-8", acceptResponse},
		{"text/html", ""},
		{acceptJSON + ";q=0", ""},
		{"application/xml, text/plain", ""},
	} {
		r := e.send(t, http.MethodPost, "/graphql", `{"query":"{ __typename }"}`, "Content-Type", "application/json", "Accept", c.accept)
		resp, _ := r.parsed(t)
		ct := r.header.Get("Content-Type")
		if c.want == "" {
			if r.status != http.StatusNotAcceptable || !slices.Equal(resp.codes(), []string{graph.CodeNotAcceptable}) || !strings.HasPrefix(ct, acceptJSON) {
				t.Errorf("Accept %q: %d %q %s, want 406 NOT_ACCEPTABLE in JSON", c.accept, r.status, ct, r.body)
			}
			continue
		}
		if r.status != http.StatusOK || !strings.HasPrefix(ct, c.want+";") || !strings.Contains(ct, "charset=utf-8") {
			t.Errorf("Accept %q: %d %q, want 200 %s", c.accept, r.status, ct, c.want)
		}
		if !slices.Contains(r.header.Values("Vary"), "Accept") {
			t.Errorf("Accept %q: Vary %q", c.accept, r.header.Values("Vary"))
		}
	}
}

// What no transport serves is refused with a GraphQL error and a code,
// by the server and by the handler mounted alone.
func TestHTTPRefusals(t *testing.T) {
	e := newEnv(t, envOptions{})
	alone := httptestServer(t, e.gql)
	query := `{"query":"{ __typename }"}`
	for _, c := range []struct {
		name, method, target, body string
		header                     []string
		status                     int
		code                       string
		allow                      string
	}{
		{name: "DELETE", method: http.MethodDelete, target: "/graphql", status: 405, code: graph.CodeMethodNotAllowed, allow: "GET, HEAD, POST"},
		{name: "PUT", method: http.MethodPut, target: "/graphql", body: query, header: []string{"Content-Type", "application/json"}, status: 405, code: graph.CodeMethodNotAllowed, allow: "GET, HEAD, POST"},
		{name: "OPTIONS without CORS", method: http.MethodOptions, target: "/graphql", status: 405, code: graph.CodeMethodNotAllowed, allow: "GET, HEAD, POST"},
		{name: "GET mutation", method: http.MethodGet, target: getURL(`mutation { post(channel: "x", messageId: 1) { id } }`, nil, nil), status: 405, code: graph.CodeMethodNotAllowed, allow: "POST"},
		{name: "GET named mutation among queries", method: http.MethodGet, target: getURL(`query Q { __typename } mutation M { x }`, nil, nil) + "&operationName=M", status: 405, code: graph.CodeMethodNotAllowed, allow: "POST"},
		{name: "GET subscription", method: http.MethodGet, target: getURL(`subscription { feed }`, nil, nil), status: 405, code: graph.CodeMethodNotAllowed, allow: "POST"},
		{name: "application/graphql", method: http.MethodPost, target: "/graphql", body: `{ __typename }`, header: []string{"Content-Type", "application/graphql"}, status: 415, code: graph.CodeUnsupportedMediaType},
		{name: "text/plain", method: http.MethodPost, target: "/graphql", body: query, header: []string{"Content-Type", "text/plain"}, status: 415, code: graph.CodeUnsupportedMediaType},
		{name: "form", method: http.MethodPost, target: "/graphql", body: "query=%7B__typename%7D", header: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 415, code: graph.CodeUnsupportedMediaType},
		{name: "no Content-Type", method: http.MethodPost, target: "/graphql", body: query, status: 415, code: graph.CodeUnsupportedMediaType},
		{name: "Latin-1", method: http.MethodPost, target: "/graphql", body: query, header: []string{"Content-Type", "application/json; charset=iso-8859-1"}, status: 415, code: graph.CodeUnsupportedMediaType},
		{name: "gzip", method: http.MethodPost, target: "/graphql", body: query, header: []string{"Content-Type", "application/json", "Content-Encoding", "gzip"}, status: 415, code: graph.CodeUnsupportedMediaType},
		{name: "WebSocket upgrade where no subscriptions are served", method: http.MethodGet, target: "/graphql", header: []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, status: 400, code: graph.CodeBadRequest},
		{name: "GET without a query", method: http.MethodGet, target: "/graphql", status: 400, code: graph.CodeBadRequest},
		{name: "JSON with charset", method: http.MethodPost, target: "/graphql", body: query, header: []string{"Content-Type", "application/json; charset=UTF-8"}, status: 200},
	} {
		for _, srv := range []struct {
			name string
			send func(t *testing.T, method, target, body string, header ...string) reply
		}{{"server", e.send}, {"handler alone", (&env{srv: alone}).send}} {
			for _, accept := range []string{acceptJSON, acceptResponse} {
				r := srv.send(t, c.method, c.target, c.body, append([]string{"Accept", accept}, c.header...)...)
				resp, hasData := r.parsed(t)
				if r.status != c.status {
					t.Errorf("%s (%s, %s): status %d, want %d; %s", c.name, srv.name, accept, r.status, c.status, r.body)
					continue
				}
				if c.code == "" {
					continue
				}
				if hasData || !slices.Equal(resp.codes(), []string{c.code}) || resp.Errors[0].Message == "" {
					t.Errorf("%s (%s, %s): %s, want one %s and no data", c.name, srv.name, accept, r.body, c.code)
				}
				if got := r.header.Get("Allow"); got != c.allow {
					t.Errorf("%s (%s): Allow %q, want %q", c.name, srv.name, got, c.allow)
				}
				if cc := r.header.Get("Cache-Control"); cc != "no-store" {
					t.Errorf("%s (%s): Cache-Control %q", c.name, srv.name, cc)
				}
			}
		}
	}
	// HEAD is a GET without the body.
	r := e.send(t, http.MethodHead, getURL(`{ __typename }`, nil, nil), "")
	if r.status != http.StatusOK || len(r.body) != 0 || r.header.Get("ETag") == "" {
		t.Errorf("HEAD: %d %q, ETag %q", r.status, r.body, r.header.Get("ETag"))
	}
}

// The request-level codes, each from a request that causes it (the
// resolvers' codes are TestErrorCodes').
func TestRequestErrorCodes(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, c := range []struct {
		code           string
		method, target string
		body           string
		header         []string
	}{
		{graph.CodeParseFailed, http.MethodGet, getURL(`{`, nil, nil), "", nil},
		{graph.CodeValidationFailed, http.MethodGet, getURL(`{ nope }`, nil, nil), "", nil},
		{graph.CodeComplexity, http.MethodGet, getURL(`{ `+strings.Repeat(`channel(username: "tmefeed_news") { title } `, 11)+`}`, nil, nil), "", nil},
		{graph.CodePersistedQueryNotFound, http.MethodGet, getURL("", nil, apqExt(`{ __typename title }`)), "", nil},
		{graph.CodeBadRequest, http.MethodPost, "/graphql", `[{"query":"{ __typename }"}]`, []string{"Content-Type", "application/json"}},
		{graph.CodeMethodNotAllowed, http.MethodPatch, "/graphql", "", nil},
		{graph.CodeNotAcceptable, http.MethodGet, getURL(`{ __typename }`, nil, nil), "", []string{"Accept", "image/png"}},
		{graph.CodeRequestTooLarge, http.MethodGet, "/graphql?query=" + strings.Repeat("%20", 70<<10) + "%7B__typename%7D", "", nil},
		{graph.CodeRequestTooLarge, http.MethodPost, "/graphql", `{"query":"{ __typename }","x":"` + strings.Repeat("a", 70<<10) + `"}`, []string{"Content-Type", "application/json"}},
		{graph.CodeUnsupportedMediaType, http.MethodPost, "/graphql", `{ __typename }`, []string{"Content-Type", "application/graphql"}},
	} {
		r := e.send(t, c.method, c.target, c.body, c.header...)
		if resp, _ := r.parsed(t); !slices.Equal(resp.codes(), []string{c.code}) {
			t.Errorf("%s: %d %.300s", c.code, r.status, r.body)
		}
	}
}

// docs/API.md and the schema's description list the same codes: every
// code the server sends.
func TestErrorCodesDocumented(t *testing.T) {
	all := []string{
		graph.CodeBadUserInput, graph.CodeNotFound, graph.CodeUpstreamUnavailable, graph.CodeRateLimited,
		graph.CodeComplexity, graph.CodeInternal, graph.CodeParseFailed, graph.CodeValidationFailed,
		graph.CodePersistedQueryNotFound, graph.CodeBadRequest, graph.CodeMethodNotAllowed,
		graph.CodeNotAcceptable, graph.CodeRequestTooLarge, graph.CodeUnsupportedMediaType,
		graph.CodeSlowSubscriber, graph.CodeShuttingDown, graph.CodeForbidden, graph.CodeUnauthenticated,
	}
	slices.Sort(all)
	codeRow := regexp.MustCompile("(?m)^\\|[^|`\\n]*\\| *`([A-Z_]+)` *\\|")
	for _, doc := range []struct{ file, start, end string }{
		{"../docs/API.md", "### GraphQL errors", "\n## "},
		{"schema.graphqls", "Error codes", "\"\"\""},
	} {
		b, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, doc.start)
		if i < 0 {
			t.Fatalf("%s: no %q", doc.file, doc.start)
		}
		s = s[i:]
		if j := strings.Index(s[len(doc.start):], doc.end); j >= 0 {
			s = s[:len(doc.start)+j]
		}
		var got []string
		for _, m := range codeRow.FindAllStringSubmatch(s, -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		if !slices.Equal(got, all) {
			t.Errorf("%s lists %v, want %v", doc.file, got, all)
		}
	}
}

// clock is a settable clock for the cache, the feeds and the handler.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// maxAge reads max-age from a Cache-Control header; -1 when absent.
func maxAge(t *testing.T, cc string) int {
	t.Helper()
	m := regexp.MustCompile(`^public, max-age=([0-9]+), stale-while-revalidate=3600$`).FindStringSubmatch(cc)
	if m == nil {
		return -1
	}
	n := 0
	for _, d := range m[1] {
		n = n*10 + int(d-'0')
	}
	return n
}

// GET answers may be cached until the oldest page they read reaches its
// refresh point (an hour here); If-None-Match saves sending them again;
// POST answers and errors are never cached.
func TestGETCaching(t *testing.T) {
	for _, fast := range []bool{true, false} {
		clk := newClock()
		e := newEnv(t, envOptions{now: clk.now, disableFastPath: !fast})
		for _, q := range []string{
			`{ channel(username: "tmefeed_news") { title posts(first: 3) { edges { node { messageId } } } } }`,
			`{ feed(channels: ["tmefeed_news", "kanal_novostei"], first: 5) { totalCount edges { cursor } } }`,
		} {
			name := q[:12]
			target := getURL(q, nil, nil)
			first := e.send(t, http.MethodGet, target, "")
			etag := first.header.Get("ETag")
			if first.status != 200 || maxAge(t, first.header.Get("Cache-Control")) != 3600 || !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) {
				t.Fatalf("%s (fast %v): %d Cache-Control %q ETag %q; %.200s", name, fast, first.status, first.header.Get("Cache-Control"), etag, first.body)
			}
			if !slices.Contains(first.header.Values("Vary"), "Accept") {
				t.Errorf("%s: Vary %q", name, first.header.Values("Vary"))
			}
			// Revalidation: the same answer is not sent again.
			for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
				r := e.send(t, http.MethodGet, target, "", "If-None-Match", inm)
				if r.status != http.StatusNotModified || len(r.body) != 0 || r.header.Get("ETag") != etag || maxAge(t, r.header.Get("Cache-Control")) < 0 {
					t.Errorf("%s: If-None-Match %s: %d %q %q", name, inm, r.status, r.header.Get("ETag"), r.header.Get("Cache-Control"))
				}
			}
			if r := e.send(t, http.MethodGet, target, "", "If-None-Match", `"other"`); r.status != 200 || !bytes.Equal(r.body, first.body) {
				t.Errorf("%s: another ETag: %d", name, r.status)
			}
			// The other media type is another representation.
			if r := e.send(t, http.MethodGet, target, "", "Accept", acceptResponse, "If-None-Match", etag); r.status != 200 || r.header.Get("ETag") == etag {
				t.Errorf("%s: graphql-response+json: %d ETag %q, want 200 and another ETag", name, r.status, r.header.Get("ETag"))
			}
			// POST: never cached.
			if r := e.send(t, http.MethodPost, "/graphql", postBody(q, nil, nil), "Content-Type", "application/json", "If-None-Match", etag); r.status != 200 || r.header.Get("Cache-Control") != "no-store" || r.header.Get("ETag") != "" {
				t.Errorf("%s: POST: %d %q %q", name, r.status, r.header.Get("Cache-Control"), r.header.Get("ETag"))
			}
		}

		// max-age shrinks as the pages age, and the answer keeps its ETag.
		target := getURL(`{ feed(channels: ["tmefeed_news", "kanal_novostei"], first: 5) { totalCount edges { cursor } } }`, nil, nil)
		etag := e.send(t, http.MethodGet, target, "").header.Get("ETag")
		clk.advance(10 * time.Minute)
		r := e.send(t, http.MethodGet, target, "")
		if got := maxAge(t, r.header.Get("Cache-Control")); got != 3000 || r.header.Get("ETag") != etag {
			t.Errorf("fast %v: 10 min later: max-age %d (%q) ETag %q, want 3000 and %q", fast, got, r.header.Get("Cache-Control"), r.header.Get("ETag"), etag)
		}
		// A page read later does not extend the answer's life: the oldest
		// page decides.
		mixed := getURL(`{ a: channel(username: "tmefeed_news") { title } b: channel(username: "emoji_party") { title } }`, nil, nil)
		if got := maxAge(t, e.send(t, http.MethodGet, mixed, "").header.Get("Cache-Control")); got != 3000 {
			t.Errorf("fast %v: a fresh and a 10-minute-old page: max-age %d, want 3000", fast, got)
		}
		clk.advance(50*time.Minute + time.Second)
		// Past the refresh point the copy is served stale (and refreshed
		// behind it): not to be kept.
		r = e.send(t, http.MethodGet, getURL(`{ channel(username: "tmefeed_news") { title } }`, nil, nil), "")
		if got := maxAge(t, r.header.Get("Cache-Control")); r.status != 200 || got != 0 {
			t.Errorf("fast %v: stale page: %d Cache-Control %q, want max-age=0", fast, r.status, r.header.Get("Cache-Control"))
		}
	}
}

// Persisted queries sent by hash alone are cached as plain GETs are.
func TestPersistedGETCaching(t *testing.T) {
	e := newEnv(t, envOptions{})
	q := `{ channel(username: "tmefeed_news") { title } }`
	ext := apqExt(q)
	if r := e.send(t, http.MethodPost, "/graphql", postBody(q, nil, ext), "Content-Type", "application/json"); r.status != 200 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("registering: %d %q", r.status, r.header.Get("Cache-Control"))
	}
	target := getURL("", nil, ext)
	r := e.send(t, http.MethodGet, target, "")
	etag := r.header.Get("ETag")
	if r.status != 200 || etag == "" || maxAge(t, r.header.Get("Cache-Control")) <= 0 {
		t.Fatalf("by hash: %d %q %q %s", r.status, r.header.Get("Cache-Control"), etag, r.body)
	}
	if plain := e.send(t, http.MethodGet, getURL(q, nil, nil), ""); plain.header.Get("ETag") != etag {
		t.Errorf("the same answer by query text has ETag %q, by hash %q", plain.header.Get("ETag"), etag)
	}
	if r := e.send(t, http.MethodGet, target, "", "If-None-Match", etag); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("by hash, If-None-Match: %d %q", r.status, r.body)
	}
}

// Answers with errors, or built from reads that failed for a reason that
// may pass, are not cached; failures that last (an unknown name) are.
func TestGETCachingFailures(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.origin.SetFault("/s/emoji_party", fixtures.Fault{Status: http.StatusServiceUnavailable})
	e.origin.SetFault("/emoji_party", fixtures.Fault{Status: http.StatusServiceUnavailable})
	for _, c := range []struct {
		name, query string
		holds       string // the answer holds it
		cacheable   bool
	}{
		{"field error", `{ channel(username: "nobody_at_all_here") { title } }`, "NOT_FOUND", false},
		{"request error", `{ nope }`, "GRAPHQL_VALIDATION_FAILED", false},
		{"feed with a channel failing upstream", `{ feed(channels: ["tmefeed_news", "emoji_party"]) { totalCount failedChannels { code } } }`, "UPSTREAM_UNAVAILABLE", false},
		{"preview failing upstream", `{ previews(usernames: ["tmefeed_news", "emoji_party"]) { username error { code } } }`, "UPSTREAM_UNAVAILABLE", false},
		{"feed with an unknown channel", `{ feed(channels: ["tmefeed_news", "nobody_at_all_here"]) { totalCount failedChannels { code } } }`, "NOT_FOUND", true},
		{"preview of an unknown channel", `{ previews(usernames: ["nobody_at_all_here"]) { username error { code } } }`, "NOT_FOUND", true},
		{"node", `{ node(id: "` + nodeID(t, e, `{ channel(username: "tmefeed_news") { posts(first: 1) { edges { node { id } } } } }`) + `") { id } }`, `"id":`, true},
	} {
		r := e.send(t, http.MethodGet, getURL(c.query, nil, nil), "")
		if !strings.Contains(string(r.body), c.holds) {
			t.Errorf("%s: %.300s, want it to hold %s", c.name, r.body, c.holds)
		}
		cc := r.header.Get("Cache-Control")
		if c.cacheable && (maxAge(t, cc) <= 0 || r.header.Get("ETag") == "") {
			t.Errorf("%s: Cache-Control %q ETag %q, want cacheable; %.200s", c.name, cc, r.header.Get("ETag"), r.body)
		}
		if !c.cacheable && (cc != "no-store" || r.header.Get("ETag") != "") {
			t.Errorf("%s: Cache-Control %q ETag %q, want no-store; %.200s", c.name, cc, r.header.Get("ETag"), r.body)
		}
	}
}

// nodeID returns the first id a query's answer holds.
func nodeID(t *testing.T, e *env, q string) string {
	t.Helper()
	m := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(string(e.query(t, q, nil).Data))
	if m == nil {
		t.Fatal("no id")
	}
	return m[1]
}
