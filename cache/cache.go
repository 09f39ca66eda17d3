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
	// refresh point (RefreshAhead), one window after that point, so that
	// early refreshes keep a fixed cadence of one load per window.
	RefreshAt time.Time
	Stale     bool // past its refresh point: served while a refresh runs, or after one failed
}

// Loader produces the value for a key on a miss. A zero FetchedAt means
// now; a zero RefreshAt lets the tier set it (see Entry.RefreshAt). A
// value derived from another entry (a response rendered from a page)
// carries that entry's FetchedAt and RefreshAt, so both go stale together.
type Loader func(ctx context.Context) (Entry, error)

// ErrNotYet is what a Loader refreshing a copy (Refreshing) returns when
// what it derives from is not fresh yet either — a rendered response whose
// page is being refreshed in the background. The tier keeps serving its
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
	Get(ctx context.Context, key string, load Loader) (Entry, error)
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

type revalidateKey struct{}

// refreshKey marks a loader's ctx with whether it refreshes a copy the
// tier holds (true) or loads a key with no usable copy (false).
type refreshKey struct{}

// Revalidate marks ctx so that a Get under it that finds a copy past its
// refresh point waits for the refresh, and gets the copy only if the
// refresh fails or cannot run now, instead of getting it at once. It is for
// loaders that build on other entries (a rendered response on its page):
// a refresh of theirs runs in the background already, and what it builds
// should be fresh. When the loader's ctx is a cold load, which a caller
// waits for, Revalidate returns ctx unmarked: the stale copy beats a wait
// on a failing origin.
func Revalidate(ctx context.Context) context.Context {
	if refresh, ok := ctx.Value(refreshKey{}).(bool); ok && !refresh {
		return ctx
	}
	return context.WithValue(ctx, revalidateKey{}, true)
}

type earlyKey struct{}

// RefreshAhead marks ctx so that a Get under it treats a copy within lead
// of its refresh point as due, and waits for its refresh (through the
// lease, like any refresh: with several processes one of them loads, and
// the others get the copy they hold). A background updater uses it to
// refresh popular keys before users would find them stale.
//
// The copy it loads is fresh until one refresh window after the replaced
// copy's refresh point, not after its own fetch: a key refreshed ahead
// every time is then loaded exactly once per window, and its content is at
// most window + lead old when it goes stale (stale-while-revalidate would
// serve it at least that old). A copy that is not due is returned as is;
// so is the copy when the refresh cannot run now (a failure is remembered,
// or another process holds the lease). A lead of the refresh point or
// more is taken as just under it.
func RefreshAhead(ctx context.Context, lead time.Duration) context.Context {
	return context.WithValue(ctx, earlyKey{}, lead)
}

// dueLead is how long before its refresh point a copy is refreshed under
// ctx (0 unless RefreshAhead marked it).
func dueLead(ctx context.Context, refresh time.Duration) (lead time.Duration, early bool) {
	if l, ok := ctx.Value(earlyKey{}).(time.Duration); ok && refresh > 0 {
		return min(max(l, 0), refresh-1), true
	}
	return 0, false
}

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

type previousKey struct{}

// previous is the copy a load replaces, encoded, with the codec to read it.
type previous struct {
	b     []byte
	codec *Codec
}

// withPrevious hands a loader the copy its load replaces.
func withPrevious(ctx context.Context, codec *Codec, b []byte) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, previousKey{}, previous{b, codec})
}

// Previous returns, inside a Loader, the copy the load is about to replace
// (a refresh of a key the tier holds within its hard TTL); false for a
// cold load. Loaders that report what changed compare against it.
func Previous(ctx context.Context) (Entry, bool) {
	p, ok := ctx.Value(previousKey{}).(previous)
	if !ok {
		return Entry{}, false
	}
	e, err := p.codec.Decode(p.b)
	return e, err == nil
}

// loading marks a loader's ctx as a refresh of a held copy or a cold load.
func loading(ctx context.Context, refresh bool) context.Context {
	return context.WithValue(ctx, refreshKey{}, refresh)
}

// Refreshing reports, inside a Loader, whether the load refreshes a copy
// the tier holds (and would serve, stale, if the load returned ErrNotYet)
// rather than loading a key with no usable copy.
func Refreshing(ctx context.Context) bool {
	refresh, _ := ctx.Value(refreshKey{}).(bool)
	return refresh
}

// loaderContext is the ctx a Loader gets: how the Get that started the
// load wanted its own key served (Revalidate, RefreshAhead) says nothing
// about the Gets the loader makes.
func loaderContext(ctx context.Context) context.Context {
	if ctx.Value(revalidateKey{}) != nil {
		ctx = context.WithValue(ctx, revalidateKey{}, false)
	}
	if ctx.Value(earlyKey{}) != nil {
		ctx = context.WithValue(ctx, earlyKey{}, nil)
	}
	return ctx
}

func revalidating(ctx context.Context) bool {
	v, _ := ctx.Value(revalidateKey{}).(bool)
	return v
}
