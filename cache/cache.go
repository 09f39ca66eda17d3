// Package cache holds page bytes and rendered responses, compressed, in
// front of the origin. Every tier (embedded, Valkey) implements Cache.
package cache

import (
	"context"
	"errors"
	"time"
)

// Entry is one cached value.
type Entry struct {
	Value     []byte    // the uncompressed payload
	FetchedAt time.Time // when the origin served the bytes it derives from
	// RefreshAt is the copy's refresh point: fresh before it, stale from
	// it. A tier sets it as it stores a load: one refresh window after
	// FetchedAt, or, for a copy refreshed ahead of its predecessor's
	// refresh point (GetOptions.RefreshAhead), one window after that point, so that
	// early refreshes keep a fixed cadence of one load per window.
	RefreshAt time.Time
	Stale     bool // past its refresh point: served while a refresh runs, or after one failed
}

// Loader produces the value for a key on a miss, or the refresh of a
// copy past (or, under GetOptions.RefreshAhead, near) its refresh point;
// prev is the copy the load replaces. A zero FetchedAt means now; a zero
// RefreshAt lets the tier set it (see Entry.RefreshAt). A value derived
// from another entry (a response rendered from a page) carries that
// entry's FetchedAt and RefreshAt, so both go stale together.
type Loader func(ctx context.Context, prev Previous) (Entry, error)

// Previous is the copy a load is about to replace, as the tier holds it
// (encoded, decoded on demand): a refresh of a key held within its hard
// TTL. It is empty for a cold load.
type Previous struct {
	b     []byte
	codec *Codec
}

// Refreshing reports whether the load refreshes a copy the tier holds
// (and would serve, stale, if the load returned ErrNotYet) rather than
// loading a key with no usable copy.
func (p Previous) Refreshing() bool { return p.b != nil }

// Entry returns the copy; false for a cold load. Loaders that report
// what changed compare against it.
func (p Previous) Entry() (Entry, bool) {
	if p.b == nil {
		return Entry{}, false
	}
	e, err := p.codec.Decode(p.b)
	return e, err == nil
}

// GetOptions says how a Get serves a copy past or near its refresh point,
// and who hears of what its load stores. The zero value is read-through
// with stale-while-revalidate. The options of the Get that starts a load
// go with that load; a Get that joins a running load shares its outcome.
type GetOptions struct {
	// Revalidate: a copy past its refresh point waits for its refresh,
	// and is the answer only if the refresh fails or cannot run now
	// (a failure is remembered, another process holds the lease), instead
	// of being the answer at once. It is for loaders that build on other
	// entries (a rendered response on its page): a refresh of theirs runs
	// in the background already, and what they build should be fresh.
	Revalidate bool

	// RefreshAhead: a copy within Lead of its refresh point is due, and
	// the Get waits for its refresh (through the lease, like any refresh:
	// with several processes one of them loads, and the others get the
	// copy they hold). A background updater uses it to refresh popular
	// keys before users would find them stale.
	//
	// The copy it loads is fresh until one refresh window after the
	// replaced copy's refresh point, not after its own fetch: a key
	// refreshed ahead every time is then loaded exactly once per window,
	// and its content is at most window + lead old when it goes stale
	// (stale-while-revalidate would serve it at least that old). A copy
	// that is not due is returned as is; so is the copy when the refresh
	// cannot run now. A Lead of the refresh point or more is taken as
	// just under it.
	RefreshAhead bool
	Lead         time.Duration

	// Stored, when set, is called after the tier stored the value of a
	// load this Get started (where other readers of the tier find it; in
	// Valkey, written), with the copy it replaced; not when nothing was
	// stored (the load failed, returned ErrNotYet, or the write failed).
	// It runs in the process that loaded, on the load's goroutine, before
	// the callers waiting for the load get the value: it must return at
	// once.
	Stored func(e Entry, prev Previous)
}

// dueLead is how long before its refresh point a copy is refreshed
// (0 unless RefreshAhead), and whether it is refreshed ahead at all.
func (o GetOptions) dueLead(refresh time.Duration) (lead time.Duration, early bool) {
	if o.RefreshAhead && refresh > 0 {
		return min(max(o.Lead, 0), refresh-1), true
	}
	return 0, false
}

