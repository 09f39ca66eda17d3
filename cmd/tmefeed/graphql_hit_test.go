package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

var dashboardVariables = map[string]any{"channels": []string{"tmefeed_news", "kanal_novostei", "emoji_party"}, "first": 20}

// rewindBody is a request body read again for every request of a
// benchmark, without allocating.
type rewindBody struct{ bytes.Reader }

func (*rewindBody) Close() error { return nil }

// dashboardRequests are the dashboard query as a POST (with its body to
// rewind before each use) and as a GET.
func dashboardRequests(tb testing.TB) (post *http.Request, body *rewindBody, raw []byte, get *http.Request) {
	tb.Helper()
	raw, err := json.Marshal(map[string]any{"query": dashboardQuery, "operationName": "Dashboard", "variables": dashboardVariables})
	if err != nil {
		tb.Fatal(err)
	}
	vars, _ := json.Marshal(dashboardVariables)
	body = &rewindBody{}
	body.Reset(raw)
	post = httptest.NewRequest(http.MethodPost, "/graphql", nil)
	post.Body, post.ContentLength = body, int64(len(raw))
	post.Header.Set("Content-Type", "application/json")
	q := url.Values{"query": {dashboardQuery}, "operationName": {"Dashboard"}, "variables": {string(vars)}}
	get = httptest.NewRequest(http.MethodGet, "/graphql?"+q.Encode(), nil)
	return post, body, raw, get
}

// The allocations of a repeated dashboard query through everything
// `tmefeed serve` puts on its path (Go 1.26), none of them the GraphQL
// handler's: the request's context and its copy of the request; a POST
// also the body limit's reader and its wrapper. The status-keeping
// ResponseWriter is part of the request's context since (one less). A
// kept answer is served before the compression middleware
// (it keeps its compressed forms), which cost two more, its writer and
// the Vary value it added. Before answers were kept under their requests,
// the same hit went through gqlgen and allocated about 170 times
// (docs/PERFORMANCE.md).
const (
	graphQLGetHitAllocs  = 2
	graphQLPostHitAllocs = 4
)

// TestGraphQLHitAllocations pins the allocations of a repeated GraphQL
// query, as server's TestBodyHitAllocations pins those of /v1/body: POST,
// GET and compressed alike. Counted, not timed.
func TestGraphQLHitAllocations(t *testing.T) {
	st := newServeStack(t)
	post, body, raw, get := dashboardRequests(t)
	for _, c := range []struct {
		name   string
		req    *http.Request
		ae     string
		budget int
	}{
		{"POST", post, "", graphQLPostHitAllocs},
		{"GET", get, "", graphQLGetHitAllocs},
		{"GET, gzip", get, "gzip", graphQLGetHitAllocs},
		{"POST, zstd", post, "zstd", graphQLPostHitAllocs},
	} {
		c.req.Header.Del("Accept-Encoding")
		if c.ae != "" {
			c.req.Header.Set("Accept-Encoding", c.ae)
		}
		w := &discardWriter{h: http.Header{}}
		serve := func() {
			clear(w.h)
			w.status, w.n = 0, 0
			body.Reset(raw)
			st.handler.ServeHTTP(w, c.req)
			if w.status != http.StatusOK || w.h.Get("Content-Encoding") != c.ae {
				t.Fatalf("%s: status %d, Content-Encoding %q", c.name, w.status, w.h.Get("Content-Encoding"))
			}
		}
		serve() // the miss, which keeps the answer
		serve()
		if c.ae == "" && w.n < 20_000 {
			t.Fatalf("%s: a %d-byte answer, want the whole dashboard", c.name, w.n)
		}
		got := testing.AllocsPerRun(200, serve)
		t.Logf("cached %s /graphql dashboard: %.1f allocations", c.name, got)
		budget := float64(c.budget)
		if raceEnabled {
			budget += 4 // the race detector's instrumentation allocates a little on its own
		}
		if got > budget {
			t.Errorf("cached %s /graphql dashboard: %.1f allocations, budget %d", c.name, got, c.budget)
		}
	}
}

// BenchmarkServeGraphQLHit is BenchmarkServeBodyHit for the dashboard
// query over POST and GET.
func BenchmarkServeGraphQLHit(b *testing.B) {
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		b.Run(method, func(b *testing.B) {
			st := newServeStack(b)
			post, body, raw, get := dashboardRequests(b)
			req := get
			if method == http.MethodPost {
				req = post
			}
			w := &discardWriter{h: http.Header{}}
			serve := func() {
				clear(w.h)
				w.status, w.n = 0, 0
				body.Reset(raw)
				st.handler.ServeHTTP(w, req)
			}
			serve()
			serve()
			size := w.n
			if w.status != http.StatusOK {
				b.Fatalf("warm-up: status %d", w.status)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				serve()
				if w.status != http.StatusOK || w.n != size {
					b.Fatalf("status %d, %d bytes", w.status, w.n)
				}
			}
		})
	}
}
