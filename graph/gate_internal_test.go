package graph

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"golang.org/x/sync/semaphore"
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

// Operations waiting for room to build their answers are bounded too.
func TestRoomQueueIsBounded(t *testing.T) {
	run := &runner{
		gate:      newGate(1, time.Hour),
		values:    semaphore.NewWeighted(smallAnswer),
		maxValues: smallAnswer,
		valued:    NewExecutableSchema(Config{Complexity: complexity(0, 1)}),
	}
	doc, errs := gqlparser.LoadQueryWithRules(run.valued.Schema(), `{ feed(channels: ["a"], first: 2000) { edges { cursor } } }`, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	rc := &graphql.OperationContext{Operation: doc.Operations[0]}
	release, ok := run.room(t.Context(), rc)
	if !ok {
		t.Fatal("no room in an empty runner")
	}
	var queued sync.WaitGroup
	for range maxRoomWaiting {
		queued.Go(func() {
			if rel, ok := run.room(t.Context(), rc); ok {
				rel()
			}
		})
	}
	for run.waiting.Load() < maxRoomWaiting {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, ok := run.room(ctx, rc); ok || ctx.Err() != nil {
		t.Errorf("beyond a full queue: admitted %v, waited for the deadline %v; want a refusal at once", ok, ctx.Err() != nil)
	}
	release()
	queued.Wait()
}
