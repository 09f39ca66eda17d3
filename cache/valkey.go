package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
	"github.com/valkey-io/valkey-go"
	"golang.org/x/sync/singleflight"

	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/internal/flight"
	"github.com/tmefeed/tmefeed/internal/keys"
)

// Defaults for ValkeyConfig's zero values.
const (
	DefaultValkeyTimeout   = 250 * time.Millisecond // VALKEY_TIMEOUT
	DefaultLocalTTL        = 10 * time.Second       // MEMORY_CACHE_MAX_TTL
	DefaultBreakerCoolDown = 30 * time.Second
	DefaultBreakerFailures = 3
	DefaultLeaseTTL        = 15 * time.Second
	DefaultLeaseWait       = 20 * time.Second
	DefaultPollInterval    = 250 * time.Millisecond
	DefaultConnections     = 2
)

// Tier names where a Get was answered, for ValkeyHooks.Hit.
type Tier string

const (
	TierL1       Tier = "l1"       // valkey-go's client-side cache, no round trip
	TierL2       Tier = "l2"       // Valkey itself
	TierEmbedded Tier = "embedded" // the process's own memory while Valkey is unavailable
)

// LeaseOutcome is what happened to a process's bid to fetch a key.
type LeaseOutcome string

const (
	LeaseWon    LeaseOutcome = "won"    // this process holds the lease and fetches from the origin
	LeaseLost   LeaseOutcome = "lost"   // another process is fetching
	LeaseWaited LeaseOutcome = "waited" // a loser received the winner's value
)

// ValkeyHooks receive events for metrics. Any may be nil. They are called
// synchronously, some under locks: keep them fast and non-blocking.
type ValkeyHooks struct {
	Hit           func(tier Tier)       // a Get answered from a cache (stale copies included)
	Stale         func(tier Tier)       // of those, one answered with a copy past its refresh point
	Miss          func()                // a Get that found no usable copy and waited for a load
	Lease         func(LeaseOutcome)    // one per lease outcome
	BreakerChange func(from, to string) // "closed", "half-open", "open"
	Load          func(err error)       // a Loader call by this process, with its result
}

// ValkeyConfig configures NewValkey. Zero values take the defaults above.
type ValkeyConfig struct {
	// URL is VALKEY_URL: valkey://host:6379/0, redis://, rediss:// or
	// valkeys:// (TLS), unix:///path; sentinel with ?master_set=name (see
	// valkey.ParseURL). Valkey Cluster seeds either as ?addr=host:port or as
	// a comma-separated list of URLs and host:port (see parseValkeyURL).
	URL string
	// Refresh is the age past which an entry is refreshed in the background
	// while the stale copy is served (CACHE_MODE). 0 stores nothing: every Get
	// goes to the embedded tier, which then only coalesces loads.
	Refresh time.Duration
	// HardTTL is the age past which an entry is gone from Valkey and from
	// every local copy. 0 means DefaultHardTTL(Refresh).
	HardTTL time.Duration
	// LocalTTL caps how long a reply stays in the client-side cache
	// (MEMORY_CACHE_MAX_TTL). Invalidation normally drops it much earlier;
	// the cap bounds staleness if an invalidation is ever lost.
	LocalTTL time.Duration
	// LocalMaxBytes bounds all local memory (MEMORY_CACHE_MAX_MB): three
	// quarters for the client-side cache over all its connections, one
	// quarter for the embedded tier that serves while Valkey is unavailable.
	// 0 means DefaultMaxBytes.
	LocalMaxBytes int64
	// Timeout is the deadline of every Valkey call (VALKEY_TIMEOUT).
	Timeout time.Duration
	// BreakerCoolDown is how long the breaker stays open before one probe.
	BreakerCoolDown time.Duration
	// BreakerFailures is how many consecutive failed calls open the breaker.
	BreakerFailures int
	// LeaseTTL is how long a fetch lease lives unless the holder, still
	// loading, extends it.
	LeaseTTL time.Duration
	// LeaseWait bounds how long a process waits for another's fetch of a
	// cold key before it fetches on its own.
	LeaseWait time.Duration
	// PollInterval is the longest gap between checks while waiting for
	// another process's fetch, should an invalidation not arrive.
	PollInterval time.Duration
	// LoadTimeout bounds one load, detached from the callers waiting for it.
	// 0 means DefaultLoadTimeout.
	LoadTimeout time.Duration
	// Connections is the number of TCP connections per Valkey node (a power
	// of two, at most 256): commands are pipelined over them.
	Connections int
	// Failures, when set, turns on negative caching, shared by every
	// process: a failed load that Failures.Code accepts is stored in Valkey
	// for NegativeTTL (0 means DefaultNegativeTTL) beside its key. Meanwhile
	// a cold Get of the key fails at once with Failures.Error and a stale
	// copy is served without another refresh, in every process.
	Failures    Failures
	NegativeTTL time.Duration
	Hooks       ValkeyHooks
	Logger      *slog.Logger // nil means slog.Default()
	Now         func() time.Time
}

