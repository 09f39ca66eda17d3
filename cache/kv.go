package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"
)

// ValkeyKV is the Valkey tier as a plain key-value store, for values that
// are stored rather than loaded (persisted queries): one GET per read, one
// SET per write, no lease, refresh or negative caching. It shares the
// tier's client, deadline and circuit breaker.
type ValkeyKV struct{ v *Valkey }

// KV returns the tier as a plain key-value store.
func (v *Valkey) KV() *ValkeyKV { return &ValkeyKV{v} }

// Get returns the value stored under key; ok is false when there is none.
// An error means Valkey could not say (unavailable, breaker open, timed
// out). The reply goes around the client-side cache: the caller keeps its
// own copy of what it reads, and a cached read would cost four more
// commands (tracking opt-in, MULTI, PTTL, EXEC) to save none.
func (kv *ValkeyKV) Get(ctx context.Context, key string) (value []byte, ok bool, err error) {
	if kv.v.closed.Load() {
		return nil, false, ErrClosed
	}
	err = kv.v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		var err error
		value, err = c.Do(ctx, c.B().Get().Key(key).Build()).AsBytes()
		if valkey.IsValkeyNil(err) {
			return nil // an answer, not a failure for the breaker
		}
		ok = err == nil
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("cache: kv get %q: %w", key, err)
	}
	return value, ok, nil
}

// Set stores value under key for ttl (at least a millisecond).
func (kv *ValkeyKV) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if kv.v.closed.Load() {
		return ErrClosed
	}
	ms := max(ttl.Milliseconds(), 1)
	err := kv.v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		return c.Do(ctx, c.B().Set().Key(key).Value(valkey.BinaryString(value)).PxMilliseconds(ms).Build()).Error()
	})
	if err != nil {
		return fmt.Errorf("cache: kv set %q: %w", key, err)
	}
	return nil
}

// Ints runs script over keys and args and returns its array of integers,
// for state several processes change together (the origin budget's
// buckets). The keys must share a Cluster slot.
func (kv *ValkeyKV) Ints(ctx context.Context, script *valkey.Lua, keys, args []string) ([]int64, error) {
	if kv.v.closed.Load() {
		return nil, ErrClosed
	}
	var out []int64
	err := kv.v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		var err error
		out, err = script.Exec(ctx, c, keys, args).AsIntSlice()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cache: kv script over %q: %w", keys, err)
	}
	return out, nil
}
