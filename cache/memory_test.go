package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var errUpstream = errors.New("origin: 503")

func newTestMemory(t *testing.T, cfg MemoryConfig) *Memory {
	t.Helper()
	m, err := NewMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// loader returns a Loader that counts its calls and answers with value(n)
// for the n-th call (from 1), or with the error from fail(n) when not nil.
type loader struct {
	calls atomic.Int64
	value func(n int64) []byte
	fail  func(n int64) error
}

func (l *loader) load(context.Context, Previous) (Entry, error) {
	n := l.calls.Add(1)
	if l.fail != nil {
		if err := l.fail(n); err != nil {
			return Entry{}, fmt.Errorf("fetch: %w", err)
		}
	}
	return Entry{Value: l.value(n)}, nil
}

func version(n int64) []byte { return fmt.Appendf(nil, "<html>page v%d</html>", n) }

func get(t *testing.T, m *Memory, key string, load Loader) Entry {
	t.Helper()
	e, err := m.Get(context.Background(), key, load, GetOptions{})
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return e
}

func TestGetCoalescesConcurrentMisses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second})
		var calls atomic.Int64
		release := make(chan struct{})
		load := func(context.Context, Previous) (Entry, error) {
			calls.Add(1)
			<-release
			return Entry{Value: []byte("<html>page</html>")}, nil
		}

		const n = 100
		entries := make([]Entry, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				entries[i], errs[i] = m.Get(context.Background(), "tme:v1:page:{durov}:body:0", load, GetOptions{})
			})
		}
		synctest.Wait() // all 100 callers are blocked: one in the loader, the rest waiting for it
		if got := calls.Load(); got != 1 {
			t.Fatalf("loader called %d times by %d concurrent misses, want 1", got, n)
		}
		close(release)
		wg.Wait()

		for i := range n {
			if errs[i] != nil || string(entries[i].Value) != "<html>page</html>" {
				t.Fatalf("caller %d: %q, %v", i, entries[i].Value, errs[i])
			}
		}
		if s := m.Stats(); s.Loads != 1 || s.Misses != n || s.Entries != 1 {
			t.Errorf("stats = %+v, want 1 load, %d misses, 1 entry", s, n)
		}
	})
}

func TestGetFreshHitDoesNotLoad(t *testing.T) {
	clock := newFakeClock()
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Now: clock.Now})
	l := &loader{value: version}

	first := get(t, m, "k", l.load)
	clock.Advance(10*time.Second - time.Nanosecond)
	hit := get(t, m, "k", l.load)

	if got := l.calls.Load(); got != 1 {
		t.Errorf("loader called %d times, want 1", got)
	}
	if !bytes.Equal(hit.Value, first.Value) || !hit.FetchedAt.Equal(first.FetchedAt) || hit.Stale {
		t.Errorf("hit = {%q %v stale=%v}, want {%q %v stale=false}", hit.Value, hit.FetchedAt, hit.Stale, first.Value, first.FetchedAt)
	}
	if !first.FetchedAt.Equal(clock.Now().Add(-10*time.Second + time.Nanosecond)) {
		t.Errorf("FetchedAt = %v, want the time of the load", first.FetchedAt)
	}
	if s := m.Stats(); s.Hits != 1 || s.Misses != 1 {
		t.Errorf("stats = %+v, want 1 hit and 1 miss", s)
	}
}

func TestGetHitValueIsPrivate(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: time.Minute})
	l := &loader{value: version}
	get(t, m, "k", l.load)
	a := get(t, m, "k", l.load)
	copy(a.Value, "XXXXXX")
	if b := get(t, m, "k", l.load); string(b.Value) != "<html>page v1</html>" {
		t.Errorf("a caller's write to a hit changed the cache: %q", b.Value)
	}
}

// Past the refresh point the copy is served at once, marked stale, while
// one refresh runs in the background.
func TestGetServesStaleWhileRefreshing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := newFakeClock()
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Now: clock.Now})
		l := &loader{value: version}

		fetched := get(t, m, "k", l.load).FetchedAt
		clock.Advance(10 * time.Second)
		if e := get(t, m, "k", l.load); string(e.Value) != "<html>page v1</html>" || !e.Stale || !e.FetchedAt.Equal(fetched) {
			t.Errorf("past the refresh point: {%q %v stale=%v}, want v1 from %v marked stale", e.Value, e.FetchedAt, e.Stale, fetched)
		}
		synctest.Wait() // the background refresh finishes
		if got := l.calls.Load(); got != 2 {
			t.Errorf("loader called %d times, want 2", got)
		}
		e := get(t, m, "k", l.load)
		if string(e.Value) != "<html>page v2</html>" || e.Stale || !e.FetchedAt.Equal(clock.Now()) {
			t.Errorf("after refresh: {%q %v stale=%v}, want the reloaded v2 fetched now", e.Value, e.FetchedAt, e.Stale)
		}
		if got := l.calls.Load(); got != 2 {
			t.Errorf("reloaded copy not stored: %d loads", got)
		}
	})
}