// Valkey is the shared cache tier. L1 is valkey-go's client-side cache,
// kept coherent by server-assisted invalidation; L2 is Valkey, holding
// entries encoded by the shared codec. Past the refresh point a stale copy is
// served while one process refreshes it; a lease in Valkey makes that one
// process across all of them, and singleflight one goroutine within it.
// Every Valkey call has a deadline and passes a circuit breaker; while
// Valkey is unavailable the process serves from the embedded tier and loads
// on its own.
type Valkey struct {
	cfg      ValkeyConfig
	opt      valkey.ClientOption
	codec    *Codec
	fallback *Memory
	l1       *l1Budget
	breaker  *gobreaker.CircuitBreaker[struct{}]
	log      *slog.Logger
	now      func() time.Time

	client atomic.Pointer[valkey.Client] // nil until connected

	coldLoads     flight.Group[Entry] // one per key
	revalidations singleflight.Group  // refreshes callers wait for, one per key; under the caller's ctx
	refreshing    sync.Map            // key → struct{}: background refreshes running here
	waiters       waiters

	base   context.Context // cancelled by Close
	cancel context.CancelFunc
	mu     sync.Mutex // orders spawn against Close
	bg     sync.WaitGroup
	closed atomic.Bool
}

var _ Cache = (*Valkey)(nil)

// Lua scripts for the lease: only the holder's token may release or extend.
var (
	releaseScript = valkey.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	extendScript  = valkey.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
)

var (
	errNotConnected = errors.New("cache: valkey not connected")
	errUnavailable  = errors.New("cache: valkey unavailable")
)

// callerGone marks a call cut short by its caller rather than by Valkey; the
// breaker does not count it.
type callerGone struct{ err error }

func (c callerGone) Error() string { return c.err.Error() }
func (c callerGone) Unwrap() error { return c.err }

// NewValkey returns the Valkey tier. A malformed URL or configuration is an
// error; an unreachable server is not: the tier starts on its embedded
// fallback and connects in the background, so a process can start before
// its Valkey does. ctx bounds the first connection attempt only.
func NewValkey(ctx context.Context, cfg ValkeyConfig) (*Valkey, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	opt, err := parseValkeyURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("cache: VALKEY_URL: %w", err)
	}
	l1Bytes := cfg.LocalMaxBytes * 3 / 4
	fallback, err := NewMemory(MemoryConfig{
		MaxBytes:    cfg.LocalMaxBytes - l1Bytes,
		Refresh:     cfg.Refresh,
		HardTTL:     cfg.HardTTL,
		LoadTimeout: cfg.LoadTimeout,
		Failures:    cfg.Failures,
		NegativeTTL: cfg.NegativeTTL,
		Now:         cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	codec, err := NewCodec()
	if err != nil {
		return nil, err
	}
	v := &Valkey{
		cfg:      cfg,
		codec:    codec,
		fallback: fallback,
		l1:       newL1Budget(l1Bytes, cfg.Connections),
		log:      cfg.Logger,
		now:      cfg.Now,
	}
	v.base, v.cancel = context.WithCancel(context.Background())

	multiplex := bits.Len(uint(cfg.Connections)) - 1
	opt.PipelineMultiplex = multiplex
	opt.CacheSizeEachConn = int(max(l1Bytes>>multiplex, 1)) // informational: l1Budget enforces the bound
	opt.NewCacheStoreFn = v.l1.newStore
	opt.OnInvalidations = v.onInvalidations
	if opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = max(4*cfg.Timeout, time.Second)
	}
	if opt.ConnWriteTimeout == 0 {
		// Also how soon a hung connection is noticed and replaced.
		opt.ConnWriteTimeout = max(10*cfg.Timeout, 2*time.Second)
	}
	if opt.ClientName == "" {
		opt.ClientName = "tmefeed"
	}
	v.opt = opt

	v.breaker = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "valkey",
		MaxRequests: 1,
		Timeout:     cfg.BreakerCoolDown,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= uint32(cfg.BreakerFailures)
		},
		IsExcluded: func(err error) bool {
			var g callerGone
			return errors.As(err, &g)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) {
			// Runs under the breaker's lock: no breaker calls in here.
			v.log.Warn("valkey circuit breaker", "from", from.String(), "to", to.String())
			if f := v.cfg.Hooks.BreakerChange; f != nil {
				f(from.String(), to.String())
			}
		},
	})

	if err := v.connect(ctx); err != nil {
		v.log.Warn("valkey unavailable at start; serving from local memory and retrying", "err", err)
		v.spawn(v.reconnect)
	}
	return v, nil
}

