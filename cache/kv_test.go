package cache

import (
	"bytes"
	"errors"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/redistest"
)

func commandsSince(t *testing.T, srv *redistest.Server, before map[string]int64) map[string]int64 {
	t.Helper()
	d, err := srv.CommandsSince(testCtx(t), before)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func commandStats(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	s, err := srv.CommandStats(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A read is one GET and a write one SET with its TTL, as the server counts
// them: no lease, no script, no client-side caching round trips.
func TestValkeyKVCommands(t *testing.T) {
	srv := redistest.Start(t)
	v, _ := newTestValkey(t, srv, nil)
	kv := v.KV()
	ctx := testCtx(t)
	const key = "tme:v2:apq:abc"

	before := commandStats(t, srv)
	if b, ok, err := kv.Get(ctx, key); err != nil || ok || b != nil {
		t.Fatalf("Get(missing) = %q, %v, %v; want nothing", b, ok, err)
	}
	if got, want := commandsSince(t, srv, before), map[string]int64{"get": 1}; !maps.Equal(got, want) {
		t.Errorf("a miss ran %v, want %v", got, want)
	}

	before = commandStats(t, srv)
	if err := kv.Set(ctx, key, []byte("{ a }"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, want := commandsSince(t, srv, before), map[string]int64{"set": 1}; !maps.Equal(got, want) {
		t.Errorf("a store ran %v, want %v", got, want)
	}

	before = commandStats(t, srv)
	if b, ok, err := kv.Get(ctx, key); err != nil || !ok || !bytes.Equal(b, []byte("{ a }")) {
		t.Fatalf("Get = %q, %v, %v; want the stored value", b, ok, err)
	}
	if got, want := commandsSince(t, srv, before), map[string]int64{"get": 1}; !maps.Equal(got, want) {
		t.Errorf("a hit ran %v, want %v", got, want)
	}

	// Stored as is, with the TTL asked for.
	if raw, err := srv.Do(ctx, "GET", key); err != nil || raw != "{ a }" {
		t.Errorf("stored %q, %v", raw, err)
	}
	pttl, err := srv.Do(ctx, "PTTL", key)
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := strconv.Atoi(pttl); err != nil || ms <= 0 || ms > 60_000 {
		t.Errorf("PTTL = %q, want within (0, 60000]", pttl)
	}
}

// A Valkey that cannot answer is an error, not a miss; a miss is no error
// and does not count towards opening the breaker.
func TestValkeyKVUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	v, ev := newTestValkey(t, srv, func(c *ValkeyConfig) { c.BreakerFailures = 2 })
	kv := v.KV()
	ctx := testCtx(t)
	for range 5 {
		if _, ok, err := kv.Get(ctx, "missing"); ok || err != nil {
			t.Fatalf("Get(missing) = %v, %v", ok, err)
		}
	}
	if s := v.BreakerState(); s != "closed" {
		t.Fatalf("breaker %s after misses, want closed", s)
	}
	srv.Stop()
	for range 3 {
		if _, ok, err := kv.Get(ctx, "k"); ok || err == nil {
			t.Fatalf("Get with Valkey down = %v, %v; want an error", ok, err)
		}
	}
	if err := kv.Set(ctx, "k", []byte("v"), time.Minute); err == nil {
		t.Error("Set with Valkey down succeeded")
	}
	if s := v.BreakerState(); s != "open" {
		t.Errorf("breaker %s (transitions %q), want open", s, ev.transitions())
	}
	v.Close()
	if _, _, err := kv.Get(ctx, "k"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
}
