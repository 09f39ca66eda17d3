package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tmefeed/tmefeed/fault"
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
	CodeMediaNotFound    = "media_not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeRateLimited      = "rate_limited"
	CodeUpstreamError    = "upstream_error"
	CodeUpstreamTimeout  = "upstream_timeout"
	CodeUnavailable      = "upstream_unavailable"
	CodeOriginBudget     = "origin_budget_exhausted"
	CodeOverloaded       = "overloaded"
	CodeCanceled         = "canceled"
	CodeInternal         = "internal"
)

// apiError is an error answer: status, code, message, and the seconds
// after which asking again is worth it (0: no Retry-After).
type apiError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter int
}

// classify answers err as fault classifies it: every face tells a failure
// the same way, REST only picks the status and code.
func classify(err error, now time.Time) apiError {
	f := fault.Classify(err)
	status, code := restStatus(f.Kind)
	e := apiError{Status: status, Code: code, Message: f.Message}
	if secs, ok := f.RetryAfterSeconds(now); ok {
		e.RetryAfter = secs
	}
	return e
}

// errorInfo is the code and message of err, for failures reported inside
// an answer (one name of many) rather than as the answer.
func errorInfo(err error) (ErrorInfo, int) {
	f := fault.Classify(err)
	status, code := restStatus(f.Kind)
	return ErrorInfo{Code: code, Message: f.Message}, status
}

// restStatus is REST's name for each kind of failure. Input errors are
// 4xx; Telegram's trouble 429/502/503/504; ours 500.
func restStatus(k fault.Kind) (int, string) {
	switch k {
	case fault.InvalidUsername:
		return http.StatusBadRequest, CodeInvalidUsername
	case fault.InvalidPosition:
		return http.StatusBadRequest, CodeInvalidPosition
	case fault.BadRequest:
		return http.StatusBadRequest, CodeBadRequest
	case fault.NotFound:
		return http.StatusNotFound, CodeNotFound
	case fault.NotAChannel:
		return http.StatusNotFound, CodeNotAChannel
	case fault.PostNotFound:
		return http.StatusNotFound, CodePostNotFound
	case fault.MediaNotFound:
		return http.StatusNotFound, CodeMediaNotFound
	case fault.RateLimited, fault.ClientOverBudget:
		return http.StatusTooManyRequests, CodeRateLimited
	case fault.OverBudget:
		return http.StatusServiceUnavailable, CodeOriginBudget
	case fault.Upstream:
		return http.StatusBadGateway, CodeUpstreamError
	case fault.Unavailable:
		return http.StatusServiceUnavailable, CodeUnavailable
	case fault.Timeout:
		return http.StatusGatewayTimeout, CodeUpstreamTimeout
	case fault.Canceled:
		// The client went away; nobody reads this answer, but it is logged.
		return http.StatusServiceUnavailable, CodeCanceled
	}
	return http.StatusInternalServerError, CodeInternal
}

// writeError writes an error answer. Errors are never cached downstream.
func writeError(w http.ResponseWriter, e apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	b, _ := EncodeJSON(ErrorBody{Error: ErrorInfo{Code: e.Code, Message: e.Message}}, false)
	_, _ = w.Write(b)
}