func (cfg *ValkeyConfig) fill() error {
	if cfg.URL == "" {
		return errors.New("cache: ValkeyConfig.URL is empty")
	}
	for _, d := range []time.Duration{cfg.Refresh, cfg.HardTTL, cfg.LocalTTL, cfg.Timeout, cfg.BreakerCoolDown,
		cfg.LeaseTTL, cfg.LeaseWait, cfg.PollInterval, cfg.LoadTimeout, cfg.NegativeTTL} {
		if d < 0 {
			return fmt.Errorf("cache: negative duration in ValkeyConfig: %v", d)
		}
	}
	if cfg.LocalMaxBytes < 0 || cfg.BreakerFailures < 0 || cfg.Connections < 0 {
		return errors.New("cache: negative size in ValkeyConfig")
	}
	defaults.Set(&cfg.Connections, DefaultConnections)
	if cfg.Connections&(cfg.Connections-1) != 0 || cfg.Connections > 1<<valkey.MaxPipelineMultiplex {
		return fmt.Errorf("cache: ValkeyConfig.Connections %d: want a power of two up to %d", cfg.Connections, 1<<valkey.MaxPipelineMultiplex)
	}
	if cfg.HardTTL == 0 {
		cfg.HardTTL = DefaultHardTTL(cfg.Refresh)
	}
	if cfg.HardTTL < cfg.Refresh {
		return fmt.Errorf("cache: HardTTL %v is shorter than Refresh %v", cfg.HardTTL, cfg.Refresh)
	}
	defaults.Set(&cfg.LocalTTL, DefaultLocalTTL)
	defaults.Set(&cfg.Timeout, DefaultValkeyTimeout)
	defaults.Set(&cfg.BreakerCoolDown, DefaultBreakerCoolDown)
	defaults.Set(&cfg.LeaseTTL, DefaultLeaseTTL)
	defaults.Set(&cfg.LeaseWait, DefaultLeaseWait)
	defaults.Set(&cfg.PollInterval, DefaultPollInterval)
	defaults.Set(&cfg.LoadTimeout, DefaultLoadTimeout)
	defaults.Set(&cfg.NegativeTTL, DefaultNegativeTTL)
	defaults.Set(&cfg.LocalMaxBytes, DefaultMaxBytes)
	defaults.Set(&cfg.BreakerFailures, DefaultBreakerFailures)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return nil
}

// connect makes the client. A server without RESP3 client tracking gets a
// client without L1; waiters then rely on polling.
func (v *Valkey) connect(ctx context.Context) error {
	opt := v.opt
	c, err := newClient(ctx, opt)
	if errors.Is(err, valkey.ErrNoCache) {
		v.log.Warn("valkey server lacks client-side caching (RESP3 tracking); running without L1")
		opt.DisableCache = true
		c, err = newClient(ctx, opt)
	}
	if err != nil && len(opt.InitAddress) > 1 && strings.Contains(strings.ToLower(err.Error()), "cluster support disabled") {
		// valkey-go takes a single seed that is no cluster for a plain
		// server, but several seeds only for a cluster.
		return fmt.Errorf("VALKEY_URL names %d seeds, which must be nodes of one Valkey Cluster, but %w", len(opt.InitAddress), err)
	}
	if err != nil {
		return err
	}
	if v.closed.Load() {
		c.Close()
		return nil
	}
	v.client.Store(&c)
	return nil
}

