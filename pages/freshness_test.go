package pages_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
)

func TestFreshnessMaxAge(t *testing.T) {
	const refresh = time.Minute
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	upstream := fmt.Errorf("fetch: %w", origin.ErrTimeout)
	for _, c := range []struct {
		name      string
		note      func(ctx context.Context)
		secs      int
		cacheable bool
	}{
		{"nothing read", func(context.Context) {}, 60, true},
		{"one page fresh for 50 s more", func(ctx context.Context) { pages.NoteFreshUntil(ctx, now.Add(50*time.Second), false) }, 50, true},
		{"the page that goes stale first decides", func(ctx context.Context) {
			pages.NoteFreshUntil(ctx, now.Add(55*time.Second), false)
			pages.NoteFreshUntil(ctx, now.Add(20*time.Second), false)
			pages.NoteFreshUntil(ctx, now.Add(40*time.Second), false)
		}, 20, true},
		{"fresh for longer than a window (refreshed ahead): at most a window", func(ctx context.Context) {
			pages.NoteFreshUntil(ctx, now.Add(refresh+15*time.Second), false)
		}, 60, true},
		{"past the refresh point", func(ctx context.Context) { pages.NoteFreshUntil(ctx, now.Add(-time.Minute), false) }, 0, true},
		{"stale", func(ctx context.Context) {
			pages.NoteFreshUntil(ctx, now, false)
			pages.NoteFreshUntil(ctx, now, true)
		}, 0, true},
		{"a failure that lasts", func(ctx context.Context) {
			pages.NoteFreshUntil(ctx, now.Add(refresh), false)
			pages.NoteFailure(ctx, fmt.Errorf("x: %w", parser.ErrNotChannel))
			pages.NoteFailure(ctx, origin.ErrNotFound)
		}, 60, true},
		{"a failure that may pass", func(ctx context.Context) {
			pages.NoteFreshUntil(ctx, now, false)
			pages.NoteFailure(ctx, upstream)
		}, 0, false},
	} {
		ctx, f := pages.WithFreshness(context.Background())
		c.note(ctx)
		secs, ok := f.MaxAge(refresh, now)
		if secs != c.secs || ok != c.cacheable {
			t.Errorf("%s: %d %v, want %d %v", c.name, secs, ok, c.secs, c.cacheable)
		}
		if _, ok := f.MaxAge(0, now); ok {
			t.Errorf("%s: cacheable without a cache", c.name)
		}
	}
	// Without a collector, noting is a no-op.
	pages.NoteFreshUntil(context.Background(), now, false)
	pages.NoteFailure(context.Background(), upstream)
}
