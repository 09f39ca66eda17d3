package live

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/pages"
)

// Defaults for zero UpdaterConfig fields.
const (
	DefaultConcurrency = 16              // UPDATER_CONCURRENCY
	DefaultTop         = 200             // UPDATER_TOP
	DefaultHalfLife    = 2 * time.Minute // popularity halves when a channel is not read for this long
)

// UpdaterConfig tunes the background updater.
type UpdaterConfig struct {
	// Off turns the updater off (UPDATER=off): pages are then refreshed
	// only when users read them, and subscribers see changes only when
	// someone does.
	Off bool
	// Concurrency bounds the updater's page loads in flight, so at most
	// that many origin fetches are its own (UPDATER_CONCURRENCY).
	Concurrency int
	// Top bounds the popular channels kept fresh (UPDATER_TOP); channels
	// with a subscriber are refreshed on top of these.
	Top int
	// Lead is how long before its refresh point a page is refreshed; 0
	// means a quarter of the refresh point.
	Lead time.Duration
	// Interval is how often the updater looks for pages due; 0 means a
	// tenth of the refresh point.
	Interval time.Duration
	// HalfLife is how fast a channel's popularity decays (DefaultHalfLife).
	HalfLife time.Duration
}

// UpdaterStats describes the updater's work so far.
type UpdaterStats struct {
	Cycles      uint64
	Tracked     int           // channels it kept fresh in the last cycle (popular ∪ watched)
	Refreshes   uint64        // page loads it made (fresh copies found included)
	Errors      uint64        // loads that failed
	LastCycle   time.Duration // how long the last cycle's loads took
	Lag         time.Duration // how far past its refresh point the latest page was when the last cycle refreshed it (0: none was late)
	PausedUntil time.Time     // no loads before this (an origin Retry-After or open breaker)
	MaxInFlight int64         // most loads in flight at once
	// Bytes estimates the heap the popularity counts take.
	Bytes int64
}

// updater refreshes the popular and watched channels' newest pages.
type updater struct {
	hub      *Hub
	cfg      UpdaterConfig
	refresh  time.Duration
	popular  *popularity
	kick     chan struct{}
	due      map[string]time.Time // channel → refresh point of its copy, as last seen; the run goroutine's own
	pausedNs atomic.Int64         // unix nanos: no loads before

	cycles, refreshes, errors atomic.Uint64
	lastCycle, lag            atomic.Int64
	tracked                   atomic.Int64
	inFlight, maxInFlight     atomic.Int64
}

// newUpdater returns nil when the updater is off.
func newUpdater(h *Hub, cfg UpdaterConfig) (*updater, error) {
	if cfg.Concurrency < 0 || cfg.Top < 0 || cfg.Lead < 0 || cfg.Interval < 0 || cfg.HalfLife < 0 {
		return nil, fmt.Errorf("live: negative UpdaterConfig value: %+v", cfg)
	}
	if cfg.Off || h.cfg.Refresh <= 0 {
		return nil, nil
	}
	defaults.Set(&cfg.Concurrency, DefaultConcurrency)
	defaults.Set(&cfg.Top, DefaultTop)
	defaults.Set(&cfg.Lead, h.cfg.Refresh/4)
	defaults.Set(&cfg.Interval, h.cfg.Refresh/10)
	defaults.Set(&cfg.HalfLife, DefaultHalfLife)
	if cfg.Lead >= h.cfg.Refresh {
		return nil, fmt.Errorf("live: updater lead %v is not shorter than the refresh point %v", cfg.Lead, h.cfg.Refresh)
	}
	return &updater{
		hub:     h,
		cfg:     cfg,
		refresh: h.cfg.Refresh,
		popular: newPopularity(cfg.Top, math.Pow(0.5, float64(cfg.Interval)/float64(cfg.HalfLife))),
		kick:    make(chan struct{}, 1),
		due:     map[string]time.Time{},
	}, nil
}

// wake runs a cycle soon: a new subscriber's channels need a copy.
func (u *updater) wake() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

func (u *updater) run() {
	t := time.NewTicker(u.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-u.hub.base.Done():
			return
		case <-t.C:
		case <-u.kick:
		}
		u.cycle(u.hub.base)
	}
}

