package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/tme"
)

// The large-list benchmarks: a 100-channel feed of 2,000 posts (each
// synthetic channel is a copy of tmefeed_news, 20 posts), through GraphQL
// and through POST /v1/feed, measured against one bare tokenizer pass over
// a 100 KB page. Run:
//
//	go test -run '^$' -bench 'Feed100|Tokenizer' -benchmem ./graph/

const benchFeedQuery = `query($channels: [String!]!) {
	feed(channels: $channels, first: 2000) {
		totalCount
		pageInfo { hasNextPage endCursor }
		edges { cursor node {
			score
			channel { username title }
			post { id messageId url date views edited text { plain html } media { kind url } reactions { emoji count } forwardedFrom { name url } }
		} }
	}
}`

// discard is a ResponseWriter that keeps only the status and size.
type discard struct {
	h      http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(s int)           { d.status = s }
func (d *discard) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }

type feedBench struct {
	env      *env
	gqlBody  []byte
	restBody []byte
	names    []string
	texts    *graph.Texts // shared by the handlers of handler; nil: each its own
}

func newFeedBench(b *testing.B) *feedBench {
	return newFeedBenchRefresh(b, 0)
}

func newFeedBenchRefresh(b *testing.B, refresh time.Duration) *feedBench {
	b.Helper()
	e := newEnv(b, envOptions{synthetic: 100, syntheticSource: "tmefeed_news", feedRefresh: refresh})
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("loadchan%03d", i+1)
	}
	gql, _ := json.Marshal(request{Query: benchFeedQuery, Variables: map[string]any{"channels": names}})
	rest, _ := json.Marshal(map[string]any{"channels": names})
	return &feedBench{env: e, gqlBody: gql, restBody: rest, names: names}
}

// serve sends one request straight to h and checks the answer's size.
func serve(b *testing.B, h http.Handler, path string, body []byte) int {
	req, _ := http.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := &discard{h: http.Header{}}
	h.ServeHTTP(w, req)
	if w.status != 0 && w.status != http.StatusOK || w.n < 1<<20 {
		b.Fatalf("%s: status %d, %d bytes", path, w.status, w.n)
	}
	return w.n
}

func BenchmarkTokenizerPass100KB(b *testing.B) {
	page, err := fs.ReadFile(fixtures.Pages(), "s/emoji_party.html")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		z := html.NewTokenizer(bytes.NewReader(page))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
				_, more := z.TagName()
				for more {
					_, _, more = z.TagAttr()
				}
			}
		}
	}
}

func benchWarm(b *testing.B, h http.Handler, path string, body []byte) {
	n := serve(b, h, path, body) // fetch, parse, build and render once
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, path, body)
	}
}

func BenchmarkFeed100GraphQLWarm(b *testing.B) {
	fb := newFeedBench(b)
	benchWarm(b, fb.env.srv.Config.Handler, "/graphql", fb.gqlBody)
}

func BenchmarkFeed100RESTWarm(b *testing.B) {
	fb := newFeedBench(b)
	benchWarm(b, fb.env.srv.Config.Handler, "/v1/feed", fb.restBody)
}

// The same query sent with GET: its answer is cacheable, so it also
// carries an ETag, a hash of the whole body.
func BenchmarkFeed100GraphQLWarmGET(b *testing.B) {
	fb := newFeedBench(b)
	var req request
	if err := json.Unmarshal(fb.gqlBody, &req); err != nil {
		b.Fatal(err)
	}
	vars, _ := json.Marshal(req.Variables)
	target := "/graphql?" + url.Values{"query": {req.Query}, "variables": {string(vars)}}.Encode()
	h := fb.env.srv.Config.Handler
	get := func() int {
		w := &discard{h: http.Header{}}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.status != http.StatusOK || w.n < 1<<20 || w.h.Get("ETag") == "" {
			b.Fatalf("GET: status %d, %d bytes, ETag %q", w.status, w.n, w.h.Get("ETag"))
		}
		return w.n
	}
	b.SetBytes(int64(get()))
	b.ReportAllocs()
	for b.Loop() {
		get()
	}
}

// The same query through gqlgen's executor, without the fast path.
func BenchmarkFeed100GraphQLWarmExecutor(b *testing.B) {
	fb := newFeedBench(b)
	h := fb.handler(b, true, nil)
	benchWarm(b, h, "/graphql", fb.gqlBody)
}

// handler returns a fresh stack over the env's warm cache: a new page
// service (empty decoded-page cache) and feed service (no builds kept).
func (fb *feedBench) handler(b *testing.B, noFastPath bool, ps *pages.Service) http.Handler {
	b.Helper()
	if ps == nil {
		ps = fb.env.pages
	}
	fs, err := feed.New(feed.Config{Pages: ps, Refresh: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	gh, err := graph.NewHandler(graph.HandlerConfig{Pages: ps, Feed: fs, DisableFastPath: noFastPath, Texts: fb.texts})
	if err != nil {
		b.Fatal(err)
	}
	return server.New(server.Config{Pages: ps, Feed: fs, GraphQL: gh})
}

// benchCold measures the feed with its pages in the cache but nothing
// parsed: every request tokenizes the 100 pages again, merges and renders.
func benchCold(b *testing.B, fb *feedBench, path string, body []byte) {
	serve(b, fb.env.srv.Config.Handler, path, body) // fill the page cache
	fetched := fb.env.origin.Total()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		b.StopTimer()
		ps := pages.New(pages.Config{Cache: fb.env.cache, Origin: failingOrigin{}})
		h := fb.handler(b, false, ps)
		b.StartTimer()
		n = serve(b, h, path, body)
	}
	b.SetBytes(int64(n))
	if fb.env.origin.Total() != fetched {
		b.Fatal("the cold runs reached the origin")
	}
}

// failingOrigin proves the cold runs are served from the page cache.
type failingOrigin struct{}

func (failingOrigin) Fetch(_ context.Context, r tme.Request) ([]byte, error) {
	return nil, fmt.Errorf("%s: %w", r.Path(), origin.ErrUpstream)
}

func BenchmarkFeed100GraphQLCold(b *testing.B) {
	fb := newFeedBench(b)
	benchCold(b, fb, "/graphql", fb.gqlBody)
}

func BenchmarkFeed100RESTCold(b *testing.B) {
	fb := newFeedBench(b)
	benchCold(b, fb, "/v1/feed", fb.restBody)
}

// benchRebuild measures the feed with its pages cached and parsed but no
// build kept: merge, rank and render, as after a page of the feed changed.
func benchRebuild(b *testing.B, fb *feedBench, path string, body []byte) {
	serve(b, fb.env.srv.Config.Handler, path, body) // fetch and parse once
	b.ReportAllocs()
	var n int
	for b.Loop() {
		b.StopTimer()
		h := fb.handler(b, false, nil)
		b.StartTimer()
		n = serve(b, h, path, body)
	}
	b.SetBytes(int64(n))
}

func BenchmarkFeed100GraphQLRebuild(b *testing.B) {
	fb := newFeedBench(b)
	benchRebuild(b, fb, "/graphql", fb.gqlBody)
}

// The same rebuild in a process that has written the feed before: its one
// handler keeps the sanitized HTML of the texts of the parses it wrote
// (graph.Texts), here shared by the handlers made for each rebuild.
func BenchmarkFeed100GraphQLRebuildKeptTexts(b *testing.B) {
	fb := newFeedBench(b)
	fb.texts = &graph.Texts{}
	serve(b, fb.handler(b, false, nil), "/graphql", fb.gqlBody) // fetch, parse and sanitize once
	benchRebuild(b, fb, "/graphql", fb.gqlBody)
}

func BenchmarkFeed100RESTRebuild(b *testing.B) {
	fb := newFeedBench(b)
	benchRebuild(b, fb, "/v1/feed", fb.restBody)
}

// Past the refresh window with the pages unchanged: the 100 pages are read
// from the cache again and hashed, and the kept build and its rendered
// bytes are reused.
func BenchmarkFeed100GraphQLRecheck(b *testing.B) {
	fb := newFeedBenchRefresh(b, time.Nanosecond)
	benchWarm(b, fb.env.srv.Config.Handler, "/graphql", fb.gqlBody)
	if fb.env.feed.Builds() != 1 {
		b.Fatalf("builds = %d, want 1", fb.env.feed.Builds())
	}
}

// A small cached GET: a 3-channel feed, the request tools/hitbench
// measures against a bare server. Its cost is the request path around a
// kept answer rather than the size of the answer.
func BenchmarkFeed3GraphQLWarmGET(b *testing.B) {
	e := newEnv(b, envOptions{})
	doc := `{ feed(channels: ["tmefeed_news", "kanal_novostei", "emoji_party"], first: 20) { totalCount edges { node { post { id text { plain } } } } } }`
	target := "/graphql?" + url.Values{"query": {doc}}.Encode()
	h := e.srv.Config.Handler
	req := httptest.NewRequest(http.MethodGet, target, nil)
	w := &discard{h: http.Header{}}
	get := func() int {
		clear(w.h)
		w.status, w.n = 0, 0
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n < 1000 || w.h.Get("ETag") == "" {
			b.Fatalf("GET: status %d, %d bytes, ETag %q", w.status, w.n, w.h.Get("ETag"))
		}
		return w.n
	}
	get()
	b.SetBytes(int64(get()))
	b.ReportAllocs()
	for b.Loop() {
		get()
	}
}
