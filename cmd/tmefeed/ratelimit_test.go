package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Each subscribe message over an open WebSocket costs its client one
// request of RATE_LIMIT_RPM, as the upgrade did: past the budget a
// subscribe is answered with an error for its id (RATE_LIMITED and
// retryAfter), the connection stays usable, the client's HTTP requests
// are refused too (one budget), and another client is not affected.
func TestRateLimitCountsSubscribes(t *testing.T) {
	const rpm, excess = 5, 2
	s := startLive(t, map[string]string{"RATE_LIMIT_RPM": strconv.Itoa(rpm), "TRUSTED_PROXIES": "127.0.0.1, ::1", "LOG_LEVEL": "warn"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const limited, other = "198.51.100.7", "198.51.100.8"
	c, resp := s.openWS(t, ctx, limited) // the upgrade and subscribe "1": two requests
	if c == nil {
		t.Fatalf("upgrade: status %d", resp.StatusCode)
	}
	doc := string(must(json.Marshal(streamDocument)))
	for id := 2; id <= rpm-1+excess; id++ {
		m := `{"type":"subscribe","id":"` + strconv.Itoa(id) + `","payload":{"query":` + doc + `}}`
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	// Answered in order: the refusals come before the pong.
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	var refused []string
	retry := 0
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("connection after %v refused: %v", refused, err)
		}
		var m struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Payload []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if m.Type == "pong" {
			break
		}
		if m.Type != "error" || len(m.Payload) != 1 || m.Payload[0].Extensions["code"] != "RATE_LIMITED" {
			t.Fatalf("message %s, want an error with code RATE_LIMITED", b)
		}
		ra, ok := m.Payload[0].Extensions["retryAfter"].(float64)
		if !ok || ra < 1 || ra > 120 || ra != float64(int(ra)) {
			t.Errorf("message %s: retryAfter is not whole seconds within two minutes", b)
		}
		retry = int(ra)
		refused = append(refused, m.ID)
	}
	if want := []string{"5", "6"}; strings.Join(refused, ",") != strings.Join(want, ",") {
		t.Fatalf("refused subscribes %v, want %v", refused, want)
	}
	s.waitSubscriptions(t, ctx, rpm-1)

	// One budget: the client's queries are refused too, with the same wait.
	status, h, out := s.do(t, http.MethodPost, "/graphql", `{"query":"{ __typename }"}`, "X-Forwarded-For", limited)
	if status != http.StatusTooManyRequests || !strings.Contains(out, "RATE_LIMITED") {
		t.Fatalf("a query after the subscribes: status %d: %s", status, out)
	}
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < retry-1 || ra > retry {
		t.Errorf("Retry-After %q after the subscribes' retryAfter %d", h.Get("Retry-After"), retry)
	}
	// The refused ids are free again, the connection still serves: a
	// subscribe is refused for the budget, not for its id.
	m := `{"type":"subscribe","id":"5","payload":{"query":` + doc + `}}`
	if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"RATE_LIMITED"`) || !strings.Contains(string(b), `"id":"5"`) {
		t.Fatalf("id 5 again: %s %v", b, err)
	}

	// Another client: its query and its subscription are served.
	if status, _, out := s.do(t, http.MethodPost, "/graphql", `{"query":"{ __typename }"}`, "X-Forwarded-For", other); status != http.StatusOK {
		t.Errorf("another client's query: status %d: %s", status, out)
	}
	if c, resp := s.openWS(t, ctx, other); c == nil {
		t.Fatalf("another client's WebSocket: status %d", resp.StatusCode)
	}
	s.waitSubscriptions(t, ctx, rpm)
}
