package live

import (
	"fmt"
	"slices"
	"testing"
	"time"
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
		p.hit("a")
		p.decay(now.Add(time.Duration(i) * 30 * time.Second))
	}
	now = now.Add(2 * time.Minute)
	if got := p.decay(now); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("popular after two minutes of reads: %v, want [a]", got)
	}
	for i := range 8 {
		for range 10 {
			p.hit(fmt.Sprintf("burst%d", i))
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
