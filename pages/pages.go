// Package pages is the page service: it answers "give me this t.me page,
// parsed" by going request → cache → origin → parser, and caches rendered
// responses beside the pages they were rendered from.
package pages

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/maypok86/otter/v2"
	"github.com/zeebo/xxh3"
	"golang.org/x/sync/singleflight"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/internal/flight"
	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/internal/memsize"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// Fetcher fetches the raw bytes of a t.me page; *origin.Client is one.
type Fetcher interface {
	Fetch(ctx context.Context, r tme.Request) ([]byte, error)
}

// Defaults for the zero fields of Config.
const (
	DefaultParsedBytes = 8 << 20
	DefaultHotBytes    = 8 << 20
)

// Heap an entry costs beyond what its weigher counts from its contents:
// otter's node (key, value, list links, expiry, weight), its hash-table
// slot and its share of the frequency sketch. Measured as live-heap growth
// over 50,000 entries (amd64, Go 1.26, otter v2.4.0); TestStoreAccounting
// checks the totals.
const (
	hotOverhead    = 152
	parsedOverhead = 104
)

// Config configures a Service.
type Config struct {
	Cache  cache.Cache // page bytes and rendered responses
	Origin Fetcher     // called on a cache miss
	// ParsedBytes bounds the per-process cache of parsed pages, keyed by
	// the hash of the page bytes, in estimated heap bytes. Zero means
	// DefaultParsedBytes; negative keeps no parse beyond its request.
	ParsedBytes int64
	// OnParse, when set, is called each time page bytes go through the
	// parser (not when a parsed page is reused). Useful for metrics and tests.
	OnParse func(tme.Kind)

	// Refresh is the cache's refresh point (CACHE_MODE). When set, the
	// hottest rendered responses are also held uncompressed in process and
	// served while younger than Refresh — while the cache would serve them
	// as fresh hits anyway — so such a hit skips decompression too.
	Refresh time.Duration
	// HotBytes bounds that store (values, keys and per-entry overhead); 0
	// means DefaultHotBytes, negative turns it off. It is memory beyond the
	// cache's own bound.
	HotBytes int64
	// Now is the clock for Refresh; nil means time.Now. It must be the
	// cache's clock.
	Now func() time.Time
	// Represent, when set, makes a face's representation of a rendered
	// response (its ETag and compressed forms, say) as the response
	// enters the hot store, so that a hit hands it back ready; it counts
	// in HotBytes. pages only keeps it: what it is is the face's.
	Represent func(body []byte) Representation

	// HistoryMaxPages bounds the pages a walk through a channel's history
	// reads (Posts, History): zero means DefaultHistoryMaxPages.
	HistoryMaxPages int
	// WalkTimeout bounds one walk; zero means DefaultWalkTimeout.
	WalkTimeout time.Duration
	// MediaOrigins are origins ("http://127.0.0.1:8081") MediaURL may
	// also link to besides Telegram's hosts: the demo's fixture origin,
	// which serves the pages' pictures itself.
	MediaOrigins []string
}

// Service is the page service. It is safe for concurrent use.
type Service struct {
	cache   cache.Cache
	origin  Fetcher
	decoded *otter.Cache[decodedKey, *decoded] // nil when off
	parses  singleflight.Group
	held    atomic.Int64 // bytes of the distinct parses anyone holds
	onParse func(tme.Kind)
	hot     *otter.Cache[hotKey, hotEntry] // nil when off
	rep     func([]byte) Representation
	refresh time.Duration
	now     func() time.Time

	walks        flight.Group[walked] // history walks running, one per window
	walksRun     atomic.Int64
	historyPages int
	mediaOrigins []string
	walkTimeout  time.Duration
	watcher      atomic.Pointer[Watcher]    // nil until Watch
	popular      atomic.Pointer[Popularity] // nil until CountPopularity
}

// Watcher hears of channels' newest pages (/s/<channel>) that changed;
// live.Hub is one.
type Watcher interface {
	// NewestChanged: this process fetched channel's newest page, the
	// cache stored it, and its bytes differ from the copy they replaced.
	// It is called on the load's goroutine, before the load's callers
	// get the page: it must return at once, handing any real work to a
	// goroutine of its own.
	NewestChanged(Change)
}

// Change is a channel's newest page replaced by different bytes.
type Change struct {
	Channel string
	// Prev is the replaced copy's bytes; Next the new page, parsed. Both
	// are shared and must not be modified.
	Prev      []byte
	Next      *parser.Page
	FetchedAt time.Time // of Next
}

