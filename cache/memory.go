package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/internal/flight"
)

const (
	// DefaultMaxBytes is the bound when MemoryConfig.MaxBytes is 0
	// (MEMORY_CACHE_MAX_MB=64).
	DefaultMaxBytes = 64 << 20

	// DefaultLoadTimeout bounds a shared load when MemoryConfig.LoadTimeout
	// is 0. The origin client has its own, shorter deadlines; this one only
	// guarantees that a load nobody waits for any more still ends.
	DefaultLoadTimeout = 30 * time.Second

	// entryOverhead is the heap an entry costs beyond its encoded bytes and
	// its key: otter's node (key and slice headers, expiry, weight, list
	// links), its hash-table slot, its share of the frequency sketch, and
	// size-class rounding of the value and key allocations. Measured by
	// TestEntryOverhead (live-heap growth after forced GCs, amd64, Go 1.26,
	// otter v2.4.0): 132–143 B/entry for 5 000 to 200 000 entries, the same
	// with -race.
	entryOverhead = 136
)

// ErrClosed is returned by Get after Close.
var ErrClosed = errors.New("cache: closed")

// RefreshFor maps CACHE_MODE to the refresh point: "off" stores nothing,
// "normal" reloads a page older than 10 s, "aggressive" one older than 120 s.
func RefreshFor(mode string) (time.Duration, error) {
	switch mode {
	case "off":
		return 0, nil
	case "normal":
		return 10 * time.Second, nil
	case "aggressive":
		return 120 * time.Second, nil
	}
	return 0, fmt.Errorf("cache: unknown CACHE_MODE %q (want off, normal or aggressive)", mode)
}

// DefaultHardTTL is the hard TTL used when MemoryConfig.HardTTL is 0:
// max(30×refresh, 10 min), i.e. 10 min in normal mode and 1 h in aggressive
// mode. The copy kept past the refresh point is only served when a reload
// fails, so the hard TTL is how long tmefeed rides out a Telegram outage or a
// 429 cool-down (commonly minutes) on old data. Memory stays bounded by
// MaxBytes either way, so a long hard TTL costs nothing but staleness.
func DefaultHardTTL(refresh time.Duration) time.Duration {
	return max(30*refresh, 10*time.Minute)
}

// MemoryConfig configures the embedded tier.
type MemoryConfig struct {
	// MaxBytes bounds the accounted size: compressed value + header + key +
	// a measured per-entry overhead. 0 means DefaultMaxBytes.
	MaxBytes int64
	// Refresh is the age past which an entry is reloaded before it is served.
	// 0 (CACHE_MODE=off) stores nothing; concurrent loads are still coalesced.
	Refresh time.Duration
	// HardTTL is the age past which a copy is dropped, even as a fallback
	// for a failed reload. 0 means DefaultHardTTL(Refresh).
	HardTTL time.Duration
	// LoadTimeout bounds one shared load. 0 means DefaultLoadTimeout.
	LoadTimeout time.Duration
	// Failures, when set, turns on negative caching: a failed load that
	// Failures.Code accepts is remembered for NegativeTTL (0 means
	// DefaultNegativeTTL). Meanwhile a Get of that key with no copy fails at
	// once with Failures.Error, and a stale copy is served without another
	// refresh. Nothing is remembered when Refresh is 0.
	Failures    Failures
	NegativeTTL time.Duration
	// Now is the clock; nil means time.Now. For tests.
	Now func() time.Time
}

// MemoryStats is a snapshot of the embedded tier's counters.
type MemoryStats struct {
	Hits        uint64 // Gets answered from a fresh copy without waiting for a load
	Misses      uint64 // Gets that found no usable copy and waited for a load
	StaleServed uint64 // Gets answered at once with a copy past its refresh point
	FailedFast  uint64 // Gets answered with a remembered failure, without a load
	Loads       uint64 // calls of a Loader: misses not coalesced, and background refreshes
	LoadErrors  uint64 // Loader calls that returned an error
	Bytes       uint64 // accounted bytes held, at most MaxBytes once eviction catches up
	Entries     int    // entries held
}

// Memory is the embedded cache tier: zstd-compressed entries in an otter
// cache bounded by accounted bytes, one load per key at a time.
//
// An entry younger than Refresh is served as is. An older one, up to
// HardTTL, is served at once with Stale set while one refresh per key runs
// in the background; a failed refresh leaves the old copy in place.
type Memory struct {
	store       *otter.Cache[string, []byte]  // encoded entries read more than once; nil when Refresh is 0
	trial       *trial                        // encoded entries read once so far; nil when Refresh is 0
	failed      *otter.Cache[string, failure] // remembered failures; nil without negative caching
	failures    Failures
	inFlight    flight.Group[Entry] // loads running, one per key: cold or refresh
	refreshing  sync.Map            // key → struct{}: background refreshes running
	codec       *Codec
	refresh     time.Duration
	hardTTL     time.Duration
	negativeTTL time.Duration
	loadTimeout time.Duration
	now         func() time.Time

	base   context.Context // cancelled by Close: ends background refreshes
	cancel context.CancelFunc
	mu     sync.Mutex // orders spawn against Close
	bg     sync.WaitGroup
	closed atomic.Bool

	hits, misses, stale, failedFast, loads, loadErrors atomic.Uint64
}

// failure is a remembered failed load.
type failure struct {
	code  string
	until time.Time
}

// Remembered failures take a thirty-second of the tier's bytes (at least
// 64 KiB), carved out of MaxBytes so the tier's total stays within it.
// Each lives NegativeTTL at most, so the bound matters only for floods of
// distinct failing keys. failureOverhead is otter's node with the failure
// value, its hash-table slot and the key's string header, estimated
// generously from the entry overhead measured for pages.
const (
	failuresShare   = 32
	minFailureBytes = 64 << 10
	failureOverhead = entryOverhead + 64
)

func weighFailure(key string, f failure) uint32 {
	return uint32(len(key) + len(f.code) + failureOverhead)
}

var _ Cache = (*Memory)(nil)

// NewMemory returns an embedded cache configured by cfg.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	if cfg.MaxBytes < 0 || cfg.Refresh < 0 || cfg.HardTTL < 0 || cfg.LoadTimeout < 0 || cfg.NegativeTTL < 0 {
		return nil, fmt.Errorf("cache: negative MemoryConfig value: %+v", cfg)
	}
	defaults.Set(&cfg.MaxBytes, DefaultMaxBytes)
	if cfg.HardTTL == 0 {
		cfg.HardTTL = DefaultHardTTL(cfg.Refresh)
	}
	if cfg.HardTTL < cfg.Refresh {
		return nil, fmt.Errorf("cache: HardTTL %v is shorter than Refresh %v", cfg.HardTTL, cfg.Refresh)
	}
	defaults.Set(&cfg.LoadTimeout, DefaultLoadTimeout)
	defaults.Set(&cfg.NegativeTTL, DefaultNegativeTTL)
	customClock := cfg.Now != nil
	if !customClock {
		cfg.Now = time.Now
	}
	codec, err := NewCodec()
	if err != nil {
		return nil, err
	}
	m := &Memory{
		codec:       codec,
		refresh:     cfg.Refresh,
		hardTTL:     cfg.HardTTL,
		loadTimeout: cfg.LoadTimeout,
		negativeTTL: cfg.NegativeTTL,
		failures:    cfg.Failures,
		now:         cfg.Now,
	}
	m.base, m.cancel = context.WithCancel(context.Background())
	if cfg.Refresh == 0 {
		return m, nil
	}
	storeBytes, failureBytes := cfg.MaxBytes, int64(0)
	if cfg.Failures != nil {
		failureBytes = min(max(cfg.MaxBytes/failuresShare, minFailureBytes), cfg.MaxBytes/2)
		storeBytes -= failureBytes
	}
	trialBytes := storeBytes / trialShare
	storeBytes -= trialBytes
	m.trial = newTrial(trialBytes)
	opts := &otter.Options[string, []byte]{
		MaximumWeight:    uint64(storeBytes),
		Weigher:          weigh,
		ExpiryCalculator: hardExpiry{m},
	}
	if customClock {
		// Expiry must follow the same clock as freshness.
		opts.Clock = nowClock(cfg.Now)
	}
	m.store, err = otter.New(opts)
	if err != nil {
		return nil, fmt.Errorf("cache: otter: %w", err)
	}
	if cfg.Failures != nil {
		fopts := &otter.Options[string, failure]{
			MaximumWeight:    uint64(failureBytes),
			Weigher:          weighFailure,
			ExpiryCalculator: otter.ExpiryWriting[string, failure](cfg.NegativeTTL),
		}
		if customClock {
			fopts.Clock = nowClock(cfg.Now)
		}
		if m.failed, err = otter.New(fopts); err != nil {
			return nil, fmt.Errorf("cache: otter: %w", err)
		}
	}
	return m, nil
}

// weigh is the accounted size of one entry. Encode returns slices without
// spare capacity, so len is what the value holds.
func weigh(key string, enc []byte) uint32 {
	return uint32(len(enc) + len(key) + entryOverhead)
}

