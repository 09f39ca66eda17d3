package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/procbin"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

// resumeSub is feedUpdates of the live channel, as an EventSource asks it.
const resumeSub = `subscription { feedUpdates(channels: ["` + liveChannel + `"]) { kind post { messageId } } }`

// streamEvent is one update of an event stream, or how the stream ended.
type streamEvent struct {
	id, kind string
	post     int
	end      error // set on the stream's last report
}

// resumer is a subscriber as an EventSource is one: a GET event stream
// that, when it ends, is opened again (on whichever process the test
// says) with the id of the last event it received in Last-Event-ID.
type resumer struct {
	name   string
	mu     sync.Mutex
	lastID string
	events chan streamEvent
}

// open streams from base until the server ends the stream or ctx ends;
// it returns once the server has admitted the subscription, and reports
// every event (then the end) on r.events.
func (r *resumer) open(ctx context.Context, t *testing.T, base string, admitted func() bool) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/graphql?query="+url.QueryEscape(resumeSub), nil)
	req.Header.Set("Accept", "text/event-stream")
	r.mu.Lock()
	if r.lastID != "" {
		req.Header.Set("Last-Event-ID", r.lastID)
	}
	r.mu.Unlock()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("%s: event stream answered %d", r.name, resp.StatusCode)
	}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev streamEvent
		var name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: ") && name == "next":
				var p struct {
					Data struct {
						FeedUpdates struct {
							Kind string
							Post struct{ MessageID int }
						}
					}
					Errors []json.RawMessage
				}
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &p); err != nil || len(p.Errors) > 0 {
					r.events <- streamEvent{end: fmt.Errorf("event %s: %v", line, err)}
					return
				}
				ev.kind, ev.post = p.Data.FeedUpdates.Kind, p.Data.FeedUpdates.Post.MessageID
			case line == "" && name != "":
				if name == "complete" {
					r.events <- streamEvent{end: fmt.Errorf("the stream completed")}
					return
				}
				if ev.id == "" {
					r.events <- streamEvent{end: fmt.Errorf("an update without an id")}
					return
				}
				r.mu.Lock()
				r.lastID = ev.id
				r.mu.Unlock()
				r.events <- ev
				ev, name = streamEvent{}, ""
			}
		}
		r.events <- streamEvent{end: fmt.Errorf("the stream ended: %v", sc.Err())}
	}()
	for !admitted() {
		if ctx.Err() != nil {
			t.Fatalf("%s: the subscription was not admitted", r.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// next is the subscriber's next report; one that takes longer than six
// refresh windows (the updater finds a change within one) reports that.
func (r *resumer) next(ctx context.Context) streamEvent {
	select {
	case ev := <-r.events:
		return ev
	case <-ctx.Done():
		return streamEvent{end: ctx.Err()}
	case <-time.After(time.Minute):
		return streamEvent{end: fmt.Errorf("no report for a minute")}
	}
}

// TestSubscribersResumeAcrossRestarts: two tmefeed processes over one
// redis-server, each holding a subscriber's event stream, are stopped
// (SIGTERM) and started again on the same port one after the other while
// posts are published at the origin. Each subscriber, its stream ended,
// opens it again with Last-Event-ID, on the other process while its own is
// down or on its own once it is back, and receives every post exactly
// once, in order: those found while it was away come from the backlog in
// Valkey. Every step waits for what it needs (a process's exit, an event
// seen by the other subscriber), never for time to pass.
func TestSubscribersResumeAcrossRestarts(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
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
	env := map[string]string{
		"TME_ORIGIN": "http://" + ln.Addr().String(),
		"VALKEY_URL": srv.URL,
		"CACHE_MODE": "normal",
		"LOG_LEVEL":  "warn",
	}

	procs := make([]*proc, 2)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.stop()
			}
		}
	}()
	for i := range procs {
		if procs[i], err = startProc(ctx, bin, dir, i, env); err != nil {
			t.Fatal(err)
		}
	}
	fail := func(format string, args ...any) {
		t.Helper()
		for _, p := range procs {
			t.Logf("--- output of process %d:\n%s", p.n, p.tail())
		}
		t.Fatalf(format, args...)
	}
	restart := func(i int) {
		t.Helper()
		p, err := startProcOn(ctx, bin, dir, procs[i].n, procs[i].port, env)
		if err != nil {
			fail("restarting process %d: %v", i, err)
		}
		procs[i] = p
	}
	admitted := func(i, n int) func() bool {
		return func() bool { return openSubscriptions(ctx, procs[i].base) >= n }
	}

	subs := []*resumer{{name: "s0", events: make(chan streamEvent, 64)}, {name: "s1", events: make(chan streamEvent, 64)}}
	subs[0].open(ctx, t, procs[0].base, admitted(0, 1))
	subs[1].open(ctx, t, procs[1].base, admitted(1, 1))

	var published []int
	got := [][]int{nil, nil}
	ids := [][]string{nil, nil}
	// receive waits for subscriber i's next update, which must be post
	// want.
	receive := func(i, want int) {
		t.Helper()
		ev := subs[i].next(ctx)
		if ev.end != nil || ev.kind != "NEW" || ev.post != want {
			fail("%s: %+v, want NEW %d (received %v so far, published %v)", subs[i].name, ev, want, got[i], published)
		}
		got[i], ids[i] = append(got[i], ev.post), append(ids[i], ev.id)
	}
	// ended waits for subscriber i's stream to end, its process stopped.
	ended := func(i int) {
		t.Helper()
		if ev := subs[i].next(ctx); ev.end == nil {
			fail("%s: %+v while its process stopped, want the stream's end", subs[i].name, ev)
		}
	}
	publish := func(text string) int {
		id := o.PublishPost(liveChannel, text)
		published = append(published, id)
		return id
	}

	p := publish("before the restarts")
	receive(0, p)
	receive(1, p)

	// Process 0 goes; its subscriber moves to process 1 at once.
	procs[0].stop()
	ended(0)
	p = publish("while process 0 is down")
	receive(1, p) // recorded before s0 comes back
	subs[0].open(ctx, t, procs[1].base, admitted(1, 2))
	receive(0, p) // from the backlog
	restart(0)

	// Process 1 goes; both its subscribers wait for it to come back.
	procs[1].stop()
	ended(0)
	ended(1)
	subs[0].open(ctx, t, procs[0].base, admitted(0, 1))
	p = publish("while process 1 is down")
	receive(0, p)
	restart(1)
	subs[1].open(ctx, t, procs[1].base, admitted(1, 1))
	receive(1, p) // from the backlog

	p = publish("after the restarts")
	receive(0, p)
	receive(1, p)

	for i, s := range subs {
		if !slices.Equal(got[i], published) || !slices.IsSortedFunc(ids[i], compareIDs) {
			fail("%s received %v (ids %v), want %v in order", s.name, got[i], ids[i], published)
		}
		select {
		case ev := <-s.events:
			fail("%s: one more report %+v", s.name, ev)
		default:
		}
	}
	t.Logf("both subscribers received all %d posts once, in order, over two restarts: %v", len(published), ids[0])
}

// openSubscriptions is the process's count of open subscriptions.
func openSubscriptions(ctx context.Context, base string) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "tmefeed_graphql_subscriptions_open "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// compareIDs orders event ids "<ms>-<seq>".
func compareIDs(a, b string) int {
	var am, as, bm, bs uint64
	_, _ = fmt.Sscanf(a, "%d-%d", &am, &as)
	_, _ = fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return cmp.Or(cmp.Compare(am, bm), cmp.Compare(as, bs))
}
