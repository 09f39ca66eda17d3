package fault_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// Every error the use cases can return has its kind, and every failure of
// Telegram keeps its own message and, when known, its retry time.
func TestClassify(t *testing.T) {
	later := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	wrap := func(kind error) error { return fmt.Errorf("%w: GET https://t.me/s/x: details", kind) }
	tests := []struct {
		name  string
		err   error
		kind  fault.Kind
		msg   string // "" = the error's own text
		retry time.Time
	}{
		{"invalid username", fmt.Errorf("%w: %q must be ...", tme.ErrInvalidUsername, "a!"), fault.InvalidUsername, "", time.Time{}},
		{"invalid position", fmt.Errorf("%w: %q must be ...", tme.ErrInvalidPosition, "0"), fault.InvalidPosition, "", time.Time{}},
		{"pages bad request", fmt.Errorf("pages: x: %w", pages.ErrBadRequest), fault.BadRequest, "", time.Time{}},
		{"feed bad request", fmt.Errorf("%w: no channels given", feed.ErrBadRequest), fault.BadRequest, "", time.Time{}},
		{"face bad request", fmt.Errorf("%w: first must be from 0 to 100", fault.ErrBadRequest), fault.BadRequest, "", time.Time{}},
		{"origin invalid request", fmt.Errorf("%w: no channel", origin.ErrInvalidRequest), fault.BadRequest, "", time.Time{}},
		{"not a channel", parser.ErrNotChannel, fault.NotAChannel, "not a public channel: a user, group, bot or unknown name", time.Time{}},
		{"post not in page", fmt.Errorf("x/5: %w", pages.ErrPostNotFound), fault.PostNotFound, "no such post in this channel", time.Time{}},
		{"embed post not found", parser.ErrPostNotFound, fault.PostNotFound, "no such post in this channel", time.Time{}},
		{"no such channel", wrap(origin.ErrNotFound), fault.NotFound, "no public channel with this name", time.Time{}},
		{"429", &origin.RateLimitError{RetryAfter: later, Host: "t.me"}, fault.RateLimited, "Telegram is rate-limiting requests and no cached copy is held; retry later", later},
		{"429 without a time", origin.ErrRateLimited, fault.RateLimited, "Telegram is rate-limiting requests and no cached copy is held; retry later", time.Time{}},
		{"fetches in flight", &origin.UnavailableError{RetryAfter: later, Host: "t.me", Last: origin.ErrBusy}, fault.Unavailable, "the server is busy with other pages and feeds and no cached copy is held; retry in a moment", later},
		{"feeds waiting", fmt.Errorf("x: %w", feed.ErrBusy), fault.Unavailable, "the server is busy with other pages and feeds and no cached copy is held; retry in a moment", time.Time{}},
		{"breaker open", &origin.UnavailableError{RetryAfter: later, Host: "t.me", Last: origin.ErrRefused}, fault.Unavailable, "Telegram keeps failing, so it is not being asked for now, and no cached copy is held; retry later", later},
		{"timeout", wrap(origin.ErrTimeout), fault.Timeout, "Telegram did not answer in time", time.Time{}},
		{"deadline", fmt.Errorf("op: %w", context.DeadlineExceeded), fault.Timeout, "Telegram did not answer in time", time.Time{}},
		{"canceled", fmt.Errorf("origin: %w", context.Canceled), fault.Canceled, "request canceled", time.Time{}},
		{"refused", wrap(origin.ErrRefused), fault.Upstream, "Telegram refused the connection", time.Time{}},
		{"unreachable", wrap(origin.ErrUnreachable), fault.Upstream, "Telegram could not be reached", time.Time{}},
		{"reset", wrap(origin.ErrReset), fault.Upstream, "Telegram dropped the connection without answering", time.Time{}},
		{"truncated", wrap(origin.ErrTruncated), fault.Upstream, "Telegram's answer was cut off", time.Time{}},
		{"5xx", wrap(origin.ErrServerError), fault.Upstream, "Telegram answered with a server error", time.Time{}},
		{"too large", fmt.Errorf("%w: %w: big", origin.ErrUpstream, origin.ErrTooLarge), fault.Upstream, "Telegram answered with a page too large to read", time.Time{}},
		{"not a page", fmt.Errorf("%w: %w", origin.ErrUpstream, parser.ErrNotPage), fault.Upstream, "Telegram answered with something that is not the expected page", time.Time{}},
		{"other upstream", wrap(origin.ErrUpstream), fault.Upstream, "Telegram answered with an error or an unreadable page", time.Time{}},
		// Remembered failures answer as the original did, with when to retry.
		{"remembered refused", origin.Failures{}.Error("refused", later), fault.Upstream, "Telegram refused the connection", later},
		{"remembered timeout", origin.Failures{}.Error("timeout", later), fault.Timeout, "Telegram did not answer in time", later},
		{"remembered not a page", origin.Failures{}.Error("not_page", later), fault.Upstream, "Telegram answered with something that is not the expected page", later},
		// Ours: a panic caught by a fan-out, anything unforeseen.
		{"panic", &pages.PanicError{Channel: "x", Value: "boom"}, fault.Internal, "internal error", time.Time{}},
		{"unknown", errors.New("cache: closed"), fault.Internal, "internal error", time.Time{}},
	}
	for _, tt := range tests {
		f := fault.Classify(tt.err)
		want := tt.msg
		if want == "" {
			want = tt.err.Error()
		}
		if f.Kind != tt.kind || f.Message != want || !f.RetryAfter.Equal(tt.retry) {
			t.Errorf("%s: %v %q %v, want %v %q %v", tt.name, f.Kind, f.Message, f.RetryAfter, tt.kind, want, tt.retry)
		}
	}
}

// Retry-After and extensions.retryAfter come from one rounding: whole
// seconds, up, at least 1; and a 429 always says when.
func TestRetryAfterSeconds(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		f    fault.Fault
		secs int
		ok   bool
	}{
		{fault.Fault{Kind: fault.Upstream}, 0, false},
		{fault.Fault{Kind: fault.RateLimited}, 1, true},
		{fault.Fault{Kind: fault.RateLimited, RetryAfter: now.Add(30 * time.Second)}, 30, true},
		{fault.Fault{Kind: fault.Upstream, RetryAfter: now.Add(6*time.Second + time.Millisecond)}, 7, true},
		{fault.Fault{Kind: fault.Unavailable, RetryAfter: now.Add(time.Millisecond)}, 1, true},
		{fault.Fault{Kind: fault.Timeout, RetryAfter: now.Add(-time.Second)}, 1, true},
	}
	for _, tt := range tests {
		secs, ok := tt.f.RetryAfterSeconds(now)
		if ok != tt.ok || ok && secs != tt.secs {
			t.Errorf("%v in %v: %d %v, want %d %v", tt.f.Kind, tt.f.RetryAfter.Sub(now), secs, ok, tt.secs, tt.ok)
		}
	}
}

func TestKindsAreNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range fault.Kinds() {
		s := k.String()
		if seen[s] || s == "" || strings.HasPrefix(s, "kind") {
			t.Errorf("kind %d is named %q", k, s)
		}
		seen[s] = true
	}
}
