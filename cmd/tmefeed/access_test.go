package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tmefeed/tmefeed/access"
	"github.com/tmefeed/tmefeed/fixtures"
)

// keysFile writes an API_KEYS_FILE with a consumer per name and returns
// its path and the keys, by name.
func keysFile(t *testing.T, names ...string) (string, map[string]string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	keys := map[string]string{}
	var lines []string
	for _, n := range names {
		name, limits, _ := strings.Cut(n, " ")
		l, err := access.ParseLimits(strings.Fields(limits))
		if err != nil {
			t.Fatal(err)
		}
		key, line, err := access.NewKey(name, l)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = key
		lines = append(lines, line)
	}
	if err := os.WriteFile(path, []byte("# consumers\n"+strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, keys
}

// gqlError is the one error of a GraphQL answer, as the API sends refusals.
func gqlError(t *testing.T, what, body string) (code, message string) {
	t.Helper()
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string         `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Errors) != 1 || out.Data != nil {
		t.Fatalf("%s: not one GraphQL error without data: %s", what, body)
	}
	c, _ := out.Errors[0].Extensions["code"].(string)
	return c, out.Errors[0].Message
}

// restError is the code of a REST error answer.
func restError(t *testing.T, what, body string) string {
	t.Helper()
	var out struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.Error.Code == "" || out.Error.Message == "" {
		t.Fatalf("%s: not a REST error: %s", what, body)
	}
	return out.Error.Code
}

var widgetKeyRE = regexp.MustCompile(`tmw_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// With API_KEYS_FILE set every route that reads pages or feeds needs a
// key, sent any of the accepted ways; a widget key minted on the snippet
// page reads its channels only; WebSocket connections take the key in
// connection_init; a key added or removed with SIGHUP counts at once; and
// no key reaches the log, even at debug level, where request targets are
// logged.
func TestAccessKeys(t *testing.T) {
	path, keys := keysFile(t, "alpha", "beta")
	s := startLive(t, map[string]string{"API_KEYS_FILE": path, "LOG_LEVEL": "debug"})
	// /media redirects to Telegram's CDN, which tests do not reach.
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	alpha := keys["alpha"]

	// No key: 401, WWW-Authenticate, the route's own error shape.
	for _, c := range []struct{ method, path, body, shape string }{
		{"GET", "/v1/body/tmefeed_news", "", "rest"},
		{"GET", "/v1/atom?channels=tmefeed_news", "", "rest"},
		{"GET", "/media/tmefeed_news/42/0", "", "rest"},
		{"POST", "/v1/feed", `{"channels": ["tmefeed_news"]}`, "rest"},
		{"POST", "/graphql", `{"query": "{ __typename }"}`, "graphql"},
		{"GET", "/graphql?query=%7B__typename%7D", "", "graphql"},
		{"GET", "/embed?channels=tmefeed_news", "", "html"},
		{"GET", "/embed/posts?channels=tmefeed_news", "", "html"},
	} {
		for _, bad := range []string{"", "tmf_not-a-key"} {
			what := c.method + " " + c.path + " key " + bad
			status, h, body := s.do(t, c.method, c.path, c.body, "X-API-Key", bad)
			if status != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("%s: status %d, WWW-Authenticate %q: %s", what, status, h.Get("WWW-Authenticate"), body)
			}
			switch c.shape {
			case "rest":
				if code := restError(t, what, body); code != "unauthenticated" {
					t.Errorf("%s: code %q", what, code)
				}
			case "graphql":
				if code, _ := gqlError(t, what, body); code != "UNAUTHENTICATED" {
					t.Errorf("%s: code %q", what, code)
				}
			case "html":
				if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "needs a valid key") {
					t.Errorf("%s: %s %s", what, h.Get("Content-Type"), body)
				}
			}
		}
	}
	// The probes stay public.
	for _, p := range []string{"/healthz", "/readyz"} {
		if status, _, body := s.do(t, "GET", p, ""); status != http.StatusOK {
			t.Errorf("%s without a key: %d %s", p, status, body)
		}
	}

	// Each accepted way of sending the key.
	for _, hdr := range [][]string{{"Authorization", "Bearer " + alpha}, {"X-API-Key", alpha}, {}} {
		p := "/v1/body/tmefeed_news"
		if len(hdr) == 0 {
			p += "?key=" + alpha
		}
		if status, h, body := s.do(t, "GET", p, "", hdr...); status != http.StatusOK || !strings.HasPrefix(h.Get("Cache-Control"), "private") {
			t.Errorf("%s %v: status %d, Cache-Control %q: %.200s", p, hdr, status, h.Get("Cache-Control"), body)
		}
	}
	if status, _, body := s.do(t, "POST", "/graphql?key="+alpha, `{"query": "{ channel(username: \"tmefeed_news\") { title } }"}`); status != http.StatusOK || !strings.Contains(body, "title") {
		t.Errorf("POST /graphql?key=: %d %s", status, body)
	}
	if status, _, body := s.do(t, "GET", "/graphql?query=%7B__typename%7D", "", "Authorization", "bearer "+alpha); status != http.StatusOK {
		t.Errorf("GET /graphql with a bearer key: %d %s", status, body)
	}
	if status, _, body := s.do(t, "GET", "/media/tmefeed_news/42/0?key="+alpha, ""); status != http.StatusFound && status != http.StatusOK {
		t.Errorf("/media with ?key=: %d %s", status, body)
	}
	// A feed reader's URL: the document names itself without the key (it
	// is rendered once for every reader of the feed).
	status, _, doc := s.do(t, "GET", "/v1/atom?channels=tmefeed_news&key="+alpha, "")
	if status != http.StatusOK || !strings.Contains(doc, "<feed") || strings.Contains(doc, alpha) || strings.Contains(doc, "key=") {
		t.Errorf("/v1/atom?key=: status %d, key in the document: %v", status, strings.Contains(doc, "key="))
	}

	// The snippet page mints a widget key from an API key; without one it
	// says so.
	if status, _, body := s.do(t, "GET", "/embed/new?channels=tmefeed_news", ""); status != http.StatusUnauthorized || widgetKeyRE.MatchString(body) {
		t.Errorf("/embed/new without a key: %d", status)
	}
	status, _, page := s.do(t, "GET", "/embed/new?channels=tmefeed_news,emoji_party&key="+alpha, "")
	wk := widgetKeyRE.FindString(page)
	if status != http.StatusOK || wk == "" || strings.Contains(page, alpha) {
		t.Fatalf("/embed/new with a key: status %d, widget key %q, API key in the page: %v", status, wk, strings.Contains(page, alpha))
	}
	status, _, embed := s.do(t, "GET", "/embed?channels=tmefeed_news&key="+wk, "")
	if status != http.StatusOK || !strings.Contains(embed, "/embed/posts?channels=tmefeed_news&amp;key="+wk) {
		t.Errorf("/embed with its widget key: status %d; the page must read its posts with the key: %.300s", status, embed)
	}
	for _, p := range []string{"/embed/posts?channels=emoji_party", "/v1/body/tmefeed_news", "/v1/preview/emoji_party", "/v1/rss?channels=tmefeed_news,emoji_party"} {
		if status, _, body := s.do(t, "GET", p, "", "X-API-Key", wk); status != http.StatusOK {
			t.Errorf("%s with the widget key: %d %.200s", p, status, body)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/body/kanal_novostei", ""},
		{"GET", "/v1/rss?channels=tmefeed_news,kanal_novostei", ""},
		{"POST", "/v1/feed", `{"channels": ["tmefeed_news"]}`},
	} {
		status, _, body := s.do(t, c.method, c.path, c.body, "X-API-Key", wk)
		if status != http.StatusForbidden || restError(t, c.path, body) != "forbidden" {
			t.Errorf("%s %s with the widget key: %d %s", c.method, c.path, status, body)
		}
	}
	status, h, body := s.do(t, "GET", "/embed?channels=kanal_novostei&key="+wk, "")
	if status != http.StatusForbidden || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "does not allow these channels") {
		t.Errorf("/embed of other channels with the widget key: %d %s", status, body)
	}
	status, _, body = s.do(t, "POST", "/graphql", `{"query": "{ __typename }"}`, "X-API-Key", wk)
	if code, _ := gqlError(t, "query with a widget key", body); status != http.StatusForbidden || code != "FORBIDDEN" {
		t.Errorf("a query with the widget key: %d %s", status, code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Event streams: none without a key, one with it; a widget key's only
	// to its channels.
	if resp := s.stream(t, ctx, "tmefeed_news", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("event stream without a key: %d", resp.StatusCode)
	}
	wantOpen(t, "event stream with a key", s.stream(t, ctx, "tmefeed_news", "X-API-Key", alpha))
	wantOpen(t, "event stream with the widget key", s.stream(t, ctx, "tmefeed_news", "X-API-Key", wk))
	resp := s.stream(t, ctx, "kanal_novostei", "X-API-Key", wk)
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"FORBIDDEN"`) || strings.Contains(string(b), `"next"`) {
		t.Errorf("event stream of another channel with the widget key: %d %s", resp.StatusCode, b)
	}

	// WebSocket: the key in connection_init, or on the upgrade; none or a
	// bad one closes the connection with 4403.
	for _, c := range []struct {
		payload string
		hdr     http.Header
		ok      bool
	}{
		{`{"type":"connection_init"}`, nil, false},
		{`{"type":"connection_init","payload":{"key":"tmf_wrong"}}`, nil, false},
		{`{"type":"connection_init","payload":{"key":"` + alpha + `"}}`, nil, true},
		{`{"type":"connection_init","payload":{"Authorization":"Bearer ` + keys["beta"] + `"}}`, nil, true},
		{`{"type":"connection_init"}`, http.Header{"X-Api-Key": {alpha}}, true},
	} {
		msg, err := s.wsInit(t, ctx, c.hdr, c.payload)
		switch {
		case c.ok && (err != nil || !strings.Contains(msg, "connection_ack")):
			t.Errorf("WebSocket %s %v: %q %v, want connection_ack", c.payload, c.hdr, msg, err)
		case !c.ok && websocket.CloseStatus(err) != 4403:
			t.Errorf("WebSocket %s: %q %v, want close 4403", c.payload, msg, err)
		}
	}

	// SIGHUP: a key added works at once, a removed one stops.
	gamma, line, _ := access.NewKey("gamma", access.Limits{})
	if status, _, _ := s.do(t, "GET", "/v1/preview/emoji_party", "", "X-API-Key", gamma); status != http.StatusUnauthorized {
		t.Fatalf("gamma before the reload: %d", status)
	}
	old, _ := os.ReadFile(path)
	var kept []string
	for l := range strings.SplitSeq(string(old), "\n") {
		if !strings.HasPrefix(l, "alpha ") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")+line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for {
		status, _, _ := s.do(t, "GET", "/v1/preview/emoji_party", "", "X-API-Key", gamma)
		if status == http.StatusOK {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("gamma after SIGHUP: %d", status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, _, _ := s.do(t, "GET", "/v1/preview/emoji_party", "", "X-API-Key", alpha); status != http.StatusUnauthorized {
		t.Errorf("alpha after its line was removed: %d", status)
	}
	if status, _, _ := s.do(t, "GET", "/embed?channels=tmefeed_news&key="+wk, ""); status != http.StatusUnauthorized {
		t.Errorf("alpha's widget key after alpha was removed: %d", status)
	}

	// The consumer labels the metrics.
	if v := value(s.scrape(t), "tmefeed_http_consumer_requests_total", "consumer", "gamma", "code", "200"); v != 1 {
		t.Errorf("gamma's requests in the metrics: %v, want 1", v)
	}

	s.stop()
	logs := s.logs.String()
	for name, k := range map[string]string{"alpha": alpha, "beta": keys["beta"], "gamma": gamma, "widget": wk} {
		if strings.Contains(logs, k) {
			t.Errorf("the log holds %s's key", name)
		}
	}
	if i := strings.Index(logs, "key=tm"); i >= 0 {
		t.Errorf("the log holds a key parameter: %s", logs[max(0, i-300):min(len(logs), i+100)])
	}
	if !strings.Contains(logs, `"consumer":"alpha"`) || !strings.Contains(logs, `"path":"/v1/body/tmefeed_news"`) {
		t.Errorf("the request lines name neither the consumer nor the path (debug)")
	}
}

// stream opens a feedUpdates event stream of channel with a header.
func (s *liveServer) stream(t *testing.T, ctx context.Context, channel string, hdr ...string) *http.Response {
	t.Helper()
	doc := `subscription { feedUpdates(channels: ["` + channel + `"]) { kind } }`
	body, _ := json.Marshal(map[string]string{"query": doc})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] != "" {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// wsInit opens a graphql-transport-ws connection with hdr, sends init and
// returns the first message, or the error reading it (a close).
func (s *liveServer) wsInit(t *testing.T, ctx context.Context, hdr http.Header, init string) (string, error) {
	t.Helper()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   hdr,
	})
	if err != nil {
		if resp != nil {
			return "", errors.New("upgrade refused: " + resp.Status)
		}
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(init)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil || !strings.Contains(string(b), "connection_error") {
			return string(b), err
		}
	}
}

// Two consumers behind one address (no TRUSTED_PROXIES: the peer is the
// address) have a budget each, a consumer's own rpm= replacing
// RATE_LIMIT_RPM; requests without a key (ANONYMOUS=on) share the
// address's.
func TestAccessSeparateBudgets(t *testing.T) {
	path, keys := keysFile(t, "alpha", "beta", "gamma rpm=6 streams=1")
	const rpm = 3
	s := startLive(t, map[string]string{"API_KEYS_FILE": path, "ANONYMOUS": "on", "RATE_LIMIT_RPM": "3", "LOG_LEVEL": "warn"})
	spend := func(who string, n int, hdr ...string) {
		t.Helper()
		for i := range n {
			if status, _, body := s.do(t, "GET", "/v1/preview/emoji_party", "", hdr...); status != http.StatusOK {
				t.Fatalf("%s's request %d: %d %s", who, i+1, status, body)
			}
		}
		status, h, body := s.do(t, "GET", "/v1/preview/emoji_party", "", hdr...)
		if status != http.StatusTooManyRequests || restError(t, who, body) != "rate_limited" || h.Get("Retry-After") == "" {
			t.Fatalf("%s's request %d: %d %s, want 429", who, n+1, status, body)
		}
	}
	spend("alpha", rpm, "X-API-Key", keys["alpha"])
	spend("beta", rpm, "Authorization", "Bearer "+keys["beta"])
	spend("gamma", 6, "X-API-Key", keys["gamma"])
	spend("anonymous", rpm)

	// gamma's streams=1 bounds its streams, not beta's (STREAMS_PER_CLIENT,
	// 256), behind the same address.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path2, keys2 := keysFile(t, "beta", "gamma streams=1")
	s2 := startLive(t, map[string]string{"API_KEYS_FILE": path2, "LOG_LEVEL": "warn"})
	wantOpen(t, "gamma's first stream", s2.stream(t, ctx, "tmefeed_news", "X-API-Key", keys2["gamma"]))
	wantTooManyStreams(t, "gamma's second stream", s2.stream(t, ctx, "tmefeed_news", "X-API-Key", keys2["gamma"]))
	wantOpen(t, "beta's first stream", s2.stream(t, ctx, "tmefeed_news", "X-API-Key", keys2["beta"]))
	wantOpen(t, "beta's second stream", s2.stream(t, ctx, "tmefeed_news", "X-API-Key", keys2["beta"]))
}

// A consumer's own origin_rpm= replaces CLIENT_ORIGIN_RPM for it: behind
// one address (no TRUSTED_PROXIES), the consumer held to 3 origin fetches a
// minute gets 429 with Retry-After for its fourth page no tier holds, and
// still its pages from the cache, while another consumer, on the server's
// share, reads cold pages on.
func TestAccessConsumerOriginShare(t *testing.T) {
	path, keys := keysFile(t, "small origin_rpm=3", "big")
	s := startLiveWith(t, fixtures.OriginOptions{Synthetic: 20}, map[string]string{
		"API_KEYS_FILE": path, "UPDATER": "off", "LOG_LEVEL": "warn", "ORIGIN_RPM": "6000", "CLIENT_ORIGIN_RPM": "600",
	})
	cold := 0
	read := func(who string) (int, http.Header, string) {
		t.Helper()
		cold++
		before := s.origin.Total()
		status, h, body := s.do(t, "GET", fmt.Sprintf("/v1/body/loadchan%03d", cold), "", "X-API-Key", keys[who])
		if status == http.StatusOK && s.origin.Total() == before {
			t.Fatalf("%s's page %d was no cold read: no origin request", who, cold)
		}
		return status, h, body
	}
	for i := range 3 {
		if status, _, body := read("small"); status != http.StatusOK {
			t.Fatalf("small's cold page %d of its 3: %d %s", i+1, status, body)
		}
	}
	before := s.origin.Total()
	status, h, body := read("small")
	if status != http.StatusTooManyRequests || restError(t, "small's 4th cold page", body) != "rate_limited" || h.Get("Retry-After") == "" {
		t.Fatalf("small's 4th cold page: %d, Retry-After %q: %s; want 429 with Retry-After", status, h.Get("Retry-After"), body)
	}
	if n := s.origin.Total() - before; n != 0 {
		t.Errorf("small's refused page cost %d origin requests", n)
	}
	if secs, err := strconv.Atoi(h.Get("Retry-After")); err != nil || secs < 1 || secs > 20 {
		t.Errorf("Retry-After %q: want the seconds until small's next fetch (one in 20 s)", h.Get("Retry-After"))
	}
	// Cached answers are never refused for the budget.
	if status, _, body := s.do(t, "GET", "/v1/body/loadchan001", "", "X-API-Key", keys["small"]); status != http.StatusOK {
		t.Errorf("small's cached page: %d %s", status, body)
	}
	// The same address, another consumer: CLIENT_ORIGIN_RPM's share.
	for i := range 8 {
		if status, _, body := read("big"); status != http.StatusOK {
			t.Fatalf("big's cold page %d, beside small's spent share: %d %s", i+1, status, body)
		}
	}
}

// wsConsumer opens a graphql-transport-ws connection whose key comes in
// connection_init, as a browser's does, and returns it acknowledged, or
// the close status refusing it.
func (s *liveServer) wsConsumer(t *testing.T, ctx context.Context, key string) (*websocket.Conn, websocket.StatusCode) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	init := `{"type":"connection_init"}`
	if key != "" {
		init = `{"type":"connection_init","payload":{"key":"` + key + `"}}`
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(init)); err != nil {
		t.Fatal(err)
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		if code := websocket.CloseStatus(err); code != -1 {
			return nil, code
		}
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"connection_ack"`) {
		t.Fatalf("connection_init answered %s", b)
	}
	return c, 0
}

// wsSubscribe sends a subscription of feedUpdates to channel, with id.
func wsSubscribe(t *testing.T, ctx context.Context, c *websocket.Conn, id, channel string) {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{"id": id, "type": "subscribe", "payload": map[string]string{
		"query": `subscription { feedUpdates(channels: ["` + channel + `"]) { kind } }`,
	}})
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		t.Fatal(err)
	}
}