// newClient runs valkey.NewClient, which dials synchronously, within ctx.
func newClient(ctx context.Context, opt valkey.ClientOption) (valkey.Client, error) {
	type result struct {
		c   valkey.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := valkey.NewClient(opt)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.err == nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// reconnect retries connect until it succeeds or the tier is closed.
func (v *Valkey) reconnect() {
	delay := 100 * time.Millisecond
	for {
		select {
		case <-v.base.Done():
			return
		case <-time.After(delay):
		}
		ctx, cancel := context.WithTimeout(v.base, v.opt.Dialer.Timeout+time.Second)
		err := v.connect(ctx)
		cancel()
		if err == nil {
			v.log.Info("valkey connected")
			return
		}
		delay = min(2*delay, v.cfg.BreakerCoolDown)
	}
}

// Get implements Cache.
func (v *Valkey) Get(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error) {
	if v.closed.Load() {
		return Entry{}, ErrClosed
	}
	if v.cfg.Refresh <= 0 {
		return v.local(ctx, key, load, opt)
	}
	b, tier, err := v.read(ctx, key, true)
	if err != nil {
		return v.local(ctx, key, load, opt)
	}
	if b != nil {
		lead, early := opt.dueLead(v.cfg.Refresh)
		now, until := v.now().UnixNano(), refreshPoint(b, v.cfg.Refresh)
		switch age := v.age(b); {
		case now < until-int64(lead):
			if e, err := v.decode(b); err == nil {
				v.hit(tier)
				return e, nil
			}
		case age < v.cfg.HardTTL:
			if e, err := v.decode(b); err == nil {
				if opt.Revalidate || early {
					if fresh, err := v.revalidate(ctx, key, load, opt); err == nil {
						return fresh, nil
					}
				} else {
					v.refreshInBackground(ctx, key, load, opt)
				}
				v.hit(tier)
				e.Stale = now >= until
				if e.Stale {
					v.stale(tier)
				}
				return e, nil
			}
		}
	}
	if f := v.cfg.Hooks.Miss; f != nil {
		f()
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("cache: get %q: %w", key, err)
	}
	// One cold load per key in this process; it outlives a caller that
	// gives up, so the others still get the value.
	return v.coldLoads.Do(ctx, key, func(ctx context.Context) (Entry, error) {
		lctx, cancel := v.loadContext(ctx)
		defer cancel()
		return v.coldLoad(lctx, key, load, opt)
	})
}

// loadContext detaches a load from the caller that started it (keeping its
// values), bounds it, and ends it on Close.
func (v *Valkey) loadContext(ctx context.Context) (context.Context, context.CancelFunc) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.cfg.LoadTimeout)
	stop := context.AfterFunc(v.base, cancel)
	return lctx, func() { stop(); cancel() }
}

