// Package cache holds page bytes and rendered responses, compressed, in
// front of the origin. Every tier (embedded, Valkey) implements Cache.
package cache

import (
	"context"
	"time"
)

// Entry is one cached value.
type Entry struct {
	Value     []byte    // the uncompressed payload
	FetchedAt time.Time // when the origin served the bytes it derives from
	Stale     bool      // past its refresh point: served while a refresh runs, or after one failed
}

// Loader produces the value for a key on a miss. A zero FetchedAt means now.
type Loader func(ctx context.Context) (Entry, error)

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

// RefreshOlderThan marks ctx so that a Get under it treats a copy at least
// age old as due for refresh, even before the tier's refresh point, and
// waits for that refresh (through the lease, like any refresh: with several
// processes one of them loads, and the others get the copy they hold). A
// background updater uses it to refresh popular keys shortly before users
// would find them stale. A copy that is not due is returned as is; so is
// the copy when the refresh cannot run now (a failure is remembered, or
// another process holds the lease). age larger than the refresh point
// changes nothing.
func RefreshOlderThan(ctx context.Context, age time.Duration) context.Context {
	return context.WithValue(ctx, earlyKey{}, age)
}

// dueAge is the age from which a copy is refreshed under ctx.
func dueAge(ctx context.Context, refresh time.Duration) (due time.Duration, early bool) {
	if age, ok := ctx.Value(earlyKey{}).(time.Duration); ok && age < refresh {
		return max(age, 0), true
	}
	return refresh, false
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

func revalidating(ctx context.Context) bool {
	v, _ := ctx.Value(revalidateKey{}).(bool)
	return v
}
