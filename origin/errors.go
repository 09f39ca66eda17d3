package origin

import (
	"errors"
	"fmt"
	"time"

	"github.com/tmefeed/tmefeed/tme"
)

// Errors returned by Fetch; test them with errors.Is.
var (
	// ErrNotFound: t.me answered 404, or redirected a /s/ page to the
	// name's landing page, which it does for anything but a public channel.
	ErrNotFound = errors.New("origin: not found")
	// ErrRateLimited: t.me answered 429. The error is a *RateLimitError
	// telling when the origin may be asked again.
	ErrRateLimited = errors.New("origin: rate limited")
	// ErrUpstream: 5xx answers, broken or truncated bodies, failed
	// connections or unexpected statuses, after the retries. The more
	// precise kinds below all match it too.
	ErrUpstream = errors.New("origin: upstream error")
	// ErrTimeout: the origin did not answer in time, after the retries.
	ErrTimeout = errors.New("origin: upstream timeout")
	// ErrTooLarge: the body exceeded Config.MaxBodyBytes. Errors carrying it
	// also match ErrUpstream, so callers mapping ErrUpstream to 502 need no
	// extra case.
	ErrTooLarge = errors.New("origin: response too large")
	// ErrInvalidRequest: the request cannot be turned into a t.me URL
	// (tme.ErrInvalidRequest itself, which Request.Validate returns).
	ErrInvalidRequest = tme.ErrInvalidRequest
	// ErrUnavailable: the origin was not asked, because it has been failing:
	// its circuit breaker is open (*UnavailableError), or the same page
	// failed moments ago (*RecentFailureError of this kind).
	ErrUnavailable = errors.New("origin: unavailable")
	// ErrBusy: the origin was not asked because Config.MaxInFlight
	// fetches were running or waiting for a connection already. The
	// error is an *UnavailableError with Last set to ErrBusy.
	ErrBusy = errors.New("origin: too many fetches in flight")

	// Kinds of ErrUpstream, so that messages can say what went wrong.
	ErrRefused     = upstreamKind("origin: connection refused")
	ErrUnreachable = upstreamKind("origin: could not connect")
	ErrReset       = upstreamKind("origin: connection reset")
	ErrTruncated   = upstreamKind("origin: response cut off")
	ErrServerError = upstreamKind("origin: server error (5xx)")
)

// kindError is a sentinel that also matches ErrUpstream.
type kindError struct{ msg string }

func upstreamKind(msg string) error { return &kindError{msg} }

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == ErrUpstream }

// RateLimitError reports that an origin host asked us to back off.
// errors.Is(err, ErrRateLimited) holds for it.
type RateLimitError struct {
	RetryAfter time.Time // no request goes to the host through Egress before this time
	Host       string    // the origin that is backing us off
	Egress     string    // the egress it is backing off (Egress.Name); with several, the one free soonest
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("origin: rate limited by %s%s until %s", e.Host, via(e.Egress), e.RetryAfter.UTC().Format(time.RFC3339))
}

// via names an egress other than Direct in a message.
func via(egress string) string {
	if egress == "" || egress == Direct {
		return ""
	}
	return " via " + egress
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// UnavailableError reports that no request was sent because the circuit
// breaker of every usable host is open. errors.Is(err, ErrUnavailable)
// holds, and so does errors.Is with the kind of the failures that opened it.
type UnavailableError struct {
	RetryAfter time.Time // when the breaker lets a probe through
	Host       string
	Egress     string // the egress whose breaker it is (Egress.Name)
	Last       error  // the last failure seen on the host, e.g. ErrRefused; may be nil
}

func (e *UnavailableError) Error() string {
	if e.Last == ErrBusy {
		return fmt.Sprintf("%v to %s; retry after %s", ErrBusy, e.Host, e.RetryAfter.UTC().Format(time.RFC3339))
	}
	s := fmt.Sprintf("origin: %s%s unavailable until %s (circuit open)", e.Host, via(e.Egress), e.RetryAfter.UTC().Format(time.RFC3339))
	if e.Last != nil {
		s += ": last error: " + e.Last.Error()
	}
	return s
}

func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *UnavailableError) Unwrap() error        { return e.Last }

// RecentFailureError is a failure remembered by a cache (negative caching):
// the page failed with Kind moments ago and is not asked for again before
// RetryAfter. errors.Is(err, Kind) holds, so it maps to the same answer as
// the original failure.
type RecentFailureError struct {
	Kind       error
	RetryAfter time.Time
}

func (e *RecentFailureError) Error() string {
	return fmt.Sprintf("%v (failed moments ago; not retried before %s)", e.Kind, e.RetryAfter.UTC().Format(time.RFC3339))
}

func (e *RecentFailureError) Unwrap() error { return e.Kind }

// RetryAfter tells when a request that failed with err is worth repeating:
// for a 429, an open circuit or a remembered failure. ok is false for
// other errors.
func RetryAfter(err error) (t time.Time, ok bool) {
	var (
		rl *RateLimitError
		un *UnavailableError
		rf *RecentFailureError
		be *BudgetError
	)
	switch {
	case errors.As(err, &be):
		return be.RetryAfter, true
	case errors.As(err, &rl):
		return rl.RetryAfter, true
	case errors.As(err, &un):
		return un.RetryAfter, true
	case errors.As(err, &rf):
		return rf.RetryAfter, true
	}
	return time.Time{}, false
}

// errNotPage is what a remembered tme.ErrNotPage failure unwraps to:
// pages reports such bytes (a captcha, changed markup) as ErrUpstream.
var errNotPage = fmt.Errorf("%w: %w", ErrUpstream, tme.ErrNotPage)

// failureCodes name the failures worth remembering for a moment, by a code
// short enough to store in Valkey. Most specific first. Not remembered
// (see Failures.Code): invalid requests, 429 (the
// host block handles it), an open breaker (it answers at once itself, and
// knows when it closes), and the caller giving up. "unavailable" is still
// read back, from processes that stored it.
var failureCodes = []struct {
	code string
	kind error
}{
	// A name t.me does not know: remembered too, so that asking for it in
	// a loop costs t.me one request per NEGATIVE_CACHE_TTL, not one per
	// call (which would invite a 429 for every channel).
	{"not_found", ErrNotFound},
	{"unavailable", ErrUnavailable},
	{"timeout", ErrTimeout},
	{"refused", ErrRefused},
	{"unreachable", ErrUnreachable},
	{"reset", ErrReset},
	{"truncated", ErrTruncated},
	{"server", ErrServerError},
	{"too_large", ErrTooLarge},
	{"not_page", tme.ErrNotPage},
	{"upstream", ErrUpstream},
}

// Failures converts failed fetches to short codes and back, for caches that
// remember failures briefly (cache.MemoryConfig.Failures,
// cache.ValkeyConfig.Failures).
type Failures struct{}

// Code returns the code of err and whether it is a failure worth
// remembering: an outage-like failure of the origin, not an answer.
func (Failures) Code(err error) (string, bool) {
	if errors.Is(err, ErrRateLimited) || errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBudget) {
		return "", false
	}
	for _, f := range failureCodes {
		if errors.Is(err, f.kind) {
			return f.code, true
		}
	}
	return "", false
}

// Error rebuilds the error remembered under code, retryable after until.
func (Failures) Error(code string, until time.Time) error {
	for _, f := range failureCodes {
		if f.code == code {
			kind := f.kind
			if code == "not_page" {
				kind = errNotPage
			}
			return &RecentFailureError{Kind: kind, RetryAfter: until}
		}
	}
	return &RecentFailureError{Kind: ErrUpstream, RetryAfter: until}
}