// coldLoad fetches a key no process holds: with the lease, from the origin;
// without it, by waiting for the holder's write.
func (v *Valkey) coldLoad(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error) {
	if err := v.failedRecently(ctx, key, true); err != nil {
		return Entry{}, err
	}
	lease, token := keys.Lease(key), newToken()
	waitUntil := time.Now().Add(v.cfg.LeaseWait)
	poll := 10 * time.Millisecond
	cached := true // whether the next read may be answered by L1
	lost, first := false, true
	// settled reads key once more, since the holder may have written; done
	// reports that the wait is over, with its result.
	settled := func(wake chan struct{}) (e Entry, done bool, err error) {
		e, ok, err := v.readUsable(ctx, key, cached)
		switch {
		case err != nil:
			v.waiters.remove(key, wake)
			e, err = v.local(ctx, key, load, opt)
			return e, true, err
		case ok:
			v.waiters.remove(key, wake)
			v.leaseOutcome(LeaseWaited)
			return e, true, nil
		}
		return Entry{}, false, nil
	}
	for {
		// Registered before reading, so an invalidation that lands between
		// the read and the wait still wakes us.
		wake := v.waiters.add(key)
		if !first {
			// Woken or polled: the holder may have written.
			if e, done, err := settled(wake); done {
				return e, err
			}
		}
		first = false
		won, err := v.acquire(ctx, lease, token)
		if err != nil {
			v.waiters.remove(key, wake)
			return v.local(ctx, key, load, opt)
		}
		if won {
			v.waiters.remove(key, wake)
			return v.loadAsHolder(ctx, key, lease, token, load, opt)
		}
		if !lost {
			lost = true
			v.leaseOutcome(LeaseLost)
		}
		// The holder may have written between our miss and our bid.
		if e, done, err := settled(wake); done {
			return e, err
		}
		if time.Now().After(waitUntil) {
			v.waiters.remove(key, wake)
			v.log.Warn("valkey lease holder did not deliver; loading here", "key", key)
			return v.loadHere(ctx, key, load, opt)
		}
		timer := time.NewTimer(poll)
		select {
		case <-wake:
			cached = true // L1 dropped the key; the next read goes to Valkey
		case <-timer.C:
			// No invalidation yet. A cached nil would still be in L1, so
			// ask Valkey itself.
			cached = false
			poll = min(2*poll, v.cfg.PollInterval)
		case <-ctx.Done():
			timer.Stop()
			v.waiters.remove(key, wake)
			return Entry{}, fmt.Errorf("cache: waiting for %q: %w", key, ctx.Err())
		}
		timer.Stop()
		v.waiters.remove(key, wake)
	}
}

// readUsable reads key and decodes it if it is within its hard TTL, marking
// it stale past the refresh point.
func (v *Valkey) readUsable(ctx context.Context, key string, cached bool) (Entry, bool, error) {
	b, _, err := v.read(ctx, key, cached)
	if err != nil || b == nil {
		return Entry{}, false, err
	}
	if v.age(b) >= v.cfg.HardTTL {
		return Entry{}, false, nil
	}
	e, err := v.decode(b)
	if err != nil {
		return Entry{}, false, nil
	}
	e.Stale = !v.now().Before(e.RefreshAt)
	return e, true, nil
}

// decode decodes an entry as stored in Valkey.
func (v *Valkey) decode(b []byte) (Entry, error) {
	e, err := v.codec.Decode(b)
	return withRefreshAt(e, v.cfg.Refresh), err
}

// loadAsHolder runs load while holding the lease, writes the result and
// releases the lease. A failed load writes nothing: waiters in other
// processes then find the lease free and one of them loads next.
func (v *Valkey) loadAsHolder(ctx context.Context, key, lease, token string, load Loader, opt GetOptions) (Entry, error) {
	defer v.release(ctx, lease, token)
	// Another process may have written between our read and our lease.
	lead, _ := opt.dueLead(v.cfg.Refresh)
	start := v.now()
	b, _, err := v.read(ctx, key, false)
	if err == nil && b != nil && start.UnixNano() < refreshPoint(b, v.cfg.Refresh)-int64(lead) {
		if e, err := v.decode(b); err == nil {
			return e, nil
		}
	}
	var prev []byte
	if err == nil && b != nil && v.age(b) < v.cfg.HardTTL {
		prev = b // otherwise nothing to keep serving
	}
	// Or failed to: the previous holder's failure stands for everyone.
	if err := v.failedRecently(ctx, key, false); err != nil {
		return Entry{}, err
	}
	v.leaseOutcome(LeaseWon)
	stop := v.keepLease(ctx, lease, token)
	e, err := v.callLoad(ctx, key, load, prev, start)
	stop()
	if errors.Is(err, ErrNotYet) && prev != nil {
		old, derr := v.decode(prev)
		if derr != nil {
			return Entry{}, err
		}
		old.Stale = !v.now().Before(old.RefreshAt)
		return old, nil
	}
	if err != nil {
		v.remember(ctx, key, err)
		return Entry{}, err
	}
	if v.write(ctx, key, e) {
		opt.stored(e, Previous{prev, v.codec})
	}
	return e, nil
}

// loadHere loads without a lease and shares the result through Valkey.
func (v *Valkey) loadHere(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error) {
	e, err := v.callLoad(ctx, key, load, nil, v.now())
	if err != nil {
		v.remember(ctx, key, err)
		return Entry{}, err
	}
	if v.write(ctx, key, e) {
		opt.stored(e, Previous{})
	}
	return e, nil
}

