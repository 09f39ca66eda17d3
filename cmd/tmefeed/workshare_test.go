package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tmefeed/tmefeed/fixtures"
)

// A subscription's start looks up every channel it names, and that work
// is owed by the client as its requests' work is (CLIENT_CPU_SHARE): a
// connection sending subscribe messages without pause, each naming 100
// channels nobody holds, is refused with RATE_LIMITED and a retryAfter
// once it owes more than it may wait for, the connection stays usable,
// the same client's GraphQL work is refused too (one share), and another
// client's subscription is served.
func TestSubscriptionStartsAreOwedByTheirClient(t *testing.T) {
	// Each look-up waits on the origin, so each start counts the most one
	// piece of work may (50ms), whatever the machine's speed.
	s := startLiveWith(t, fixtures.OriginOptions{Latency: 60 * time.Millisecond}, map[string]string{
		"CLIENT_CPU_SHARE": "0.0001", // paid back in minutes: what is owed stays owed
		"RATE_LIMIT_RPM":   "0",
		"TRUSTED_PROXIES":  "127.0.0.1, ::1",
		"LOG_LEVEL":        "warn",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const busy, other = "198.51.100.21", "198.51.100.22"
	c, resp := s.openWS(t, ctx, busy)
	if c == nil {
		t.Fatalf("upgrade: status %d", resp.StatusCode)
	}
	refusal := make(chan map[string]any, 1)
	readErr := make(chan error, 1)
	pong := make(chan struct{}, 1)
	go func() {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			var m struct {
				Type    string `json:"type"`
				Payload []struct {
					Message    string         `json:"message"`
					Extensions map[string]any `json:"extensions"`
				} `json:"payload"`
			}
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			if testing.Verbose() && m.Type != "next" {
				t.Logf("%.200s", b)
			}
			switch {
			case m.Type == "pong":
				pong <- struct{}{}
			case m.Type == "error" && len(m.Payload) == 1 && strings.Contains(m.Payload[0].Message, "CLIENT_CPU_SHARE"):
				ext := m.Payload[0].Extensions
				ext["message"] = m.Payload[0].Message
				select {
				case refusal <- ext:
				default:
				}
			}
		}
	}()

	var got map[string]any
	sent := 0
send:
	for id := 2; id < 400; id++ {
		names := make([]string, 100)
		for j := range names {
			names[j] = strconv.Quote(fmt.Sprintf("unheld_%d_%d", id, j))
		}
		doc := must(json.Marshal("subscription { feedUpdates(channels: [" + strings.Join(names, ",") + "]) { kind } }"))
		m := `{"type":"subscribe","id":"` + strconv.Itoa(id) + `","payload":{"query":` + string(doc) + `}}`
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		sent++
		// Ended at once, as a connection probing for work would: the
		// bounds on open subscriptions never come into it.
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"id":"`+strconv.Itoa(id)+`","type":"complete"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case got = <-refusal:
			break send
		case err := <-readErr:
			t.Fatalf("the connection ended after %d subscribes: %v", sent, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got == nil {
		select {
		case got = <-refusal:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d subscribes naming 100 channels nobody holds each were all started: none was refused for the client's share", sent)
		}
	}
	if got["code"] != "RATE_LIMITED" {
		t.Errorf("refusal %v: code is not RATE_LIMITED", got)
	}
	if ra, ok := got["retryAfter"].(float64); !ok || ra < 1 || ra != float64(int(ra)) {
		t.Errorf("refusal %v: retryAfter is not whole seconds", got)
	}
	// The connection still serves.
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pong:
	case err := <-readErr:
		t.Fatalf("the connection ended after the refusal: %v", err)
	case <-ctx.Done():
		t.Fatal("no pong after the refusal")
	}

	// One share: the client's GraphQL work is refused too.
	status, h, out := s.do(t, http.MethodPost, "/graphql", `{"query":"{ channel(username: \"tmefeed_news\") { title } }"}`, "Content-Type", "application/json", "X-Forwarded-For", busy)
	if status != http.StatusTooManyRequests || !strings.Contains(out, "RATE_LIMITED") || h.Get("Retry-After") == "" {
		t.Errorf("the same client's query after its refused subscribe: status %d, Retry-After %q: %.300s", status, h.Get("Retry-After"), out)
	}

	// Another client's query and subscription are served.
	if status, _, out := s.do(t, http.MethodPost, "/graphql", `{"query":"{ channel(username: \"tmefeed_news\") { title } }"}`, "Content-Type", "application/json", "X-Forwarded-For", other); status != http.StatusOK {
		t.Errorf("another client's query: status %d: %.300s", status, out)
	}
	oc, resp := s.openWS(t, ctx, other)
	if oc == nil {
		t.Fatalf("another client's WebSocket: status %d", resp.StatusCode)
	}
	if err := oc.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	// Its subscription's start, refused, would be answered with an error
	// message within milliseconds of the pong.
	readUntilPong := func(ctx context.Context) bool {
		for {
			_, b, err := oc.Read(ctx)
			if err != nil {
				return false
			}
			if strings.Contains(string(b), `"error"`) {
				t.Fatalf("another client's subscription was refused: %s", b)
			}
			if strings.Contains(string(b), `"pong"`) {
				return true
			}
		}
	}
	if !readUntilPong(ctx) {
		t.Fatal("another client's connection: no pong")
	}
	quiet, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	if readUntilPong(quiet) {
		t.Fatal("a second pong nobody asked for")
	}
}
