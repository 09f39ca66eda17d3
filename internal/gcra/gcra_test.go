package gcra_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

// clock is a test's time, moved by hand.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func take(t *testing.T, l gcra.Limiter, asks ...gcra.Ask) gcra.Decision {
	t.Helper()
	d, err := l.Take(context.Background(), 1, asks...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var perMinute = gcra.Limit{Rate: 60, Per: time.Minute, Burst: 10} // one a second, ten at once

// A full bucket admits its burst at once, then one request per interval;
// a refusal says exactly when the next one goes.
func TestBurstThenRate(t *testing.T) {
	c := newClock()
	l := gcra.NewLocal(gcra.LocalConfig{Now: c.now})
	a := gcra.Ask{Key: "k", Limit: perMinute}
	for i := range 10 {
		if d := take(t, l, a); !d.OK || d.Wait != 0 || d.Left[0] != 9-i {
			t.Fatalf("request %d of the burst: %+v", i+1, d)
		}
	}
	d := take(t, l, a)
	if d.OK || d.Wait != time.Second || d.Refused != 0 {
		t.Fatalf("past the burst: %+v, want refused for 1s", d)
	}
	c.add(999 * time.Millisecond)
	if d := take(t, l, a); d.OK || d.Wait != time.Millisecond {
		t.Fatalf("1ms early: %+v", d)
	}
	c.add(time.Millisecond)
	if d := take(t, l, a); !d.OK {
		t.Fatalf("on time: %+v", d)
	}
	// Over any span, at most rate·span + burst.
	admitted := 0
	for range 600 {
		c.add(100 * time.Millisecond)
		for take(t, l, a).OK {
			admitted++
		}
	}
	if admitted != 60 {
		t.Errorf("a minute of asking ten times a second admitted %d, want 60", admitted)
	}
	// A quiet bucket fills up to its burst and no further.
	c.add(time.Hour)
	if got := l.Peek("k", perMinute); got != 10 {
		t.Errorf("after an hour idle the bucket holds %d, want its burst 10", got)
	}
}

// A reserve keeps the last tokens for asks without one: a lower class
// stops while the higher still goes, and gets the bucket back first once
// the higher one is quiet.
func TestReserve(t *testing.T) {
	c := newClock()
	l := gcra.NewLocal(gcra.LocalConfig{Now: c.now})
	low := gcra.Ask{Key: "k", Limit: perMinute, Reserve: 4}
	high := gcra.Ask{Key: "k", Limit: perMinute}
	n := 0
	for take(t, l, low).OK {
		n++
	}
	if n != 6 {
		t.Fatalf("the low class took %d of 10, want 6 (4 reserved)", n)
	}
	d := take(t, l, low)
	if d.Wait != time.Second {
		t.Errorf("low class refused with Retry-After %v, want 1s (when a fifth token is in)", d.Wait)
	}
	for i := range 4 {
		if !take(t, l, high).OK {
			t.Fatalf("high class refused at its reserved token %d", i+1)
		}
	}
	if take(t, l, high).OK {
		t.Fatal("high class admitted past an empty bucket")
	}
	// Refilling: the low class waits for its reserve to be back (5 s),
	// while the high one goes with each token.
	c.add(time.Second)
	if take(t, l, low).OK || !take(t, l, high).OK {
		t.Fatal("with one token back: want low refused and high admitted")
	}
}

// MaxWait books a place in the bucket's future: admitted with the wait
// to sleep, the queue bounded by the wait, and nothing is charged on a
// refusal.
func TestWaitQueues(t *testing.T) {
	c := newClock()
	l := gcra.NewLocal(gcra.LocalConfig{Now: c.now})
	a := gcra.Ask{Key: "k", Limit: perMinute, MaxWait: 2 * time.Second}
	for range 10 {
		take(t, l, a)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if d := take(t, l, a); !d.OK || d.Wait != want {
			t.Fatalf("queued request %d: %+v, want admitted after %v", i+1, d, want)
		}
	}
	d := take(t, l, a)
	if d.OK || d.Wait != 3*time.Second {
		t.Fatalf("past the queue: %+v, want refused until it goes at once, in 3s", d)
	}
}

// Several buckets are charged together or not at all: a client's own
// budget refused leaves the shared one untouched, and the other way round.
func TestAllOrNothing(t *testing.T) {
	c := newClock()
	l := gcra.NewLocal(gcra.LocalConfig{Now: c.now})
	shared := gcra.Ask{Key: "shared", Limit: perMinute}
	client := gcra.Ask{Key: "client", Limit: gcra.Limit{Rate: 6, Per: time.Minute, Burst: 2}}
	for range 2 {
		take(t, l, shared, client)
	}
	d := take(t, l, shared, client)
	if d.OK || d.Refused != 1 || d.Wait != 10*time.Second {
		t.Fatalf("client over its budget: %+v, want refused by ask 1 for 10s", d)
	}
	if got := l.Peek("shared", perMinute); got != 8 {
		t.Errorf("the shared bucket holds %d after the client's refusal, want 8: charged for a refused request", got)
	}
}

func TestInvalid(t *testing.T) {
	l := gcra.NewLocal(gcra.LocalConfig{})
	for _, a := range []gcra.Ask{
		{Key: "", Limit: perMinute},
		{Key: "k"},
		{Key: "k", Limit: perMinute, Reserve: 10},
		{Key: "k", Limit: gcra.Limit{Rate: 1, Per: time.Minute, Burst: 0}},
	} {
		if _, err := l.Take(context.Background(), 1, a); err == nil {
			t.Errorf("%+v admitted", a)
		}
	}
}

// Many clients come and go: the buckets of those whose budget is whole
// again are forgotten, so memory follows the clients active now.
func TestLocalForgetsFullBuckets(t *testing.T) {
	c := newClock()
	l := gcra.NewLocal(gcra.LocalConfig{Now: c.now})
	for i := range 100_000 {
		take(t, l, gcra.Ask{Key: "client" + string(rune('a'+i%26)) + time.Duration(i).String(), Limit: perMinute})
		if i%1000 == 0 {
			c.add(20 * time.Second) // everyone before is full again
		}
	}
	if n := l.Len(); n > 4096 {
		t.Errorf("%d buckets remembered, want about the clients of the last burst", n)
	}
}

// The Valkey limiter decides as the local one does, by the server's
// clock, and processes sharing the server share the buckets.
func TestValkeySharedBucket(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lims []*gcra.Valkey
	for range 2 { // two processes' clients
		v, err := cache.NewValkey(ctx, cache.ValkeyConfig{URL: srv.URL, Refresh: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		l, err := gcra.NewValkey(gcra.ValkeyConfig{KV: v.KV()})
		if err != nil {
			t.Fatal(err)
		}
		lims = append(lims, l)
	}
	// One token a minute: refill cannot blur the count.
	lim := gcra.Limit{Rate: 1, Per: time.Minute, Burst: 20}
	shared := gcra.Ask{Key: keys.Budget("direct"), Limit: lim}
	client := gcra.Ask{Key: keys.ClientBudget("192.0.2.1"), Limit: gcra.Limit{Rate: 1, Per: time.Minute, Burst: 5}}
	var admitted, clientRefused atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 10 {
				asks := []gcra.Ask{shared}
				if j%2 == 0 {
					asks = append(asks, client)
				}
				d, err := lims[i%2].Take(ctx, 1, asks...)
				if err != nil {
					t.Error(err)
					return
				}
				if d.OK {
					admitted.Add(1)
				} else if d.Refused == 1 {
					clientRefused.Add(1)
					if d.Wait <= 0 || d.Wait > time.Minute {
						t.Errorf("client refused with Retry-After %v", d.Wait)
					}
				}
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != 20 {
		t.Errorf("80 requests from two processes on a bucket of 20: %d admitted", got)
	}
	if clientRefused.Load() == 0 {
		t.Error("the client's bucket of 5 refused none of its 40 requests")
	}
	d, err := lims[0].Take(ctx, 1, shared)
	if err != nil || d.OK || d.Wait <= 0 || d.Wait > lim.Interval() {
		t.Errorf("spent bucket: %+v, %v; want refused within one interval", d, err)
	}
	for _, l := range lims {
		if l.FellBack() != 0 {
			t.Errorf("decided in process %d times with Valkey up", l.FellBack())
		}
	}
}

// With Valkey gone a process goes on deciding by itself: the budget
// becomes per process, never unbounded, and nothing waits on Valkey.
func TestValkeyDownFallsBack(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := cache.NewValkey(ctx, cache.ValkeyConfig{URL: srv.URL, Refresh: time.Minute, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	l, _ := gcra.NewValkey(gcra.ValkeyConfig{KV: v.KV()})
	srv.Stop()
	a := gcra.Ask{Key: keys.Budget("direct"), Limit: gcra.Limit{Rate: 1, Per: time.Minute, Burst: 3}}
	n := 0
	for range 10 {
		d, err := l.Take(ctx, 1, a)
		if err != nil {
			t.Fatal(err)
		}
		if d.OK {
			n++
		}
	}
	if n != 3 || l.FellBack() != 10 {
		t.Errorf("Valkey down: %d admitted (want the burst, 3), %d decided in process (want 10)", n, l.FellBack())
	}
}

// Two processes over one redis-server, when Valkey stalls (every call
// times out) and when it is stopped: each then decides alone on its share
// of every bucket, 1/N of it with N the processes Valkey last counted, so
// that together they admit what the one shared bucket would, not N times
// it.
func TestValkeyFallbackSharesTheBudget(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lims []*gcra.Valkey
	for range 2 {
		v, err := cache.NewValkey(ctx, cache.ValkeyConfig{URL: srv.URL, Refresh: time.Minute, Timeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		l, err := gcra.NewValkey(gcra.ValkeyConfig{KV: v.KV(), Processes: keys.BudgetProcesses()})
		if err != nil {
			t.Fatal(err)
		}
		if l.Processes() != gcra.DefaultFallbackProcesses {
			t.Fatalf("before Valkey answered: %d processes assumed", l.Processes())
		}
		lims = append(lims, l)
	}
	// One token a minute: refill cannot blur the count.
	lim := gcra.Limit{Rate: 1, Per: time.Minute, Burst: 20}
	for _, i := range []int{0, 1, 0} {
		if d, err := lims[i].Take(ctx, 1, gcra.Ask{Key: keys.Budget("direct"), Limit: lim}); err != nil || !d.OK {
			t.Fatalf("with Valkey up: %+v %v", d, err)
		}
	}
	for i, l := range lims {
		if l.Processes() != 2 || l.FellBack() != 0 {
			t.Fatalf("process %d: %d processes seen, %d decided alone; want 2 and 0", i, l.Processes(), l.FellBack())
		}
	}
	flood := func(key string) (admitted int64) {
		var n atomic.Int64
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for range 10 {
					d, err := lims[w%2].Take(ctx, 1, gcra.Ask{Key: key, Limit: lim})
					if err != nil {
						t.Error(err)
						return
					}
					if d.OK {
						n.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return n.Load()
	}
	// Stalled: every call outlives its deadline.
	if _, err := srv.Do(ctx, "CLIENT", "PAUSE", "20000", "ALL"); err != nil {
		t.Fatal(err)
	}
	if got := flood(keys.Budget("direct")); got != 20 {
		t.Errorf("80 requests of two processes while Valkey stalls: %d admitted, want 20 (10 each: the shared burst, halved)", got)
	}
	// Stopped: the same, on another bucket.
	srv.Stop()
	if got := flood(keys.Budget("proxy-1")); got != 20 {
		t.Errorf("80 requests of two processes with Valkey stopped: %d admitted, want 20", got)
	}
	for i, l := range lims {
		if l.FellBack() != 80 {
			t.Errorf("process %d decided %d requests alone, want its 80", i, l.FellBack())
		}
	}
}
