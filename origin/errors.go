package origin

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by Fetch; test them with errors.Is.
var (
	// ErrNotFound: t.me answered 404, or redirected a /s/ page to the
	// name's landing page, which it does for anything but a public channel.
	ErrNotFound = errors.New("origin: not found")
	// ErrRateLimited: t.me answered 429. The error is a *RateLimitError
	// telling when the origin may be asked again.
	ErrRateLimited = errors.New("origin: rate limited")
	// ErrUpstream: 5xx answers, broken or truncated bodies or unexpected
	// statuses, after the retries.
	ErrUpstream = errors.New("origin: upstream error")
	// ErrTimeout: the origin did not answer in time, after the retries.
	ErrTimeout = errors.New("origin: upstream timeout")
	// ErrTooLarge: the body exceeded Config.MaxBodyBytes. Errors carrying it
	// also match ErrUpstream, so callers mapping ErrUpstream to 502 need no
	// extra case.
	ErrTooLarge = errors.New("origin: response too large")
	// ErrInvalidRequest: the Request cannot be turned into a t.me URL.
	ErrInvalidRequest = errors.New("origin: invalid request")
)

// RateLimitError reports that an origin host asked us to back off.
// errors.Is(err, ErrRateLimited) holds for it.
type RateLimitError struct {
	RetryAfter time.Time // no request goes to the host before this time
	Host       string    // the origin that is backing us off
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("origin: rate limited by %s until %s", e.Host, e.RetryAfter.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }
