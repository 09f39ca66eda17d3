package live

import (
	"cmp"
	"context"
	"fmt"
	"maps"
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
	DefaultIdle        = 3 * time.Minute // a popular channel not read for this long is no longer refreshed (at least two refresh windows)
	DefaultMaxBackoff  = 5 * time.Minute // the longest a failing channel waits for its next load
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
	// Top bounds the popular channels kept fresh (UPDATER_TOP): the most
	// read of the channels read repeatedly (see pages.Popularity). Channels with
	// a subscriber are refreshed on top of these.
	Top int
	// Lead is how long before its refresh point a page is refreshed; 0
	// means a quarter of the refresh point.
	Lead time.Duration
	// Interval is how often the updater looks for pages due; 0 means a
	// tenth of the refresh point.
	Interval time.Duration
	// HalfLife is how fast a channel's read count decays
	// (DefaultHalfLife); it ranks the popular channels for Top.
	HalfLife time.Duration
	// Idle is how long after its last read a popular channel is still
	// refreshed; 0 means DefaultIdle, or two refresh windows if longer.
	Idle time.Duration
	// MaxBackoff caps the wait of a channel whose loads fail: one refresh
	// window after the first failure, doubling with each further one up
	// to MaxBackoff (DefaultMaxBackoff). A channel that does not exist
	// waits MaxBackoff at once and leaves the popular set.
	MaxBackoff time.Duration
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
	BackingOff  int           // channels waiting out failed loads (see UpdaterConfig.MaxBackoff)
	Gone        uint64        // popular channels dropped because they do not exist or are not channels
	MaxInFlight int64         // most loads in flight at once
	// Bytes estimates the heap the popularity tally and the failures
	// backed off take.
	Bytes int64
}

// scarceConcurrency bounds the loads at once while the origin budget is
// short (see cycle).
const scarceConcurrency = 2

// updater refreshes the popular and watched channels' newest pages.
type updater struct {
	hub      *Hub
	cfg      UpdaterConfig
	refresh  time.Duration
	popular  *pages.Popularity // the page service's tally of reads, pulled each cycle
	kick     chan struct{}
	due      map[string]time.Time // channel → refresh point of its copy, as last seen; the run goroutine's own
	backoff  map[string]backoff   // channel → its failed loads; the run goroutine's own
	pausedNs atomic.Int64         // unix nanos: no loads before
	shortNs  atomic.Int64         // unix nanos: the origin budget refused a load within a window before this

	cycles, refreshes, errors, gone atomic.Uint64
	lastCycle, lag                  atomic.Int64
	tracked, backingOff             atomic.Int64
	inFlight, maxInFlight           atomic.Int64
}

