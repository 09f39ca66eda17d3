package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
)

// Error codes set in extensions.code.
const (
	CodeBadUserInput        = "BAD_USER_INPUT"
	CodeNotFound            = "NOT_FOUND"
	CodeUpstreamUnavailable = "UPSTREAM_UNAVAILABLE"
	CodeRateLimited         = "RATE_LIMITED"
	CodeComplexity          = "COMPLEXITY_LIMIT_EXCEEDED"
	CodeInternal            = "INTERNAL_SERVER_ERROR"
)

// Codes of requests refused before execution: gqlgen's own, and the
// HTTP layer's (see front and answer).
const (
	CodeParseFailed            = "GRAPHQL_PARSE_FAILED"
	CodeValidationFailed       = "GRAPHQL_VALIDATION_FAILED"
	CodePersistedQueryNotFound = "PERSISTED_QUERY_NOT_FOUND"
	CodeBadRequest             = "BAD_REQUEST"
	CodeMethodNotAllowed       = "METHOD_NOT_ALLOWED"
	CodeNotAcceptable          = "NOT_ACCEPTABLE"
	CodeRequestTooLarge        = "REQUEST_TOO_LARGE"
	CodeUnsupportedMediaType   = "UNSUPPORTED_MEDIA_TYPE"
)

// errPostNotFound: the page around a post id does not hold that post.
var errPostNotFound = errors.New("no such post in this channel")

// classified is what a client learns about an error.
type classified struct {
	code       string
	message    string
	retryAfter time.Time // when Telegram may be asked again, if known
}

// classify maps an error from the domain packages to a code and a message
// fit for clients: input errors keep their message, upstream details stay
// in the logs.
func classify(err error) classified {
	var rl *origin.RateLimitError
	ra, _ := origin.RetryAfter(err) // an open circuit or a failure remembered moments ago
	switch {
	case errors.Is(err, pages.ErrInvalidUsername), errors.Is(err, pages.ErrInvalidPosition), errors.Is(err, pages.ErrBadRequest), errors.Is(err, model.ErrInvalidInput):
		return classified{code: CodeBadUserInput, message: err.Error()}
	case errors.Is(err, parser.ErrNotChannel):
		return classified{code: CodeNotFound, message: "not a public channel: a user, group, bot or unknown name"}
	case errors.Is(err, parser.ErrPostNotFound), errors.Is(err, errPostNotFound):
		return classified{code: CodeNotFound, message: "no such post in this channel"}
	case errors.Is(err, origin.ErrNotFound):
		return classified{code: CodeNotFound, message: "no public channel with this name"}
	case errors.As(err, &rl):
		return classified{code: CodeRateLimited, message: "Telegram is rate-limiting requests and no cached copy is held; retry later", retryAfter: rl.RetryAfter}
	case errors.Is(err, origin.ErrRateLimited):
		return classified{code: CodeRateLimited, message: "Telegram is rate-limiting requests and no cached copy is held; retry later"}
	case errors.Is(err, origin.ErrUnavailable):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram keeps failing, so it is not being asked for now, and no cached copy is held; retry later", retryAfter: ra}
	case errors.Is(err, origin.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram did not answer in time", retryAfter: ra}
	case errors.Is(err, origin.ErrRefused):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram refused the connection", retryAfter: ra}
	case errors.Is(err, origin.ErrUnreachable):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram could not be reached", retryAfter: ra}
	case errors.Is(err, origin.ErrReset):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram dropped the connection without answering", retryAfter: ra}
	case errors.Is(err, origin.ErrTruncated):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram's answer was cut off", retryAfter: ra}
	case errors.Is(err, origin.ErrServerError):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram answered with a server error", retryAfter: ra}
	case errors.Is(err, origin.ErrUpstream), errors.Is(err, origin.ErrTooLarge), errors.Is(err, parser.ErrNotPage):
		return classified{code: CodeUpstreamUnavailable, message: "Telegram answered with an error or an unreadable page", retryAfter: ra}
	case errors.Is(err, context.Canceled):
		return classified{code: CodeUpstreamUnavailable, message: "request canceled"}
	}
	return classified{code: CodeInternal, message: "internal error"}
}

// errorPresenter gives every resolver error an extensions.code. Errors
// gqlgen raised itself (parsing, validation, limits) already carry one.
func errorPresenter(log *slog.Logger, now func() time.Time) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var gerr *gqlerror.Error
		if errors.As(err, &gerr) && gerr.Err == nil {
			return gerr
		}
		out := graphql.DefaultErrorPresenter(ctx, err)
		cause := err
		if gerr != nil && gerr.Err != nil {
			cause = gerr.Err
		}
		c := classify(cause)
		if c.code == CodeInternal {
			log.ErrorContext(ctx, "graphql: resolver error", "path", out.Path.String(), "err", cause)
		}
		out.Message = c.message
		if out.Extensions == nil {
			out.Extensions = map[string]any{}
		}
		out.Extensions["code"] = c.code
		if !c.retryAfter.IsZero() {
			out.Extensions["retryAfter"] = retryAfterSeconds(c.retryAfter, now())
		}
		return out
	}
}

// retryAfterSeconds is the whole seconds from now until t, at least 1.
func retryAfterSeconds(t, now time.Time) int {
	d := t.Sub(now)
	if d <= 0 {
		return 1
	}
	return int((d + time.Second - 1) / time.Second)
}

// inputError is a BAD_USER_INPUT error raised by the GraphQL layer itself.
func inputError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{pages.ErrBadRequest}, args...)...)
}