// stored tells Stored, if set, that e replaced prev.
func (o GetOptions) stored(e Entry, prev Previous) {
	if o.Stored != nil {
		o.Stored(e, prev)
	}
}

// ErrNotYet is what a Loader refreshing a copy (Previous.Refreshing)
// returns when what it derives from is not fresh yet either — a rendered
// response whose page is being refreshed in the background. The tier keeps serving its
// copy, stale, and counts no failure; a later Get past the refresh point
// tries again.
var ErrNotYet = errors.New("cache: not refreshed yet")

// Cache is the contract every cache tier satisfies.
type Cache interface {
	// Get returns the entry for key, calling load when the key is missing or
	// past its refresh point. Concurrent misses for one key share one load.
	// A copy past its refresh point (but within its hard TTL) is returned at
	// once with Stale set while one refresh runs in the background
	// (stale-while-revalidate); a failed refresh keeps the copy
	// (stale-if-error). With no copy, the load's error is returned as is, so
	// callers can errors.Is it. A tier with Failures set remembers a failed
	// load for a moment and answers the key with Failures.Error meanwhile,
	// without loading.
	//
	// A load is shared, so it runs detached from any one caller's ctx (with a
	// bound of its own); each caller returns when its own ctx is done. The
	// returned Value may be shared with other callers and must not be
	// modified.
	//
	// opt says how a copy past or near its refresh point is served and who
	// hears of a stored load (see GetOptions). The tier reads nothing from
	// ctx but its end; a load keeps the values of the ctx of the Get that
	// started it (a trace, say), for the loader's own use.
	Get(ctx context.Context, key string, load Loader, opt GetOptions) (Entry, error)
	// Close releases the tier's resources.
	Close() error
}

// Failures lets a tier remember failed loads for a moment (negative
// caching), so that a failing origin is not asked for the same key by every
// request, nor a stale copy refreshed by every hit. *origin.Failures is one.
type Failures interface {
	// Code names err's kind briefly (it is stored, in Valkey too); ok is
	// false for errors not to remember, e.g. definitive answers or the
	// caller giving up.
	Code(err error) (code string, ok bool)
	// Error rebuilds a remembered failure, not worth retrying before until.
	Error(code string, until time.Time) error
}

// DefaultNegativeTTL is how long a failed load is remembered when a tier's
// NegativeTTL is 0 and Failures is set.
const DefaultNegativeTTL = 5 * time.Second

// refreshPoint is the refresh point of the entry encoded in b, in Unix
// nanoseconds: the one stored, or one refresh window after FetchedAt for
// an entry stored without one.
func refreshPoint(b []byte, refresh time.Duration) int64 {
	if n := refreshNanos(b); n != 0 {
		return n
	}
	return fetchedNanos(b) + int64(refresh)
}

// withRefreshAt fills a decoded entry's RefreshAt when it was stored
// without one.
func withRefreshAt(e Entry, refresh time.Duration) Entry {
	if e.RefreshAt.IsZero() {
		e.RefreshAt = e.FetchedAt.Add(refresh)
	}
	return e
}

// settle sets the refresh point of a loaded entry whose loader left it
// zero (see Entry.RefreshAt). prev is the copy the load replaces (nil on a
// cold load); start is when the load was found due.
func settle(e *Entry, prev []byte, start time.Time, refresh time.Duration) {
	if !e.RefreshAt.IsZero() {
		return
	}
	e.RefreshAt = e.FetchedAt.Add(refresh)
	if prev == nil {
		return
	}
	// Refreshed ahead of the copy's refresh point: the next window starts
	// where the copy's ends, not a window after this fetch. (A fetch slower
	// than a whole window keeps its own.)
	if p := time.Unix(0, refreshPoint(prev, refresh)); start.Before(p) {
		if next := p.Add(refresh); next.After(e.FetchedAt) {
			e.RefreshAt = next
		}
	}
}
