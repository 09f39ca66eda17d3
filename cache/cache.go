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

// loading marks a loader's ctx as a refresh of a held copy or a cold load.
func loading(ctx context.Context, refresh bool) context.Context {
	return context.WithValue(ctx, refreshKey{}, refresh)
}

func revalidating(ctx context.Context) bool {
	v, _ := ctx.Value(revalidateKey{}).(bool)
	return v
}