// failedRecently returns the failure any process remembered for key, or
// nil: also when Valkey cannot say, since the lease still guards the load.
// cached lets the answer come from L1, which the remembering write
// invalidates.
func (v *Valkey) failedRecently(ctx context.Context, key string, cached bool) error {
	if v.cfg.Failures == nil {
		return nil
	}
	var s string
	err := v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		var r valkey.ValkeyResult
		if cached {
			r = c.DoCache(ctx, c.B().Get().Key(keys.Failed(key)).Cache(), v.cfg.LocalTTL)
		} else {
			r = c.Do(ctx, c.B().Get().Key(keys.Failed(key)).Build())
		}
		var err error
		s, err = r.ToString()
		if valkey.IsValkeyNil(err) {
			s = ""
			return nil
		}
		return err
	})
	if err != nil || s == "" {
		return nil
	}
	code, ms, ok := strings.Cut(s, " ")
	n, perr := strconv.ParseInt(ms, 10, 64)
	if !ok || perr != nil {
		return nil
	}
	until := time.UnixMilli(n)
	if !v.now().Before(until) {
		return nil
	}
	return v.cfg.Failures.Error(code, until)
}

// remember stores a failed load of key for NegativeTTL, as "code until-ms",
// if it is a failure worth remembering.
func (v *Valkey) remember(ctx context.Context, key string, err error) {
	if v.cfg.Failures == nil {
		return
	}
	code, ok := v.cfg.Failures.Code(err)
	if !ok {
		return
	}
	until := v.now().Add(v.cfg.NegativeTTL)
	val := code + " " + strconv.FormatInt(until.UnixMilli(), 10)
	ctx = context.WithoutCancel(ctx) // a load that timed out is worth remembering most
	werr := v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		return c.Do(ctx, c.B().Set().Key(keys.Failed(key)).Value(val).PxMilliseconds(v.cfg.NegativeTTL.Milliseconds()).Build()).Error()
	})
	if werr != nil {
		v.log.Debug("valkey: remembering a failure failed", "key", key, "err", werr)
	}
}

// callLoad runs load, replacing prev (nil: none) found due at start, and
// sets the loaded entry's FetchedAt and refresh point.
func (v *Valkey) callLoad(ctx context.Context, key string, load Loader, prev []byte, start time.Time) (Entry, error) {
	e, err := callLoader(ctx, key, load, Previous{prev, v.codec})
	if f := v.cfg.Hooks.Load; f != nil && !errors.Is(err, ErrNotYet) {
		f(err)
	}
	if err != nil {
		return Entry{}, err
	}
	if e.FetchedAt.IsZero() {
		e.FetchedAt = v.now()
	}
	settle(&e, prev, start, v.cfg.Refresh)
	// A value derived from a stale copy is stale from the start.
	e.Stale = !v.now().Before(e.RefreshAt)
	return e, nil
}

// refreshInBackground starts one refresh of a stale key in this process, if
// none is running; across processes the lease lets one of them fetch.
func (v *Valkey) refreshInBackground(ctx context.Context, key string, load Loader, opt GetOptions) {
	if _, running := v.refreshing.LoadOrStore(key, struct{}{}); running {
		return
	}
	lctx, cancel := v.loadContext(ctx)
	started := v.spawn(func() {
		defer v.refreshing.Delete(key)
		defer cancel()
		if v.failedRecently(lctx, key, true) != nil {
			return // back off: a refresh failed moments ago, here or elsewhere
		}
		lease, token := keys.Lease(key), newToken()
		won, err := v.acquire(lctx, lease, token)
		if err != nil {
			return // the stale copy was served; the breaker decides what comes next
		}
		if !won {
			v.leaseOutcome(LeaseLost)
			// Another process is refreshing; its write will invalidate our
			// copy. Until then, hold off instead of bidding on every hit.
			t := time.NewTimer(v.cfg.PollInterval)
			defer t.Stop()
			select {
			case <-t.C:
			case <-lctx.Done():
			}
			return
		}
		if _, err := v.loadAsHolder(lctx, key, lease, token, load, opt); err != nil {
			v.log.Debug("background refresh failed; stale copy kept", "key", key, "err", err)
		}
	})
	if !started {
		cancel()
		v.refreshing.Delete(key)
	}
}

