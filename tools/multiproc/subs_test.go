package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/procbin"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

const (
	liveChannel = "tmefeed_news"
	liveWS      = 200 // WebSocket subscribers, spread over the processes
	liveSub     = `subscription { feedUpdates(channels: ["tmefeed_news"]) { kind channel { username } post { messageId text { plain } } } }`
)

// liveEvent is one feedUpdates payload.
type liveEvent struct {
	Data struct {
		FeedUpdates struct {
			Kind string
			Post struct{ MessageID int }
		}
	}
	Errors []json.RawMessage
}

// TestSubscribersAcrossProcesses: two tmefeed processes over one
// redis-server and the fixture origin; 200 WebSocket subscribers
// (graphql-transport-ws) and one event stream, spread over both, watch a
// channel. A post published at the origin reaches all 201 within two
// refresh windows, while the origin sees the channel's page fetched about
// once per refresh window in total: the process holding the lease fetches,
// and the Valkey stream of events carries the change to the other.
func TestSubscribersAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	refresh, _ := cache.RefreshFor("normal")

	dir := t.TempDir()
	var log strings.Builder
	bin, err := procbin.Build(ctx, dir, raceEnabled, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	o := fixtures.NewOrigin(fixtures.OriginOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	originSrv := &http.Server{Handler: o, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = originSrv.Serve(ln) }()
	defer originSrv.Close()

	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for i := range 2 {
		p, err := startProc(ctx, bin, dir, i, map[string]string{
			"TME_ORIGIN": "http://" + ln.Addr().String(),
			"VALKEY_URL": srv.URL,
			"CACHE_MODE": "normal",
			"LOG_LEVEL":  "warn",
		})
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	dumpLogs := func() {
		for _, p := range procs {
			t.Logf("--- output of process %d:\n%s", p.n, p.tail())
		}
	}

	// Every subscriber reports each event it receives here.
	type arrival struct {
		who string
		ev  liveEvent
		err error
	}
	arrivals := make(chan arrival, 4*(liveWS+1))
	var wg sync.WaitGroup
	defer wg.Wait()
	subCtx, endSubs := context.WithCancel(ctx)
	defer endSubs()

	ready := make(chan error, liveWS+1)
	for i := range liveWS {
		p := procs[i%len(procs)]
		who := fmt.Sprintf("ws%d@%d", i, p.n)
		wg.Go(func() {
			err := subscribeWS(subCtx, p.base, ready, func(ev liveEvent) { arrivals <- arrival{who: who, ev: ev} })
			if err != nil && subCtx.Err() == nil {
				arrivals <- arrival{who: who, err: err}
			}
		})
	}
	sseProc := procs[1]
	wg.Go(func() {
		err := subscribeSSE(subCtx, sseProc.base, ready, func(ev liveEvent) { arrivals <- arrival{who: "sse", ev: ev} })
		if err != nil && subCtx.Err() == nil {
			arrivals <- arrival{who: "sse", err: err}
		}
	})
	for range liveWS + 1 {
		select {
		case err := <-ready:
			if err != nil {
				dumpLogs()
				t.Fatalf("subscribing: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("subscribers did not connect")
		}
	}

	// The page as the processes hold it now is the baseline; the origin's
	// counts start here, a refresh window after the subscriptions made
	// the channel watched.
	time.Sleep(refresh)
	o.Reset()
	start := time.Now()
	id := o.PublishPost(liveChannel, "published while 201 subscribers watch")
	got := map[string]bool{}
	var last time.Duration
	for len(got) < liveWS+1 {
		select {
		case a := <-arrivals:
			if a.err != nil {
				dumpLogs()
				t.Fatalf("%s: %v", a.who, a.err)
			}
			u := a.ev.Data.FeedUpdates
			if len(a.ev.Errors) > 0 || u.Kind != "NEW" || u.Post.MessageID != id {
				t.Fatalf("%s received %+v, want NEW %d", a.who, a.ev, id)
			}
			if got[a.who] {
				t.Fatalf("%s received the post twice", a.who)
			}
			got[a.who] = true
			last = time.Since(start)
		case <-ctx.Done():
			dumpLogs()
			var missing []string
			for i := range liveWS {
				if who := fmt.Sprintf("ws%d@%d", i, procs[i%len(procs)].n); !got[who] {
					missing = append(missing, who)
				}
			}
			if !got["sse"] {
				missing = append(missing, "sse")
			}
			t.Fatalf("%d of %d subscribers received the post; not %v", len(got), liveWS+1, missing)
		}
	}
	// One more window, to see the fetches settle into their cadence.
	time.Sleep(refresh)
	elapsed := time.Since(start)
	fetches := o.Requests("/s/" + liveChannel)
	windows := elapsed.Seconds() / refresh.Seconds()
	t.Logf("all %d subscribers (%d WebSocket over %d processes, 1 event stream) received post %d within %v of its publication (refresh window %v)",
		len(got), liveWS, len(procs), id, last.Round(time.Millisecond), refresh)
	t.Logf("origin: %d fetches of /s/%s in %v = %.2f per refresh window across both processes (all origin requests: %d)",
		fetches, liveChannel, elapsed.Round(time.Millisecond), float64(fetches)/windows, o.Total())
	if last > 2*refresh {
		t.Errorf("the last subscriber received the post after %v, more than two refresh windows", last)
	}
	// The updater refreshes a watched page ahead of its refresh point,
	// and the copy it gets stays fresh until a window after that point:
	// one fetch per window for both processes together, the window that
	// starts within the lead of the end included. Two processes fetching
	// each on their own, or a fetch per updater lead, would cost more.
	if most := int64(math.Ceil(windows)) + 1; fetches < 1 || fetches > most {
		dumpLogs()
		t.Errorf("%d fetches of the page in %v, want 1 to %d", fetches, elapsed, most)
	}
	endSubs()
}

// subscribeWS subscribes over one WebSocket connection, reports on ready
// once the server has the subscription (its pong follows the subscribe),
// and calls got with every event until ctx ends.
func subscribeWS(ctx context.Context, base string, ready chan<- error, got func(liveEvent)) error {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		ready <- err
		return nil
	}
	defer c.CloseNow()
	q, _ := json.Marshal(liveSub)
	for _, m := range []string{`{"type":"connection_init"}`, `{"type":"subscribe","id":"1","payload":{"query":` + string(q) + `}}`, `{"type":"ping"}`} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			ready <- err
			return nil
		}
	}
	pending := true
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if pending {
				ready <- err
				return nil
			}
			return err
		}
		var m struct {
			Type    string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		switch m.Type {
		case "connection_ack":
		case "ping":
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
		case "pong":
			if pending {
				pending = false
				ready <- nil
			}
		case "next":
			var ev liveEvent
			if err := json.Unmarshal(m.Payload, &ev); err != nil {
				return err
			}
			got(ev)
		default:
			return fmt.Errorf("unexpected message %s", b)
		}
	}
}

// subscribeSSE subscribes with an event stream and calls got with every
// event until ctx ends.
func subscribeSSE(ctx context.Context, base string, ready chan<- error, got func(liveEvent)) error {
	body, _ := json.Marshal(map[string]string{"query": liveSub})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ready <- err
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ready <- fmt.Errorf("event stream: status %d", resp.StatusCode)
		return nil
	}
	ready <- nil
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			if event == "complete" {
				return fmt.Errorf("the event stream completed")
			}
		case strings.HasPrefix(line, "data: ") && event == "next":
			var ev liveEvent
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				return err
			}
			got(ev)
		}
	}
	return sc.Err()
}