// Get implements Cache. Callers must not modify the returned Value: callers
// that shared a load share its bytes.
func (m *Memory) Get(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error) {
	if m.closed.Load() {
		return Entry{}, ErrClosed
	}
	if m.store != nil {
		b, ok := m.store.GetIfPresent(key)
		if !ok {
			b, ok = m.admit(key)
		}
		if ok {
			lead, early := opt.dueLead(m.refresh)
			now, until := m.now().UnixNano(), refreshPoint(b, m.refresh)
			switch age := m.age(b); {
			case now < until-int64(lead):
				if e, err := m.decode(b); err == nil {
					m.hits.Add(1)
					return e, nil
				}
				// Unreachable unless memory is corrupted; reload rather than fail.
				m.store.Invalidate(key)
			case age < m.hardTTL && (opt.Revalidate || early) && m.failedRecently(key) == nil:
				// Wait for the refresh below; fill falls back on this copy.
			case now < until:
				// Due early, but a refresh failed moments ago: the copy
				// is still fresh.
				if e, err := m.decode(b); err == nil {
					m.hits.Add(1)
					return e, nil
				}
				m.store.Invalidate(key)
			case age < m.hardTTL:
				if e, err := m.decode(b); err == nil {
					m.stale.Add(1)
					m.refreshInBackground(ctx, key, load, opt)
					e.Stale = true
					return e, nil
				}
				m.store.Invalidate(key)
			}
		}
	}
	if err := m.failedRecently(key); err != nil {
		m.failedFast.Add(1)
		return Entry{}, err
	}
	m.misses.Add(1)
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("cache: get %q: %w", key, err)
	}
	return m.inFlight.Do(ctx, key, func(ctx context.Context) (Entry, error) {
		return m.fill(ctx, key, load, opt)
	})
}

// admit moves key's entry from the trial queue to the main store, on the
// key's second read, and returns it; false when the queue does not hold
// it or holds it past its hard TTL.
func (m *Memory) admit(key string) ([]byte, bool) {
	b, ok := m.trial.take(key)
	if !ok || m.age(b) >= m.hardTTL {
		return nil, false
	}
	m.store.Set(key, b)
	return b, true
}

// refreshInBackground reloads a stale key unless a reload of it is running
// or failed moments ago; nobody waits for it.
func (m *Memory) refreshInBackground(ctx context.Context, key string, load Loader, opt GetOptions) {
	if m.failedRecently(key) != nil {
		return // back off: the stale copy is served until the failure is forgotten
	}
	if _, running := m.refreshing.LoadOrStore(key, struct{}{}); running {
		return
	}
	started := m.spawn(func() {
		defer m.refreshing.Delete(key)
		// Through inFlight, so a cold Get of the key joins this refresh.
		_, _ = m.inFlight.Wait(ctx, key, func(ctx context.Context) (Entry, error) { return m.fill(ctx, key, load, opt) })
	})
	if !started {
		m.refreshing.Delete(key)
	}
}

// spawn runs fn on a goroutine that Close waits for; false after Close.
func (m *Memory) spawn(fn func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return false
	}
	m.bg.Go(fn)
	return true
}

// failedRecently returns the remembered failure of key, or nil.
func (m *Memory) failedRecently(key string) error {
	if m.failed == nil {
		return nil
	}
	f, ok := m.failed.GetIfPresent(key)
	if !ok || !m.now().Before(f.until) {
		return nil
	}
	return m.failures.Error(f.code, f.until)
}

// remember notes a failed load of key, if it is a failure worth remembering.
func (m *Memory) remember(key string, err error) {
	if m.failed == nil {
		return
	}
	if code, ok := m.failures.Code(err); ok {
		m.failed.Set(key, failure{code: code, until: m.now().Add(m.negativeTTL)})
	}
}