// newUpdater returns nil when the updater is off.
func newUpdater(h *Hub, cfg UpdaterConfig) (*updater, error) {
	if cfg.Concurrency < 0 || cfg.Top < 0 || cfg.Lead < 0 || cfg.Interval < 0 || cfg.HalfLife < 0 || cfg.Idle < 0 || cfg.MaxBackoff < 0 {
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
	defaults.Set(&cfg.Idle, max(DefaultIdle, 2*h.cfg.Refresh))
	defaults.Set(&cfg.MaxBackoff, DefaultMaxBackoff)
	if cfg.Lead >= h.cfg.Refresh {
		return nil, fmt.Errorf("live: updater lead %v is not shorter than the refresh point %v", cfg.Lead, h.cfg.Refresh)
	}
	return &updater{
		hub:     h,
		cfg:     cfg,
		refresh: h.cfg.Refresh,
		popular: h.cfg.Pages.CountPopularity(pages.PopularityConfig{
			Top:    cfg.Top,
			Factor: math.Pow(0.5, float64(cfg.Interval)/float64(cfg.HalfLife)),
			Window: h.cfg.Refresh,
			Idle:   cfg.Idle,
		}),
		kick:    make(chan struct{}, 1),
		due:     map[string]time.Time{},
		backoff: map[string]backoff{},
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
	top := u.popular.Decay(start)
	watched := u.hub.watched()
	tracked := slices.Compact(slices.Sorted(slices.Values(append(top, slices.Collect(maps.Keys(watched))...))))
	u.tracked.Store(int64(len(tracked)))
	for ch := range u.due {
		if _, ok := slices.BinarySearch(tracked, ch); !ok {
			delete(u.due, ch)
		}
	}
	// A channel's failures are remembered until its wait is over, tracked
	// or not: leaving the popular set and coming back does not reset it.
	for ch, b := range u.backoff {
		if _, ok := slices.BinarySearch(tracked, ch); !ok && !start.Before(b.until) {
			delete(u.backoff, ch)
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
		if b, ok := u.backoff[ch]; ok && start.Before(b.until) {
			continue // failed lately: not asked again before its wait is over
		}
		if at, ok := u.due[ch]; !ok || !start.Before(at.Add(-u.cfg.Lead)) {
			due = append(due, ch)
		}
	}
	// While the origin budget is short (it refused a load within the last
	// window), the channels the most distinct clients read or watch first,
	// then the nearest to going stale: the cycle stops at its first
	// refusal, so the channels fewest clients want go stale first. With
	// the budget to spare, the nearest to going stale first, so that a
	// short cycle serves them.
	scarce := start.UnixNano() < u.shortNs.Load()
	var clients map[string]float64
	if scarce {
		clients = u.popular.Clients(due, watched)
	}
	sortDue(due, u.due, clients)
	var short atomic.Bool // the origin budget refused a load: start no more
	// While the budget is short, few loads run at once, so that they
	// reach it in rank order: concurrent ones would race for its tokens.
	concurrency := u.cfg.Concurrency
	if scarce {
		concurrency = min(concurrency, scarceConcurrency)
	}

	type result struct {
		ch        string
		refreshAt time.Time
		late      time.Duration
		err       error
	}
	results := make(chan result, len(due))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for _, ch := range due {
		if u.paused() || short.Load() {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if short.Load() {
			<-sem
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
			if _, over := pages.OverBudget(err); over {
				short.Store(true)
				u.shortNs.Store(u.hub.now().Add(u.refresh).UnixNano())
			}
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
	end := u.hub.now()
	for r := range results {
		u.refreshes.Add(1)
		if r.err != nil {
			failed++
			u.errors.Add(1)
			u.failed(ctx, r.ch, r.err, end)
			continue
		}
		delete(u.backoff, r.ch)
		if at, ok := u.due[r.ch]; !ok || r.refreshAt.After(at) {
			refreshed++
		}
		u.due[r.ch] = r.refreshAt
		late = max(late, r.late)
	}
	u.trimBackoff(tracked)
	took := end.Sub(start)
	u.cycles.Add(1)
	u.lastCycle.Store(int64(took))
	u.lag.Store(int64(late))
	u.backingOff.Store(int64(len(u.backoff)))
	u.hub.log.Debug("live: updater cycle", "tracked", len(tracked), "due", len(due),
		"refreshed", refreshed, "failed", failed, "backing_off", len(u.backoff), "lag", late, "took", took)
}

// sortDue orders the channels due: by clients, most first, when it is
// set (the budget is short), then by the refresh point of their copy
// (dueAt), nearest first.
func sortDue(due []string, dueAt map[string]time.Time, clients map[string]float64) {
	slices.SortStableFunc(due, func(a, b string) int {
		if clients != nil {
			if c := cmp.Compare(clients[b], clients[a]); c != 0 {
				return c
			}
		}
		return dueAt[a].Compare(dueAt[b])
	})
}

// backoff is a channel's run of failed loads.
type backoff struct {
	failures int       // in a row
	until    time.Time // no load of the channel before
}

// failed decides when a channel whose load failed at now is loaded again.
// A load the origin budget refused pauses the updater until the budget
// would take a load again: the cadence stretches, least read channels
// first (see cycle).
// The origin's own word (a Retry-After, an open breaker) pauses every load
// and says nothing about the channel. A channel that does not exist, or
// is not a channel, leaves the popular set and waits MaxBackoff: users
// reading it are answered from the cache's remembered failure, and
// nothing refreshed ahead would serve them. Other failures (5xx,
// timeouts, broken pages) wait one refresh window, then twice as long
// after each further failure, up to MaxBackoff, so that a failing
// channel costs the origin a load per wait, not one per cycle.
func (u *updater) failed(ctx context.Context, ch string, err error, now time.Time) {
	if until, over := pages.OverBudget(err); over {
		// The budget is short, not the channel or Telegram: nothing of
		// the updater's would be taken before until, and then the most
		// read channels go first again (a channel backed off alone would
		// lose its turn to less read ones).
		u.pause(until)
		return
	}
	if until, ok := pages.RetryAt(err); ok {
		u.pause(until)
		return
	}
	if ctx.Err() != nil {
		return // shutting down: not the channel's failure
	}
	b := u.backoff[ch]
	b.failures++
	if pages.Lasting(err) {
		if u.popular.Drop(ch, now, now.Add(u.cfg.MaxBackoff)) {
			u.gone.Add(1)
		}
		b.until = now.Add(u.cfg.MaxBackoff)
	} else {
		b.until = now.Add(backoffDelay(u.refresh, u.cfg.MaxBackoff, b.failures))
	}
	u.backoff[ch] = b
}

// trimBackoff bounds the failures remembered, as pages.Popularity bounds the
// channels counted (clients can send any names; each one subscribed to
// is loaded once and fails): beyond the bound, the untracked channels
// whose wait ends soonest are forgotten first. Forgetting is safe: an
// untracked channel is not loaded, and users' reads of it meet the
// cache's remembered failure. A tracked channel keeps its wait whatever
// the bound, or it would be loaded every cycle; the tracked channels are
// bounded by Top and by the subscriptions.
func (u *updater) trimBackoff(tracked []string) {
	excess := len(u.backoff) - int(u.popular.MaxCounted())
	if excess <= 0 {
		return
	}
	type entry struct {
		ch    string
		until time.Time
	}
	var untracked []entry
	for ch, b := range u.backoff {
		if _, ok := slices.BinarySearch(tracked, ch); !ok {
			untracked = append(untracked, entry{ch, b.until})
		}
	}
	slices.SortFunc(untracked, func(a, b entry) int { return cmp.Or(a.until.Compare(b.until), cmp.Compare(a.ch, b.ch)) })
	for _, e := range untracked[:min(excess, len(untracked))] {
		delete(u.backoff, e.ch)
	}
}

// backoffDelay is the wait after the given number of failures in a row:
// first one window, doubling up to most.
func backoffDelay(window, most time.Duration, failures int) time.Duration {
	d := window
	for i := 1; i < failures && d < most; i++ {
		d *= 2
	}
	return min(d, most)
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
		BackingOff:  int(u.backingOff.Load()),
		Gone:        u.gone.Load(),
		MaxInFlight: u.maxInFlight.Load(),
		Bytes:       u.popular.Bytes() + u.backingOff.Load()*backoffBytes,
	}
}

// backoffBytes estimates the heap per channel backing off: map slot with
// its backoff, key.
const backoffBytes = 144