// errLeaseHeld: another process is refreshing the key.
var errLeaseHeld = errors.New("cache: lease held elsewhere")

// revalidate refreshes a stale key while the caller waits, if no process is
// refreshing it and no refresh failed moments ago; see
// GetOptions.Revalidate.
func (v *Valkey) revalidate(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error) {
	r, err, _ := v.revalidations.Do(key, func() (any, error) {
		if err := v.failedRecently(ctx, key, true); err != nil {
			return Entry{}, err
		}
		lease, token := keys.Lease(key), newToken()
		won, err := v.acquire(ctx, lease, token)
		if err != nil {
			return Entry{}, err
		}
		if !won {
			return Entry{}, errLeaseHeld
		}
		return v.loadAsHolder(ctx, key, lease, token, load, opt)
	})
	return r.(Entry), err
}

// spawn runs fn on a goroutine that Close waits for; false after Close.
func (v *Valkey) spawn(fn func()) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed.Load() {
		return false
	}
	v.bg.Go(fn)
	return true
}

// local serves from the embedded tier while Valkey is unavailable (or when
// nothing is to be stored); it coalesces and loads within this process.
func (v *Valkey) local(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error) {
	var called atomic.Bool
	e, err := v.fallback.Get(ctx, key, func(ctx context.Context, prev Previous) (Entry, error) {
		called.Store(true)
		e, err := load(ctx, prev)
		if f := v.cfg.Hooks.Load; f != nil {
			f(err)
		}
		return e, err
	}, opt)
	// Approximate: callers coalesced onto another's load count as hits.
	switch {
	case v.cfg.Refresh <= 0:
	case called.Load():
		if f := v.cfg.Hooks.Miss; f != nil {
			f()
		}
	case err == nil:
		v.hit(TierEmbedded)
		if e.Stale {
			v.stale(TierEmbedded)
		}
	}
	return e, err
}

// read returns key's encoded entry, nil if absent. cached allows the answer
// to come from L1 (and tracks the key so a later write invalidates it).
func (v *Valkey) read(ctx context.Context, key string, cached bool) ([]byte, Tier, error) {
	var b []byte
	tier := TierL2
	err := v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		var r valkey.ValkeyResult
		if cached {
			r = c.DoCache(ctx, c.B().Get().Key(key).Cache(), v.cfg.LocalTTL)
		} else {
			r = c.Do(ctx, c.B().Get().Key(key).Build())
		}
		var err error
		b, err = r.AsBytes()
		if valkey.IsValkeyNil(err) {
			b = nil
			return nil
		}
		if err == nil && r.IsCacheHit() {
			tier = TierL1
		}
		return err
	})
	if b != nil {
		if _, _, err := parseHeader(b); err != nil {
			v.log.Warn("valkey: unreadable entry treated as missing", "key", key, "err", err)
			b = nil
		}
	}
	return b, tier, err
}

// write stores e in Valkey until its hard TTL, and reports whether it
// did. Failures only cost sharing.
func (v *Valkey) write(ctx context.Context, key string, e Entry) bool {
	ttl := v.cfg.HardTTL - v.now().Sub(e.FetchedAt)
	if ttl < time.Millisecond {
		return false
	}
	b, err := v.codec.Encode(e)
	if err != nil {
		v.log.Warn("valkey: entry not encodable; served unshared", "key", key, "err", err)
		return false
	}
	err = v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		set := c.B().Set().Key(key).Value(valkey.BinaryString(b)).PxMilliseconds(ttl.Milliseconds()).Build()
		if v.cfg.Failures == nil {
			return c.Do(ctx, set).Error()
		}
		// A success ends a remembered failure: one round trip for both.
		for _, r := range c.DoMulti(ctx, set, c.B().Del().Key(keys.Failed(key)).Build()) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		v.log.Debug("valkey: write failed", "key", key, "err", err)
		return false
	}
	// This process reads its own write from now on (GetOptions.Stored
	// relies on it), not a copy L1 holds until the invalidation arrives.
	v.l1.forget(key)
	return true
}

