// Package feed merges the newest posts of many channels into one feed:
// fetched through the page service, de-duplicated, filtered, ordered
// (NEWEST or RANKED) and paged both ways with opaque cursors bound to
// their feed. Identical concurrent
// requests share one build, and a build is kept until one of its pages
// can have changed.
package feed

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/maypok86/otter/v2"
	"github.com/zeebo/xxh3"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/internal/flight"
	"github.com/tmefeed/tmefeed/internal/memsize"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// ErrBadRequest: a feed request that cannot be answered as asked (no
// channels, a page size out of range, a bad filter, a cursor of another
// feed). The error's text says what to fix.
var ErrBadRequest = errors.New("bad request")

// ErrBusy: Config.MaxWaitingBuilds builds were waiting for room
// (BuildingPages) already; the caller may retry in a moment.
var ErrBusy = errors.New("feed: too many feeds waiting to be built")

// PageSource returns parsed channel pages; *pages.Service is one.
type PageSource interface {
	Page(ctx context.Context, r tme.Request) (pages.Result, error)
	// History returns a channel's newest page and the older pages back to
	// since, at most HistoryMaxPages in all, charged to client's share
	// of the origin budget (see pages.Service.History).
	History(ctx context.Context, channel string, since time.Time, client string) ([]pages.Result, error)
	HistoryMaxPages() int
}

// Defaults for zero Config fields.
const (
	DefaultMaxChannels   = 100
	DefaultMaxFirst      = 2000
	DefaultFirst         = 20
	DefaultConcurrency   = 16
	DefaultMaxAge        = 5 * time.Minute
	DefaultBuildTimeout  = 30 * time.Second
	DefaultKeptBytes     = 16 << 20
	DefaultRenderedBytes = 16 << 20
	DefaultMaxWaiting    = 64
	// DefaultMaxHistoryPages bounds the pages one feed with since may walk
	// in all: 20 channels at the default HISTORY_MAX_PAGES, as GraphQL's
	// complexity limit prices it.
	DefaultMaxHistoryPages = 200
)

// Heap an entry costs beyond what its weigher counts from its contents:
// otter's node, hash-table slot and share of the frequency sketch.
// Measured as live-heap growth over 50,000 entries (amd64, Go 1.26, otter
// v2.4.0); TestBuildAccounting checks the totals.
const (
	keptOverhead     = 104
	renderedOverhead = 120
)

