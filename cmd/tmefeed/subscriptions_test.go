package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Shutting down ends open subscriptions (an event stream and a WebSocket)
// so that clients resume them, instead of waiting for them until
// SHUTDOWN_TIMEOUT: serve returns without error, the event stream ends
// and the WebSocket closes with 1012 Service Restart, neither with
// complete (which graphql-ws and graphql-sse take as final).
func TestServeEndsSubscriptionsOnShutdown(t *testing.T) {
	cfg, err := parseServeConfig([]string{"--demo", "--port", "0", "--log-level", "warn", "--shutdown-timeout", "1m"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, func(a string) { addr <- a }) }()
	var base string
	select {
	case a := <-addr:
		base = "http://" + strings.Replace(a, "[::]", "127.0.0.1", 1)
	case err := <-done:
		t.Fatalf("serve ended early: %v", err)
	}
	wait, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	const sub = `subscription { feedUpdates(channels: ["tmefeed_news"]) { kind post { messageId } } }`

	body, _ := json.Marshal(map[string]string{"query": sub})
	req, _ := http.NewRequestWithContext(wait, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("event stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	ws, _, err := websocket.Dial(wait, "ws"+strings.TrimPrefix(base, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	for _, m := range []string{`{"type":"connection_init"}`, `{"type":"subscribe","id":"1","payload":{"query":` + string(must(json.Marshal(sub))) + `}}`} {
		if err := ws.Write(wait, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if _, b, err := ws.Read(wait); err != nil || !strings.Contains(string(b), "connection_ack") {
		t.Fatalf("after connection_init: %s %v", b, err)
	}
	// Both are open (a stream's headers come before it is admitted; one
	// admitted after shutdown began would be refused instead).
	for {
		mresp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(mresp.Body)
		mresp.Body.Close()
		if strings.Contains(string(b), "\ntmefeed_graphql_subscriptions_open 2\n") {
			break
		}
		if wait.Err() != nil {
			t.Fatal("the subscriptions did not open")
		}
		time.Sleep(10 * time.Millisecond)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-wait.Done():
		t.Fatal("serve did not shut down")
	}

	// The stream ends without complete.
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "event: ") || strings.HasPrefix(line, "data: ") {
			events = append(events, line)
		}
	}
	if len(events) != 0 {
		t.Errorf("event stream ended with %q, want no event", events)
	}
	// The WebSocket: closed with 1012, no complete before.
	for {
		_, b, err := ws.Read(wait)
		if err != nil {
			if websocket.CloseStatus(err) != 1012 {
				t.Errorf("WebSocket ended with %v, want 1012 Service Restart", err)
			}
			break
		}
		if s := string(b); !strings.Contains(s, `"ping"`) {
			t.Errorf("WebSocket message while shutting down: %s", s)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
