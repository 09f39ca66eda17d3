// Package flight shares one call among concurrent callers that ask for the
// same key, detached from each caller: whoever gives up stops waiting, and
// the call goes on for the others and for whatever keeps its result.
package flight

import (
	"context"
	"fmt"

	"golang.org/x/sync/singleflight"
)

// Group runs at most one call per key at a time. The zero Group is ready.
type Group[V any] struct {
	g singleflight.Group
}

// Do calls fn once for all concurrent callers of key and returns its result
// to each of them. fn runs on a goroutine of its own, with the values of
// the ctx that started it but not its cancellation, so fn must bound its
// own run. A caller whose ctx ends first gets an error wrapping ctx.Err()
// at once; fn's own error is returned as is.
func (g *Group[V]) Do(ctx context.Context, key string, fn func(context.Context) (V, error)) (V, error) {
	ch := g.g.DoChan(key, func() (any, error) {
		return fn(context.WithoutCancel(ctx))
	})
	var zero V
	select {
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		return zero, fmt.Errorf("waiting for %q: %w", key, ctx.Err())
	}
}

// Wait is Do for a caller that waits for the result however long it takes,
// e.g. a background refresh that must not end before its load. A Do of the
// same key joins the call.
func (g *Group[V]) Wait(ctx context.Context, key string, fn func(context.Context) (V, error)) (V, error) {
	return g.Do(context.WithoutCancel(ctx), key, fn)
}