// Config configures a Service.
type Config struct {
	Pages PageSource // required
	// MaxChannels bounds the channels of one feed (DefaultMaxChannels).
	MaxChannels int
	// MaxFirst bounds the page size (DefaultMaxFirst).
	MaxFirst int
	// Concurrency bounds the pages one build fetches at once (DefaultConcurrency).
	Concurrency int
	// Refresh is the page cache's refresh interval. A build is reused
	// without looking at its pages until the first of them reaches its
	// refresh point (pages.Result.RefreshAt; FetchedAt + Refresh when a
	// source leaves it zero), since no cached page changes before. Zero
	// reuses nothing unchecked: identical concurrent requests still share
	// one build.
	Refresh time.Duration
	// MaxAge bounds how long a build is reused while its pages come back
	// unchanged, so that RANKED freshness does not freeze (DefaultMaxAge).
	MaxAge time.Duration
	// BuildTimeout bounds one build; a build serves many callers and so is
	// not cancelled when one of them goes away (DefaultBuildTimeout).
	BuildTimeout time.Duration
	// KeptBytes bounds the builds kept, in estimated heap bytes
	// (DefaultKeptBytes). A build is charged for its own items and for
	// every parsed page its items point into, since keeping it keeps them.
	KeptBytes int64
	// RenderedBytes bounds the rendered responses kept beside the builds,
	// in bytes (DefaultRenderedBytes).
	RenderedBytes int64
	// BuildingPages bounds the channel pages that builds in progress hold
	// at once, all builds together: a build of n channels waits until n
	// are free (one of more channels than this waits until no other build
	// runs). It bounds the parse working set of many distinct cold feeds
	// arriving together. Zero means 2×MaxChannels.
	BuildingPages int
	// MaxWaitingBuilds bounds the builds waiting for room under
	// BuildingPages (DefaultMaxWaiting); a build beyond it fails with
	// ErrBusy. Builds run detached from their callers, so without it a
	// flood of distinct feeds whose callers go away at once would queue
	// a build each until BuildTimeout.
	MaxWaitingBuilds int
	// MaxHistoryPages bounds the pages one feed with a since filter may
	// read, all its channels together (DefaultMaxHistoryPages): such a
	// feed walks up to HistoryMaxPages per channel, so it names at most
	// MaxHistoryPages / HistoryMaxPages channels. Every face meets the same
	// bound, so that one request cannot make hundreds of origin fetches.
	MaxHistoryPages int
	// CursorKey is the secret cursors are sealed with; empty means
	// DefaultCursorKey. Processes serving the same clients need the same
	// key, or their cursors are refused by one another.
	CursorKey string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Order is the order of a feed.
type Order string

// Orders. Cursors carry an order's first byte, so those must differ.
const (
	Newest Order = "NEWEST"
	Ranked Order = "RANKED"
)

// Orders lists every Order.
func Orders() []Order { return []Order{Newest, Ranked} }

// Filter keeps the posts matching every condition set. Within MediaKinds
// and Hashtags any one value is enough.
type Filter struct {
	MediaKinds       []parser.MediaKind
	Hashtags         []string  // case-insensitive, with or without '#'
	Query            string    // case-insensitive substring of text, poll or link preview
	Since            time.Time // date >= Since
	Until            time.Time // date < Until
	ExcludeForwarded bool
	ExcludeReplies   bool
	ExcludeService   bool
}

// Request asks for one page of a feed. As in Relay's connections, the
// items after After and before Before (cursors of the same feed; either
// may be "") are cut to the first First of them or, when Last is set, to
// the last *Last.
type Request struct {
	Channels []string // usernames; duplicates are ignored
	First    int      // page size, 0..MaxFirst; ignored when Last is set
	After    string
	Last     *int // page size, 0..MaxFirst, counted back from Before or the end
	Before   string
	Order    Order // "" means Ranked
	Filter   Filter
	// Client is whose share of the origin budget the build's fetches are
	// charged to (tme.Request.Client). Identical queries share one
	// build, charged to the client that started it; not part of the query.
	Client string
	// Who, when Client is "", names the client once a build is needed,
	// so that a kept build's answer does not pay for naming it.
	Who pages.ClientNamer
}

// Item is one post of a feed. Items are shared between callers and must
// not be modified.
type Item struct {
	Post    *parser.Post
	Channel *parser.Channel
	Score   float64 // the RANKED score as of the build, under either order
	Cursor  string
}

// Failure is a channel that could not be read.
type Failure struct {
	Username string // as requested
	Err      error  // errors.Is-able: tme.ErrInvalidUsername, origin.ErrNotFound, ...
}

// Page is one page of a feed.
type Page struct {
	Items           []Item
	TotalCount      int // items of the whole feed
	HasNextPage     bool
	HasPreviousPage bool
	Failed          []Failure
	// Key identifies the page's content: equal keys mean equal pages. It
	// changes whenever the feed is rebuilt from changed pages.
	Key string
	// FetchedAt is when the oldest channel page the feed was built from
	// was fetched (zero when none was read); RefreshAt is when the first
	// of them reaches its refresh point; Stale is set when one of them was
	// served past its refresh point. They say how long the page may be
	// cached downstream.
	FetchedAt time.Time
	RefreshAt time.Time
	Stale     bool
	// NewestFetchedAt is when the newest of those pages was fetched: no
	// change the page shows was read later (what a Last-Modified needs).
	NewestFetchedAt time.Time
	// Channels are the headers of the channels read (username, title,
	// description, avatar), sorted by username, whether or not any of
	// their posts is among Items: a feed with no posts is still named by
	// its channels.
	Channels []*parser.Channel

	// Feed identifies the feed (its valid channels, order and filter), the
	// same in every build and process: what an item's identity within its
	// feed is made of.
	Feed uint64

	version Version
}

// Version names the build a page was cut from: the feed's query and the
// build's number. A page's content is fixed by its version and its
// window, so an answer kept from a page stays true for as long as
// Service.Current says its version is current.
type Version struct {
	query string
	build uint64
	st    *standing // the build's, which Current reads without a lookup
}

// Version returns the version of the build p was cut from.
func (p *Page) Version() Version { return p.version }

// Current reports whether v is still the build the Service would answer
// its query from at now without looking at the pages again: kept, and
// not past its pages' earliest refresh point nor marked by Changed. It
// reads no page, looks nothing up and allocates nothing, for answers kept
// by version (the GraphQL face's), whose caller has read the clock
// already. refreshAt and stale are the build's freshness as of its last
// check, which a recheck that finds its pages unchanged moves on.
func (s *Service) Current(v Version, now time.Time) (refreshAt time.Time, stale, ok bool) {
	st := v.st
	if st == nil || st.dropped.Load() {
		return time.Time{}, false, false
	}
	// A build past MaxAge is never reused, so validUntil is never moved
	// past it: what otter's expiry would add is already here.
	if now.UnixNano() >= st.validUntil.Load() {
		return time.Time{}, false, false
	}
	fr := st.fresh.Load()
	return fr.until, fr.stale, true
}

// Service builds feeds. It is safe for concurrent use.
type Service struct {
	cfg      Config
	rebuilds flight.Group[*build] // builds running, one per query
	renders  singleflight.Group
	kept     *otter.Cache[string, *build]
	keptOwn  atomic.Int64 // own bytes of the kept builds (their pages not included)
	rendered *otter.Cache[string, []byte]
	building *semaphore.Weighted // channel pages held by builds in progress
	waiting  atomic.Int64        // builds waiting for building
	builds   atomic.Int64
	lastID   atomic.Uint64
	cursors  *sealer
}

// Stats is what a Service holds in memory, in estimated heap bytes.
type Stats struct {
	KeptBytes     uint64 // the weight of the kept builds, their parsed pages included
	KeptOwnBytes  int64  // the same without the parsed pages, which pages.Stats.HeldBytes counts
	RenderedBytes uint64 // rendered responses
	Kept          int    // builds kept
}

// Stats returns the current sizes.
func (s *Service) Stats() Stats {
	return Stats{
		KeptBytes:     s.kept.WeightedSize(),
		KeptOwnBytes:  s.keptOwn.Load(),
		RenderedBytes: s.rendered.WeightedSize(),
		Kept:          s.kept.EstimatedSize(),
	}
}

// CleanUp finishes pending evictions, so that Stats is exact. For tests
// and measurements.
func (s *Service) CleanUp() {
	s.kept.CleanUp()
	s.rendered.CleanUp()
}

// Close stops the stores' background goroutines. The Service keeps
// working, without periodic expiry.
func (s *Service) Close() {
	s.kept.StopAllGoroutines()
	s.rendered.StopAllGoroutines()
}

// build is a merged, de-duplicated, filtered and ordered feed.
type build struct {
	id      uint64
	items   []Item
	failed  []Failure
	order   Order
	hash    uint64 // of the channels' page hashes and failures
	builtAt time.Time
	// binding identifies the feed (query.binding).
	binding uint64
	// channels are the query's valid names, sorted, for Changed.
	channels []string
	// heads are the headers of the channels read, copied (see Page.Channels).
	heads []*parser.Channel
	*standing
	// pinned are the parses the items point into, held while the build is
	// kept; own is the build's heap without them.
	pinned []*pages.Parsed
	own    int64
}

// standing is what Current reads of a build, apart from it: an answer
// kept by version holds these few words, not the build's posts, once the
// build has left the kept builds.
type standing struct {
	// validUntil (Unix nanoseconds) is when the build stops being reused
	// unchecked; a recheck that finds the pages unchanged moves it, and
	// updates fresh.
	validUntil atomic.Int64
	fresh      atomic.Pointer[pageAge]
	// dropped is set as the build leaves the kept builds (evicted,
	// expired, or replaced by a newer build of its query).
	dropped atomic.Bool
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Pages == nil {
		return nil, errors.New("feed: Config.Pages is required")
	}
	defaults.Set(&cfg.MaxChannels, DefaultMaxChannels)
	defaults.Set(&cfg.MaxFirst, DefaultMaxFirst)
	defaults.Set(&cfg.Concurrency, DefaultConcurrency)
	defaults.Set(&cfg.MaxAge, DefaultMaxAge)
	defaults.Set(&cfg.BuildTimeout, DefaultBuildTimeout)
	defaults.Set(&cfg.KeptBytes, DefaultKeptBytes)
	defaults.Set(&cfg.RenderedBytes, DefaultRenderedBytes)
	defaults.Set(&cfg.BuildingPages, 2*cfg.MaxChannels)
	defaults.Set(&cfg.MaxWaitingBuilds, DefaultMaxWaiting)
	defaults.Set(&cfg.MaxHistoryPages, DefaultMaxHistoryPages)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{cfg: cfg, building: semaphore.NewWeighted(int64(cfg.BuildingPages))}
	var err error
	s.kept, err = otter.New(&otter.Options[string, *build]{
		MaximumWeight: uint64(cfg.KeptBytes),
		Weigher: func(k string, b *build) uint32 {
			n := memsize.String(len(k)) + b.own + keptOverhead
			for _, p := range b.pinned {
				n += p.Bytes()
			}
			return uint32(min(n, math.MaxUint32))
		},
		ExpiryCalculator: otter.ExpiryWriting[string, *build](cfg.MaxAge),
		// Atomic: runs as the entry goes, so Stats never lags behind.
		OnAtomicDeletion: func(e otter.DeletionEvent[string, *build]) {
			e.Value.dropped.Store(true)
			s.keptOwn.Add(-e.Value.own)
			for _, p := range e.Value.pinned {
				p.Release()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	s.rendered, err = otter.New(&otter.Options[string, []byte]{
		MaximumWeight: uint64(cfg.RenderedBytes),
		Weigher: func(k string, v []byte) uint32 {
			return uint32(min(memsize.String(len(k))+memsize.Alloc(cap(v))+renderedOverhead, math.MaxUint32))
		},
		ExpiryCalculator: otter.ExpiryWriting[string, []byte](cfg.MaxAge),
	})
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	if s.cursors, err = newSealer(cfg.CursorKey); err != nil {
		return nil, err
	}
	return s, nil
}

// keep stores b under key, holding its parses for as long as it stays.
func (s *Service) keep(key string, b *build) {
	for _, p := range b.pinned {
		p.Hold()
	}
	s.keptOwn.Add(b.own)
	s.kept.Set(key, b)
}

// Changed says channel's newest page changed before its refresh point
// (the background updater fetched it, and subscribers are being told):
// the kept builds holding the channel are checked again on their next
// use, so that a client refetching on the news finds it. Nothing is
// rebuilt here, and the cost is one pass over the kept builds, off the
// request path.
func (s *Service) Changed(channel string) {
	for _, b := range s.kept.All() {
		if _, ok := slices.BinarySearch(b.channels, channel); ok {
			b.validUntil.Store(0)
		}
	}
}

// MaxChannels is the most channels one feed may name.
func (s *Service) MaxChannels() int { return s.cfg.MaxChannels }

// MaxFirst is the largest page size.
func (s *Service) MaxFirst() int { return s.cfg.MaxFirst }

// Builds counts the feeds merged so far; reused builds do not count.
func (s *Service) Builds() int64 { return s.builds.Load() }

// Feed returns one page of the feed req describes. Bad input gives an
// error matching ErrBadRequest; channels that fail are reported in
// Page.Failed, not as an error.
func (s *Service) Feed(ctx context.Context, req Request) (*Page, error) {
	q, err := s.normalize(req)
	if err != nil {
		return nil, err
	}
	var after, before *cursor
	for _, c := range []struct {
		arg, val string
		dst      **cursor
	}{{"after", req.After, &after}, {"before", req.Before, &before}} {
		if c.val == "" {
			continue
		}
		cur, err := s.cursors.open(c.arg, c.val, q)
		if err != nil {
			return nil, err
		}
		*c.dst = &cur
	}
	b, err := s.build(ctx, q)
	if err != nil {
		return nil, err
	}
	start, end := b.window(after, before, req.First, req.Last)
	p := b.page(start, end)
	p.version = Version{query: q.key, build: b.id, st: b.standing}
	// A kept build reads no pages, so what the answer derives from is
	// noted here for whoever caches it.
	if !p.RefreshAt.IsZero() {
		pages.NoteFreshUntil(ctx, p.RefreshAt, p.Stale)
	}
	for _, f := range p.Failed {
		pages.NoteFailure(ctx, f.Err)
	}
	return p, nil
}

// Rendered returns bytes rendered from p under key (which must say
// everything render depends on besides p), rendering them once per page
// content and key: concurrent callers share one render and later callers
// get a copy-free hit until the page is rebuilt.
func (s *Service) Rendered(p *Page, key string, render func() ([]byte, error)) ([]byte, error) {
	full := p.Key + "\x00" + key
	if b, ok := s.rendered.GetIfPresent(full); ok {
		return b, nil
	}
	v, err, _ := s.renders.Do(full, func() (any, error) {
		b, err := render()
		if err != nil {
			return nil, err
		}
		if int64(len(b)) >= s.cfg.RenderedBytes {
			return b, nil // could never be kept
		}
		if spare := cap(b) - len(b); spare > len(b)/4 {
			// A grown buffer may be up to twice its content; kept bytes
			// should cost what they hold.
			b = slices.Clip(bytes.Clone(b))
		}
		s.rendered.Set(full, b)
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// query is a validated request without its page window.
type query struct {
	key      string   // identifies channels, order and filter
	binding  uint64   // the same, for cursors: a hash of key without the invalid names
	channels []string // valid, distinct, sorted
	invalid  []Failure
	client   string            // Request.Client, not part of key
	who      pages.ClientNamer // Request.Who
	order    Order
	filter   filter
}

// maxNamesPerChannel bounds a channel list as sent, duplicates included,
// relative to the distinct channels a feed may merge.
const maxNamesPerChannel = 4

func (s *Service) normalize(req Request) (query, error) {
	var q query
	switch {
	case req.Order == "":
		q.order = Ranked
	case slices.Contains(Orders(), req.Order):
		q.order = req.Order
	default:
		return q, fmt.Errorf("%w: unknown order %q", ErrBadRequest, req.Order)
	}
	if len(req.Channels) == 0 {
		return q, fmt.Errorf("%w: no channels given", ErrBadRequest)
	}
	// Duplicates are ignored, so the limit counts distinct names; the list
	// as sent is bounded too, so that normalizing it stays cheap.
	if len(req.Channels) > maxNamesPerChannel*s.cfg.MaxChannels {
		return q, fmt.Errorf("%w: %d channels given, at most %d distinct allowed", ErrBadRequest, len(req.Channels), s.cfg.MaxChannels)
	}
	if req.First < 0 || req.First > s.cfg.MaxFirst {
		return q, fmt.Errorf("%w: first must be from 0 to %d", ErrBadRequest, s.cfg.MaxFirst)
	}
	if req.Last != nil && (*req.Last < 0 || *req.Last > s.cfg.MaxFirst) {
		return q, fmt.Errorf("%w: last must be from 0 to %d", ErrBadRequest, s.cfg.MaxFirst)
	}
	f, err := newFilter(req.Filter)
	if err != nil {
		return q, err
	}
	q.filter = f
	q.client, q.who = req.Client, req.Who
	seen := make(map[string]bool, len(req.Channels))
	for _, raw := range req.Channels {
		name, err := tme.NormalizeUsername(raw)
		if err != nil {
			if !seen["!"+raw] {
				seen["!"+raw] = true
				q.invalid = append(q.invalid, Failure{Username: raw, Err: err})
			}
			continue
		}
		if !seen[name] {
			seen[name] = true
			q.channels = append(q.channels, name)
		}
	}
	if n := len(q.channels) + len(q.invalid); n > s.cfg.MaxChannels {
		return q, fmt.Errorf("%w: %d distinct channels given, at most %d allowed", ErrBadRequest, n, s.cfg.MaxChannels)
	}
	if !req.Filter.Since.IsZero() {
		per := max(1, s.cfg.Pages.HistoryMaxPages())
		if most := max(1, s.cfg.MaxHistoryPages/per); len(q.channels) > most {
			return q, fmt.Errorf("%w: a feed with since reads up to %d pages of each channel's history; it may name at most %d channels, not %d", ErrBadRequest, per, most, len(q.channels))
		}
	}
	slices.Sort(q.channels)
	var k strings.Builder
	k.WriteString(string(q.order))
	k.WriteByte('|')
	k.WriteString(q.filter.key)
	for _, c := range q.channels {
		k.WriteByte('|')
		k.WriteString(c)
	}
	// Names that are not usernames change no post, so a cursor stays
	// good without them.
	q.binding = xxh3.HashString(k.String())
	for _, f := range q.invalid {
		k.WriteString("|!")
		k.WriteString(f.Username)
	}
	q.key = k.String()
	return q, nil
}

// build returns the build for q: a kept one while its pages cannot have
// changed, else one shared with concurrent callers.
func (s *Service) build(ctx context.Context, q query) (*build, error) {
	if b, ok := s.kept.GetIfPresent(q.key); ok && b.valid(s.cfg.Now()) {
		return b, nil
	}
	// Detached from the callers: the build serves all of them.
	return s.rebuilds.Do(ctx, q.key, func(ctx context.Context) (*build, error) {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.BuildTimeout)
		defer cancel()
		return s.rebuild(ctx, q)
	})
}

// pageAge is what a build knows of the age of its pages.
type pageAge struct {
	oldest time.Time // FetchedAt of the oldest page read
	until  time.Time // the earliest refresh point of the pages read
	newest time.Time // and of the newest
	stale  bool      // a page was served past its refresh point
}

// fetched is the outcome of reading one channel: its newest page and,
// for a filter with since, the older pages back to it.
type fetched struct {
	res   pages.Result
	older []pages.Result
	err   error
}

// all is every page read for the channel, newest first.
func (f *fetched) all() []pages.Result {
	return append([]pages.Result{f.res}, f.older...)
}

// valid reports whether b may be reused without looking at its pages.
func (b *build) valid(now time.Time) bool {
	return now.UnixNano() < b.validUntil.Load()
}

func (s *Service) rebuild(ctx context.Context, q query) (*build, error) {
	if b, ok := s.kept.GetIfPresent(q.key); ok && b.valid(s.cfg.Now()) {
		return b, nil // a flight that just ended kept it
	}
	// The pages of a build in progress, parsed and held until it is done,
	// are the bulk of its memory: bound them over all builds together. A
	// filter with since may hold up to HistoryMaxPages pages per channel.
	perChannel := int64(1)
	if !q.filter.Since.IsZero() {
		perChannel = int64(max(1, s.cfg.Pages.HistoryMaxPages()))
	}
	w := min(int64(len(q.channels))*perChannel, int64(s.cfg.BuildingPages))
	if !s.building.TryAcquire(w) {
		if s.waiting.Add(1) > int64(s.cfg.MaxWaitingBuilds) {
			s.waiting.Add(-1)
			return nil, ErrBusy
		}
		err := s.building.Acquire(ctx, w)
		s.waiting.Add(-1)
		if err != nil {
			return nil, fmt.Errorf("feed: waiting to build: %w", err)
		}
	}
	defer s.building.Release(w)
	now := s.cfg.Now()
	if q.client == "" && q.who != nil {
		q.client = q.who.ClientName()
	}
	out := make([]fetched, len(q.channels))
	var g errgroup.Group
	g.SetLimit(s.cfg.Concurrency)
	for i, name := range q.channels {
		g.Go(func() error {
			if q.filter.Since.IsZero() {
				res, err := s.cfg.Pages.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: name, Client: q.client})
				out[i] = fetched{res: res, err: err}
				return nil
			}
			// Posts since a date may lie past the newest page.
			all, err := s.cfg.Pages.History(ctx, name, q.filter.Since, q.client)
			if err == nil && len(all) == 0 {
				err = fmt.Errorf("%s: %w", name, parser.ErrNotPage)
			}
			if err != nil {
				out[i] = fetched{err: err}
				return nil
			}
			out[i] = fetched{res: all[0], older: all[1:]}
			return nil
		})
	}
	_ = g.Wait()

	// The hash of everything the build derives from: when it matches the
	// previous build's, that build is reused as is, cursors included.
	h := xxh3.New()
	var buf [8]byte
	validUntil := now.Add(s.cfg.Refresh)
	var fr pageAge
	read := false
	for i, name := range q.channels {
		_, _ = h.WriteString(name)
		if err := out[i].err; err != nil {
			_, _ = h.WriteString("!" + err.Error())
			continue
		}
		for _, res := range out[i].all() {
			binary.LittleEndian.PutUint64(buf[:], res.Hash)
			_, _ = h.Write(buf[:])
			until := res.RefreshAt
			if until.IsZero() { // a PageSource that does not say
				until = res.FetchedAt.Add(s.cfg.Refresh)
			}
			if until.Before(validUntil) {
				validUntil = until
			}
			if !read || res.FetchedAt.Before(fr.oldest) {
				fr.oldest = res.FetchedAt
			}
			if !read || until.Before(fr.until) {
				fr.until = until
			}
			if res.FetchedAt.After(fr.newest) {
				fr.newest = res.FetchedAt
			}
			read = true
			fr.stale = fr.stale || res.Stale
		}
	}
	sum := h.Sum64()
	until := validUntil.UnixNano()
	if s.cfg.Refresh <= 0 {
		until = 0 // never valid unchecked
	}

	if k, ok := s.kept.GetIfPresent(q.key); ok && k.hash == sum && now.Sub(k.builtAt) < s.cfg.MaxAge {
		k.validUntil.Store(until)
		k.fresh.Store(&fr)
		return k, nil
	}

	b := &build{id: s.lastID.Add(1), order: q.order, hash: sum, builtAt: now, channels: q.channels, binding: q.binding, standing: &standing{}}
	b.validUntil.Store(until)
	b.fresh.Store(&fr)
	b.failed = append(b.failed, q.invalid...)
	var pagesOK []channelPage
	parsed := make(map[*parser.Page]*pages.Parsed, len(q.channels))
	for i, name := range q.channels {
		if out[i].err != nil {
			b.failed = append(b.failed, Failure{Username: name, Err: out[i].err})
			continue
		}
		p := out[i].res.Page
		if p == nil {
			b.failed = append(b.failed, Failure{Username: name, Err: fmt.Errorf("%s: %w", name, parser.ErrNotPage)})
			continue
		}
		ch := p.Channel
		if ch == nil {
			ch = &parser.Channel{Username: name}
		}
		cp := channelPage{name: name, channel: ch, page: p}
		parsed[p] = out[i].res.Parsed
		for _, o := range out[i].older {
			if o.Page != nil {
				cp.older = append(cp.older, o.Page)
				parsed[o.Page] = o.Parsed
			}
		}
		pagesOK = append(pagesOK, cp)
		b.heads = append(b.heads, headOf(ch))
	}
	b.items = merge(pagesOK, q.filter, q.order, now, s.cursors.writer(q.order, q.binding))
	b.pin(pagesOK, parsed)
	s.builds.Add(1)
	s.keep(q.key, b)
	return b, nil
}

// headOf copies what names a channel out of its page, so that a build
// keeps no page alive for its header alone.
func headOf(ch *parser.Channel) *parser.Channel {
	h := &parser.Channel{
		Username: strings.Clone(ch.Username),
		Title:    parser.Rich{String: strings.Clone(ch.Title.String)},
		Avatar:   strings.Clone(ch.Avatar),
	}
	if d := ch.Description; d != nil {
		h.Description = &parser.Rich{String: strings.Clone(d.String)}
	}
	return h
}

// pin records the parses b's items point into, and b's own size: items,
// cursors and failures. A page none of whose posts made it into the feed
// is not kept alive by the build, so it is not pinned.
func (b *build) pin(cps []channelPage, parsed map[*parser.Page]*pages.Parsed) {
	used := make(map[*parser.Page]bool, len(cps))
	byChannel := make(map[*parser.Channel]*channelPage, len(cps))
	for i := range cps {
		byChannel[cps[i].channel] = &cps[i]
	}
	own := memsize.Alloc(int(unsafe.Sizeof(*b))) + memsize.Alloc(cap(b.items)*int(unsafe.Sizeof(Item{})))
	for i := range b.items {
		own += memsize.String(len(b.items[i].Cursor))
		cp := byChannel[b.items[i].Channel]
		if cp == nil {
			continue
		}
		if p := cp.pageOf(b.items[i].Post); p != nil && !used[p] {
			used[p] = true
			if pp := parsed[p]; pp != nil {
				b.pinned = append(b.pinned, pp)
			}
			if p == cp.page && p.Channel != b.items[i].Channel {
				own += memsize.Alloc(int(unsafe.Sizeof(parser.Channel{}))) // made up for a page without a header
			}
		}
	}
	own += memsize.Alloc(cap(b.failed) * int(unsafe.Sizeof(Failure{})))
	for _, f := range b.failed {
		own += memsize.String(len(f.Username)) + 64 // the error and its message, roughly
	}
	own += memsize.Alloc(cap(b.pinned) * 8)
	own += memsize.Alloc(cap(b.heads) * 8)
	for _, h := range b.heads {
		own += memsize.Alloc(int(unsafe.Sizeof(parser.Channel{}))) + memsize.String(len(h.Username)) +
			memsize.String(len(h.Title.String)) + memsize.String(len(h.Avatar))
		if h.Description != nil {
			own += memsize.Alloc(int(unsafe.Sizeof(parser.Rich{}))) + memsize.String(len(h.Description.String))
		}
	}
	b.own = own
}

// after returns the index of the first item that sorts after k. The key
// rather than the item's position is searched so that a cursor still lands
// in the right place when its own post has left the feed.
func (b *build) after(k sortKey) int {
	i, _ := slices.BinarySearchFunc(b.items, k, func(it Item, k sortKey) int {
		if keyOf(it, b.order).before(k) || keyOf(it, b.order) == k {
			return -1
		}
		return 1
	})
	return i
}

// before returns the index of the first item that does not sort before k.
func (b *build) before(k sortKey) int {
	i, _ := slices.BinarySearchFunc(b.items, k, func(it Item, k sortKey) int {
		if keyOf(it, b.order).before(k) {
			return -1
		}
		return 1
	})
	return i
}

// window returns the items [start, end) a request selects, by Relay's
// algorithm: those after after and before before, then the first first of
// them or, when last is set, the last *last.
func (b *build) window(after, before *cursor, first int, last *int) (start, end int) {
	lo, hi := 0, len(b.items)
	if after != nil {
		lo = b.after(after.key)
	}
	if before != nil {
		hi = max(lo, b.before(before.key))
	}
	if last != nil {
		return max(lo, hi-*last), hi
	}
	return lo, min(lo+first, hi)
}

// page returns the items [start, end). Whether items lie before or after
// the page is known exactly, so both flags are set whichever way the
// client pages (Relay allows this).
func (b *build) page(start, end int) *Page {
	n := len(b.items)
	fr := b.fresh.Load()
	return &Page{
		FetchedAt:       fr.oldest,
		RefreshAt:       fr.until,
		NewestFetchedAt: fr.newest,
		Stale:           fr.stale,
		Items:           b.items[start:end:end],
		TotalCount:      n,
		HasNextPage:     end < n,
		HasPreviousPage: start > 0,
		Failed:          b.failed,
		Channels:        b.heads,
		Key:             strconv.FormatUint(b.id, 10) + ":" + strconv.Itoa(start) + ":" + strconv.Itoa(end),
		Feed:            b.binding,
	}
}
