package live_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/server"
)

// BenchmarkUserP99DuringUpdates measures users' GET /v1/body/<channel>
// requests over HTTP for 200 channels with the updater keeping them fresh
// and with it off, and reports each side's p99 and their ratio (target:
// at most 1.5). Rounds alternate between the two in one run; each round
// builds its own process (origin client, cache, pages, hub, REST server)
// and closes it after, so only that round's stack runs while it is
// measured. Run with
//
//	go test -run '^$' -bench UserP99 -benchtime 1x ./live
func BenchmarkUserP99DuringUpdates(b *testing.B) {
	w := newWorld(b, fixtures.OriginOptions{Synthetic: 200, Latency: 5 * time.Millisecond})
	channels := w.origin.Channels()[len(w.origin.Channels())-200:]
	const (
		refresh = time.Second
		readers = 8
		rounds  = 8
	)
	lat := map[bool][]time.Duration{}
	var updater live.UpdaterStats
	b.ResetTimer()
	for range b.N {
		for round := range rounds {
			on := round%2 == 0
			d, st := userRound(b, w, channels, on, refresh, readers)
			lat[on] = append(lat[on], d...)
			if on {
				updater.Cycles += st.Cycles
				updater.Refreshes += st.Refreshes
				updater.Errors += st.Errors
				updater.MaxInFlight = max(updater.MaxInFlight, st.MaxInFlight)
			}
		}
	}
	b.StopTimer()
	for _, d := range lat {
		slices.Sort(d)
	}
	q := func(on bool, q float64) time.Duration { return lat[on][int(float64(len(lat[on]))*q)] }
	on, off := q(true, 0.99), q(false, 0.99)
	ratio := float64(on) / float64(off)
	b.Logf("user requests, updater on: %d, p50 %v, p90 %v, p99 %v; off: %d, p50 %v, p90 %v, p99 %v; p99 ratio %.2f",
		len(lat[true]), q(true, 0.5), q(true, 0.9), on, len(lat[false]), q(false, 0.5), q(false, 0.9), off, ratio)
	b.Logf("updater over the measured windows: %d cycles, %d refreshes, %d errors, max %d in flight",
		updater.Cycles, updater.Refreshes, updater.Errors, updater.MaxInFlight)
	b.ReportMetric(float64(on.Microseconds()), "p99-on-µs")
	b.ReportMetric(float64(off.Microseconds()), "p99-off-µs")
	b.ReportMetric(ratio, "p99-ratio")
}

// userRound builds one process with the updater on or off, makes the
// channels popular as users do (each read cold, then reads over more
// than a window), measures readers' requests over two refresh windows and
// closes the process. It returns the measured latencies and the updater's
// work during the measured windows.
func userRound(b *testing.B, w *world, channels []string, on bool, refresh time.Duration, readers int) ([]time.Duration, live.UpdaterStats) {
	b.Helper()
	p := w.process(b, processOptions{refresh: refresh, hub: live.Config{Updater: live.UpdaterConfig{Off: !on}}})
	srv := httptest.NewServer(server.New(server.Config{Pages: p.pages, Refresh: refresh}))
	tr := &http.Transport{MaxIdleConnsPerHost: readers}
	client := &http.Client{Transport: tr}
	defer func() {
		tr.CloseIdleConnections()
		srv.Close()
		p.close()
	}()
	// Workers record the first failure and stop; the round fails after
	// they are all done (FailNow would end only the worker's goroutine).
	var failure atomic.Pointer[error]
	fail := func(err error) { failure.CompareAndSwap(nil, &err) }
	failed := func() bool { return failure.Load() != nil }
	get := func(ch string) {
		resp, err := client.Get(srv.URL + "/v1/body/" + ch)
		if err != nil {
			fail(err)
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			fail(fmt.Errorf("GET /v1/body/%s: %d, %v", ch, resp.StatusCode, err))
		}
	}
	check := func() {
		if err := failure.Load(); err != nil {
			b.Fatal(*err)
		}
	}
	// read runs the readers until done says so, each request timed.
	read := func(done func() bool) []time.Duration {
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() {
				var mine []time.Duration
				for !failed() && !done() {
					ch := channels[rand.IntN(len(channels))]
					start := time.Now()
					get(ch)
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return all
	}

	// Warm-up, not measured, alike for both sides: every channel read
	// cold, then reads for more than a window, until the updater (when
	// on) keeps all of them fresh.
	start := time.Now()
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			for j := i; j < len(channels) && !failed(); j += readers {
				get(channels[j])
			}
		})
	}
	wg.Wait()
	check()
	read(func() bool {
		if time.Since(start) > 10*refresh {
			fail(fmt.Errorf("the updater tracks %d channels after %v of reads", p.hub.Stats().Updater.Tracked, time.Since(start)))
			return true
		}
		return time.Since(start) > refresh+refresh/5 && (!on || p.hub.Stats().Updater.Tracked == len(channels))
	})
	check()

	before := p.hub.Stats().Updater
	end := time.Now().Add(2 * refresh)
	d := read(func() bool { return !time.Now().Before(end) })
	check()
	after := p.hub.Stats().Updater
	return d, live.UpdaterStats{
		Cycles:      after.Cycles - before.Cycles,
		Refreshes:   after.Refreshes - before.Refreshes,
		Errors:      after.Errors - before.Errors,
		MaxInFlight: after.MaxInFlight,
	}
}