// However many requests find the copy stale, one refresh runs, and none of
// them waits for it.
func TestStaleRequestsDoNotWaitForHungRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := newFakeClock()
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Now: clock.Now})
		var calls atomic.Int64
		started := make(chan struct{}, 1)
		load := func(ctx context.Context, _ Previous) (Entry, error) {
			if calls.Add(1) == 1 {
				return Entry{Value: []byte("v1")}, nil
			}
			started <- struct{}{}
			<-ctx.Done() // an origin that never answers
			return Entry{}, ctx.Err()
		}
		get(t, m, "k", load)
		clock.Advance(time.Minute)
		get(t, m, "k", load)
		<-started // the refresh is now blocked in the origin
		for range 100 {
			if e := get(t, m, "k", load); string(e.Value) != "v1" || !e.Stale {
				t.Fatalf("with the refresh hung: {%q stale=%v}, want the stale copy", e.Value, e.Stale)
			}
		}
		if got := calls.Load(); got != 2 {
			t.Errorf("loader called %d times, want 2: one refresh however many stale hits", got)
		}
		if s := m.Stats(); s.StaleServed != 101 {
			t.Errorf("stale served %d, want 101", s.StaleServed)
		}
		m.Close() // ends the hung refresh
	})
}

func TestGetAgeCountsFromLoaderFetchedAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := newFakeClock()
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Now: clock.Now})
		var calls atomic.Int64
		load := func(context.Context, Previous) (Entry, error) {
			calls.Add(1)
			// e.g. a copy another tier fetched 7 s ago
			return Entry{Value: []byte("v"), FetchedAt: clock.Now().Add(-7 * time.Second)}, nil
		}
		e := get(t, m, "k", load)
		if !e.FetchedAt.Equal(clock.Now().Add(-7 * time.Second)) {
			t.Errorf("FetchedAt = %v, want the loader's", e.FetchedAt)
		}
		clock.Advance(2 * time.Second)
		get(t, m, "k", load)
		synctest.Wait()
		if got := calls.Load(); got != 1 {
			t.Errorf("loader called %d times at age 9s, want 1", got)
		}
		clock.Advance(time.Second)
		get(t, m, "k", load)
		synctest.Wait()
		if got := calls.Load(); got != 2 {
			t.Errorf("loader called %d times, want 2: the copy turns stale 10 s after the loader's FetchedAt", got)
		}
	})
}

func TestGetServesStaleCopyWhenReloadFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := newFakeClock()
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, HardTTL: time.Minute, Now: clock.Now})
		var failing atomic.Bool
		failing.Store(true)
		l := &loader{value: version, fail: func(n int64) error {
			if n > 1 && failing.Load() {
				return errUpstream
			}
			return nil
		}}

		fetched := get(t, m, "k", l.load).FetchedAt
		clock.Advance(30 * time.Second)
		for range 2 {
			e, err := m.Get(context.Background(), "k", l.load, GetOptions{})
			if err != nil {
				t.Fatalf("with a copy held: err = %v, want the stale copy", err)
			}
			if string(e.Value) != "<html>page v1</html>" || !e.Stale || !e.FetchedAt.Equal(fetched) {
				t.Errorf("got {%q %v stale=%v}, want v1 from %v marked stale", e.Value, e.FetchedAt, e.Stale, fetched)
			}
			synctest.Wait()
		}
		// Without negative caching each stale hit after a failure tries again.
		if got := l.calls.Load(); got != 3 {
			t.Errorf("loader called %d times, want 3", got)
		}
		failing.Store(false)
		get(t, m, "k", l.load) // still stale; this refresh succeeds
		synctest.Wait()
		if e := get(t, m, "k", l.load); string(e.Value) != "<html>page v4</html>" || e.Stale {
			t.Errorf("after the origin recovered: {%q stale=%v}, want fresh v4", e.Value, e.Stale)
		}
		if s := m.Stats(); s.StaleServed != 3 || s.LoadErrors != 2 || s.Loads != 4 {
			t.Errorf("stats = %+v, want 3 stale served, 2 load errors, 4 loads", s)
		}
	})
}

// testFailures remembers errUpstream as "upstream".
type testFailures struct{}

