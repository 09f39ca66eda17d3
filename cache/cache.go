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
	Stale     bool      // past its refresh point: served because a reload failed or is running
}

// Loader produces the value for a key on a miss. A zero FetchedAt means now.
type Loader func(ctx context.Context) (Entry, error)

// Cache is the contract every cache tier satisfies.
type Cache interface {
	// Get returns the entry for key, calling load when the key is missing or
	// past its refresh point. Concurrent misses for one key share one load.
	// When a reload fails but a stale copy is still held, the stale copy is
	// returned with Stale set and a nil error; with no copy, the load's error
	// is returned as is, so callers can errors.Is it.
	//
	// A load is shared, so it runs detached from any one caller's ctx (with a
	// bound of its own); each caller returns when its own ctx is done. The
	// returned Value may be shared with other callers and must not be
	// modified.
	Get(ctx context.Context, key string, load Loader) (Entry, error)
	// Close releases the tier's resources.
	Close() error
}
