package server

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/parser"
)

// Each way Telegram can fail has its own message; the ones the service
// stopped asking about carry when to retry.
func TestUpstreamFailureAnswers(t *testing.T) {
	now := time.Now()
	later := now.Add(7 * time.Second)
	wrap := func(kind error) error { return fmt.Errorf("%w: GET https://t.me/s/x: details", kind) }
	tests := []struct {
		err        error
		status     int
		code       string
		message    string
		retryAfter string
	}{
		{wrap(origin.ErrRefused), 502, CodeUpstreamError, "Telegram refused the connection", ""},
		{wrap(origin.ErrUnreachable), 502, CodeUpstreamError, "Telegram could not be reached", ""},
		{wrap(origin.ErrReset), 502, CodeUpstreamError, "Telegram dropped the connection without answering", ""},
		{wrap(origin.ErrTruncated), 502, CodeUpstreamError, "Telegram's answer was cut off", ""},
		{wrap(origin.ErrServerError), 502, CodeUpstreamError, "Telegram answered with a server error", ""},
		{fmt.Errorf("%w: %w", origin.ErrUpstream, parser.ErrNotPage), 502, CodeUpstreamError, "Telegram answered with something that is not the expected page", ""},
		{wrap(origin.ErrTimeout), 504, CodeUpstreamTimeout, "Telegram did not answer in time", ""},
		// Remembered failures: the same answer, and when to retry.
		{origin.Failures{}.Error("refused", later), 502, CodeUpstreamError, "Telegram refused the connection", "7"},
		{origin.Failures{}.Error("timeout", later), 504, CodeUpstreamTimeout, "Telegram did not answer in time", "7"},
		// An open circuit.
		{&origin.UnavailableError{RetryAfter: later, Host: "t.me", Last: origin.ErrRefused}, 503, CodeUnavailable, "", "7"},
	}
	for _, tt := range tests {
		e := classify(tt.err, now)
		if e.Status != tt.status || e.Code != tt.code || (tt.message != "" && e.Message != tt.message) {
			t.Errorf("%v: %d %s %q, want %d %s %q", tt.err, e.Status, e.Code, e.Message, tt.status, tt.code, tt.message)
		}
		rec := httptest.NewRecorder()
		writeError(rec, e)
		if got := rec.Header().Get("Retry-After"); got != tt.retryAfter {
			t.Errorf("%v: Retry-After %q, want %q", tt.err, got, tt.retryAfter)
		}
		if rec.Code != tt.status {
			t.Errorf("%v: status %d", tt.err, rec.Code)
		}
	}
}

// Only Internal falls through to the 500: a kind added to fault without a
// REST answer would be told as a bug.
func TestEveryKindHasAnAnswer(t *testing.T) {
	for _, k := range fault.Kinds() {
		status, code := restStatus(k)
		if (status == 500 || code == CodeInternal) != (k == fault.Internal) {
			t.Errorf("%v: %d %s", k, status, code)
		}
	}
}