// fill runs once per key at a time (see inFlight), detached from its callers.
func (m *Memory) fill(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error) {
	var prev []byte
	start := m.now()
	held := false // the main store holds key: its load goes there too
	if m.store != nil {
		b, ok := m.store.GetIfPresent(key)
		held = ok
		if !ok {
			b, ok = m.trial.peek(key)
		}
		if ok {
			lead, _ := opt.dueLead(m.refresh)
			switch {
			case start.UnixNano() < refreshPoint(b, m.refresh)-int64(lead):
				// Stored by a load that finished between this caller's
				// lookup and its joining the flight.
				if e, err := m.decode(b); err == nil {
					return e, nil
				}
			case m.age(b) < m.hardTTL:
				prev = b
			}
		}
	}

	// The load serves everyone who joined, and its result is worth storing
	// even if they all gave up. The timeout keeps an unwatched load from
	// running forever; Close ends it too.
	lctx, cancel := context.WithTimeout(ctx, m.loadTimeout)
	defer cancel()
	defer context.AfterFunc(m.base, cancel)()
	m.loads.Add(1)
	e, err := callLoader(lctx, key, load, Previous{prev, m.codec})
	if err != nil {
		if !errors.Is(err, ErrNotYet) {
			m.loadErrors.Add(1)
			m.remember(key, err)
		}
		// The copy only if it is still within its hard TTL: the load may
		// have run for as long as LoadTimeout.
		if prev != nil && m.age(prev) < m.hardTTL {
			if old, derr := m.decode(prev); derr == nil {
				old.Stale = !m.now().Before(old.RefreshAt)
				return old, nil
			}
		}
		return Entry{}, err
	}
	if e.FetchedAt.IsZero() {
		e.FetchedAt = m.now()
	}
	settle(&e, prev, start, m.refresh)
	// A value derived from a stale copy (a response rendered from a page
	// being refreshed) is stale from the start.
	e.Stale = m.refresh > 0 && !m.now().Before(e.RefreshAt)
	if m.store != nil {
		// A value that cannot be encoded is served but not stored.
		if b, err := m.codec.Encode(e); err == nil && m.now().Sub(e.FetchedAt) < m.hardTTL {
			if held {
				m.store.Set(key, b)
			} else {
				m.trial.add(key, b)
			}
			opt.stored(e, Previous{prev, m.codec})
		}
	}
	if m.failed != nil {
		m.failed.Invalidate(key)
	}
	return e, nil
}

// decode decodes an entry this tier stored.
func (m *Memory) decode(b []byte) (Entry, error) {
	e, err := m.codec.Decode(b)
	return withRefreshAt(e, m.refresh), err
}

// callLoader turns a panic in load into an error: the load runs on a
// goroutine of its own, where a panic would end the process.
func callLoader(ctx context.Context, key string, load Loader, prev Previous) (e Entry, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cache: loader for %q panicked: %v", key, r)
		}
	}()
	return load(ctx, prev)
}

// age is how long ago the origin served the entry encoded in b.
func (m *Memory) age(b []byte) time.Duration {
	return time.Duration(m.now().UnixNano() - fetchedNanos(b))
}

// Stats returns the current counters.
func (m *Memory) Stats() MemoryStats {
	s := MemoryStats{
		Hits:        m.hits.Load(),
		Misses:      m.misses.Load(),
		StaleServed: m.stale.Load(),
		FailedFast:  m.failedFast.Load(),
		Loads:       m.loads.Load(),
		LoadErrors:  m.loadErrors.Load(),
	}
	if m.store != nil {
		tb, tn := m.trial.size()
		s.Bytes = m.store.WeightedSize() + uint64(tb)
		s.Entries = m.store.EstimatedSize() + tn
	}
	if m.failed != nil {
		s.Bytes += m.failed.WeightedSize()
	}
	return s
}

// Close ends background refreshes, drops every entry and stops the store's
// background goroutine. Gets after Close return ErrClosed; loads with
// callers waiting see their context end.
func (m *Memory) Close() error {
	m.mu.Lock()
	already := m.closed.Swap(true)
	m.mu.Unlock()
	if already {
		return nil
	}
	m.cancel()
	m.bg.Wait()
	if m.store != nil {
		m.store.StopAllGoroutines()
		m.store.InvalidateAll()
		m.trial.clear()
	}
	if m.failed != nil {
		m.failed.StopAllGoroutines()
		m.failed.InvalidateAll()
	}
	return nil
}

// hardExpiry removes an entry once it reaches the hard TTL, counted from
// FetchedAt rather than from insertion.
type hardExpiry struct{ m *Memory }

func (h hardExpiry) ExpireAfterCreate(e otter.Entry[string, []byte]) time.Duration {
	return h.m.hardTTL - h.m.age(e.Value)
}

func (h hardExpiry) ExpireAfterUpdate(e otter.Entry[string, []byte], _ []byte) time.Duration {
	return h.m.hardTTL - h.m.age(e.Value)
}

func (h hardExpiry) ExpireAfterRead(e otter.Entry[string, []byte]) time.Duration {
	return e.ExpiresAfter()
}

// nowClock adapts a time function to otter's Clock. It does not tick, so
// expired entries are dropped on access and by size rather than periodically.
type nowClock func() time.Time

func (c nowClock) NowNano() int64                      { return c().UnixNano() }
func (c nowClock) Tick(time.Duration) <-chan time.Time { return nil }
