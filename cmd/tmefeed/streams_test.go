package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

const streamDocument = `subscription { feedUpdates(channels: ["tmefeed_news"]) { kind post { messageId } } }`

// openSSE opens a feedUpdates event stream for the client that
// X-Forwarded-For names (through the trusted proxy on loopback). An open
// stream's body is closed with ctx or at the end of the test.
func (s *liveServer) openSSE(t *testing.T, ctx context.Context, client string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": streamDocument})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Forwarded-For", client)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// openWS opens a graphql-transport-ws connection for client and starts a
// feedUpdates subscription on it; a refused upgrade returns the answer.
func (s *liveServer) openWS(t *testing.T, ctx context.Context, client string) (*websocket.Conn, *http.Response) {
	t.Helper()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   http.Header{"X-Forwarded-For": {client}},
	})
	if err != nil {
		if resp == nil {
			t.Fatal(err)
		}
		return nil, resp
	}
	t.Cleanup(func() { c.CloseNow() })
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), "connection_ack") {
		t.Fatalf("after connection_init: %s %v", b, err)
	}
	sub := `{"type":"subscribe","id":"1","payload":{"query":` + string(must(json.Marshal(streamDocument))) + `}}`
	if err := c.Write(ctx, websocket.MessageText, []byte(sub)); err != nil {
		t.Fatal(err)
	}
	return c, resp
}

