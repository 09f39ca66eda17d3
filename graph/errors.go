package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tmefeed/tmefeed/fault"
)

// Error codes set in extensions.code.
const (
	CodeBadUserInput        = "BAD_USER_INPUT"
	CodeNotFound            = "NOT_FOUND"
	CodeUpstreamUnavailable = "UPSTREAM_UNAVAILABLE"
	CodeRateLimited         = "RATE_LIMITED"
	CodeComplexity          = "COMPLEXITY_LIMIT_EXCEEDED"
	CodeInternal            = "INTERNAL_SERVER_ERROR"
	// CodeForbidden: a key used outside its scope (a widget key's
	// subscription to other channels, or its query).
	CodeForbidden = "FORBIDDEN"
	// CodeUnauthenticated: no valid API key. The HTTP face answers it
	// before a request reaches this handler; a WebSocket whose
	// connection_init carries none is closed with 4403.
	CodeUnauthenticated = "UNAUTHENTICATED"
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

// graphCode is GraphQL's name for each kind of failure (extensions.code).
// Telegram's trouble is one code; the message says which.
func graphCode(k fault.Kind) string {
	switch k {
	case fault.InvalidUsername, fault.InvalidPosition, fault.BadRequest:
		return CodeBadUserInput
	case fault.NotFound, fault.NotAChannel, fault.PostNotFound, fault.MediaNotFound:
		return CodeNotFound
	case fault.RateLimited, fault.OverBudget, fault.ClientOverBudget:
		return CodeRateLimited
	case fault.Upstream, fault.Unavailable, fault.Timeout, fault.Canceled:
		return CodeUpstreamUnavailable
	}
	return CodeInternal
}

// errorPresenter gives every resolver error an extensions.code. Errors
// gqlgen raised itself (parsing, validation, limits) already carry one.
func errorPresenter(log *slog.Logger, now func() time.Time, refused, mistaken func(context.Context)) graphql.ErrorPresenterFunc {
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
		f := fault.Classify(cause)
		if f.Kind == fault.Internal {
			log.ErrorContext(ctx, "graphql: resolver error", "path", out.Path.String(), "err", cause)
		}
		if refused != nil && f.Kind == fault.ClientOverBudget {
			refused(ctx)
		}
		if mistaken != nil && (f.Kind == fault.BadRequest || f.Kind == fault.InvalidUsername || f.Kind == fault.InvalidPosition) {
			mistaken(ctx)
		}
		out.Message = f.Message
		if out.Extensions == nil {
			out.Extensions = map[string]any{}
		}
		out.Extensions["code"] = graphCode(f.Kind)
		if secs, ok := f.RetryAfterSeconds(now()); ok {
			out.Extensions["retryAfter"] = secs
		}
		return out
	}
}

// inputError is a BAD_USER_INPUT error raised by the GraphQL layer itself.
func inputError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{fault.ErrBadRequest}, args...)...)
}