// acquire tries to take the lease for a key.
func (v *Valkey) acquire(ctx context.Context, lease, token string) (bool, error) {
	var won bool
	err := v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		err := c.Do(ctx, c.B().Set().Key(lease).Value(token).Nx().PxMilliseconds(v.cfg.LeaseTTL.Milliseconds()).Build()).Error()
		if valkey.IsValkeyNil(err) {
			return nil
		}
		won = err == nil
		return err
	})
	return won, err
}

// release drops the lease if this process still holds it.
func (v *Valkey) release(ctx context.Context, lease, token string) {
	ctx = context.WithoutCancel(ctx) // release even when the load's ctx ended
	err := v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		return releaseScript.Exec(ctx, c, []string{lease}, []string{token}).Error()
	})
	if err != nil {
		v.log.Debug("valkey: lease release failed; it expires on its own", "lease", lease, "err", err)
	}
}

// keepLease extends the lease while a load runs past a third of its TTL.
func (v *Valkey) keepLease(ctx context.Context, lease, token string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(v.cfg.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = v.do(ctx, func(ctx context.Context, c valkey.Client) error {
					return extendScript.Exec(ctx, c, []string{lease}, []string{token, fmt.Sprint(v.cfg.LeaseTTL.Milliseconds())}).Error()
				})
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// do runs one Valkey call through the breaker with the configured deadline.
func (v *Valkey) do(ctx context.Context, call func(context.Context, valkey.Client) error) error {
	_, err := v.breaker.Execute(func() (struct{}, error) {
		cp := v.client.Load()
		if cp == nil {
			return struct{}{}, errNotConnected
		}
		cctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
		defer cancel()
		err := call(cctx, *cp)
		if err != nil && ctx.Err() != nil {
			return struct{}{}, callerGone{err}
		}
		return struct{}{}, err
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return err
}

// age is how long ago the origin served the entry encoded in b.
func (v *Valkey) age(b []byte) time.Duration {
	return time.Duration(v.now().UnixNano() - fetchedNanos(b))
}

func (v *Valkey) hit(t Tier) {
	if f := v.cfg.Hooks.Hit; f != nil {
		f(t)
	}
}

func (v *Valkey) stale(t Tier) {
	if f := v.cfg.Hooks.Stale; f != nil {
		f(t)
	}
}

func (v *Valkey) leaseOutcome(o LeaseOutcome) {
	if f := v.cfg.Hooks.Lease; f != nil {
		f(o)
	}
}

// onInvalidations runs on valkey-go's reading goroutine: it only wakes.
func (v *Valkey) onInvalidations(keys []valkey.ValkeyMessage) {
	if keys == nil {
		v.waiters.wakeAll()
		return
	}
	for _, k := range keys {
		if s, err := k.ToString(); err == nil {
			v.waiters.wake(s)
		}
	}
}

// BreakerState is "closed", "half-open" or "open".
func (v *Valkey) BreakerState() string { return v.breaker.State().String() }

// LocalBytes is the memory held in this process: the client-side cache over
// all connections plus the embedded fallback. At most LocalMaxBytes.
func (v *Valkey) LocalBytes() int64 {
	return v.l1.bytes.Load() + int64(v.fallback.Stats().Bytes)
}

// Close stops background work, then closes the client and the fallback.
func (v *Valkey) Close() error {
	v.mu.Lock()
	already := v.closed.Swap(true)
	v.mu.Unlock()
	if already {
		return nil
	}
	v.cancel()
	v.bg.Wait()
	if cp := v.client.Load(); cp != nil {
		(*cp).Close()
	}
	return v.fallback.Close()
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// waiters wakes goroutines waiting for a key to change in Valkey.
type waiters struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

func (w *waiters) add(key string) chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[string]map[chan struct{}]struct{})
	}
	set := w.m[key]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.m[key] = set
	}
	set[ch] = struct{}{}
	return ch
}

func (w *waiters) remove(key string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if set := w.m[key]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(w.m, key)
		}
	}
}

func (w *waiters) wake(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.m[key] {
		close(ch)
	}
	delete(w.m, key)
}

func (w *waiters) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.m {
		for ch := range set {
			close(ch)
		}
	}
	clear(w.m)
}