// Watch makes w the Service's Watcher (nil: none). One at a time.
func (s *Service) Watch(w Watcher) {
	if w == nil {
		s.watcher.Store(nil)
		return
	}
	s.watcher.Store(&w)
}

// RefreshNewest returns channel's newest page, first reloading it through
// the cache (and its lease) when the cached copy is within lead of its
// refresh point, although it may not have reached it yet: a background
// updater calls it so that users find the page fresh. The reloaded copy
// is fresh until a refresh window after the replaced copy's refresh point
// (cache.RefreshAhead), so a page kept fresh this way is fetched once per
// window.
//
// The cache keeps its copy when the reload fails (stale-if-error); the
// reload's error is returned anyway, beside that copy, so that the caller
// can back off (see RetryAt).
func (s *Service) RefreshNewest(ctx context.Context, channel string, lead time.Duration) (Result, error) {
	var failed loadFailure
	res, err := s.load(ctx, tme.Request{Kind: tme.KindBody, Channel: channel, Class: tme.ClassUpdater},
		cache.GetOptions{RefreshAhead: true, Lead: lead}, &failed)
	if err == nil {
		err = failed.get()
	}
	return res, err
}

// loadFailure receives the error of a load the caller started, when the
// cache answers with a copy instead. nil receives nothing.
type loadFailure struct {
	mu  sync.Mutex
	err error
}

func (f *loadFailure) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *loadFailure) set(err error) {
	if f != nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
	}
}

// OverBudget reports whether err, a failed read, is the origin budget
// refusing the fetch (not Telegram, not the page), and when the budget
// would take it.
func OverBudget(err error) (time.Time, bool) {
	var be *origin.BudgetError
	if errors.As(err, &be) {
		return be.RetryAfter, true
	}
	return time.Time{}, false
}

// RetryAt reports when err, a failed read, says the origin may be asked
// again (a rate limit's Retry-After, an open circuit breaker).
func RetryAt(err error) (time.Time, bool) {
	var rl *origin.RateLimitError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	var un *origin.UnavailableError
	if errors.As(err, &un) {
		return un.RetryAfter, true
	}
	return time.Time{}, false
}

// Stats is what a Service holds in memory, in estimated heap bytes.
type Stats struct {
	HotBytes    uint64 // uncompressed rendered responses (the weight of the hot store)
	ParsedBytes uint64 // the weight of the parsed-page cache
	// HeldBytes counts each parse held by the parsed-page cache or by a
	// feed build once, however many hold it, plus the cache's per-entry
	// overhead: the memory parses really take.
	HeldBytes int64
}

// Stats returns the current sizes. Eviction runs in the background, so a
// store may be briefly over its bound.
func (s *Service) Stats() Stats {
	var st Stats
	if s.hot != nil {
		st.HotBytes = s.hot.WeightedSize()
	}
	st.HeldBytes = s.held.Load()
	if s.decoded != nil {
		st.ParsedBytes = s.decoded.WeightedSize()
		st.HeldBytes += int64(s.decoded.EstimatedSize()) * parsedOverhead
	}
	return st
}

// CleanUp finishes pending evictions, so that Stats is exact. For tests
// and measurements.
func (s *Service) CleanUp() {
	if s.hot != nil {
		s.hot.CleanUp()
	}
	if s.decoded != nil {
		s.decoded.CleanUp()
	}
}

// Parsed is the memory of one parse. The parsed-page cache holds it, and
// so may feed builds that keep its posts after the cache dropped it; its
// bytes count once in Stats.HeldBytes while anyone holds it. A nil
// *Parsed (a page that does not come from a Service) holds nothing.
type Parsed struct {
	bytes   int64
	holders atomic.Int64
	total   *atomic.Int64
}

// Bytes is the estimated heap the parse takes.
func (p *Parsed) Bytes() int64 {
	if p == nil {
		return 0
	}
	return p.bytes
}

// Hold counts one more holder; each Hold needs one Release.
func (p *Parsed) Hold() {
	if p != nil && p.holders.Add(1) == 1 {
		p.total.Add(p.bytes)
	}
}

// Release drops a holder taken with Hold.
func (p *Parsed) Release() {
	if p != nil && p.holders.Add(-1) == 0 {
		p.total.Add(-p.bytes)
	}
}