// cycle refreshes the tracked channels whose copy is due.
func (u *updater) cycle(ctx context.Context) {
	start := u.hub.now()
	top := u.popular.decay()
	tracked := slices.Compact(slices.Sorted(slices.Values(append(top, u.hub.watched()...))))
	u.tracked.Store(int64(len(tracked)))
	for ch := range u.due {
		if _, ok := slices.BinarySearch(tracked, ch); !ok {
			delete(u.due, ch)
		}
	}
	if until := time.Unix(0, u.pausedNs.Load()); start.Before(until) {
		u.cycles.Add(1)
		u.hub.log.Debug("live: updater cycle paused", "tracked", len(tracked), "until", until)
		return
	}

	// Due within Lead of the copy's refresh point. The cache keeps the
	// cadence: the copy loaded then is fresh until a window after that
	// point, so a page is fetched once per window (cache.RefreshAhead).
	var due []string
	for _, ch := range tracked {
		if at, ok := u.due[ch]; !ok || !start.Before(at.Add(-u.cfg.Lead)) {
			due = append(due, ch)
		}
	}
	// The nearest to going stale first, so that a short cycle serves them.
	slices.SortStableFunc(due, func(a, b string) int { return u.due[a].Compare(u.due[b]) })

	type result struct {
		ch        string
		refreshAt time.Time
		late      time.Duration
		err       error
	}
	results := make(chan result, len(due))
	sem := make(chan struct{}, u.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, ch := range due {
		if u.paused() {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		prev, seen := u.due[ch]
		wg.Go(func() {
			defer func() { <-sem }()
			n := u.inFlight.Add(1)
			for hw := u.maxInFlight.Load(); n > hw && !u.maxInFlight.CompareAndSwap(hw, n); hw = u.maxInFlight.Load() {
			}
			before := u.hub.now()
			res, err := u.hub.cfg.Pages.RefreshNewest(ctx, ch, u.cfg.Lead)
			u.inFlight.Add(-1)
			r := result{ch: ch, err: err}
			if err == nil {
				r.refreshAt = res.RefreshAt
				if seen && res.RefreshAt.After(prev) {
					r.late = max(before.Sub(prev), 0)
				}
			}
			results <- r
		})
	}
	wg.Wait()
	close(results)
	var refreshed, failed int
	var late time.Duration
	for r := range results {
		u.refreshes.Add(1)
		if r.err != nil {
			failed++
			u.errors.Add(1)
			if until, ok := pages.RetryAt(r.err); ok {
				u.pause(until)
			}
			continue
		}
		if at, ok := u.due[r.ch]; !ok || r.refreshAt.After(at) {
			refreshed++
		}
		u.due[r.ch] = r.refreshAt
		late = max(late, r.late)
	}
	took := u.hub.now().Sub(start)
	u.cycles.Add(1)
	u.lastCycle.Store(int64(took))
	u.lag.Store(int64(late))
	u.hub.log.Debug("live: updater cycle", "tracked", len(tracked), "due", len(due),
		"refreshed", refreshed, "failed", failed, "lag", late, "took", took)
}

// pause stops loads until t.
func (u *updater) pause(t time.Time) {
	n := t.UnixNano()
	for cur := u.pausedNs.Load(); n > cur && !u.pausedNs.CompareAndSwap(cur, n); cur = u.pausedNs.Load() {
	}
}

func (u *updater) paused() bool { return u.hub.now().UnixNano() < u.pausedNs.Load() }

func (u *updater) stats() UpdaterStats {
	return UpdaterStats{
		Cycles:      u.cycles.Load(),
		Tracked:     int(u.tracked.Load()),
		Refreshes:   u.refreshes.Load(),
		Errors:      u.errors.Load(),
		LastCycle:   time.Duration(u.lastCycle.Load()),
		Lag:         time.Duration(u.lag.Load()),
		PausedUntil: time.Unix(0, u.pausedNs.Load()),
		MaxInFlight: u.maxInFlight.Load(),
		Bytes:       u.popular.bytes(),
	}
}

// popularity counts reads of channels' newest pages over a decaying
// window. hit is on request paths: one map lookup and an atomic add.
type popularity struct {
	top    int
	factor float64  // a score's decay per cycle
	counts sync.Map // channel → *atomic.Int64: reads since the last cycle
	size   atomic.Int64
	scores map[string]float64 // the updater goroutine's own
	scored atomic.Int64       // len(scores), for bytes
}

// maxCounted bounds the channels counted between two cycles: reads of
// further channels wait for the next cycle to make room.
func (p *popularity) maxCounted() int64 { return int64(4*p.top + 256) }

// Heap per counted channel (sync.Map entry, key, counter) and per scored
// one (map slot, key): estimates from the types' sizes, generous.
const (
	countedBytes = 160
	scoredBytes  = 96
)

// bytes estimates the heap the counts and scores take.
func (p *popularity) bytes() int64 {
	return p.size.Load()*countedBytes + p.scored.Load()*scoredBytes
}

func newPopularity(top int, factor float64) *popularity {
	return &popularity{top: top, factor: factor, scores: map[string]float64{}}
}

func (p *popularity) hit(channel string) {
	if c, ok := p.counts.Load(channel); ok {
		c.(*atomic.Int64).Add(1)
		return
	}
	if p.size.Load() >= p.maxCounted() {
		return
	}
	c, loaded := p.counts.LoadOrStore(channel, new(atomic.Int64))
	if !loaded {
		p.size.Add(1)
	}
	c.(*atomic.Int64).Add(1)
}

// decay folds the reads since the last cycle into the decayed scores and
// returns the Top channels by score.
func (p *popularity) decay() []string {
	for ch, s := range p.scores {
		p.scores[ch] = s * p.factor
	}
	p.counts.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Swap(0); n > 0 {
			p.scores[k.(string)] += float64(n)
		} else {
			p.counts.Delete(k)
			p.size.Add(-1)
		}
		return true
	})
	type scored struct {
		ch string
		s  float64
	}
	all := make([]scored, 0, len(p.scores))
	for ch, s := range p.scores {
		if s < 0.05 { // about five half-lives without a read
			delete(p.scores, ch)
			continue
		}
		all = append(all, scored{ch, s})
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(b.s, a.s), cmp.Compare(a.ch, b.ch)) })
	if len(all) > p.top {
		// Beyond twice Top, scores only cost memory.
		for _, x := range all[min(len(all), 2*p.top):] {
			delete(p.scores, x.ch)
		}
		all = all[:p.top]
	}
	p.scored.Store(int64(len(p.scores)))
	out := make([]string, len(all))
	for i, x := range all {
		out[i] = x.ch
	}
	return out
}
