package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

// vkClock is a settable clock shared by the instances of one test, as the
// processes of one deployment share the wall clock.
type vkClock struct {
	mu sync.Mutex
	t  time.Time
}

func newVKClock() *vkClock { return &vkClock{t: time.Now()} }

func (c *vkClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *vkClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// vkEvents records one instance's hook calls.
type vkEvents struct {
	mu      sync.Mutex
	hits    map[Tier]int
	misses  int
	leases  map[LeaseOutcome]int
	breaker []string
	loads   int
	stale   int
}

func (e *vkEvents) hooks() ValkeyHooks {
	return ValkeyHooks{
		Hit: func(t Tier) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.hits[t]++
		},
		Miss: func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.misses++
		},
		Stale: func(Tier) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.stale++
		},
		Lease: func(o LeaseOutcome) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.leases[o]++
		},
		BreakerChange: func(from, to string) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.breaker = append(e.breaker, from+"->"+to)
		},
		Load: func(error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.loads++
		},
	}
}

func (e *vkEvents) hit(t Tier) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[t]
}

func (e *vkEvents) stales() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stale
}

func (e *vkEvents) lease(o LeaseOutcome) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leases[o]
}

func (e *vkEvents) transitions() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.breaker, " ")
}

// newTestValkey connects one instance (one "process") to srv.
func newTestValkey(t *testing.T, srv *redistest.Server, mod func(*ValkeyConfig)) (*Valkey, *vkEvents) {
	t.Helper()
	return newTestValkeyAt(t, srv.URL, mod)
}

// slowMachineTimeout is a Valkey call deadline for tests that count
// loads with the server up: VALKEY_TIMEOUT's 250 ms is for a server a
// network hop away, and under the race detector on a loaded machine a
// command answered later fails, so that the client loads the key itself
// beside the lease holder. The tests of a server killed or stopped keep
// the default, by which the client learns of it.
const slowMachineTimeout = 10 * time.Second

