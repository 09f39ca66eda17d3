package graph_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/graph"
)

// getSSE opens an event stream as a browser's EventSource does: a GET with
// the request in the URL and Accept: text/event-stream, nothing else.
func (e *env) getSSE(t testing.TB, query string, vars map[string]any) *sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	t.Cleanup(cancel)
	hr, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+getURL(query, vars, nil), nil)
	hr.Header.Set("Accept", "text/event-stream")
	resp, err := e.srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GET event stream: %d %s", resp.StatusCode, ct)
	}
	return &sse{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// TestSubscriptionOverGET: a GET with the query in the URL and Accept:
// text/event-stream streams a subscription, as new EventSource(url)
// asks; its refusals are events too. A query so sent is refused; a PUT
// (graphql-sse's single connection mode) is 405 saying what to use.
func TestSubscriptionOverGET(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{refresh: liveRefresh})
	e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil)

	s := e.getSSE(t, updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}})
	waitSubscribers(t, hub, 1)
	n := e.origin.PublishPost("tmefeed_news", "streamed to an EventSource")
	want := fmt.Sprintf(`NEW tmefeed_news/%d "streamed to an EventSource"`, n)
	if ev := s.updates(1); !slices.Equal(ev, []string{want}) {
		t.Fatalf("GET event stream: %q, want %q", ev, want)
	}

	// A bad variable is refused on the stream.
	bad := e.getSSE(t, updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}, "filter": map[string]any{"mediaKinds": []string{"photo"}}})
	if name, data := bad.event(); name != "next" || !strings.Contains(string(data), graph.CodeValidationFailed) {
		t.Errorf("a bad variable over GET: %s %s", name, data)
	}
	// A query is not a stream.
	q := e.getSSE(t, `{ __typename }`, nil)
	if name, data := q.event(); name != "next" || !strings.Contains(string(data), graph.CodeBadRequest) {
		t.Errorf("a query over a GET event stream: %s %s", name, data)
	}

	r := e.send(t, http.MethodPut, "/graphql", `{}`, "Content-Type", "application/json", "Accept", "text/event-stream")
	resp, _ := r.parsed(t)
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD, POST" || len(resp.Errors) != 1 ||
		!strings.Contains(resp.Errors[0].Message, "single connection mode") || !strings.Contains(resp.Errors[0].Message, "distinct connections mode") {
		t.Errorf("PUT: %d %s %s", r.status, r.header.Get("Allow"), r.body)
	}
}

// TestAcceptBothIsAQuery: a client that accepts JSON and an event stream
// alike for every operation (urql's fetch: JSON types, text/event-stream
// and multipart/mixed, all at q=1) has its queries answered as JSON, over
// POST and GET; one that ranks the stream first, or names it alone, gets
// a stream.
func TestAcceptBothIsAQuery(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{refresh: liveRefresh})
	const urql = "application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed"
	body := `{"query":"{ channel(username: \"tmefeed_news\") { username } }"}`
	for _, r := range []reply{
		e.send(t, http.MethodPost, "/graphql", body, "Content-Type", "application/json", "Accept", urql),
		e.send(t, http.MethodGet, "/graphql?query="+url.QueryEscape(`{ channel(username: "tmefeed_news") { username } }`), "", "Accept", urql),
		e.send(t, http.MethodPost, "/graphql", body, "Content-Type", "application/json", "Accept", "text/event-stream;q=0.5, application/json"),
	} {
		if r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Type"), "json") || !strings.Contains(string(r.body), `"username":"tmefeed_news"`) {
			t.Errorf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
		}
	}
	for _, accept := range []string{"text/event-stream", "text/event-stream, application/json;q=0.9", "application/json;q=0, text/event-stream"} {
		r := e.send(t, http.MethodPost, "/graphql", body, "Content-Type", "application/json", "Accept", accept)
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || !strings.Contains(string(r.body), graph.CodeBadRequest) {
			t.Errorf("Accept %s: %d %s %s", accept, r.status, r.header.Get("Content-Type"), r.body)
		}
	}
}
