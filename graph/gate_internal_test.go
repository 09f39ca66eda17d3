package graph

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A full queue at the gate refuses at once, rather than holding another
// request (and what it read) until the wait ends; the queued ones still
// get their turns.
func TestGateQueueIsBounded(t *testing.T) {
	g := newGate(1, time.Hour)
	release, ok := g.enter(t.Context())
	if !ok {
		t.Fatal("an empty gate refused")
	}
	var (
		queued sync.WaitGroup
		served atomic.Int64
	)
	for range waitersPerSlot {
		queued.Go(func() {
			if rel, ok := g.enter(t.Context()); ok {
				served.Add(1)
				rel()
			}
		})
	}
	for g.waiting.Load() < waitersPerSlot {
		time.Sleep(time.Millisecond)
	}
	// Without a bound this one would wait for its deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, ok := g.enter(ctx); ok || ctx.Err() != nil {
		t.Errorf("beyond a full queue: admitted %v, waited for the deadline %v; want a refusal at once", ok, ctx.Err() != nil)
	}
	release()
	queued.Wait()
	if n := served.Load(); n != waitersPerSlot {
		t.Errorf("%d of the %d queued requests got a turn", n, waitersPerSlot)
	}
}
