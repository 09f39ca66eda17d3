package pages

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// Freshness collects how fresh the pages behind one answer are, so that
// the answer can tell downstream caches how long to keep it. The Service
// feeds the collector a request's context carries on every page read;
// whatever serves the answer reads it once the answer is complete. It is
// safe for concurrent use: resolvers read pages in parallel.
type Freshness struct {
	mu     sync.Mutex
	until  time.Time // the earliest refresh point of the pages read
	read   bool
	stale  bool // a page was served past its refresh point
	failed bool // a read failed for a reason that may pass (see Lasting)
}

type freshnessKey struct{}

// WithFreshness returns a context whose page reads are noted in the
// returned collector.
func WithFreshness(ctx context.Context) (context.Context, *Freshness) {
	f := &Freshness{}
	return context.WithValue(ctx, freshnessKey{}, f), f
}

// NoteFreshUntil records a page read into ctx's collector, if it has one:
// the page's refresh point (Result.RefreshAt) and whether it was served
// stale. Services that answer from pages they read earlier (a kept feed
// build) call it with those pages' earliest refresh point.
func NoteFreshUntil(ctx context.Context, refreshAt time.Time, stale bool) {
	if f, ok := ctx.Value(freshnessKey{}).(*Freshness); ok {
		f.noteRead(refreshAt, stale)
	}
}

// NoteFailure records into ctx's collector a failed read whose outcome
// went into the answer (a failed channel of a feed, a preview's error):
// unless the failure lasts (see Lasting), the answer must not be kept.
func NoteFailure(ctx context.Context, err error) {
	if Lasting(err) {
		return
	}
	if f, ok := ctx.Value(freshnessKey{}).(*Freshness); ok {
		f.mu.Lock()
		f.failed = true
		f.mu.Unlock()
	}
}

func (f *Freshness) noteRead(refreshAt time.Time, stale bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.read || refreshAt.Before(f.until) {
		f.until = refreshAt
	}
	f.read = true
	f.stale = f.stale || stale
}

// Stale reports whether a page behind the answer was served past its
// refresh point.
func (f *Freshness) Stale() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stale
}

// MaxAge returns how many seconds an answer built from the pages noted
// may be kept: until the first of them reaches its refresh point (at most
// refresh), 0 when one was stale, refresh when none was read (nothing in
// the answer comes from Telegram). cacheable is false when refresh is not positive (no
// cache) or a read failed for a reason that may pass.
func (f *Freshness) MaxAge(refresh time.Duration, now time.Time) (seconds int, cacheable bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case refresh <= 0 || f.failed:
		return 0, false
	case f.stale:
		return 0, true
	case !f.read:
		return int(refresh / time.Second), true
	}
	left := min(f.until.Sub(now), refresh)
	if left <= 0 {
		return 0, true
	}
	return int(left / time.Second), true
}

// Lasting reports whether a failed read gives the same outcome until the
// page itself changes — an unknown or invalid name, a missing post — so
// that an answer reporting it may be cached like one built from pages.
// Upstream trouble (timeouts, rate limits, an open circuit) may pass at
// any moment.
func Lasting(err error) bool {
	return errors.Is(err, origin.ErrNotFound) ||
		errors.Is(err, parser.ErrNotChannel) ||
		errors.Is(err, parser.ErrPostNotFound) ||
		errors.Is(err, ErrMediaNotFound) ||
		errors.Is(err, tme.ErrInvalidUsername) ||
		errors.Is(err, tme.ErrInvalidPosition) ||
		errors.Is(err, ErrBadRequest) ||
		errors.Is(err, origin.ErrInvalidRequest)
}
