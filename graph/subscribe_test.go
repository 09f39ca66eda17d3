package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tmefeed/tmefeed/graph"
)

// wsMsg is one graphql-transport-ws message.
type wsMsg struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// result decodes a next message's payload.
func (m wsMsg) result(t testing.TB) response {
	t.Helper()
	var r response
	if err := json.Unmarshal(m.Payload, &r); err != nil {
		t.Fatalf("%s payload %s: %v", m.Type, m.Payload, err)
	}
	return r
}

// wsClient speaks graphql-transport-ws to the test server, as the
// graphql-ws package does.
type wsClient struct {
	t    testing.TB
	ctx  context.Context
	conn *websocket.Conn
	// failed holds the operations ended by an error message, after which
	// gqlgen also sends complete (which clients ignore).
	failed map[string]bool
}

// waitLimit bounds every wait of these tests: generous, since it only
// keeps a broken server from hanging the test.
const waitLimit = 30 * time.Second

func dialWS(t testing.TB, base string, header http.Header) (*wsClient, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	t.Cleanup(cancel)
	url := "ws" + strings.TrimPrefix(base, "http") + "/graphql"
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsClient{t: t, ctx: ctx, conn: c, failed: map[string]bool{}}, resp, nil
}

// connect dials and completes connection_init.
func (e *env) connect(t testing.TB) *wsClient {
	t.Helper()
	c, _, err := dialWS(t, e.srv.URL, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if got := c.conn.Subprotocol(); got != "graphql-transport-ws" {
		t.Fatalf("subprotocol %q", got)
	}
	c.send(wsMsg{Type: "connection_init"})
	if m := c.next(); m.Type != "connection_ack" {
		t.Fatalf("after connection_init: %+v", m)
	}
	return c
}

func (c *wsClient) send(m wsMsg) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	if err := c.conn.Write(c.ctx, websocket.MessageText, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read returns the next message, or the error that ended the connection.
func (c *wsClient) read() (wsMsg, error) {
	ctx, cancel := context.WithTimeout(c.ctx, waitLimit)
	defer cancel()
	_, b, err := c.conn.Read(ctx)
	if err != nil {
		return wsMsg{}, err
	}
	var m wsMsg
	if err := json.Unmarshal(b, &m); err != nil {
		return wsMsg{}, fmt.Errorf("message %s: %w", b, err)
	}
	return m, nil
}

// next returns the next message other than a ping, answering pings with
// pongs as graphql-ws clients do.
func (c *wsClient) next() wsMsg {
	c.t.Helper()
	for {
		m, err := c.read()
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		switch {
		case m.Type == "ping":
			c.send(wsMsg{Type: "pong"})
		case m.Type == "complete" && c.failed[m.ID]:
			delete(c.failed, m.ID)
		default:
			return m
		}
	}
}

func (c *wsClient) subscribe(id, query string, vars map[string]any) {
	c.t.Helper()
	p, _ := json.Marshal(request{Query: query, Variables: vars})
	c.send(wsMsg{Type: "subscribe", ID: id, Payload: p})
}

// errorsOf reads the messages of subscription id up to its end and returns
// the errors it ended with: those of an error message, or of a next
// message followed by complete.
func (c *wsClient) errorsOf(id string) []gqlError {
	c.t.Helper()
	var errs []gqlError
	for {
		m := c.next()
		if m.ID != id {
			c.t.Fatalf("message of another operation while waiting for %s: %+v", id, m)
		}
		switch m.Type {
		case "error":
			if err := json.Unmarshal(m.Payload, &errs); err != nil {
				c.t.Fatalf("error payload %s: %v", m.Payload, err)
			}
			c.failed[id] = true
			return errs
		case "next":
			r := m.result(c.t)
			if len(r.Errors) == 0 {
				c.t.Fatalf("an event while waiting for an error: %s", m.Payload)
			}
			errs = append(errs, r.Errors...)
		case "complete":
			return errs
		default:
			c.t.Fatalf("unexpected %+v", m)
		}
	}
}

const updatesQuery = `subscription($channels: [String!]!, $filter: FeedFilter) {
  feedUpdates(channels: $channels, filter: $filter) {
    kind
    channel { username title }
    post { messageId text { plain } edited }
  }
}`

// sse is one event stream of a subscription.
type sse struct {
	t    testing.TB
	resp *http.Response
	sc   *bufio.Scanner
}

func (e *env) postSSE(t testing.TB, req request) *sse {
	t.Helper()
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	t.Cleanup(cancel)
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/graphql", bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	resp, err := e.srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &sse{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// event returns the next event's name and data ("", nil at the end of the
// stream); comments (keep-alive) are skipped.
func (s *sse) event() (name string, data []byte) {
	s.t.Helper()
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if name != "" {
				return name, data
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: ")...)
		}
	}
	if err := s.sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		s.t.Fatalf("event stream: %v", err)
	}
	return "", nil
}

// TestSubscriptionDocumentsMeetTheLimits: a subscription document goes
// through the same measure as a query before it is parsed, over WebSocket
// and event streams alike, and a refused document leaves the connection
// usable.
func TestSubscriptionDocumentsMeetTheLimits(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{maxDepth: 4})
	c := e.connect(t)
	aliases := `subscription { feedUpdates(channels: ["tmefeed_news"]) { ` + aliasList(40) + ` } }`
	cases := []struct{ name, query, code string }{
		{"too deep", `subscription { feedUpdates(channels: ["tmefeed_news"]) { post { text { entities { kind } } } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"too many aliases", aliases, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"not GraphQL", `subscription {`, "GRAPHQL_PARSE_FAILED"},
		{"two root fields", `subscription { a: feedUpdates(channels: ["x"]) { kind } b: feedUpdates(channels: ["y"]) { kind } }`, "GRAPHQL_VALIDATION_FAILED"},
		{"a query", `{ channel(username: "tmefeed_news") { title } }`, "BAD_REQUEST"},
	}
	for i, tc := range cases {
		id := fmt.Sprint(i + 1)
		c.subscribe(id, tc.query, nil)
		errs := c.errorsOf(id)
		if len(errs) == 0 || errs[0].code() != tc.code {
			t.Errorf("%s: errors %+v, want %s", tc.name, errs, tc.code)
		}
	}
	// The connection still serves a subscription within the limits.
	c.subscribe("ok", `subscription { feedUpdates(channels: ["tmefeed_news"]) { post { text { plain } } } }`, nil)
	c.send(wsMsg{Type: "ping"})
	if m := c.next(); m.Type != "pong" {
		t.Fatalf("a good subscription answered %+v; want it open (and pong to the ping)", m)
	}

	// The same refusal over an event stream.
	s := e.postSSE(t, request{Query: aliases})
	name, data := s.event()
	if name != "next" || !strings.Contains(string(data), "COMPLEXITY_LIMIT_EXCEEDED") {
		t.Errorf("event stream: %s %s", name, data)
	}
	if name, _ := s.event(); name != "complete" {
		t.Errorf("event stream: %q after the error, want complete", name)
	}
}

func aliasList(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: kind ", i)
	}
	return b.String()
}

// TestSubscriptionsPerConnection: a connection holds at most its share of
// subscriptions; the next one, in the order the client sent them, is
// refused with a graphql-transport-ws error message saying why, and
// completing one makes room again.
func TestSubscriptionsPerConnection(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{subsPerConn: 2})
	c := e.connect(t)
	vars := map[string]any{"channels": []string{"tmefeed_news"}}
	for round := range 5 {
		// Sent together, they start at once: the third is the one too many,
		// every time.
		ids := []string{fmt.Sprint(round, "a"), fmt.Sprint(round, "b"), fmt.Sprint(round, "c")}
		for _, id := range ids {
			c.subscribe(id, updatesQuery, vars)
		}
		m := c.next()
		for m.Type == "complete" { // the previous round's, completed by the client
			m = c.next()
		}
		var errs []gqlError
		if m.Type == "error" {
			_ = json.Unmarshal(m.Payload, &errs)
		}
		if m.Type != "error" || m.ID != ids[2] || len(errs) != 1 || errs[0].code() != "RATE_LIMITED" || !strings.Contains(errs[0].Message, "2 subscriptions") {
			t.Fatalf("round %d: one subscription too many: %+v", round, m)
		}
		e.waitOpen(t, 2)
		c.send(wsMsg{Type: "complete", ID: ids[0]})
		c.send(wsMsg{Type: "complete", ID: ids[1]})
		e.waitOpen(t, 0)
	}
	c.subscribe("1", updatesQuery, vars)
	c.subscribe("2", updatesQuery, vars)
	open := "1"
	// Another connection has its own share.
	other := e.connect(t)
	other.subscribe("1", updatesQuery, vars)
	other.send(wsMsg{Type: "ping"})
	if m := other.next(); m.Type != "pong" {
		t.Fatalf("another connection's first subscription: %+v", m)
	}
	// Completing one makes room on the first.
	e.waitOpen(t, 3)
	c.send(wsMsg{Type: "complete", ID: open})
	e.waitOpen(t, 2)
	c.subscribe("4", updatesQuery, vars)
	e.waitOpen(t, 3)
}

// TestSubscriptionArgumentsAreChecked: bad names, too many channels and a
// bad filter are BAD_USER_INPUT, as for feed.
func TestSubscriptionArgumentsAreChecked(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{})
	c := e.connect(t)
	many := make([]string, 101) // FEED_MAX_CHANNELS is 100
	for i := range many {
		many[i] = fmt.Sprintf("channel%03d", i)
	}
	cases := []struct {
		name string
		vars map[string]any
	}{
		{"bad name", map[string]any{"channels": []string{"no such name!"}}},
		{"too many channels", map[string]any{"channels": many}},
		{"no channels", map[string]any{"channels": []string{}}},
		{"bad filter", map[string]any{"channels": []string{"tmefeed_news"}, "filter": map[string]any{"since": "2024-05-02T00:00:00Z", "until": "2024-05-01T00:00:00Z"}}},
	}
	for i, tc := range cases {
		id := fmt.Sprint(i)
		c.subscribe(id, updatesQuery, tc.vars)
		errs := c.errorsOf(id)
		if len(errs) == 0 || errs[0].code() != "BAD_USER_INPUT" {
			t.Errorf("%s: %+v, want BAD_USER_INPUT", tc.name, errs)
		}
	}
}

// TestAbuseWebSocketInitTimeout: a connection that does not send
// connection_init in time is closed with graphql-transport-ws's 4408 and
// the reason (clients retry after it; 1002 they take as fatal), one that
// sends it in time is not, and the older graphql-ws keeps 1002.
func TestAbuseWebSocketInitTimeout(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{initTimeout: 100 * time.Millisecond})
	c, _, err := dialWS(t, e.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.read()
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4408 || !strings.Contains(ce.Reason, "initialisation timeout") {
		t.Fatalf("read: %v; want a close with 4408 for the init timeout", err)
	}

	// Sent in time: acknowledged, and the connection outlives the timeout
	// (the pings of a 50 ms keep-alive would say so too; a subscription's
	// answer after the wait does).
	ok := e.connect(t)
	time.Sleep(200 * time.Millisecond) // past the init timeout, which must not fire now
	ok.send(wsMsg{Type: "ping"})
	if m, err := ok.read(); err != nil || m.Type != "pong" {
		t.Fatalf("initialised connection after the init timeout: %+v %v; want it open", m, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	legacy, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.CloseNow()
	_, _, err = legacy.Read(ctx)
	if !errors.As(err, &ce) || ce.Code != websocket.StatusProtocolError {
		t.Fatalf("graphql-ws read: %v; want a close with 1002", err)
	}
	t.Logf("FIGURE: graphql | WebSocket without connection_init within WS_INIT_TIMEOUT: close code | 4408")
}

// TestWebSocketKeepAlive: the server pings an idle connection, and drops
// one that answers no ping.
func TestWebSocketKeepAlive(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{keepAlive: 50 * time.Millisecond})
	c := e.connect(t)
	for range 3 {
		m, err := c.read()
		if err != nil || m.Type != "ping" {
			t.Fatalf("idle connection: %+v %v; want pings", m, err)
		}
		c.send(wsMsg{Type: "pong"})
	}
	// A client that stops answering is dropped.
	for {
		m, err := c.read()
		if err != nil {
			break
		}
		if m.Type != "ping" {
			t.Fatalf("unexpected %+v", m)
		}
	}
}

// TestWebSocketUpgradesAreChecked: an upgrade the transport cannot serve
// is answered before upgrading, as a GraphQL error with a code.
func TestWebSocketUpgradesAreChecked(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{corsOrigins: []string{"https://dash.example"}})
	ws := func(extra ...string) []string {
		return append([]string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, extra...)
	}
	cases := []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"no subprotocol", ws(), 400, "BAD_REQUEST"},
		{"unknown subprotocol", ws("Sec-WebSocket-Protocol", "mqtt"), 400, "BAD_REQUEST"},
		{"no key", []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Protocol", "graphql-transport-ws"}, 400, "BAD_REQUEST"},
		{"not websocket", []string{"Connection", "Upgrade", "Upgrade", "h2c"}, 400, "BAD_REQUEST"},
		{"origin not allowed", ws("Sec-WebSocket-Protocol", "graphql-transport-ws", "Origin", "https://evil.example"), 403, "BAD_REQUEST"},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/graphql", nil)
		for i := 0; i < len(tc.header); i += 2 {
			req.Header.Set(tc.header[i], tc.header[i+1])
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r response
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || len(r.Errors) != 1 || r.Errors[0].code() != tc.code {
			t.Errorf("%s: %d %+v %v; want %d %s", tc.name, resp.StatusCode, r.Errors, err, tc.status, tc.code)
		}
	}
	// The allowed origin (CORS_ORIGINS) and the server's own connect.
	for _, origin := range []string{"https://dash.example", e.srv.URL} {
		c, resp, err := dialWS(t, e.srv.URL, http.Header{"Origin": {origin}})
		if err != nil {
			t.Fatalf("origin %s: %v (%v)", origin, err, resp)
		}
		c.send(wsMsg{Type: "connection_init"})
		if m := c.next(); m.Type != "connection_ack" {
			t.Fatalf("origin %s: %+v", origin, m)
		}
	}
}

// TestSubscriptionsNeedAStream: a subscription sent as a plain POST or GET
// is refused with the ways it is served.
func TestSubscriptionsNeedAStream(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{})
	q := `subscription { feedUpdates(channels: ["tmefeed_news"]) { kind } }`
	for _, r := range []response{e.query(t, q, nil), e.get(t, request{Query: q})} {
		if r.status != 400 || len(r.Errors) != 1 || r.Errors[0].code() != "BAD_REQUEST" || !strings.Contains(r.Errors[0].Message, "text/event-stream") {
			t.Errorf("%d %s", r.status, r.raw)
		}
	}
}

// waitOpen waits until the handler holds n subscriptions open.
func (e *env) waitOpen(t testing.TB, n int64) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for graph.OpenSubscriptions(e.gql) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions open, want %d", graph.OpenSubscriptions(e.gql), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestShutdownEndsSubscriptions: shutting down first writes the events
// subscriptions hold, then closes WebSocket connections with 1012 Service
// Restart and cuts event streams, neither with complete (clients take
// complete as the end and would not subscribe again), and returns without
// waiting for clients; new subscriptions are refused meanwhile.
func TestShutdownEndsSubscriptions(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{refresh: liveRefresh})
	e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil)
	vars := map[string]any{"channels": []string{"tmefeed_news"}}
	c := e.connect(t)
	c.subscribe("a", updatesQuery, vars)
	c.subscribe("b", updatesQuery, vars)
	s := e.postSSE(t, request{Query: updatesQuery, Variables: vars})
	if s.resp.StatusCode != 200 || !strings.HasPrefix(s.resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("event stream: %d %s", s.resp.StatusCode, s.resp.Header.Get("Content-Type"))
	}
	idle := e.connect(t) // no subscription
	e.waitOpen(t, 3)
	waitSubscribers(t, hub, 3)

	// An event handed to the subscriptions, not yet read by the clients,
	// is in flight as the server shuts down.
	before := hub.Stats().Delivered
	n := e.origin.PublishPost("tmefeed_news", "published as the server stops")
	for hub.Stats().Delivered < before+3 {
		time.Sleep(5 * time.Millisecond)
	}
	want := fmt.Sprintf(`NEW tmefeed_news/%d "published as the server stops"`, n)

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.gql.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	got := map[string]string{}
	for {
		m, err := c.read()
		if err != nil {
			if websocket.CloseStatus(err) != 1012 {
				t.Errorf("after shutdown: %v, want close 1012", err)
			}
			break
		}
		if m.Type != "next" {
			t.Errorf("before the close: %+v, want only the events in flight", m)
			continue
		}
		got[m.ID] = decodeUpdate(t, m.Payload).String()
	}
	if got["a"] != want || got["b"] != want {
		t.Errorf("events in flight: %q, want %q for both", got, want)
	}
	if _, err := idle.read(); websocket.CloseStatus(err) != 1012 {
		t.Errorf("an idle connection after shutdown: %v, want close 1012", err)
	}
	if ev := s.updates(1); ev[0] != want {
		t.Errorf("event stream: %q, want %q", ev, want)
	}
	if name, data := s.event(); name != "" {
		t.Errorf("event stream after shutdown: %q %s, want its end without complete", name, data)
	}
	// New subscriptions are refused.
	s = e.postSSE(t, request{Query: updatesQuery, Variables: vars})
	if name, data := s.event(); name != "next" || !strings.Contains(string(data), graph.CodeShuttingDown) {
		t.Errorf("a new event stream: %s %s", name, data)
	}
}

// An id may be used again once its operation is over, but a subscribe
// with an id still in use closes the connection with 4409, as
// graphql-transport-ws says, rather than running both under one id (the
// first then beyond any complete).
func TestSubscribeWithIDInUse(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{})
	c := e.connect(t)
	vars := map[string]any{"channels": []string{"tmefeed_news"}}
	c.subscribe("1", updatesQuery, vars)
	e.waitOpen(t, 1)
	c.send(wsMsg{Type: "complete", ID: "1"})
	if m := c.next(); m.Type != "complete" || m.ID != "1" {
		t.Fatalf("after complete: %+v", m)
	}
	e.waitOpen(t, 0)
	c.subscribe("1", updatesQuery, vars) // over: its id is free again
	e.waitOpen(t, 1)

	c.subscribe("1", updatesQuery, vars)
	for {
		m, err := c.read()
		if err != nil {
			if got := websocket.CloseStatus(err); got != 4409 {
				t.Fatalf("connection ended with %v, want close code 4409", err)
			}
			break
		}
		if m.Type != "ping" {
			t.Fatalf("after a subscribe with an id in use: %+v", m)
		}
	}
	e.waitOpen(t, 0)
}

// An upgrade offer other than WebSocket (h2c: curl --http2 sends it with
// every GET over http://) is ignored and the query answered as it is.
func TestOtherUpgradeOffersIgnored(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{})
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/graphql?query=%7B__typename%7D", nil)
	req.Header.Set("Connection", "Upgrade, HTTP2-Settings")
	req.Header.Set("Upgrade", "h2c")
	req.Header.Set("HTTP2-Settings", "AAMAAABkAAQAoAAAAAIAAAAA")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var r response
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(r.Errors) != 0 || !strings.Contains(string(r.Data), `"Query"`) {
		t.Errorf("GET with Upgrade: h2c: %d %+v %s %v", resp.StatusCode, r.Errors, r.Data, err)
	}
}

// TestServerLimitRefusesWithAnError: a subscription beyond the process's
// SUBSCRIPTIONS_MAX is refused with an error message for its id (not a
// next payload and complete, which clients take for the stream's end),
// and the connection goes on.
func TestServerLimitRefusesWithAnError(t *testing.T) {
	e, _ := newLiveEnv(t, envOptions{subsPerConn: 5, maxSubs: 2})
	vars := map[string]any{"channels": []string{"tmefeed_news"}}
	a := e.connect(t)
	a.subscribe("1", updatesQuery, vars)
	a.subscribe("2", updatesQuery, vars)
	e.waitOpen(t, 2)
	b := e.connect(t)
	b.subscribe("3", updatesQuery, vars)
	m := b.next()
	var errs []gqlError
	if m.Type == "error" {
		_ = json.Unmarshal(m.Payload, &errs)
	}
	if m.Type != "error" || m.ID != "3" || len(errs) != 1 || errs[0].code() != "RATE_LIMITED" || !strings.Contains(errs[0].Message, "the server has 2 subscriptions open") {
		t.Fatalf("over the server's limit: %+v", m)
	}
	b.send(wsMsg{Type: "ping"})
	if m := b.next(); m.Type != "pong" {
		t.Fatalf("after the refusal: %+v", m)
	}
	a.send(wsMsg{Type: "complete", ID: "1"})
	e.waitOpen(t, 1)
	b.subscribe("3", updatesQuery, vars)
	e.waitOpen(t, 2)
}
