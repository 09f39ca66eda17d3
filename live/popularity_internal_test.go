package live

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// noPage is an origin with no page at all: a read is counted before its
// load, whatever the load finds.
type noPage struct{}

func (noPage) Fetch(context.Context, tme.Request) ([]byte, error) { return nil, errNoPage }

var errNoPage = errors.New("no page")

// Subscriptions count one per distinct client, as reads do: five
// subscriptions of one client to a channel rank it below a channel three
// clients subscribe to, when the budget is short and the updater must
// choose; a client that reads and subscribes counts once.
func TestSubscribersCountOncePerClient(t *testing.T) {
	h := &Hub{cfg: Config{MaxChannels: DefaultMaxChannels}, now: time.Now, subs: map[string]map[*Subscription]struct{}{}}
	for range 5 {
		if _, err := h.Subscribe(t.Context(), Request{Channels: []string{"cccc"}, Client: "198.51.100.1"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
		if _, err := h.Subscribe(t.Context(), Request{Channels: []string{"dddd"}, Client: c}); err != nil {
			t.Fatal(err)
		}
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{Refresh: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	svc := pages.New(pages.Config{Cache: mem, Origin: noPage{}})
	t.Cleanup(svc.Close)
	p := svc.CountPopularity(pages.PopularityConfig{Top: 2, Factor: 1, Idle: 3 * time.Minute})
	// One client reads dddd and watches it.
	if _, err := svc.Page(t.Context(), tme.Request{Kind: tme.KindBody, Channel: "dddd", Client: "203.0.113.1"}); !errors.Is(err, errNoPage) {
		t.Fatalf("reading dddd: %v, want the origin's %v", err, errNoPage)
	}
	p.Decay(time.Unix(1e9, 0))
	clients := p.Clients([]string{"cccc", "dddd"}, h.watched())
	if c, d := clients["cccc"], clients["dddd"]; math.Abs(c-1) > 0.01 || math.Abs(d-3) > 0.1 {
		t.Errorf("clients: cccc %.2f, want 1 (five subscriptions of one client); dddd %.2f, want 3", c, d)
	}
	now := time.Now()
	due := []string{"cccc", "dddd"}
	dueAt := map[string]time.Time{"cccc": now, "dddd": now.Add(time.Minute)} // cccc goes stale first
	sortDue(due, dueAt, clients)
	if !slices.Equal(due, []string{"dddd", "cccc"}) {
		t.Errorf("short budget: loads in the order %v, want [dddd cccc]", due)
	}
	sortDue(due, dueAt, nil)
	if !slices.Equal(due, []string{"cccc", "dddd"}) {
		t.Errorf("budget to spare: loads in the order %v, want the nearest to going stale first, [cccc dddd]", due)
	}
}
