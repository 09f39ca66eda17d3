package pages

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/tme"
)

// A burst of names read a few times each, more than the popular channel
// in that moment, does not push the popular channel out of the refresh
// set nor make it forget its reads: only popular channels compete for
// Top.
func TestPopularityBurstKeepsPopularChannel(t *testing.T) {
	const window = 10 * time.Second
	p := newPopularity(PopularityConfig{Top: 2, Factor: 1, Window: window, Idle: 3 * time.Minute})
	now := time.Unix(1e9, 0)
	for i := range 5 { // read every 30 s for two minutes
		p.hit("a", 1)
		p.Decay(now.Add(time.Duration(i) * 30 * time.Second))
	}
	now = now.Add(2 * time.Minute)
	if got := p.Decay(now); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("popular after two minutes of reads: %v, want [a]", got)
	}
	for i := range 8 {
		for range 10 {
			p.hit(fmt.Sprintf("burst%d", i), 2)
		}
	}
	now = now.Add(time.Second)
	if got := p.Decay(now); !slices.Equal(got, []string{"a"}) {
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
	p := newPopularity(PopularityConfig{Top: 2, Factor: 1, Idle: 3 * time.Minute})
	for range 1000 {
		p.hit("a", ClientID("198.51.100.1"))
	}
	for i := range 20 {
		p.hit("b", ClientID(fmt.Sprintf("203.0.113.%d", i)))
	}
	if got := p.Decay(time.Unix(1e9, 0)); !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("ranked %v, want [b a]: the channel twenty clients read first", got)
	}
	if a, b := p.reads["a"].score, p.reads["b"].score; math.Abs(a-1) > 0.01 || b < 18 || b > 22 {
		t.Errorf("clients counted: a %.2f, want 1; b %.2f, want about 20", a, b)
	}
	// A client's weight decays with the cycles since its last read.
	p = newPopularity(PopularityConfig{Top: 2, Factor: 0.5, Idle: 3 * time.Minute})
	p.hit("a", 1)
	p.hit("a", 2)
	p.Decay(time.Unix(1e9, 0))
	p.hit("a", 2)
	p.Decay(time.Unix(1e9+1, 0))
	if got := p.reads["a"].score; math.Abs(got-1.5) > 0.05 {
		t.Errorf("a client read now and one a cycle ago at half weight: %.2f, want about 1.5", got)
	}
}

// A client that reads a channel and watches it counts once; watchers
// count one per distinct client, as readers do.
func TestPopularityClientsCountReadersAndWatchersOnce(t *testing.T) {
	p := newPopularity(PopularityConfig{Top: 2, Factor: 1, Idle: 3 * time.Minute})
	p.hit("dddd", ClientID("203.0.113.1"))
	p.Decay(time.Unix(1e9, 0))
	var c, d ClientSet
	for range 5 {
		c.Add(ClientID("198.51.100.1"))
	}
	for _, ip := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
		d.Add(ClientID(ip))
	}
	clients := p.Clients([]string{"cccc", "dddd"}, map[string]ClientSet{"cccc": c, "dddd": d})
	if c, d := clients["cccc"], clients["dddd"]; math.Abs(c-1) > 0.01 || math.Abs(d-3) > 0.1 {
		t.Errorf("clients: cccc %.2f, want 1 (one client added five times); dddd %.2f, want 3 (one of them also read it)", c, d)
	}
}

// The Service counts a read of a newest page towards its channel, by the
// request's client, and nothing else: not an older page, not a read from
// the cache only, and nothing once it stops counting.
func TestServiceCountsNewestReads(t *testing.T) {
	s := &Service{}
	p := s.CountPopularity(PopularityConfig{Top: 2, Factor: 1, Idle: 3 * time.Minute})
	s.noteNewest(tme.Request{Kind: tme.KindBody, Channel: "aaaa", Client: "198.51.100.1"}, nil)
	s.noteNewest(tme.Request{Kind: tme.KindBody, Channel: "aaaa", Client: "198.51.100.2"}, nil)
	s.noteNewest(tme.Request{Kind: tme.KindBody, Channel: "bbbb", Position: 10}, nil)
	s.noteNewest(tme.Request{Kind: tme.KindBody, Channel: "cccc", CacheOnly: true}, nil)
	s.StopPopularity(p)
	s.noteNewest(tme.Request{Kind: tme.KindBody, Channel: "dddd"}, nil)
	p.Decay(time.Unix(1e9, 0))
	if got := slices.Sorted(maps.Keys(p.reads)); !slices.Equal(got, []string{"aaaa"}) {
		t.Fatalf("counted %v, want [aaaa]", got)
	}
	if got := p.reads["aaaa"].score; math.Abs(got-2) > 0.05 {
		t.Errorf("aaaa's clients: %.2f, want 2", got)
	}
}

// Counting a read is on every newest page's request path, hot-store hits
// included: past a channel's first read in a cycle, it allocates nothing.
func TestCountingAReadAllocatesNothing(t *testing.T) {
	s := &Service{}
	s.CountPopularity(PopularityConfig{Top: 2, Factor: 1, Idle: 3 * time.Minute})
	r := tme.Request{Kind: tme.KindBody, Channel: "aaaa", Client: "198.51.100.1"}
	s.noteNewest(r, nil)
	if n := testing.AllocsPerRun(100, func() { s.noteNewest(r, nil) }); n != 0 {
		t.Errorf("a counted read allocates %v times, want 0", n)
	}
}