// wsRefusal reads c until a subscription is refused and returns its id
// and error.
func wsRefusal(t *testing.T, ctx context.Context, c *websocket.Conn) (id, payload string) {
	t.Helper()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for a subscription's refusal: %v", err)
		}
		var m struct {
			ID, Type string
			Payload  json.RawMessage
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "error" {
			return m.ID, string(m.Payload)
		}
	}
}

// Two consumers behind one address whose WebSocket keys come in
// connection_init each have their own STREAMS_PER_CLIENT (or streams=)
// and SUBSCRIBED_CHANNELS_PER_CLIENT: the connection is counted once the
// key has named its consumer, and refused beyond the bound with 4429;
// connections without a key (ANONYMOUS=on) share the address's.
func TestAccessWebSocketConsumers(t *testing.T) {
	path, keys := keysFile(t, "alpha", "beta", "gamma streams=2")
	s := startLive(t, map[string]string{
		"API_KEYS_FILE": path, "ANONYMOUS": "on", "LOG_LEVEL": "warn",
		"STREAMS_PER_CLIENT": "1", "SUBSCRIBED_CHANNELS_PER_CLIENT": "1",
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns := map[string]*websocket.Conn{}
	for _, c := range []struct {
		who  string
		want websocket.StatusCode // 0: acknowledged
	}{
		{"alpha", 0}, {"beta", 0}, {"alpha", 4429}, {"gamma", 0}, {"gamma", 0}, {"gamma", 4429},
		{"", 0}, {"", 4429}, {"beta", 4429},
	} {
		conn, code := s.wsConsumer(t, ctx, keys[c.who])
		if code != c.want {
			t.Fatalf("%q's connection: close %d, want %d (0: acknowledged)", c.who, code, c.want)
		}
		if conn != nil && conns[c.who] == nil {
			conns[c.who] = conn
		}
	}
	// Each watches one channel of its own, which it looks up (an origin
	// request, after the channel is counted in)...
	firsts := map[string]string{"alpha": "tmefeed_news", "beta": "emoji_party", "": "kanal_novostei"}
	for who, ch := range firsts {
		wsSubscribe(t, ctx, conns[who], "1", ch)
		for s.origin.Requests("/s/"+ch) == 0 {
			if ctx.Err() != nil {
				t.Fatalf("%q's subscription to %s was not looked up", who, ch)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// ...and a second channel, watched by another client, is refused to
	// it: the first one counts for the consumer, not the address.
	for who, ch := range map[string]string{"alpha": "emoji_party", "beta": "kanal_novostei", "": "tmefeed_news"} {
		wsSubscribe(t, ctx, conns[who], "2", ch)
		id, msg := wsRefusal(t, ctx, conns[who])
		if id != "2" || !strings.Contains(msg, "SUBSCRIBED_CHANNELS_PER_CLIENT") || !strings.Contains(msg, "already watches 1 ") {
			t.Errorf("%q's subscriptions to %s and %s: %q refused with %s; want the second, this client watching 1 channel", who, firsts[who], ch, id, msg)
		}
	}
	// A stream ended gives its place back to its consumer.
	conns["alpha"].Close(websocket.StatusNormalClosure, "")
	for {
		conn, code := s.wsConsumer(t, ctx, keys["alpha"])
		if code == 0 {
			conn.CloseNow()
			break
		}
		if code != 4429 || ctx.Err() != nil {
			t.Fatalf("alpha after closing its stream: close %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ANONYMOUS=cached: a request without a key for a page nobody has read
// is refused without an origin request; once a consumer has read it, the
// anonymous request is answered from the cache. Feeds need a key.
func TestAccessAnonymousCached(t *testing.T) {
	path, keys := keysFile(t, "alpha")
	s := startLive(t, map[string]string{"API_KEYS_FILE": path, "ANONYMOUS": "cached", "UPDATER": "off", "LOG_LEVEL": "warn"})
	for _, p := range []string{"/v1/body/kanal_novostei", "/v1/preview/kanal_novostei", "/media/kanal_novostei/10/0"} {
		before := s.origin.Total()
		status, h, body := s.do(t, "GET", p, "")
		if status != http.StatusUnauthorized || restError(t, p, body) != "unauthenticated" || h.Get("WWW-Authenticate") == "" {
			t.Errorf("anonymous %s, not cached: %d %s", p, status, body)
		}
		if n := s.origin.Total() - before; n != 0 {
			t.Errorf("anonymous %s, not cached: %d origin requests", p, n)
		}
	}
	status, _, body := s.do(t, "POST", "/v1/previews", `{"channels": ["kanal_novostei"]}`)
	if status != http.StatusOK || !strings.Contains(body, `"unauthenticated"`) {
		t.Errorf("anonymous /v1/previews, not cached: %d %s", status, body)
	}

	if status, _, body := s.do(t, "GET", "/v1/body/kanal_novostei", "", "X-API-Key", keys["alpha"]); status != http.StatusOK {
		t.Fatalf("with a key: %d %s", status, body)
	}
	before := s.origin.Total()
	status, _, cached := s.do(t, "GET", "/v1/body/kanal_novostei", "")
	if status != http.StatusOK || !strings.Contains(cached, `"posts"`) {
		t.Errorf("anonymous, cached: %d %.200s", status, cached)
	}
	if n := s.origin.Total() - before; n != 0 {
		t.Errorf("anonymous, cached: %d origin requests", n)
	}
	for _, p := range []string{"/v1/atom?channels=kanal_novostei", "/embed?channels=kanal_novostei"} {
		if status, _, _ := s.do(t, "GET", p, ""); status != http.StatusUnauthorized {
			t.Errorf("anonymous %s under ANONYMOUS=cached: %d, want 401", p, status)
		}
	}
}

// METRICS_ADDR: /metrics (and /debug/pprof) on a listener of its own, 404
// on the public port; the probes stay public.
func TestMetricsAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := startLive(t, map[string]string{"METRICS_ADDR": addr, "LOG_LEVEL": "warn"})
	if status, _, body := s.do(t, "GET", "/v1/body/tmefeed_news", ""); status != http.StatusOK {
		t.Fatalf("/v1/body: %d %s", status, body)
	}
	status, _, body := s.do(t, "GET", "/metrics", "")
	if status != http.StatusNotFound || restError(t, "/metrics", body) != "not_found" {
		t.Errorf("/metrics on the public port: %d %s", status, body)
	}
	if status, _, _ := s.do(t, "GET", "/debug/pprof/", ""); status != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on the public port: %d", status)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if status, _, _ := s.do(t, "GET", p, ""); status != http.StatusOK {
			t.Errorf("%s: %d", p, status)
		}
	}
	ops := &liveServer{base: "http://" + addr, client: s.client}
	if v := value(ops.scrape(t), "tmefeed_http_requests_total", "route", "/v1/body/{channel}", "code", "200"); v != 1 {
		t.Errorf("the public request in the metrics listener's series: %v", v)
	}
	if status, _, body := ops.do(t, "GET", "/debug/pprof/", ""); status != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ on METRICS_ADDR: %d", status)
	}
}

// `tmefeed keys add` prints the key alone on its first line and the
// keys file's line on its second, so that `| tail -1 >> keys` works; the
// line holds the key's hash, not the key, and reads back to the key.
func TestKeysAdd(t *testing.T) {
	var out, errOut strings.Builder
	if err := run(context.Background(), []string{"keys", "add", "dash", "rpm=600", "streams=8"}, nil, &out, &errOut, env(nil)); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "tmf_") || strings.Contains(lines[1], lines[0]) {
		t.Fatalf("output %q", out.String())
	}
	set, err := access.Parse(strings.NewReader(lines[1]), []byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := set.Lookup(lines[0])
	if err != nil || g.Consumer.Name != "dash" || g.Consumer.RPM != 600 || g.Consumer.Streams != 8 {
		t.Errorf("the line read back: %+v %v", g.Consumer, err)
	}
	for _, args := range [][]string{{"keys"}, {"keys", "add"}, {"keys", "add", "bad name"}, {"keys", "add", "dash", "rpm=-1"}, {"keys", "remove", "dash"}} {
		out.Reset()
		if err := run(context.Background(), args, nil, &out, &errOut, env(nil)); err == nil || out.Len() > 0 {
			t.Errorf("%v: %v, printed %q", args, err, out.String())
		}
	}
}
