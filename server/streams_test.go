package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/graph"
)

// streamingGraphQL stands in for the GraphQL handler: a POST accepting an
// event stream is answered with a stream held open until the client goes;
// X-Test-Panic makes it panic; anything else is a one-line answer. It tells
// its streams as the real handler does (graph.IsStream).
type streamingGraphQL struct{}

func (streamingGraphQL) IsStream(r *http.Request) bool { return graph.IsStream(r) }

func (streamingGraphQL) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Test-Panic") != "" {
		panic("the stream's handler failed")
	}
	if r.Method == http.MethodPost && strings.Contains(r.Header.Get("Accept"), "text/event-stream;q=1") {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"data":{"__typename":"Query"}}`)
}

// postGraphQL sends a POST /graphql with Accept accept; the answer's body
// is read unless it is an event stream, which stays open with ctx.
func postGraphQL(t *testing.T, ctx context.Context, base, accept string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", strings.NewReader(`{"query":"subscription { feedUpdates(channels: [\"a\"]) { kind } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, nil
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// A stream is counted until its handler returns, however it ends: a
// stream whose handler panicked, or whose client went away, gives its
// place back. A request that does not ask for a stream (q=0 declines
// one) is served while the client is at its bound.
func TestStreamLimitGivenBackAfterPanicAndClientGone(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, graphQL: streamingGraphQL{}, streams: 1})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const stream = "text/event-stream;q=1"

	if resp, b := postGraphQL(t, ctx, srv.URL, stream, "X-Test-Panic", "1"); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("a panicking stream: status %d: %s", resp.StatusCode, b)
	}
	first, cancelFirst := context.WithCancel(ctx)
	if resp, b := postGraphQL(t, first, srv.URL, stream); resp.StatusCode != http.StatusOK || b != nil {
		t.Fatalf("a stream after the panicked one: status %d: %s", resp.StatusCode, b)
	}
	resp, b := postGraphQL(t, ctx, srv.URL, "TEXT/Event-Stream")
	wantGraphQLError(t, resp.StatusCode, resp.Header, b, http.StatusTooManyRequests, "RATE_LIMITED")
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 10 {
		t.Errorf("Retry-After %q, want a few seconds", resp.Header.Get("Retry-After"))
	}
	for _, accept := range []string{"application/json", "application/json, text/event-stream;q=0"} {
		if resp, b := postGraphQL(t, ctx, srv.URL, accept); resp.StatusCode != http.StatusOK {
			t.Errorf("Accept %q while at the bound: status %d: %s", accept, resp.StatusCode, b)
		}
	}

	cancelFirst() // the client goes away
	for {
		resp, b := postGraphQL(t, ctx, srv.URL, stream)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusTooManyRequests || ctx.Err() != nil {
			t.Fatalf("after the client went away: status %d: %s", resp.StatusCode, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The bound costs ordinary GraphQL requests nothing: a query through it
// allocates as much as without it (the client's key is made for stream
// requests only).
func TestStreamLimitAllocatesNothingForQueries(t *testing.T) {
	allocs := func(streams int, method, accept string) float64 {
		e := newEnv(t, envOptions{refresh: hitRefresh, graphQL: streamingGraphQL{}, streams: streams})
		target, body := "/graphql?query=%7B__typename%7D", ""
		if method == http.MethodPost {
			target, body = "/graphql", `{"query":"{ __typename }"}`
		}
		w := &discardWriter{h: http.Header{}}
		serve := func() {
			clear(w.h)
			w.status, w.n = 0, 0
			req := httptest.NewRequest(method, target, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", accept)
			e.h.ServeHTTP(w, req)
			if w.status != http.StatusOK && w.status != 0 {
				t.Fatalf("%s %s: status %d", method, target, w.status)
			}
		}
		serve()
		return testing.AllocsPerRun(200, serve)
	}
	for _, c := range []struct{ method, accept string }{
		{http.MethodGet, "application/graphql-response+json"},
		{http.MethodPost, "application/graphql-response+json, application/json;q=0.9"},
	} {
		without, with := allocs(0, c.method, c.accept), allocs(4, c.method, c.accept)
		t.Logf("%s /graphql: %.1f allocations without STREAMS_PER_CLIENT, %.1f with", c.method, without, with)
		if with > without { // the same build: no slack for the race detector
			t.Errorf("%s /graphql: %.1f allocations with STREAMS_PER_CLIENT, %.1f without", c.method, with, without)
		}
	}
}