func (testFailures) Code(err error) (string, bool) {
	if errors.Is(err, errUpstream) {
		return "upstream", true
	}
	return "", false
}

func (testFailures) Error(code string, until time.Time) error {
	return &rememberedError{code: code, until: until}
}

type rememberedError struct {
	code  string
	until time.Time
}

func (e *rememberedError) Error() string { return "remembered " + e.code }
func (e *rememberedError) Unwrap() error { return errUpstream }

func TestFailedLoadIsRememberedBriefly(t *testing.T) {
	clock := newFakeClock()
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Failures: testFailures{}, NegativeTTL: 5 * time.Second, Now: clock.Now})
	l := &loader{value: version, fail: func(n int64) error {
		if n == 1 {
			return errUpstream
		}
		return nil
	}}
	if _, err := m.Get(context.Background(), "k", l.load, GetOptions{}); !errors.Is(err, errUpstream) {
		t.Fatalf("err = %v, want the loader's", err)
	}
	var re *rememberedError
	for range 10 {
		_, err := m.Get(context.Background(), "k", l.load, GetOptions{})
		if !errors.As(err, &re) || !errors.Is(err, errUpstream) || !re.until.Equal(clock.Now().Add(5*time.Second)) {
			t.Fatalf("within the negative TTL: err = %v, want the remembered failure until +5s", err)
		}
	}
	if got := l.calls.Load(); got != 1 {
		t.Errorf("loader called %d times within the negative TTL, want 1", got)
	}
	if _, err := m.Get(context.Background(), "other", l.load, GetOptions{}); err != nil {
		t.Errorf("another key: %v; failures are per key", err)
	}
	clock.Advance(5 * time.Second)
	if e := get(t, m, "k", l.load); string(e.Value) != "<html>page v3</html>" {
		t.Errorf("after the negative TTL: %q, want a fresh load", e.Value)
	}
	if s := m.Stats(); s.FailedFast != 10 {
		t.Errorf("failed fast %d times, want 10", s.FailedFast)
	}
}

func TestOnlyFailuresAreRemembered(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Failures: testFailures{}})
	errGone := errors.New("not found")
	l := &loader{value: version, fail: func(int64) error { return errGone }}
	for range 3 {
		if _, err := m.Get(context.Background(), "k", l.load, GetOptions{}); !errors.Is(err, errGone) {
			t.Fatalf("err = %v", err)
		}
	}
	if got := l.calls.Load(); got != 3 {
		t.Errorf("loader called %d times, want 3: an answer is not a failure to remember", got)
	}
}

// A failed refresh is not retried by every stale hit: the stale copy is
// served until the failure is forgotten, then one refresh runs.
func TestFailedRefreshBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := newFakeClock()
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Failures: testFailures{}, NegativeTTL: 5 * time.Second, Now: clock.Now})
		l := &loader{value: version, fail: func(n int64) error {
			if n > 1 {
				return errUpstream
			}
			return nil
		}}
		get(t, m, "k", l.load)
		clock.Advance(time.Minute)
		for range 50 {
			if e := get(t, m, "k", l.load); !e.Stale {
				t.Fatal("want the stale copy")
			}
			synctest.Wait()
		}
		if got := l.calls.Load(); got != 2 {
			t.Errorf("loader called %d times, want 2: one failed refresh, then back off", got)
		}
		clock.Advance(5 * time.Second)
		get(t, m, "k", l.load)
		synctest.Wait()
		if got := l.calls.Load(); got != 3 {
			t.Errorf("loader called %d times after the negative TTL, want 3", got)
		}
	})
}

func TestGetWithoutCopyReturnsLoaderError(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second})
	l := &loader{value: version, fail: func(int64) error { return errUpstream }}

	e, err := m.Get(context.Background(), "k", l.load, GetOptions{})
	if !errors.Is(err, errUpstream) {
		t.Fatalf("err = %v, want one wrapping errUpstream", err)
	}
	if e.Value != nil || e.Stale {
		t.Errorf("entry %+v returned with the error", e)
	}
	if _, err := m.Get(context.Background(), "k", l.load, GetOptions{}); !errors.Is(err, errUpstream) || l.calls.Load() != 2 {
		t.Errorf("second Get: err = %v after %d loads; errors must not be cached", err, l.calls.Load())
	}
}

