package live_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/live"
)

// BenchmarkUserP99DuringUpdates measures user reads of 200 channels'
// newest pages with the updater keeping them fresh and with it off,
// alternating rounds in one run, and reports each side's p99 and their
// ratio (target: at most 1.5). Run with
//
//	go test -run '^$' -bench UserP99 -benchtime 1x ./live
func BenchmarkUserP99DuringUpdates(b *testing.B) {
	w := newWorld(b, fixtures.OriginOptions{Synthetic: 200, Latency: 5 * time.Millisecond})
	channels := w.origin.Channels()[len(w.origin.Channels())-200:]
	const refresh = time.Second
	procs := map[bool]*process{}
	for _, on := range []bool{true, false} {
		procs[on] = w.process(b, processOptions{refresh: refresh, hub: live.Config{Updater: live.UpdaterConfig{Off: !on}}})
		for _, ch := range channels {
			procs[on].read(b, ch)
		}
	}
	waitFor(b, "the updater to track the channels", func() bool { return procs[true].hub.Stats().Updater.Tracked == 200 })
	lat := map[bool][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for round := range 6 {
			on := round%2 == 0
			p := procs[on]
			// Two refresh windows of 8 concurrent readers.
			end := time.Now().Add(2 * refresh)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					var mine []time.Duration
					for time.Now().Before(end) {
						ch := channels[rand.IntN(len(channels))]
						start := time.Now()
						p.read(b, ch)
						mine = append(mine, time.Since(start))
					}
					mu.Lock()
					lat[on] = append(lat[on], mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
		}
	}
	b.StopTimer()
	p99 := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)*99/100]
	}
	on, off := p99(lat[true]), p99(lat[false])
	ratio := float64(on) / float64(off)
	st := procs[true].hub.Stats().Updater
	b.Logf("user read p99: updater on %v (%d reads), off %v (%d reads), ratio %.2f; updater: %d cycles, %d refreshes, max %d in flight",
		on, len(lat[true]), off, len(lat[false]), ratio, st.Cycles, st.Refreshes, st.MaxInFlight)
	b.ReportMetric(float64(on.Microseconds()), "p99-on-µs")
	b.ReportMetric(float64(off.Microseconds()), "p99-off-µs")
	b.ReportMetric(ratio, "p99-ratio")
}