// Result is a parsed page with what the cache knows about it. Page and
// Preview are shared between callers and must not be modified.
type Result struct {
	Page      *parser.Page    // body and more requests
	Preview   *parser.Preview // preview requests (Rendered only)
	Hash      uint64          // xxh3 of the page bytes
	FetchedAt time.Time       // when the origin served the bytes
	RefreshAt time.Time       // the copy's refresh point (cache.Entry.RefreshAt)
	Stale     bool            // served past its refresh point (the refresh failed or is running)
	// Parsed is the memory of Page or Preview, for holders that keep them
	// (see Parsed).
	Parsed *Parsed
}

// decodedKey identifies parsed bytes. The length and kind ride along with
// the hash so that a collision would also need equal sizes and kinds.
type decodedKey struct {
	hash uint64
	size int
	kind tme.Kind
}

// decoded is a parse outcome; errors are kept too, since the same bytes
// always give the same error.
type decoded struct {
	page    *parser.Page
	preview *parser.Preview
	err     error
	mem     Parsed
}

// New returns a Service. Cache and Origin must be set.
func New(cfg Config) *Service {
	s := &Service{
		cache:   cfg.Cache,
		origin:  cfg.Origin,
		onParse: cfg.OnParse,
		refresh: cfg.Refresh,
		now:     cfg.Now,
		rep:     cfg.Represent,

		mediaOrigins: cfg.MediaOrigins,
		historyPages: cmp.Or(max(cfg.HistoryMaxPages, 0), DefaultHistoryMaxPages),
		walkTimeout:  cmp.Or(max(cfg.WalkTimeout, 0), DefaultWalkTimeout),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if parsedBytes := cmp.Or(cfg.ParsedBytes, DefaultParsedBytes); parsedBytes > 0 {
		s.decoded = otter.Must(&otter.Options[decodedKey, *decoded]{
			MaximumWeight: uint64(parsedBytes),
			Weigher: func(k decodedKey, d *decoded) uint32 {
				return uint32(min(d.mem.bytes+parsedOverhead, math.MaxUint32))
			},
			// Atomic: runs as the entry goes, so Stats never lags behind.
			OnAtomicDeletion: func(e otter.DeletionEvent[decodedKey, *decoded]) { e.Value.mem.Release() },
		})
	}
	if hotBytes := cmp.Or(cfg.HotBytes, DefaultHotBytes); cfg.Refresh > 0 && hotBytes > 0 {
		s.hot = otter.Must(&otter.Options[hotKey, hotEntry]{
			MaximumWeight: uint64(hotBytes),
			Weigher: func(key hotKey, e hotEntry) uint32 {
				// cap: a freshly rendered value may have spare capacity.
				return uint32(min(memsize.String(len(key.channel))+memsize.String(len(key.name))+memsize.Alloc(cap(e.Value))+e.size()+hotOverhead, math.MaxUint32))
			},
			// Freshness is checked on every read; expiry only frees memory.
			ExpiryCalculator: otter.ExpiryWriting[hotKey, hotEntry](cfg.Refresh),
			// The store's upkeep (replaying reads into its eviction
			// policy, every few reads of a hot answer) runs on the read
			// that calls for it: started on a goroutine of its own, the
			// default, it cost the hits more than itself, by creating
			// the goroutine and waking a thread for it. The store has
			// no loads or deletion callbacks for an executor to run.
			Executor: func(fn func()) { fn() },
		})
	}
	return s
}

// Close stops the stores' background goroutines (the hot store's periodic
// expiry), so that nothing of the Service outlives its owner. The Service
// keeps working, without periodic expiry.
func (s *Service) Close() {
	if s.hot != nil {
		s.hot.StopAllGoroutines()
	}
	if s.decoded != nil {
		s.decoded.StopAllGoroutines()
	}
}

// Page returns a parsed channel page (r.Kind body) or "more" chunk (more).
// Hot pages are parsed once per content: the parse is reused for as long
// as the cached bytes stay the same.
func (s *Service) Page(ctx context.Context, r tme.Request) (Result, error) {
	if r.Kind != tme.KindBody && r.Kind != tme.KindMore {
		return Result{}, fmt.Errorf("pages: Page of a %q request: %w", r.Kind, ErrBadRequest)
	}
	return s.get(ctx, r, cache.GetOptions{})
}

// Preview returns the preview card of a channel. A user, group, bot or
// unknown name gives parser.ErrNotChannel. A fetch is charged to client
// (see tme.Request.Client).
func (s *Service) Preview(ctx context.Context, username, client string) (*parser.Preview, error) {
	name, err := tme.ValidUsername(username)
	if err != nil {
		return nil, err
	}
	res, err := s.get(ctx, tme.Request{Kind: tme.KindPreview, Channel: name, Client: client}, cache.GetOptions{})
	if err != nil {
		return nil, err
	}
	return res.Preview, nil
}

// Rendered returns response bytes rendered from the page r names, cached
// beside the page under keys.Response(channel, key); key must say
// everything render depends on (e.g. "body:0", "post:42"). On a hit
// nothing is parsed or encoded. The rendered entry carries the page's
// FetchedAt and refresh point, so it goes stale when the page does; past
// that point it is rendered again at once if its page is fresh by then
// (refreshed by the background updater), and served stale while the page
// is refreshed otherwise. The returned bytes are shared between callers
// and must not be modified.
func (s *Service) Rendered(ctx context.Context, key string, r tme.Request, render func(Result) ([]byte, error)) ([]byte, error) {
	e, err := s.RenderedEntry(ctx, key, r, render)
	return e.Value, err
}

// Rendered is a rendered answer as it is kept: its bytes, when its page
// was fetched and when it is due for a refresh. It is the cache's entry,
// named here so that the faces, which read it, need not know the cache.
type Rendered = cache.Entry

// RenderedEntry is Rendered returning the whole cache entry, for callers
// that derive headers from FetchedAt and Stale.
func (s *Service) RenderedEntry(ctx context.Context, key string, r tme.Request, render func(Result) ([]byte, error)) (cache.Entry, error) {
	e, _, err := s.RenderedRep(ctx, key, r, render)
	return e, err
}

// Representation is a face's form of a rendered response, made by
// Config.Represent and kept beside it in the hot store.
type Representation interface {
	// Size is the heap it holds beyond the response's bytes.
	Size() int64
}

// RenderedRep is RenderedEntry with the response's representation
// (Config.Represent's) when the hot store holds it: made once as it
// enters the store, so that a hit neither hashes nor compresses. rep is
// nil when the response is not held there (stale, the store is off, or
// no Represent is set).
func (s *Service) RenderedRep(ctx context.Context, key string, r tme.Request, render func(Result) ([]byte, error)) (e cache.Entry, rep Representation, err error) {
	return s.RenderedRepFor(ctx, key, r, nil, render)
}

// ClientNamer names the client whose share of the origin budget a
// request's fetches are charged to (tme.Request.Client).
type ClientNamer interface {
	ClientName() string
	// ClientID is ClientID(ClientName()), made without building the
	// name: a hit counts its client's read with it (Popularity).
	ClientID() uint64
}

// RenderedRepFor is RenderedRep whose fetches are charged to the client
// who names. who is asked only when the hot store does not hold the
// answer, so that a hit does not pay for naming the client (a string
// made from the address); nil, or an r.Client already set, leaves
// r.Client as it is. A who that is also a RenderObserver hears when this
// request's own load rendered the answer.
func (s *Service) RenderedRepFor(ctx context.Context, key string, r tme.Request, who ClientNamer, render func(Result) ([]byte, error)) (e cache.Entry, rep Representation, err error) {
	e, rep, err = s.renderedRep(ctx, key, r, who, render)
	if err != nil && !r.CacheOnly && errors.Is(err, ErrNotCached) {
		// Joined a load started by a request that may not fetch, which
		// ended at once: this one may, so it loads again on its own.
		e, rep, err = s.renderedRep(ctx, key, r, who, render)
	}
	return e, rep, err
}

func (s *Service) renderedRep(ctx context.Context, key string, r tme.Request, who ClientNamer, render func(Result) ([]byte, error)) (e cache.Entry, rep Representation, err error) {
	if r.Channel == "" {
		return cache.Entry{}, nil, fmt.Errorf("pages: rendered entry without a channel: %w", ErrBadRequest)
	}
	s.noteNewest(r, who)
	hk := hotKey{channel: r.Channel, name: key}
	if s.hot != nil {
		if h, ok := s.hot.GetIfPresent(hk); ok && s.fresh(h.Entry) {
			NoteFreshUntil(ctx, h.RefreshAt, false)
			return h.Entry, h.rep, nil
		}
	}
	if who != nil && r.Client == "" {
		r.Client = who.ClientName()
	}
	full := keys.Response(r.Channel, key)
	// Revalidate: a copy past its refresh point waits for its re-render,
	// which the loader declines (cache.ErrNotYet) unless the page is fresh,
	// so that nobody waits on the origin here.
	e, err = s.cache.Get(ctx, full, func(ctx context.Context, prev cache.Previous) (cache.Entry, error) {
		// A cold load renders from whatever page there is, a stale one
		// included (its refresh runs in the background); a refresh only
		// from a fresh page, or the response would stay stale until its
		// next refresh.
		res, err := s.load(ctx, r, cache.GetOptions{}, nil)
		if err != nil {
			return cache.Entry{}, err
		}
		if res.Stale && prev.Refreshing() {
			return cache.Entry{}, cache.ErrNotYet
		}
		b, err := render(res)
		if err != nil {
			return cache.Entry{}, err
		}
		// The load is the request's that started it: its who is told.
		if o, ok := who.(RenderObserver); ok {
			o.Rendered()
		}
		return cache.Entry{Value: b, FetchedAt: res.FetchedAt, RefreshAt: res.RefreshAt}, nil
	}, cache.GetOptions{Revalidate: true})
	if err != nil {
		NoteFailure(ctx, err)
		return e, nil, err
	}
	NoteFreshUntil(ctx, e.RefreshAt, e.Stale)
	if s.hot != nil && !e.Stale && s.fresh(e) {
		if s.rep != nil {
			rep = s.rep(e.Value)
		}
		s.hot.Set(hk, hotEntry{Entry: e, rep: rep})
	}
	return e, rep, nil
}

// RenderObserver learns that a request's own load rendered the answer it
// got from RenderedRepFor: a miss, for access logs and metrics. It is the
// request's ClientNamer as well, so that telling costs a hit nothing (a
// wrapped render function would be one allocation more).
type RenderObserver interface{ Rendered() }

// hotKey is the hot store's key of a rendered response: its channel and
// name, as keys.Response joins them for the cache. Kept apart, so that a
// hit, which reads only the hot store, builds no key string.
type hotKey struct{ channel, name string }

// hotEntry is a rendered response in the hot store with its representation.
type hotEntry struct {
	cache.Entry
	rep Representation // nil without Config.Represent
}

func (e hotEntry) size() int64 {
	if e.rep == nil {
		return 0
	}
	return e.rep.Size()
}

// fresh reports whether e has not reached its refresh point.
func (s *Service) fresh(e cache.Entry) bool {
	return s.now().Before(e.RefreshAt)
}

// get loads the page bytes for r through the cache and decodes them,
// noting the read in the context's Freshness collector.
func (s *Service) get(ctx context.Context, r tme.Request, opt cache.GetOptions) (Result, error) {
	s.noteNewest(r, nil)
	return s.load(ctx, r, opt, nil)
}

// load is get without counting a read (Popularity); failed, when set,
// receives the error of a load this call started and the cache answered
// with its copy instead.
func (s *Service) load(ctx context.Context, r tme.Request, opt cache.GetOptions, failed *loadFailure) (Result, error) {
	res, err := s.loadOnce(ctx, r, opt, failed)
	if err != nil && !r.CacheOnly && errors.Is(err, ErrNotCached) {
		// As in RenderedRep: a shared load of a request that may not
		// fetch ended at once; this one may.
		res, err = s.loadOnce(ctx, r, opt, failed)
	}
	return res, err
}

// ErrNotCached: a request that may only read the cache (tme.Request's
// CacheOnly) asked for a page the cache does not hold.
var ErrNotCached = errors.New("not in the cache")

func (s *Service) loadOnce(ctx context.Context, r tme.Request, opt cache.GetOptions, failed *loadFailure) (Result, error) {
	switch r.Kind {
	case tme.KindBody, tme.KindMore, tme.KindPreview, tme.KindSearch:
	default:
		return Result{}, fmt.Errorf("pages: unsupported page kind %q: %w", r.Kind, ErrBadRequest)
	}
	if r.Kind == tme.KindBody && r.Position == 0 && s.watcher.Load() != nil {
		// A changed newest page is told once the cache holds it, so that
		// whoever hears of it and reads the page finds the new copy.
		opt.Stored = func(e cache.Entry, prev cache.Previous) { s.newestStored(r.Channel, e, prev) }
	}
	e, err := s.cache.Get(ctx, r.Key(), func(ctx context.Context, prev cache.Previous) (cache.Entry, error) {
		if r.CacheOnly {
			// Neither a missing page nor the refresh of a stale one is
			// fetched; a stale copy is served as it is.
			return cache.Entry{}, fmt.Errorf("%s: %w", r.Shown(), ErrNotCached)
		}
		fr := r
		if fr.Class == tme.ClassReader && prev.Refreshing() {
			// A copy is held and served meanwhile: nobody waits on this
			// fetch, so it yields to readers who have nothing.
			fr.Class = tme.ClassRefresh
		}
		b, err := s.origin.Fetch(ctx, fr)
		if err != nil {
			failed.set(err)
			return cache.Entry{}, err
		}
		// Parse before storing: bytes that are not a page of the expected
		// kind (a captcha, a cut-off error page) must not be cached, and the
		// parse is kept for the caller in the decoded cache.
		_, d := s.decode(ctx, r.Kind, b)
		if errors.Is(d.err, parser.ErrNotPage) {
			return cache.Entry{}, fmt.Errorf("%s: %w: %w", r.Shown(), origin.ErrUpstream, d.err)
		}
		// FetchedAt is left to the cache, whose clock decides freshness.
		return cache.Entry{Value: b}, nil
	}, opt)
	if err != nil {
		NoteFailure(ctx, err)
		return Result{}, err
	}
	h, d := s.decode(ctx, r.Kind, e.Value)
	if d.err != nil {
		NoteFailure(ctx, d.err)
		return Result{}, d.err
	}
	NoteFreshUntil(ctx, e.RefreshAt, e.Stale)
	return Result{Page: d.page, Preview: d.preview, Hash: h, FetchedAt: e.FetchedAt, RefreshAt: e.RefreshAt, Stale: e.Stale, Parsed: &d.mem}, nil
}

// newestStored tells the Watcher of channel's newest page e, now in the
// cache, when it differs from the copy prev it replaced. The parse is the
// one the load kept.
func (s *Service) newestStored(channel string, e cache.Entry, prev cache.Previous) {
	w := s.watcher.Load()
	if w == nil {
		return
	}
	old, ok := prev.Entry()
	if !ok || bytes.Equal(old.Value, e.Value) {
		return
	}
	if _, d := s.decode(context.Background(), tme.KindBody, e.Value); d.page != nil {
		(*w).NewestChanged(Change{Channel: channel, Prev: old.Value, Next: d.page, FetchedAt: e.FetchedAt})
	}
}

// decode parses b as kind, reusing an earlier parse of the same bytes.
func (s *Service) decode(_ context.Context, kind tme.Kind, b []byte) (uint64, *decoded) {
	key := decodedKey{hash: xxh3.Hash(b), size: len(b), kind: kind}
	if s.decoded != nil {
		if d, ok := s.decoded.GetIfPresent(key); ok {
			return key.hash, d
		}
	}
	// Concurrent decodes of the same bytes share one parse. Parsing is pure
	// CPU work, so it is not tied to any one caller's cancellation.
	flight := strconv.FormatUint(key.hash, 36) + ":" + strconv.Itoa(key.size) + ":" + string(kind)
	v, _, _ := s.parses.Do(flight, func() (any, error) {
		d := s.parse(kind, b)
		if s.decoded != nil {
			// Held before it is visible, so an eviction racing the insert
			// releases what was taken.
			d.mem.Hold()
			if prev, inserted := s.decoded.SetIfAbsent(key, d); !inserted {
				d.mem.Release()
				d = prev
			}
		}
		return d, nil
	})
	return key.hash, v.(*decoded)
}

func (s *Service) parse(kind tme.Kind, b []byte) *decoded {
	if s.onParse != nil {
		s.onParse(kind)
	}
	d := &decoded{}
	switch kind {
	case tme.KindBody:
		d.page, d.err = parser.ParseBody(b)
	case tme.KindMore:
		d.page, d.err = parser.ParseMore(b)
	case tme.KindSearch:
		d.page, d.err = parser.ParseSearch(b)
	case tme.KindPreview:
		d.preview, d.err = parser.ParsePreview(b)
	}
	if d.err == nil && d.page == nil && d.preview == nil {
		d.err = parser.ErrNotPage
	}
	d.mem.total = &s.held
	d.mem.bytes = parsedSize(d)
	return d
}

// parsedSize estimates the heap a parse takes: the decoded record and
// everything its page or preview reaches. TestParsedSizeMatchesHeap keeps
// the estimate honest.
func parsedSize(d *decoded) int64 {
	n := memsize.Alloc(int(unsafe.Sizeof(*d))) + memsize.Deep(d.page) + memsize.Deep(d.preview)
	if d.err != nil {
		n += 64 // the error value and its message, roughly; errors are rare
	}
	return n
}
