package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
)

// Error codes of the REST API.
const (
	CodeInvalidUsername  = "invalid_username"
	CodeInvalidPosition  = "invalid_position"
	CodeBadRequest       = "bad_request"
	CodeTooLarge         = "request_too_large"
	CodeNotFound         = "not_found"
	CodeNotAChannel      = "not_a_channel"
	CodePostNotFound     = "post_not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeRateLimited      = "rate_limited"
	CodeUpstreamError    = "upstream_error"
	CodeUpstreamTimeout  = "upstream_timeout"
	CodeUnavailable      = "upstream_unavailable"
	CodeCanceled         = "canceled"
	CodeInternal         = "internal"
)

var (
	// errPostNotFound: the page around a post does not hold it.
	errPostNotFound = errors.New("post not found")
	// errInternal: a bug, caught; answered as 500.
	errInternal = errors.New("internal error")
)

// apiError is an error answer: status, code, message, and for 429 the
// time after which Telegram may be asked again (429, 503, and a 502/504
// answered from a failure remembered moments ago).
type apiError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Time
}

// classify maps an error from the page service to its answer. Every error
// that user input can cause maps to a 4xx; upstream trouble to
// 429/502/503/504.
func classify(err error) apiError {
	var rl *origin.RateLimitError
	ra, _ := origin.RetryAfter(err)
	switch {
	case errors.Is(err, errInternal):
		return apiError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}
	case errors.Is(err, pages.ErrInvalidUsername):
		return apiError{Status: http.StatusBadRequest, Code: CodeInvalidUsername, Message: err.Error()}
	case errors.Is(err, pages.ErrInvalidPosition):
		return apiError{Status: http.StatusBadRequest, Code: CodeInvalidPosition, Message: err.Error()}
	case errors.Is(err, pages.ErrBadRequest), errors.Is(err, origin.ErrInvalidRequest):
		return apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: err.Error()}
	case errors.Is(err, parser.ErrNotChannel):
		return apiError{Status: http.StatusNotFound, Code: CodeNotAChannel, Message: "not a public channel: a user, group, bot or unknown name"}
	case errors.Is(err, parser.ErrPostNotFound), errors.Is(err, errPostNotFound):
		return apiError{Status: http.StatusNotFound, Code: CodePostNotFound, Message: "no such post in this channel"}
	case errors.Is(err, origin.ErrNotFound):
		return apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no public channel with this name"}
	case errors.As(err, &rl):
		return apiError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: "Telegram is rate-limiting requests and no cached copy is held; retry later", RetryAfter: rl.RetryAfter}
	case errors.Is(err, origin.ErrRateLimited):
		return apiError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: "Telegram is rate-limiting requests and no cached copy is held; retry later"}
	case errors.Is(err, origin.ErrUnavailable):
		return apiError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "Telegram keeps failing, so it is not being asked for now, and no cached copy is held; retry later", RetryAfter: ra}
	case errors.Is(err, origin.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return apiError{Status: http.StatusGatewayTimeout, Code: CodeUpstreamTimeout, Message: "Telegram did not answer in time", RetryAfter: ra}
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer, but it is logged.
		return apiError{Status: http.StatusServiceUnavailable, Code: CodeCanceled, Message: "request canceled"}
	case errors.Is(err, origin.ErrTooLarge):
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram answered with a page too large to read", RetryAfter: ra}
	case errors.Is(err, origin.ErrRefused):
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram refused the connection", RetryAfter: ra}
	case errors.Is(err, origin.ErrUnreachable):
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram could not be reached", RetryAfter: ra}
	case errors.Is(err, origin.ErrReset):
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram dropped the connection without answering", RetryAfter: ra}
	case errors.Is(err, origin.ErrTruncated):
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram's answer was cut off", RetryAfter: ra}
	case errors.Is(err, origin.ErrServerError):
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram answered with a server error", RetryAfter: ra}
	case errors.Is(err, parser.ErrNotPage):
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram answered with something that is not the expected page", RetryAfter: ra}
	default:
		// origin.ErrUpstream, parser.ErrNotPage, and anything unforeseen on
		// the way to Telegram: the fault is upstream, not in the request.
		return apiError{Status: http.StatusBadGateway, Code: CodeUpstreamError, Message: "Telegram answered with an error or an unreadable page", RetryAfter: ra}
	}
}

// writeError writes an error answer. Errors are never cached downstream.
func writeError(w http.ResponseWriter, e apiError, now time.Time) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if e.Status == http.StatusTooManyRequests || !e.RetryAfter.IsZero() {
		secs := 1
		if !e.RetryAfter.IsZero() {
			if d := e.RetryAfter.Sub(now); d > 0 {
				secs = int((d + time.Second - 1) / time.Second)
			}
		}
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	w.WriteHeader(e.Status)
	b, _ := EncodeJSON(ErrorBody{Error: ErrorInfo{Code: e.Code, Message: e.Message}}, false)
	_, _ = w.Write(b)
}