// newTestValkeyAt connects one instance to the server or cluster at url.
func newTestValkeyAt(t *testing.T, url string, mod func(*ValkeyConfig)) (*Valkey, *vkEvents) {
	t.Helper()
	ev := &vkEvents{hits: map[Tier]int{}, leases: map[LeaseOutcome]int{}}
	cfg := ValkeyConfig{
		URL:     url,
		Refresh: 10 * time.Second,
		Hooks:   ev.hooks(),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := NewValkey(ctx, cfg)
	if err != nil {
		t.Fatalf("NewValkey: %v", err)
	}
	t.Cleanup(func() { v.Close() })
	return v, ev
}

// vkLoader counts origin fetches. While gate is non-nil each load waits for
// it to close.
type vkLoader struct {
	calls atomic.Int64
	value atomic.Value // string
	gate  chan struct{}
	err   error
}

func newVKLoader(value string) *vkLoader {
	l := &vkLoader{}
	l.value.Store(value)
	return l
}

func (l *vkLoader) load(ctx context.Context, _ Previous) (Entry, error) {
	l.calls.Add(1)
	if l.gate != nil {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		}
	}
	if l.err != nil {
		return Entry{}, l.err
	}
	return Entry{Value: []byte(l.value.Load().(string))}, nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// storedValue reads key straight from the server, bypassing the code under test.
func storedValue(t *testing.T, srv *redistest.Server, key string) (Entry, bool) {
	t.Helper()
	raw, err := srv.Do(testCtx(t), "GET", key)
	if errors.Is(err, redistest.ErrNil) {
		return Entry{}, false
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	e, err := Decode([]byte(raw))
	if err != nil {
		t.Fatalf("decode %s: %v", key, err)
	}
	return e, true
}

// eventually polls cond for up to 10 s: long enough for a loaded machine,
// and it returns as soon as cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestValkeySharedAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	clk := newVKClock()
	mod := func(c *ValkeyConfig) {
		c.Now = clk.Now
		c.LocalTTL = time.Hour // only an invalidation can drop an L1 copy in this test
	}
	a, _ := newTestValkey(t, srv, mod)
	b, evB := newTestValkey(t, srv, mod)
	ctx := testCtx(t)
	const key = "tme:v1:page:{durov}:body:0"

	la, lb := newVKLoader("v1"), newVKLoader("from-b")
	if e, err := a.Get(ctx, key, la.load, GetOptions{}); err != nil || string(e.Value) != "v1" {
		t.Fatalf("a.Get = %q, %v", e.Value, err)
	}
	if e, err := b.Get(ctx, key, lb.load, GetOptions{}); err != nil || string(e.Value) != "v1" || e.Stale {
		t.Fatalf("b.Get = %q (stale %v), %v; want v1 written by a", e.Value, e.Stale, err)
	}
	if evB.hit(TierL2) != 1 {
		t.Fatalf("b's first read: L2 hits = %d, want 1", evB.hit(TierL2))
	}

	// Local hits cost no round trip: the server counts no GET for them.
	getsBefore, err := srv.CommandCalls(ctx, "get")
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if e, err := b.Get(ctx, key, lb.load, GetOptions{}); err != nil || string(e.Value) != "v1" {
			t.Fatalf("b.Get = %q, %v", e.Value, err)
		}
	}
	getsAfter, err := srv.CommandCalls(ctx, "get")
	if err != nil {
		t.Fatal(err)
	}
	if getsAfter != getsBefore {
		t.Errorf("100 local hits sent %d GETs to the server, want 0", getsAfter-getsBefore)
	}
	if got := evB.hit(TierL1); got != 100 {
		t.Errorf("L1 hits = %d, want 100", got)
	}

	// A past its refresh point: a serves the stale copy and refreshes; the
	// write invalidates b's local copy, so b sees v2 long before its
	// hour-long local TTL.
	clk.Advance(11 * time.Second)
	la.value.Store("v2")
	if e, err := a.Get(ctx, key, la.load, GetOptions{}); err != nil || string(e.Value) != "v1" || !e.Stale {
		t.Fatalf("a.Get after refresh point = %q (stale %v), %v; want stale v1", e.Value, e.Stale, err)
	}
	eventually(t, "a's refresh to reach the server", func() bool {
		e, ok := storedValue(t, srv, key)
		return ok && string(e.Value) == "v2"
	})
	eventually(t, "b to see v2", func() bool {
		e, err := b.Get(ctx, key, lb.load, GetOptions{})
		return err == nil && string(e.Value) == "v2"
	})
	b.Close() // waits for any background work b started
	a.Close()
	if got := la.calls.Load(); got != 2 {
		t.Errorf("a loaded %d times, want 2 (cold + one refresh)", got)
	}
	if got := lb.calls.Load(); got != 0 {
		t.Errorf("b loaded %d times, want 0: everything it served came from a", got)
	}
}

func TestValkeyColdKeyOneLoadAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	const clients, perClient = 4, 50
	var (
		instances [clients]*Valkey
		events    [clients]*vkEvents
	)
	for i := range instances {
		instances[i], events[i] = newTestValkey(t, srv, nil)
	}
	ctx := testCtx(t)
	const key = "tme:v1:page:{telegram}:body:0"

	// The load holds until every request has missed, so all of them
	// find the key cold and wait for the one load.
	missed := func() int {
		n := 0
		for _, ev := range events {
			ev.mu.Lock()
			n += ev.misses
			ev.mu.Unlock()
		}
		return n
	}
	loads := &atomic.Int64{}
	load := func(ctx context.Context, _ Previous) (Entry, error) {
		loads.Add(1)
		for missed() < clients*perClient {
			select {
			case <-ctx.Done():
				return Entry{}, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		return Entry{Value: []byte("page")}, nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient)
	for _, v := range instances {
		for range perClient {
			wg.Go(func() {
				e, err := v.Get(ctx, key, load, GetOptions{})
				if err == nil && string(e.Value) != "page" {
					err = fmt.Errorf("value %q", e.Value)
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := loads.Load(); got != 1 {
		t.Errorf("origin loads = %d, want exactly 1 for %d requests over %d clients", got, clients*perClient, clients)
	}
	won, waited := 0, 0
	for _, ev := range events {
		won += ev.lease(LeaseWon)
		waited += ev.lease(LeaseWaited)
	}
	if won != 1 {
		t.Errorf("leases won = %d, want 1", won)
	}
	t.Logf("lease waits satisfied by the winner's write: %d", waited)
}

func TestValkeyStaleOneRefreshAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	const key = "tme:v1:page:{durov}:body:0"
	const refresh = 10 * time.Second

	// A copy past its refresh point, well within its hard TTL.
	old, err := Encode(Entry{Value: []byte("old"), FetchedAt: time.Now().Add(-refresh - 5*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "SET", key, string(old), "PX", "600000"); err != nil {
		t.Fatal(err)
	}

	const clients, perClient = 4, 50
	var instances [clients]*Valkey
	for i := range instances {
		instances[i], _ = newTestValkey(t, srv, nil)
	}
	l := newVKLoader("new")
	l.gate = make(chan struct{}) // the refresh finishes only after every request is answered

	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient)
	for _, v := range instances {
		for range perClient {
			wg.Go(func() {
				e, err := v.Get(ctx, key, l.load, GetOptions{})
				if err == nil && (string(e.Value) != "old" || !e.Stale) {
					err = fmt.Errorf("got %q stale=%v, want the stale copy", e.Value, e.Stale)
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	close(l.gate)
	eventually(t, "the refreshed copy to reach the server", func() bool {
		e, ok := storedValue(t, srv, key)
		return ok && string(e.Value) == "new"
	})
	for _, v := range instances {
		v.Close() // waits for background refreshes
	}
	if got := l.calls.Load(); got != 1 {
		t.Errorf("refresh loads = %d, want exactly 1", got)
	}
}

func TestFaultValkeyKilledAndRestarted(t *testing.T) {
	srv := redistest.Start(t)
	v, ev := newTestValkey(t, srv, func(c *ValkeyConfig) {
		c.BreakerCoolDown = 200 * time.Millisecond
	})
	ctx := testCtx(t)
	warm := newVKLoader("warm")
	if _, err := v.Get(ctx, "tme:v1:page:{warm}:body:0", warm.load, GetOptions{}); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	const keys, rounds, concurrent = 5, 3, 10
	loaders := make([]*vkLoader, keys)
	for i := range loaders {
		loaders[i] = newVKLoader("v" + strconv.Itoa(i))
	}
	for range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, keys*concurrent)
		for i, l := range loaders {
			key := fmt.Sprintf("tme:v1:page:{ch%d}:body:0", i)
			for range concurrent {
				wg.Go(func() {
					e, err := v.Get(ctx, key, l.load, GetOptions{})
					if err == nil && string(e.Value) != "v"+strconv.Itoa(i) {
						err = fmt.Errorf("%s = %q", key, e.Value)
					}
					if err != nil {
						errs <- err
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("Get with the server down: %v", err)
		}
	}
	for i, l := range loaders {
		if got := l.calls.Load(); got != 1 {
			t.Errorf("key %d: %d loads during the outage, want 1", i, got)
		}
	}
	t.Logf("FIGURE: valkey | killed: failed requests of %d (%d keys x %d rounds x %d concurrent) | 0", keys*rounds*concurrent, keys, rounds, concurrent)
	t.Logf("FIGURE: valkey | killed: origin loads per key while down, %d rounds x %d concurrent | %d", rounds, concurrent, loaders[0].calls.Load())
	if got := v.BreakerState(); got != "open" {
		t.Errorf("breaker %q with the server down, want open", got)
	}
	if v.LocalBytes() == 0 {
		t.Error("LocalBytes = 0 while serving from local memory")
	}

	srv.Restart(t)
	n := 0
	eventually(t, "the breaker to close", func() bool {
		n++
		l := newVKLoader("after")
		if _, err := v.Get(ctx, fmt.Sprintf("tme:v1:page:{probe%d}:body:0", n), l.load, GetOptions{}); err != nil {
			t.Errorf("Get while recovering: %v", err)
		}
		return v.BreakerState() == "closed"
	})
	if got := ev.transitions(); !strings.Contains(got, "closed->open") || !strings.HasSuffix(got, "half-open->closed") {
		t.Errorf("breaker transitions %q, want closed->open ... half-open->closed", got)
	}
	const after = "tme:v1:page:{after}:body:0"
	if _, err := v.Get(ctx, after, newVKLoader("shared again").load, GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, ok := storedValue(t, srv, after); !ok || string(e.Value) != "shared again" {
		t.Errorf("after recovery the value is not in Valkey (present %v, %q)", ok, e.Value)
	}
}

func TestFaultValkeySlowedTripsBreaker(t *testing.T) {
	srv := redistest.Start(t)
	v, _ := newTestValkey(t, srv, func(c *ValkeyConfig) {
		c.Timeout = 200 * time.Millisecond
		c.BreakerFailures = 2
	})
	ctx := testCtx(t)
	if _, err := v.Get(ctx, "tme:v1:page:{warm}:body:0", newVKLoader("warm").load, GetOptions{}); err != nil {
		t.Fatal(err)
	}

	// The server stops answering for 3 s.
	awake := make(chan struct{})
	go func() {
		defer close(awake)
		if _, err := srv.Do(ctx, "DEBUG", "SLEEP", "3"); err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	}()
	// Wait until it sleeps, so that every Get below meets a sleeping server
	// (one that still answered the lease would load as its holder and keep
	// no local copy).
	eventually(t, "the server to fall asleep", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := srv.Do(pctx, "PING")
		return err != nil
	})
	lastKey, served := "", 0
	for i := 0; v.BreakerState() != "open"; i++ {
		select {
		case <-awake:
			t.Fatalf("the server woke up after %d requests and the breaker never opened", i)
		default:
		}
		lastKey = fmt.Sprintf("tme:v1:page:{slow%d}:body:0", i)
		if e, err := v.Get(ctx, lastKey, newVKLoader("fine").load, GetOptions{}); err != nil || string(e.Value) != "fine" {
			t.Fatalf("Get against a slow server = %q, %v", e.Value, err)
		}
		served++
	}
	select {
	case <-awake:
		t.Fatal("the breaker opened only after the server woke up")
	default:
	}
	t.Logf("FIGURE: valkey | DEBUG SLEEP 3, 200ms timeout, 2 failures trip: requests served, none failed, before the breaker opened | %d", served)
	// Open: the key whose timeout tripped the breaker was loaded into local
	// memory, and is answered from there without touching the server.
	other := newVKLoader("other")
	if e, err := v.Get(ctx, lastKey, other.load, GetOptions{}); err != nil || string(e.Value) != "fine" || other.calls.Load() != 0 {
		t.Errorf("Get with the breaker open = %q, %v (%d loads); want the local copy", e.Value, err, other.calls.Load())
	}
	<-awake
}

func TestValkeyLoadErrorPassesThrough(t *testing.T) {
	srv := redistest.Start(t)
	v, _ := newTestValkey(t, srv, nil)
	ctx := testCtx(t)
	errGone := errors.New("channel not found")
	l := newVKLoader("")
	l.err = fmt.Errorf("origin: %w", errGone)
	const key = "tme:v1:page:{nobody}:body:0"
	for range 2 {
		if _, err := v.Get(ctx, key, l.load, GetOptions{}); !errors.Is(err, errGone) {
			t.Fatalf("Get error = %v, want one wrapping errGone", err)
		}
	}
	if got := l.calls.Load(); got != 2 {
		t.Errorf("loads = %d, want 2: errors are not cached", got)
	}
	if _, ok := storedValue(t, srv, key); ok {
		t.Error("a failed load left a value in Valkey")
	}
	if _, err := srv.Do(ctx, "GET", keys.Lease(key)); !errors.Is(err, redistest.ErrNil) {
		t.Errorf("lease still held after the load failed (err %v)", err)
	}
}

func TestValkeyCacheOffStoresNothing(t *testing.T) {
	srv := redistest.Start(t)
	v, _ := newTestValkey(t, srv, func(c *ValkeyConfig) { c.Refresh = 0 })
	ctx := testCtx(t)
	l := newVKLoader("x")
	const key = "tme:v1:page:{off}:body:0"
	for range 3 {
		if e, err := v.Get(ctx, key, l.load, GetOptions{}); err != nil || string(e.Value) != "x" {
			t.Fatalf("Get = %q, %v", e.Value, err)
		}
	}
	if got := l.calls.Load(); got != 3 {
		t.Errorf("loads = %d, want 3 with CACHE_MODE=off", got)
	}
	if _, ok := storedValue(t, srv, key); ok {
		t.Error("CACHE_MODE=off wrote to Valkey")
	}
}

func TestValkeyStartsBeforeServer(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	v, _ := newTestValkey(t, srv, func(c *ValkeyConfig) { c.BreakerCoolDown = 200 * time.Millisecond })
	ctx := testCtx(t)
	const key = "tme:v1:page:{early}:body:0"
	if e, err := v.Get(ctx, key, newVKLoader("local").load, GetOptions{}); err != nil || string(e.Value) != "local" {
		t.Fatalf("Get before the server runs = %q, %v", e.Value, err)
	}
	srv.Restart(t)
	n := 0
	eventually(t, "the value to be shared through Valkey", func() bool {
		n++
		k := fmt.Sprintf("tme:v1:page:{late%d}:body:0", n)
		if _, err := v.Get(ctx, k, newVKLoader("shared").load, GetOptions{}); err != nil {
			t.Fatalf("Get: %v", err)
		}
		_, ok := storedValue(t, srv, k)
		return ok
	})
}

func TestValkeyLocalMemoryBounded(t *testing.T) {
	srv := redistest.Start(t)
	maxBytes, pages := int64(8<<20), 1000 // MEMORY_CACHE_MAX_MB=8
	if raceEnabled {
		// The same fill, relative to the bound, at half the cost.
		maxBytes, pages = 4<<20, 500
	}
	reader, _ := newTestValkey(t, srv, func(c *ValkeyConfig) {
		c.LocalMaxBytes = maxBytes
		c.Refresh = time.Hour
		c.LocalTTL = time.Hour
		c.Timeout = slowMachineTimeout // every read must come from Valkey
	})
	// A bound on a hang, not a measure: making and decoding a thousand
	// pages under the race detector took a loaded machine over a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Distinct pages of ~10 KiB encoded, written as another process would:
	// about 1.6 times the client-side cache's share.
	key := func(i int) string { return fmt.Sprintf("tme:v1:page:{load%04d}:body:0", i) }
	conn, err := srv.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var encoded int
	for i := range pages {
		b, err := Encode(Entry{Value: vkPage(rng, i), FetchedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		encoded += len(b)
		if _, err := conn.Do("SET", key(i), string(b), "PX", "3600000"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	t.Logf("encoded page: %d bytes on average", encoded/pages)

	noLoad := func(context.Context, Previous) (Entry, error) { return Entry{}, errors.New("unexpected load") }
	// Connect and warm the decoder before the baseline, then empty L1.
	for i := range 20 {
		if _, err := reader.Get(ctx, key(i), noLoad, GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err = srv.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range 20 { // rewriting invalidates the copies the warm-up cached
		e, _ := storedValue(t, srv, key(i))
		b, _ := Encode(e)
		if _, err := conn.Do("SET", key(i), string(b), "PX", "3600000"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the warm-up copies to be invalidated", func() bool { return reader.l1.bytes.Load() == 0 })

	before := vkHeap()
	for i := range pages {
		if _, err := reader.Get(ctx, key(i), noLoad, GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after := vkHeap()
	accounted := reader.l1.bytes.Load()
	if got := reader.LocalBytes(); got > maxBytes {
		t.Errorf("LocalBytes %d exceeds MEMORY_CACHE_MAX_MB %d", got, maxBytes)
	}
	// FLUSHALL invalidates every tracked key: the client-side cache empties
	// and what it held is freed. Measuring that drop isolates the cache from
	// buffers that decoding grew along the way.
	if _, err := srv.Do(ctx, "FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the client-side cache to empty", func() bool { return reader.l1.bytes.Load() == 0 })
	flushed := vkHeap()
	growth := int64(after) - int64(before)
	held := int64(after) - int64(flushed)
	t.Logf("client-side cache: accounted %d bytes, held (freed by invalidation) %d, heap growth %d, bound %d (L1 share %d)",
		accounted, held, growth, maxBytes, reader.l1.max)

	if accounted > reader.l1.max {
		t.Errorf("accounted L1 bytes %d exceed the L1 share %d", accounted, reader.l1.max)
	}
	if accounted < reader.l1.max/2 {
		t.Errorf("accounted L1 bytes %d: the cache did not fill; the test loads too little", accounted)
	}
	if growth > maxBytes {
		t.Errorf("heap grew by %d bytes, more than MEMORY_CACHE_MAX_MB %d", growth, maxBytes)
	}
	if diff := float64(held-accounted) / float64(accounted); diff > 0.2 || diff < -0.2 {
		t.Errorf("memory held by the client-side cache %d differs from the accounted %d by %.0f%%, want within 20%%", held, accounted, diff*100)
	}
}

func vkHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// vkPage is channel-like HTML that compresses about as well as a real page.
func vkPage(rng *rand.Rand, n int) []byte {
	words := strings.Fields("channel post update news video photo telegram privacy release launch feature app bot api open source community world сегодня канал новости")
	var b bytes.Buffer
	fmt.Fprintf(&b, `<html><body><!-- page %d --><section class="tgme_channel_history">`, n)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `<div class="tgme_widget_message" data-post="ch%d/%d"><div class="tgme_widget_message_text">`, n, rng.IntN(1e6))
		for w := 0; w < 150; w++ {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(10) == 0 {
				fmt.Fprintf(&b, ` <a href="https://example.org/%x">%d</a>`, rng.Uint64(), rng.IntN(1e4))
			}
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, `</div><span class="tgme_widget_message_views">%d</span></div>`, rng.IntN(1e6))
	}
	b.WriteString(`</section></body></html>`)
	return b.Bytes()
}

// A failed load is remembered in Valkey: another process answers the key
// with the failure, without loading, until the negative TTL passes.
func TestValkeyFailureRememberedAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	clk := newVKClock()
	mod := func(c *ValkeyConfig) {
		c.Now = clk.Now
		c.Failures = testFailures{}
		c.NegativeTTL = 5 * time.Second
	}
	a, _ := newTestValkey(t, srv, mod)
	b, _ := newTestValkey(t, srv, mod)
	ctx := testCtx(t)
	const key = "tme:v1:page:{down}:body:0"
	l := newVKLoader("back")
	l.err = fmt.Errorf("fetch: %w", errUpstream)

	if _, err := a.Get(ctx, key, l.load, GetOptions{}); !errors.Is(err, errUpstream) {
		t.Fatalf("first Get: err = %v, want the loader's", err)
	}
	if _, err := srv.Do(ctx, "GET", keys.Failed(key)); err != nil {
		t.Fatalf("the failure is not in Valkey: %v", err)
	}
	for _, v := range []*Valkey{a, b, b} {
		var re *rememberedError
		if _, err := v.Get(ctx, key, l.load, GetOptions{}); !errors.As(err, &re) || !errors.Is(err, errUpstream) {
			t.Fatalf("within the negative TTL: err = %v, want the remembered failure", err)
		}
		if want := clk.Now().Add(5 * time.Second).Truncate(time.Millisecond); !re.until.Equal(want) {
			t.Errorf("remembered until %v, want %v", re.until, want)
		}
	}
	if got := l.calls.Load(); got != 1 {
		t.Errorf("loads = %d, want 1", got)
	}

	clk.Advance(5 * time.Second)
	l.err = nil
	if e, err := b.Get(ctx, key, l.load, GetOptions{}); err != nil || string(e.Value) != "back" {
		t.Fatalf("after the negative TTL: %q, %v", e.Value, err)
	}
	if _, err := srv.Do(ctx, "GET", keys.Failed(key)); !errors.Is(err, redistest.ErrNil) {
		t.Errorf("the remembered failure outlived a success (err %v)", err)
	}
}

// A failed background refresh is not retried by the stale hits that follow,
// in any process.
func TestValkeyFailedRefreshBacksOff(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	const key = "tme:v1:page:{flaky}:body:0"
	old, err := Encode(Entry{Value: []byte("old"), FetchedAt: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "SET", key, string(old), "PX", "600000"); err != nil {
		t.Fatal(err)
	}
	mod := func(c *ValkeyConfig) {
		c.Failures = testFailures{}
		c.NegativeTTL = time.Minute
	}
	a, _ := newTestValkey(t, srv, mod)
	b, _ := newTestValkey(t, srv, mod)
	l := newVKLoader("")
	l.err = errUpstream

	if e, err := a.Get(ctx, key, l.load, GetOptions{}); err != nil || string(e.Value) != "old" || !e.Stale {
		t.Fatalf("Get = %q stale=%v, %v; want the stale copy", e.Value, e.Stale, err)
	}
	eventually(t, "the failed refresh to be remembered", func() bool {
		_, err := srv.Do(ctx, "GET", keys.Failed(key))
		return err == nil
	})
	for range 20 {
		for _, v := range []*Valkey{a, b} {
			if e, err := v.Get(ctx, key, l.load, GetOptions{}); err != nil || string(e.Value) != "old" || !e.Stale {
				t.Fatalf("Get = %q stale=%v, %v; want the stale copy", e.Value, e.Stale, err)
			}
		}
	}
	a.Close() // waits for background refreshes
	b.Close()
	if got := l.calls.Load(); got != 1 {
		t.Errorf("refresh loads = %d, want 1: a failed refresh backs off", got)
	}
}

// FLUSHALL under two processes: the next requests still succeed, and the
// page is fetched from the origin once more, by one of them.
func TestFaultValkeyFlushed(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newTestValkey(t, srv, nil)
	b, _ := newTestValkey(t, srv, nil)
	ctx := testCtx(t)
	const key = "tme:v1:page:{flushed}:body:0"
	l := newVKLoader("page")
	for _, v := range []*Valkey{a, b} {
		if e, err := v.Get(ctx, key, l.load, GetOptions{}); err != nil || string(e.Value) != "page" {
			t.Fatalf("before the flush: %q, %v", e.Value, err)
		}
	}
	if _, err := srv.Do(ctx, "FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	requests := 0
	eventually(t, "the page to be back in Valkey", func() bool {
		var wg sync.WaitGroup
		for _, v := range []*Valkey{a, b, a, b} {
			requests++
			wg.Go(func() {
				if e, err := v.Get(ctx, key, l.load, GetOptions{}); err != nil || string(e.Value) != "page" {
					t.Errorf("after the flush: %q, %v", e.Value, err)
				}
			})
		}
		wg.Wait()
		_, ok := storedValue(t, srv, key)
		return ok
	})
	if got := l.calls.Load(); got != 2 {
		t.Errorf("loads = %d, want 2: one before the flush, one after it across both processes", got)
	}
	t.Logf("FIGURE: valkey | FLUSHALL under 2 processes: failed requests of %d | 0", requests)
	t.Logf("FIGURE: valkey | FLUSHALL under 2 processes: origin loads to refill the page | %d", l.calls.Load()-1)
}

// Under Revalidate a stale copy waits for its refresh.
func TestValkeyRevalidateWaitsForRefresh(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	const key = "tme:v1:page:{reval}:body:0"
	old, err := Encode(Entry{Value: []byte("old"), FetchedAt: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "SET", key, string(old), "PX", "600000"); err != nil {
		t.Fatal(err)
	}
	v, _ := newTestValkey(t, srv, nil)
	l := newVKLoader("new")
	if e, err := v.Get(ctx, key, l.load, GetOptions{Revalidate: true}); err != nil || string(e.Value) != "new" || e.Stale {
		t.Fatalf("revalidating: {%q stale=%v} %v, want the refreshed copy", e.Value, e.Stale, err)
	}
	if e, ok := storedValue(t, srv, key); !ok || string(e.Value) != "new" {
		t.Errorf("the refresh is not in Valkey: %q", e.Value)
	}
}

// RefreshAhead across processes: whichever instance finds the page within
// the lead first loads it; the other finds the new copy and loads nothing.
// Each copy is fresh until a window after its predecessor's refresh point,
// so two updaters keep one load per window between them, and a plain
// reader never meets a stale copy.
func TestValkeyRefreshAheadOnePerWindow(t *testing.T) {
	srv := redistest.Start(t)
	clk := newVKClock()
	mod := func(c *ValkeyConfig) {
		c.Now = clk.Now
		c.LocalTTL = time.Hour
	}
	a, evA := newTestValkey(t, srv, mod)
	b, evB := newTestValkey(t, srv, mod)
	ctx := testCtx(t)
	const key = "tme:v2:page:{cadence}:body:0"
	const window, lead = 10 * time.Second, 2500 * time.Millisecond
	loads := newVKLoader("v0")
	t0 := clk.Now()
	if _, err := a.Get(ctx, key, loads.load, GetOptions{}); err != nil {
		t.Fatal(err)
	}
	var n int
	// Both updaters look every second for 5 windows; a reader reads
	// through b between their looks.
	for range 50 {
		clk.Advance(time.Second)
		n++
		loads.value.Store(fmt.Sprint("v", n))
		for _, v := range []*Valkey{a, b} {
			e, err := v.Get(ctx, key, loads.load, GetOptions{RefreshAhead: true, Lead: lead})
			if err != nil || e.Stale {
				t.Fatalf("%v: updater Get = %q stale %v, %v", clk.Now().Sub(t0), e.Value, e.Stale, err)
			}
		}
		eventually(t, "b to see the copy a or b wrote", func() bool {
			stored, ok := storedValue(t, srv, key)
			e, err := b.Get(ctx, key, loads.load, GetOptions{})
			return ok && err == nil && string(e.Value) == string(stored.Value)
		})
		e, err := b.Get(ctx, key, loads.load, GetOptions{})
		if err != nil || e.Stale {
			t.Fatalf("%v: reader got %q stale %v, %v", clk.Now().Sub(t0), e.Value, e.Stale, err)
		}
		if !clk.Now().Before(e.RefreshAt) || e.RefreshAt.Sub(e.FetchedAt) > window+lead {
			t.Fatalf("%v: copy fetched at %v fresh until %v", clk.Now().Sub(t0), e.FetchedAt.Sub(t0), e.RefreshAt.Sub(t0))
		}
	}
	// 50 s: the cold load, then one ahead of each of the 5 refresh
	// points at 10, 20, 30, 40 and 50 s.
	if got := loads.calls.Load(); got != 6 {
		t.Errorf("%d loads in 5 windows, want 6 (the cold one and one per window)", got)
	}
	if sa, sb := evA.stales(), evB.stales(); sa+sb != 0 {
		t.Errorf("%d stale answers, want none", sa+sb)
	}
}

// GetOptions.Stored hears of a load once Valkey holds its value, so that
// this process (whose L1 held the old copy) and another one reading the
// key then find it; it is handed the copy the value replaced.
func TestValkeyStoredAfterWrite(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newTestValkey(t, srv, nil)
	b, _ := newTestValkey(t, srv, nil)
	ctx := testCtx(t)
	const key = "tme:v1:page:{stored}:body:0"
	old, err := Encode(Entry{Value: []byte("old"), FetchedAt: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(ctx, "SET", key, string(old), "PX", "600000"); err != nil {
		t.Fatal(err)
	}
	var told []string
	noLoad := func(context.Context, Previous) (Entry, error) { return Entry{}, errors.New("loaded again") }
	opt := GetOptions{Revalidate: true, Stored: func(e Entry, prev Previous) {
		p, _ := prev.Entry()
		here, err := a.Get(ctx, key, noLoad, GetOptions{})
		elsewhere, err2 := b.Get(ctx, key, noLoad, GetOptions{})
		told = append(told, fmt.Sprintf("%s over %s, read here as %s stale %v (%v), elsewhere as %s (%v)",
			e.Value, p.Value, here.Value, here.Stale, err, elsewhere.Value, err2))
	}}
	// a's L1 holds the old copy as its refresh is written.
	if e, err := a.Get(ctx, key, newVKLoader("new").load, opt); err != nil || string(e.Value) != "new" {
		t.Fatalf("revalidating: %q, %v", e.Value, err)
	}
	if want := "[new over old, read here as new stale false (<nil>), elsewhere as new (<nil>)]"; fmt.Sprint(told) != want {
		t.Errorf("told %s, want %s", told, want)
	}
}
