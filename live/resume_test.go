package live_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/live"
)

// A MemoryLog gives ids that order its entries, several in one
// millisecond included; keeps at most MaxLen entries and none older than
// MaxAge; and reads after any id.
func TestMemoryLog(t *testing.T) {
	var mu sync.Mutex
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	l := live.NewMemoryLog(live.MemoryLogConfig{MaxLen: 3, MaxAge: time.Minute, Now: clock})
	ctx := context.Background()

	advance(time.Millisecond)
	ids, _ := l.Append(ctx, [][]byte{[]byte("a"), []byte("b")})
	advance(time.Millisecond)
	more, _ := l.Append(ctx, [][]byte{[]byte("c")})
	ids = append(ids, more...)
	if want := []string{"1000001-0", "1000001-1", "1000002-0"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	got, msgs, _ := l.Range(ctx, ids[0], 10)
	if !slices.Equal(got, ids[1:]) || string(msgs[0]) != "b" || string(msgs[1]) != "c" {
		t.Fatalf("after %s: %v %q", ids[0], got, msgs)
	}
	// Past MaxLen the oldest goes.
	d, _ := l.Append(ctx, [][]byte{[]byte("d")})
	first, last, ok, _ := l.Bounds(ctx)
	if first != ids[1] || last != d[0] || !ok {
		t.Fatalf("bounds %s %s, want %s %s", first, last, ids[1], d[0])
	}
	// Past MaxAge everything goes; the newest id given stays.
	advance(2 * time.Minute)
	first, last, _, _ = l.Bounds(ctx)
	if all, _, _ := l.Range(ctx, "0-0", 10); first != "" || last != d[0] || all != nil {
		t.Fatalf("after MaxAge: bounds %q %q, entries %v", first, last, all)
	}
	// Read waits for the next entry.
	done := make(chan []string, 1)
	go func() { got, _, _ := l.Read(ctx, d[0], 10, time.Minute); done <- got }()
	e, _ := l.Append(ctx, [][]byte{[]byte("e")})
	if got := <-done; !slices.Equal(got, e) {
		t.Fatalf("read %v, want %v", got, e)
	}
	if _, _, err := l.Range(ctx, "not-an-id", 1); !errors.Is(err, live.ErrBadEventID) {
		t.Fatalf("a malformed id: %v", err)
	}
}

// A subscriber that resumes after the id of the last event it received
// gets, from Replay, exactly the events of its channels and filter found
// while it was away, with the ids everyone else saw them under; then the
// live ones on Events, none of the replayed again. An id older than the
// log replays what is held and says so; a malformed one is refused.
func TestSubscriptionResumes(t *testing.T) {
	w := newWorld(t, fixtures.OriginOptions{})
	p := w.process(t, processOptions{})
	p.read(t, "tmefeed_news")
	witness, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}})
	if err != nil {
		t.Fatal(err)
	}
	away, leave := context.WithCancel(t.Context())
	s, err := p.hub.Subscribe(away, live.Request{Channels: []string{"tmefeed_news"}})
	if err != nil {
		t.Fatal(err)
	}
	w.origin.PublishPost("tmefeed_news", "seen by both")
	e, _ := next(t, s)
	if we, _ := next(t, witness); e.ID.IsZero() || we.ID != e.ID {
		t.Fatalf("ids %s and %s for one event", e.ID, we.ID)
	}
	leave()

	var want []string
	for _, txt := range []string{"away one", "away two: launch", "away three"} {
		n := w.origin.PublishPost("tmefeed_news", txt)
		want = append(want, fmt.Sprintf("%d %q", n, txt))
	}
	var seen []string
	var seenIDs []live.EventID
	for len(seen) < 3 {
		ev, _ := next(t, witness)
		seen, seenIDs = append(seen, fmt.Sprintf("%d %q", ev.Post.ID, text(ev.Post))), append(seenIDs, ev.ID)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("witness: %q, want %q", seen, want)
	}

	back, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}, After: e.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	replay, gap := back.Replay()
	var got []string
	var gotIDs []live.EventID
	for _, ev := range replay {
		got, gotIDs = append(got, fmt.Sprintf("%d %q", ev.Post.ID, text(ev.Post))), append(gotIDs, ev.ID)
	}
	if gap || !slices.Equal(got, want) || !slices.Equal(gotIDs, seenIDs) {
		t.Fatalf("replay %q %v (gap %v), want %q %v", got, gotIDs, gap, want, seenIDs)
	}
	filtered, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}, Filter: feed.Filter{Query: "launch"}, After: e.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := filtered.Replay(); len(r) != 1 || r[0].ID != seenIDs[1] {
		t.Fatalf("a filtered resume replays %d events, want the one matching", len(r))
	}

	n := w.origin.PublishPost("tmefeed_news", "after the return")
	if ev, _ := next(t, back); ev.Post.ID != n || ev.ID.Compare(seenIDs[2]) <= 0 {
		t.Fatalf("live after the replay: %d %s, want %d after %s", ev.Post.ID, ev.ID, n, seenIDs[2])
	}

	old, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}, After: "1-0"})
	if err != nil {
		t.Fatal(err)
	}
	if r, gap := old.Replay(); !gap || len(r) != 5 {
		t.Errorf("an id older than the log: %d events replayed, gap %v; want the 5 held and a gap", len(r), gap)
	}
	if _, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}, After: "yesterday"}); !errors.Is(err, live.ErrBadEventID) || !errors.Is(err, feed.ErrBadRequest) {
		t.Errorf("a malformed id: %v", err)
	}
}
