package live

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/pages"
)

// A burst of names read a few times each, more than the popular channel
// in that moment, does not push the popular channel out of the refresh
// set nor make it forget its reads: only popular channels compete for
// Top.
func TestPopularityBurstKeepsPopularChannel(t *testing.T) {
	const window = 10 * time.Second
	p := newPopularity(2, 1, window, 3*time.Minute)
	now := time.Unix(1e9, 0)
	for i := range 5 { // read every 30 s for two minutes
		p.hit("a", 1)
		p.decay(now.Add(time.Duration(i) * 30 * time.Second))
	}
	now = now.Add(2 * time.Minute)
	if got := p.decay(now); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("popular after two minutes of reads: %v, want [a]", got)
	}
	for i := range 8 {
		for range 10 {
			p.hit(fmt.Sprintf("burst%d", i), 2)
		}
	}
	now = now.Add(time.Second)
	if got := p.decay(now); !slices.Equal(got, []string{"a"}) {
		t.Errorf("popular after a burst of 8 names read 10 times each: %v, want [a]", got)
	}
	if _, ok := p.reads["a"]; !ok {
		t.Error("the popular channel's reads were forgotten after the burst")
	}
	if n := len(p.reads); n > 4 {
		t.Errorf("%d channels' reads remembered, want at most 2×Top = 4", n)
	}
}

// Channels rank by the distinct clients that read them, not by reads:
// one client reading a channel a thousand times ranks below a channel
// twenty clients read once each.
func TestPopularityRanksByDistinctClients(t *testing.T) {
	p := newPopularity(2, 1, 0, 3*time.Minute)
	for range 1000 {
		p.hit("a", pages.ClientID("198.51.100.1"))
	}
	for i := range 20 {
		p.hit("b", pages.ClientID(fmt.Sprintf("203.0.113.%d", i)))
	}
	if got := p.decay(time.Unix(1e9, 0)); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("ranked %v, want [b a]: the channel twenty clients read first", got)
	}
	if a, b := p.reads["a"].score, p.reads["b"].score; math.Abs(a-1) > 0.01 || b < 18 || b > 22 {
		t.Errorf("clients counted: a %.2f, want 1; b %.2f, want about 20", a, b)
	}
	// A client's weight decays with the cycles since its last read.
	p = newPopularity(2, 0.5, 0, 3*time.Minute)
	p.hit("a", 1)
	p.hit("a", 2)
	p.decay(time.Unix(1e9, 0))
	p.hit("a", 2)
	p.decay(time.Unix(1e9+1, 0))
	if got := p.reads["a"].score; math.Abs(got-1.5) > 0.05 {
		t.Errorf("a client read now and one a cycle ago at half weight: %.2f, want about 1.5", got)
	}
}

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
	p := newPopularity(2, 1, 0, 3*time.Minute)
	p.hit("dddd", pages.ClientID("203.0.113.1")) // reads and watches: one client
	p.decay(time.Unix(1e9, 0))
	watched := h.watched()
	clients := p.clients([]string{"cccc", "dddd"}, watched)
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