func TestGetPastHardTTLDoesNotServeStale(t *testing.T) {
	clock := newFakeClock()
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, HardTTL: time.Minute, Now: clock.Now})
	l := &loader{value: version, fail: func(n int64) error {
		if n > 1 {
			return errUpstream
		}
		return nil
	}}
	get(t, m, "k", l.load)
	clock.Advance(time.Minute - time.Nanosecond)
	if e, err := m.Get(context.Background(), "k", l.load, GetOptions{}); err != nil || !e.Stale {
		t.Fatalf("just before the hard TTL: {stale=%v} %v, want the stale copy", e.Stale, err)
	}
	clock.Advance(time.Nanosecond)
	if _, err := m.Get(context.Background(), "k", l.load, GetOptions{}); !errors.Is(err, errUpstream) {
		t.Errorf("at the hard TTL: err = %v, want the loader's error", err)
	}
}

func TestOffModeStoresNothing(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: 0})
	l := &loader{value: version}
	for i := 1; i <= 3; i++ {
		if e := get(t, m, "k", l.load); string(e.Value) != fmt.Sprintf("<html>page v%d</html>", i) {
			t.Errorf("Get %d = %q, want a fresh load", i, e.Value)
		}
	}
	if s := m.Stats(); s.Loads != 3 || s.Hits != 0 || s.Entries != 0 || s.Bytes != 0 {
		t.Errorf("stats = %+v, want 3 loads and nothing held", s)
	}
}

func TestOffModeCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMemory(t, MemoryConfig{Refresh: 0})
		var calls atomic.Int64
		release := make(chan struct{})
		load := func(context.Context, Previous) (Entry, error) {
			calls.Add(1)
			<-release
			return Entry{Value: []byte("v")}, nil
		}
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if _, err := m.Get(context.Background(), "k", load, GetOptions{}); err != nil {
					t.Error(err)
				}
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if got := calls.Load(); got != 1 {
			t.Errorf("loader called %d times by 50 concurrent Gets, want 1", got)
		}
	})
}

// A caller whose ctx ends returns at once, but the load it started carries
// on for the callers still waiting, with a context that is not cancelled.
func TestCallerLeavingDoesNotCancelSharedLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second})
		var calls atomic.Int64
		release := make(chan struct{})
		var loadErr error
		load := func(ctx context.Context, _ Previous) (Entry, error) {
			calls.Add(1)
			<-release
			loadErr = ctx.Err()
			return Entry{Value: []byte("v")}, nil
		}
		type result struct {
			e   Entry
			err error
		}
		call := func(ctx context.Context) <-chan result {
			ch := make(chan result, 1)
			go func() {
				e, err := m.Get(ctx, "k", load, GetOptions{})
				ch <- result{e, err}
			}()
			return ch
		}

		firstCtx, cancelFirst := context.WithCancel(context.Background())
		first := call(firstCtx) // starts the load
		synctest.Wait()
		timedCtx, cancelTimed := context.WithTimeout(context.Background(), time.Second)
		defer cancelTimed()
		timed := call(timedCtx)
		patient := call(context.Background())
		synctest.Wait()

		cancelFirst()
		synctest.Wait()
		select {
		case r := <-first:
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("cancelled caller: err = %v, want context.Canceled", r.err)
			}
		default:
			t.Fatal("cancelled caller still waiting for the load")
		}

		time.Sleep(time.Second) // the bubble's clock: passes once everyone is blocked
		synctest.Wait()
		select {
		case r := <-timed:
			if !errors.Is(r.err, context.DeadlineExceeded) {
				t.Errorf("caller past its deadline: err = %v, want context.DeadlineExceeded", r.err)
			}
		default:
			t.Fatal("caller past its deadline still waiting for the load")
		}

		close(release)
		r := <-patient
		if r.err != nil || string(r.e.Value) != "v" {
			t.Errorf("remaining caller: %q, %v", r.e.Value, r.err)
		}
		if loadErr != nil {
			t.Errorf("the load's context ended (%v) when its first caller left", loadErr)
		}
		if got := calls.Load(); got != 1 {
			t.Errorf("loader called %d times, want 1", got)
		}
	})
}

// A load whose callers all gave up still stores its result for the next one.
func TestAbandonedLoadIsStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second})
		release := make(chan struct{})
		l := &loader{value: func(n int64) []byte { <-release; return version(n) }}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := m.Get(ctx, "k", l.load, GetOptions{})
			done <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		close(release)
		synctest.Wait() // the load finishes with nobody waiting

		if e := get(t, m, "k", l.load); string(e.Value) != "<html>page v1</html>" || l.calls.Load() != 1 {
			t.Errorf("got %q after %d loads, want the abandoned load's v1 as a hit", e.Value, l.calls.Load())
		}
	})
}

func TestLoadTimeoutEndsHungLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, LoadTimeout: 5 * time.Second})
		start := time.Now()
		_, err := m.Get(context.Background(), "k", func(ctx context.Context, _ Previous) (Entry, error) {
			<-ctx.Done()
			return Entry{}, ctx.Err()
		}, GetOptions{})

		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("load ended after %v of bubble time, want the 5s LoadTimeout", waited)
		}
	})
}

func TestGetWithDoneContext(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: time.Minute})
	l := &loader{value: version}
	get(t, m, "cached", l.load)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	if e, err := m.Get(ctx, "cached", l.load, GetOptions{}); err != nil || string(e.Value) != "<html>page v1</html>" {
		t.Errorf("hit with a done context: %q, %v; want the cached copy", e.Value, err)
	}
	if _, err := m.Get(ctx, "cold", l.load, GetOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("miss with a done context: err = %v, want context.Canceled", err)
	}
	if got := l.calls.Load(); got != 1 {
		t.Errorf("loader called %d times, want 1 (no load for a done context)", got)
	}
}

func TestLoaderPanicBecomesError(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: time.Minute})
	_, err := m.Get(context.Background(), "k", func(context.Context, Previous) (Entry, error) { panic("parser bug") }, GetOptions{})
	if err == nil || !strings.Contains(err.Error(), "parser bug") {
		t.Fatalf("err = %v, want an error carrying the panic", err)
	}
	l := &loader{value: version}
	if e := get(t, m, "k", l.load); string(e.Value) != "<html>page v1</html>" {
		t.Errorf("after a panicking load: %q", e.Value)
	}
}

func TestKeysAreIndependent(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: time.Minute})
	a := get(t, m, "a", func(context.Context, Previous) (Entry, error) { return Entry{Value: []byte("A")}, nil })
	b := get(t, m, "b", func(context.Context, Previous) (Entry, error) { return Entry{Value: []byte("B")}, nil })
	a2 := get(t, m, "a", func(context.Context, Previous) (Entry, error) { return Entry{}, errUpstream })
	if string(a.Value) != "A" || string(b.Value) != "B" || string(a2.Value) != "A" {
		t.Errorf("got a=%q b=%q a again=%q", a.Value, b.Value, a2.Value)
	}
}