// wantOpen checks that an event stream was opened.
func wantOpen(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d, Content-Type %q: %s", what, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

// wantTooManyStreams checks the refusal of a stream over the client's
// bound: 429, a Retry-After of a few seconds and one GraphQL error with
// code RATE_LIMITED saying why.
func wantTooManyStreams(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests {
		// Not read: an event stream opened would not end.
		t.Fatalf("%s: status %d, Content-Type %q, want 429", what, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	b, _ := io.ReadAll(resp.Body)
	var gql struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string            `json:"message"`
			Extensions map[string]string `json:"extensions"`
		} `json:"errors"`
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 10 {
		t.Errorf("%s: Retry-After %q, want a few seconds", what, resp.Header.Get("Retry-After"))
	}
	if err := json.Unmarshal(b, &gql); err != nil || gql.Data != nil || len(gql.Errors) != 1 ||
		gql.Errors[0].Extensions["code"] != "RATE_LIMITED" || !strings.Contains(gql.Errors[0].Message, "too many open streams from this client") {
		t.Errorf("%s: body %s, want one RATE_LIMITED error about the client's open streams", what, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
}

// waitSubscriptions waits until the process has n subscriptions open.
func (s *liveServer) waitSubscriptions(t *testing.T, ctx context.Context, n float64) {
	t.Helper()
	for {
		got := value(s.scrape(t), "tmefeed_graphql_subscriptions_open")
		if got == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%v subscriptions open, want %v", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// STREAMS_PER_CLIENT bounds the WebSocket connections and event streams
// one client holds open, together: the client's next stream of either
// kind is refused before it starts, its other requests are served, other
// clients are not affected, and a stream that ends gives its place back.
func TestStreamsPerClient(t *testing.T) {
	const perClient = 4
	s := startLive(t, map[string]string{
		"STREAMS_PER_CLIENT": strconv.Itoa(perClient),
		"TRUSTED_PROXIES":    "127.0.0.1, ::1",
		"LOG_LEVEL":          "warn",
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const capped, other = "198.51.100.1", "198.51.100.2"

	// Two of each kind, all working.
	sseCtx, closeSSE := context.WithCancel(ctx)
	wantOpen(t, "event stream 1", s.openSSE(t, sseCtx, capped))
	wantOpen(t, "event stream 2", s.openSSE(t, ctx, capped))
	ws1, _ := s.openWS(t, ctx, capped)
	s.openWS(t, ctx, capped)
	s.waitSubscriptions(t, ctx, perClient)

	// One more of either kind is refused, before the upgrade or the stream.
	wantTooManyStreams(t, "a fifth stream (event stream)", s.openSSE(t, ctx, capped))
	if c, resp := s.openWS(t, ctx, capped); c != nil {
		t.Fatal("a fifth stream (WebSocket) was upgraded")
	} else {
		wantTooManyStreams(t, "a fifth stream (WebSocket)", resp)
	}
	// The same client's ordinary requests are served.
	if status, _, out := s.do(t, http.MethodPost, "/graphql", `{"query":"{ channel(username: \"tmefeed_news\") { title } }"}`, "X-Forwarded-For", capped); status != http.StatusOK || !strings.Contains(out, "Tmefeed News") {
		t.Errorf("a query from the capped client: status %d: %s", status, out)
	}
	if status, _, _ := s.do(t, http.MethodGet, "/graphql?query="+`%7B__typename%7D`, "", "X-Forwarded-For", capped); status != http.StatusOK {
		t.Errorf("a GET query from the capped client: status %d", status)
	}
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/tmefeed_news", "", "X-Forwarded-For", capped); status != http.StatusOK {
		t.Errorf("/v1/body from the capped client: status %d", status)
	}
	// Another client opens streams of both kinds.
	wantOpen(t, "another client's event stream", s.openSSE(t, ctx, other))
	if c, resp := s.openWS(t, ctx, other); c == nil {
		t.Fatalf("another client's WebSocket: status %d", resp.StatusCode)
	}
	s.waitSubscriptions(t, ctx, perClient+2)

	// A stream that ends gives its place back: the event stream's client
	// goes away, then a WebSocket is closed.
	closeSSE()
	for {
		resp := s.openSSE(t, ctx, capped)
		if resp.StatusCode == http.StatusOK {
			break
		}
		wantTooManyStreams(t, "while the closed stream ends", resp)
		time.Sleep(20 * time.Millisecond)
	}
	ws1.Close(websocket.StatusNormalClosure, "")
	for {
		c, resp := s.openWS(t, ctx, capped)
		if c != nil {
			break
		}
		wantTooManyStreams(t, "while the closed WebSocket ends", resp)
		time.Sleep(20 * time.Millisecond)
	}
	s.waitSubscriptions(t, ctx, perClient+2)

	fams := s.scrape(t)
	if n := value(fams, "tmefeed_http_rate_limited_total", "route", "/graphql", "limit", "streams"); n < 2 {
		t.Errorf("streams refused at /graphql: %v counted, want at least 2", n)
	}
	if n := value(fams, "tmefeed_http_rate_limited_total", "route", "/graphql", "limit", "requests"); n > 0 {
		t.Errorf("refused streams counted as over RATE_LIMIT_RPM: %v", n)
	}
}

// An IPv6 client is bounded by its /64, as the rate limit counts it: a
// host may use any address of its /64. Another /64 has its own bound.
func TestStreamsPerClientIPv6ByPrefix(t *testing.T) {
	s := startLive(t, map[string]string{"STREAMS_PER_CLIENT": "2", "TRUSTED_PROXIES": "127.0.0.1, ::1", "LOG_LEVEL": "warn"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wantOpen(t, "2001:db8:1:2::1", s.openSSE(t, ctx, "2001:db8:1:2::1"))
	if c, resp := s.openWS(t, ctx, "2001:db8:1:2::2"); c == nil {
		t.Fatalf("2001:db8:1:2::2: WebSocket refused: status %d", resp.StatusCode)
	}
	wantTooManyStreams(t, "another address of the same /64", s.openSSE(t, ctx, "2001:db8:1:2:ffff:1:2:3"))
	wantOpen(t, "another /64", s.openSSE(t, ctx, "2001:db8:1:3::1"))
}

// Behind a proxy missing from TRUSTED_PROXIES every client shares the
// proxy's bound; the refusal says so in the log, naming the proxy.
func TestStreamsPerClientWarnsOfUntrustedProxy(t *testing.T) {
	s := startLive(t, map[string]string{"STREAMS_PER_CLIENT": "1", "LOG_LEVEL": "warn"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wantOpen(t, "the first client", s.openSSE(t, ctx, "198.51.100.1"))
	wantTooManyStreams(t, "a second client behind the untrusted proxy", s.openSSE(t, ctx, "198.51.100.2"))
	s.stop()
	logs := s.logs.String()
	if !strings.Contains(logs, "TRUSTED_PROXIES") || !strings.Contains(logs, `"peer":"127.0.0.1"`) {
		t.Errorf("no warning naming the proxy and TRUSTED_PROXIES in the log:\n%s", logs)
	}
}