func TestGetAfterClose(t *testing.T) {
	m := newTestMemory(t, MemoryConfig{Refresh: time.Minute})
	l := &loader{value: version}
	get(t, m, "k", l.load)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(context.Background(), "k", l.load, GetOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("err = %v, want ErrClosed", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRefreshFor(t *testing.T) {
	tests := []struct {
		mode    string
		want    time.Duration
		wantErr bool
	}{
		{"off", 0, false},
		{"normal", 10 * time.Second, false},
		{"aggressive", 120 * time.Second, false},
		{"", 0, true},
		{"Normal", 0, true},
		{"fast", 0, true},
	}
	for _, tt := range tests {
		got, err := RefreshFor(tt.mode)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("RefreshFor(%q) = %v, %v; want %v, error %v", tt.mode, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDefaultHardTTL(t *testing.T) {
	for refresh, want := range map[time.Duration]time.Duration{
		0:                 10 * time.Minute,
		10 * time.Second:  10 * time.Minute,
		120 * time.Second: time.Hour,
	} {
		if got := DefaultHardTTL(refresh); got != want {
			t.Errorf("DefaultHardTTL(%v) = %v, want %v", refresh, got, want)
		}
	}
}

func TestNewMemoryRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]MemoryConfig{
		"negative MaxBytes":       {MaxBytes: -1, Refresh: time.Second},
		"negative Refresh":        {Refresh: -time.Second},
		"HardTTL below Refresh":   {Refresh: time.Minute, HardTTL: time.Second},
		"negative LoadTimeout":    {Refresh: time.Second, LoadTimeout: -1},
		"negative HardTTL in off": {HardTTL: -1},
	} {
		if _, err := NewMemory(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Under Revalidate a stale copy waits for its refresh, and is the answer
// only when the refresh fails.
func TestRevalidateWaitsForRefresh(t *testing.T) {
	clock := newFakeClock()
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Failures: testFailures{}, Now: clock.Now})
	var failing atomic.Bool
	l := &loader{value: version, fail: func(int64) error {
		if failing.Load() {
			return errUpstream
		}
		return nil
	}}
	ctx, reval := context.Background(), GetOptions{Revalidate: true}
	get(t, m, "k", l.load)
	clock.Advance(time.Minute)
	if e, err := m.Get(ctx, "k", l.load, reval); err != nil || string(e.Value) != "<html>page v2</html>" || e.Stale {
		t.Fatalf("revalidating a stale copy: {%q stale=%v} %v, want the refreshed v2", e.Value, e.Stale, err)
	}
	clock.Advance(time.Minute)
	failing.Store(true)
	if e, err := m.Get(ctx, "k", l.load, reval); err != nil || string(e.Value) != "<html>page v2</html>" || !e.Stale {
		t.Fatalf("revalidation failing: {%q stale=%v} %v, want the stale v2", e.Value, e.Stale, err)
	}
	// The failure is remembered: the copy is the answer, with no load.
	if e, err := m.Get(ctx, "k", l.load, reval); err != nil || !e.Stale || l.calls.Load() != 3 {
		t.Fatalf("after a failed revalidation: {stale=%v} %v after %d loads, want the stale copy after 3", e.Stale, err, l.calls.Load())
	}
}

// A refresh that fails after the held copy reached its hard TTL does not
// answer with that copy: it is past serving.
func TestFailedSlowRefreshDoesNotServePastHardTTL(t *testing.T) {
	clock := newFakeClock()
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, HardTTL: time.Minute, Now: clock.Now})
	var slow atomic.Bool
	l := &loader{value: version, fail: func(int64) error {
		if slow.Load() {
			clock.Advance(time.Minute) // the refresh outlasts the copy's hard TTL
			return errUpstream
		}
		return nil
	}}
	get(t, m, "k", l.load)
	clock.Advance(50 * time.Second)
	slow.Store(true)
	e, err := m.Get(context.Background(), "k", l.load, GetOptions{Revalidate: true})
	if err == nil {
		t.Fatalf("got a copy fetched %v ago, past its hard TTL of 1m; want the refresh's error", clock.Now().Sub(e.FetchedAt))
	}
}

// A flood of distinct failing keys is remembered within the tier's bytes:
// the failures' share is carved out of MaxBytes, and Stats counts it.
func TestRememberedFailuresCountAgainstMaxBytes(t *testing.T) {
	const maxBytes = 1 << 20
	// The clock stands still: no failure is forgotten for its age.
	m := newTestMemory(t, MemoryConfig{MaxBytes: maxBytes, Refresh: 10 * time.Second, Failures: testFailures{}, NegativeTTL: time.Minute, Now: newFakeClock().Now})
	fail := func(context.Context, Previous) (Entry, error) { return Entry{}, errUpstream }
	const keys = 20_000 // ~4.5 MB of failures if nothing bounded them
	for i := range keys {
		if _, err := m.Get(context.Background(), fmt.Sprintf("page:flood_%06d", i), fail, GetOptions{}); !errors.Is(err, errUpstream) {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	m.failed.CleanUp()
	held := m.failed.WeightedSize()
	share := uint64(max(maxBytes/failuresShare, minFailureBytes))
	if held == 0 || held > share {
		t.Errorf("remembered failures weigh %d B, want within their share of %d B", held, share)
	}
	if s := m.Stats(); s.Bytes != held || s.Bytes > maxBytes {
		t.Errorf("Stats.Bytes = %d, want the %d B of failures, within MaxBytes %d", s.Bytes, held, maxBytes)
	}
}

// RefreshAhead reloads a copy within lead of its refresh point and waits
// for it; the loader sees the copy it replaces through Previous. The new
// copy is fresh until a window after the old refresh point, so a key kept
// fresh ahead of time is loaded once per window, and readers never find it
// stale.
func TestMemoryRefreshAheadKeepsCadence(t *testing.T) {
	clock := newFakeClock()
	const window, lead = 10 * time.Second, 4 * time.Second
	m := newTestMemory(t, MemoryConfig{Refresh: window, Now: clock.Now})
	var loads int
	var prevSeen []string
	load := func(_ context.Context, prev Previous) (Entry, error) {
		loads++
		if p, ok := prev.Entry(); ok {
			prevSeen = append(prevSeen, string(p.Value))
		} else {
			prevSeen = append(prevSeen, "")
		}
		return Entry{Value: []byte(fmt.Sprint("v", loads))}, nil
	}
	ctx := context.Background()
	ahead := GetOptions{RefreshAhead: true, Lead: lead}
	t0 := clock.Now()
	if _, err := m.Get(ctx, "k", load, GetOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	if e, _ := m.Get(ctx, "k", load, ahead); string(e.Value) != "v1" || loads != 1 {
		t.Errorf("5s into a 10s window, 4s lead: %q after %d loads, want v1 without a load", e.Value, loads)
	}
	clock.Advance(2 * time.Second) // 7s: within the lead
	e, err := m.Get(ctx, "k", load, ahead)
	if err != nil || string(e.Value) != "v2" || e.Stale || loads != 2 {
		t.Fatalf("7s: %q stale %v after %d loads (%v), want v2 fresh", e.Value, e.Stale, loads, err)
	}
	if want := t0.Add(2 * window); !e.RefreshAt.Equal(want) {
		t.Errorf("copy loaded at 7s is fresh until %v, want %v (the old refresh point + a window)", e.RefreshAt.Sub(t0), want.Sub(t0))
	}
	if want := []string{"", "v1"}; fmt.Sprint(prevSeen) != fmt.Sprint(want) {
		t.Errorf("loaders saw previous copies %q, want %q", prevSeen, want)
	}
	// The updater keeps its cadence: due at 16s, refreshed then, the next
	// copy fresh until 30s.
	clock.Advance(9*time.Second - time.Millisecond) // 15.999s: not due yet
	if e, _ := m.Get(ctx, "k", load, ahead); string(e.Value) != "v2" || loads != 2 {
		t.Errorf("15.999s: %q after %d loads, want v2 without a load", e.Value, loads)
	}
	clock.Advance(time.Second) // 16.999s
	if e, _ := m.Get(ctx, "k", load, ahead); string(e.Value) != "v3" || !e.RefreshAt.Equal(t0.Add(3*window)) || loads != 3 {
		t.Errorf("16.999s: %q fresh until %v after %d loads, want v3 until 30s", e.Value, e.RefreshAt.Sub(t0), loads)
	}
	// Plain reads up to the new refresh point are fresh hits, although
	// the content is older than a window by then.
	clock.Advance(13 * time.Second) // 29.999s
	if e, _ := m.Get(ctx, "k", load, GetOptions{}); string(e.Value) != "v3" || e.Stale || loads != 3 {
		t.Errorf("plain Get at 29.999s: %q stale %v after %d loads, want v3 fresh without a load", e.Value, e.Stale, loads)
	}
	// Three loads in 30 s and never a stale read: one per window.
	if s := m.Stats(); s.StaleServed != 0 {
		t.Errorf("%d stale reads, want none", s.StaleServed)
	}
	// A refresh after the refresh point (a late updater, or a reader's
	// stale-while-revalidate) starts its window at its own fetch.
	clock.Advance(time.Second) // 30.999s
	now := clock.Now()
	if e, _ := m.Get(ctx, "k", load, ahead); string(e.Value) != "v4" || !e.RefreshAt.Equal(now.Add(window)) {
		t.Errorf("a late refresh: %q fresh until %v, want v4 until %v", e.Value, e.RefreshAt.Sub(t0), now.Add(window).Sub(t0))
	}
}

// A loader that returns ErrNotYet keeps the copy, served stale, without
// counting or remembering a failure; a cold load never sees Refreshing.
func TestMemoryNotYetKeepsCopy(t *testing.T) {
	clock := newFakeClock()
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Now: clock.Now, Failures: testFailures{}})
	ready := false
	var refreshing []bool
	load := func(_ context.Context, prev Previous) (Entry, error) {
		refreshing = append(refreshing, prev.Refreshing())
		if prev.Refreshing() && !ready {
			return Entry{}, ErrNotYet
		}
		return Entry{Value: []byte(fmt.Sprint("v", len(refreshing)))}, nil
	}
	ctx, reval := context.Background(), GetOptions{Revalidate: true}
	if _, err := m.Get(ctx, "k", load, reval); err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Second)
	e, err := m.Get(ctx, "k", load, reval)
	if err != nil || string(e.Value) != "v1" || !e.Stale {
		t.Errorf("not yet: %q stale %v (%v), want the stale v1", e.Value, e.Stale, err)
	}
	ready = true
	if e, err := m.Get(ctx, "k", load, reval); err != nil || string(e.Value) != "v3" || e.Stale {
		t.Errorf("ready: %q stale %v (%v), want v3 fresh at once", e.Value, e.Stale, err)
	}
	if fmt.Sprint(refreshing) != "[false true true]" {
		t.Errorf("loaders saw Refreshing %v, want [false true true]", refreshing)
	}
	if s := m.Stats(); s.LoadErrors != 0 || s.FailedFast != 0 {
		t.Errorf("stats %+v: ErrNotYet counted as a failure", s)
	}
}

// A flood of keys read once does not evict keys read repeatedly, and does
// not keep keys read for the first time after it from being held until
// their second read: W-TinyLFU alone refuses such newcomers, whose count
// ties with the one-off entries it holds.
func TestOneOffsDoNotEvictRepeatedReads(t *testing.T) {
	const maxBytes = 8 << 20
	// The clock stands still: however slowly a loaded machine gets through
	// the flood, no entry passes its refresh point and reloads.
	m := newTestMemory(t, MemoryConfig{MaxBytes: maxBytes, Refresh: time.Minute, Now: newFakeClock().Now})
	rng := rand.NewChaCha8([32]byte{1, 2})
	value := func() []byte { // incompressible, so the bound is reached
		b := make([]byte, 6000)
		_, _ = rng.Read(b) // a block at a time: a byte at a time took seconds under the race detector
		return b
	}
	loads := map[string]int{}
	get := func(key string) {
		t.Helper()
		_, err := m.Get(context.Background(), key, func(context.Context, Previous) (Entry, error) {
			loads[key]++
			return Entry{Value: value()}, nil
		}, GetOptions{})

		if err != nil {
			t.Fatal(err)
		}
	}
	count := func(prefix string) (n int) {
		for k, v := range loads {
			if strings.HasPrefix(k, prefix) {
				n += v
			}
		}
		return n
	}
	// Popular keys read twice before the flood: held in the main store.
	for range 2 {
		for i := range 100 {
			get(fmt.Sprintf("popular:%d", i))
		}
	}
	for i := range 7000 { // 42 MB of one-off entries through an 8 MB tier
		get(fmt.Sprintf("oneoff:%d", i))
	}
	// Keys first read after the flood, read twice.
	for range 2 {
		for i := range 100 {
			get(fmt.Sprintf("new:%d", i))
		}
	}
	for i := range 100 {
		get(fmt.Sprintf("popular:%d", i))
	}
	if n := count("new:"); n != 100 {
		t.Errorf("100 keys read twice after the flood cost %d loads, want 100", n)
	}
	if n := count("popular:"); n != 100 {
		t.Errorf("100 keys read before and after the flood cost %d loads, want 100", n)
	}
	if s := m.Stats(); s.Bytes > maxBytes {
		t.Errorf("accounted %d B, over the %d B bound", s.Bytes, maxBytes)
	}
}

// GetOptions.Stored hears of a load once the tier holds its value: a Get
// made from inside it finds the new copy without loading, and it is
// handed the copy the value replaced. A load that stores nothing (failed,
// or ErrNotYet) is not told.
func TestMemoryStoredAfterStore(t *testing.T) {
	clock := newFakeClock()
	m := newTestMemory(t, MemoryConfig{Refresh: 10 * time.Second, Now: clock.Now})
	type told struct{ value, prev, seen string }
	heard := make(chan told, 4)
	var opt GetOptions
	opt.Stored = func(e Entry, prev Previous) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		noLoad := func(context.Context, Previous) (Entry, error) { return Entry{}, errors.New("loaded again") }
		got, err := m.Get(ctx, "k", noLoad, GetOptions{})
		p, _ := prev.Entry()
		heard <- told{value: string(e.Value), prev: string(p.Value), seen: fmt.Sprintf("%s %v", got.Value, err)}
	}
	var fail atomic.Pointer[error]
	l := &loader{value: version, fail: func(int64) error {
		if err := fail.Load(); err != nil {
			return *err
		}
		return nil
	}}
	if _, err := m.Get(context.Background(), "k", l.load, opt); err != nil {
		t.Fatal(err)
	}
	if h := <-heard; h != (told{"<html>page v1</html>", "", "<html>page v1</html> <nil>"}) {
		t.Errorf("cold load: told %+v, want v1 over nothing, readable as v1", h)
	}
	// Stale: served at once, refreshed in the background, told once stored.
	clock.Advance(11 * time.Second)
	if e, err := m.Get(context.Background(), "k", l.load, opt); err != nil || !e.Stale {
		t.Fatalf("stale read: %+v, %v", e, err)
	}
	if h := <-heard; h != (told{"<html>page v2</html>", "<html>page v1</html>", "<html>page v2</html> <nil>"}) {
		t.Errorf("background refresh: told %+v, want v2 over v1, readable as v2", h)
	}
	// The refresh is told before it ends; a Get while it runs would join it
	// and share its (then fresh) outcome. Wait for its end.
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if _, running := m.refreshing.Load("k"); !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background refresh did not end")
		}
	}
	for _, err := range []error{errUpstream, ErrNotYet} {
		clock.Advance(11 * time.Second)
		fail.Store(&err)
		if e, err := m.Get(context.Background(), "k", l.load, GetOptions{Revalidate: true, Stored: opt.Stored}); err != nil || !e.Stale {
			t.Fatalf("failed revalidation: %+v, %v; want the stale copy", e, err)
		}
		select {
		case h := <-heard:
			t.Errorf("a load returning %v was told stored: %+v", err, h)
		default:
		}
	}
}
