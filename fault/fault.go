// Package fault classifies the errors of tmefeed's use cases (pages, feed,
// origin, parser) once, for every face: each error gets a Kind, a message
// fit for clients and, when known, the time after which asking again is
// worth it. Faces only translate a Kind into their own vocabulary (an HTTP
// status and code, a GraphQL extensions.code), so that the same failure is
// told the same way everywhere.
package fault

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// Kind is a class of failure. The zero Kind is Internal: an error nobody
// classified is a bug, not the client's or Telegram's doing.
type Kind uint8

// The kinds: ours (the zero Kind), then the client's, then Telegram's.
const (
	// Internal: a bug or a failure of our own (a panic, an unknown error).
	// Every failure on the way to Telegram carries an origin kind, so an
	// error that matches none of them did not come from Telegram.
	Internal Kind = iota
	// InvalidUsername: not a name Telegram allows for a public channel.
	InvalidUsername
	// InvalidPosition: a post id or offset outside 1..tme.MaxPosition.
	InvalidPosition
	// BadRequest: any other input the use cases cannot answer as asked.
	BadRequest
	// NotFound: no public channel with this name.
	NotFound
	// NotAChannel: the name is a user, group, bot or unknown.
	NotAChannel
	// PostNotFound: the channel has no such post.
	PostNotFound
	// MediaNotFound: the post has no attachment (or thumbnail) there.
	MediaNotFound
	// RateLimited: Telegram is backing us off and no cached copy is held.
	RateLimited
	// Upstream: Telegram refused, dropped or cut off the connection,
	// answered 5xx, too large, or with something that is not a page.
	Upstream
	// Unavailable: Telegram kept failing, so it is not asked for now.
	Unavailable
	// Timeout: Telegram, or the whole operation, ran out of time.
	Timeout
	// Canceled: the client went away.
	Canceled
	// OverBudget: the page would need a request to Telegram and the
	// origin budget (ORIGIN_RPM) has none to spare now.
	OverBudget
	// ClientOverBudget: the page would need a request to Telegram and
	// this client has spent its share of the budget (CLIENT_ORIGIN_RPM).
	ClientOverBudget

	numKinds = iota
)

// Kinds lists every Kind, for faces' tests that their tables are complete.
func Kinds() []Kind {
	out := make([]Kind, numKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

func (k Kind) String() string {
	switch k {
	case Internal:
		return "internal"
	case InvalidUsername:
		return "invalid_username"
	case InvalidPosition:
		return "invalid_position"
	case BadRequest:
		return "bad_request"
	case NotFound:
		return "not_found"
	case NotAChannel:
		return "not_a_channel"
	case PostNotFound:
		return "post_not_found"
	case MediaNotFound:
		return "media_not_found"
	case RateLimited:
		return "rate_limited"
	case Upstream:
		return "upstream"
	case Unavailable:
		return "unavailable"
	case Timeout:
		return "timeout"
	case Canceled:
		return "canceled"
	case OverBudget:
		return "over_budget"
	case ClientOverBudget:
		return "client_over_budget"
	}
	return "kind" + strconv.Itoa(int(k))
}

// ErrBadRequest is for input errors a face finds itself (an argument only
// it has); wrap it with %w and a message that says what to fix.
var ErrBadRequest = errors.New("bad request")

// Fault is what a client learns about an error.
type Fault struct {
	Kind Kind
	// Message is safe to show: input errors keep their own text, which
	// says what to fix; upstream and internal details stay in the logs.
	Message string
	// RetryAfter is when asking again is worth it (a 429, an open circuit,
	// a failure remembered moments ago); zero when unknown.
	RetryAfter time.Time
}

// Messages of the kinds whose text does not come from the error.
const (
	msgInternal     = "internal error"
	msgNotFound     = "no public channel with this name"
	msgNotAChannel  = "not a public channel: a user, group, bot or unknown name"
	msgPostNotFound = "no such post in this channel"
	msgRateLimited  = "Telegram is rate-limiting requests and no cached copy is held; retry later"
	msgUnavailable  = "Telegram keeps failing, so it is not being asked for now, and no cached copy is held; retry later"
	msgTimeout      = "Telegram did not answer in time"
	msgBusy         = "the server is busy with other pages and feeds and no cached copy is held; retry in a moment"
	msgCanceled     = "request canceled"
	msgUpstream     = "Telegram answered with an error or an unreadable page"
	msgOverBudget   = "the server is asking Telegram for as many pages as it may, and no cached copy is held; retry later"
	msgClientBudget = "this client has caused as many requests to Telegram as it may for now, and no cached copy is held; retry later"
)

// Classify maps an error of the use cases to its Fault. A nil error is
// Internal: callers classify failures only.
func Classify(err error) Fault {
	if err == nil {
		return Fault{Kind: Internal, Message: msgInternal}
	}
	ra, _ := origin.RetryAfter(err) // an open circuit, a 429 or a failure remembered moments ago
	switch {
	case errors.Is(err, tme.ErrInvalidUsername):
		return Fault{Kind: InvalidUsername, Message: err.Error()}
	case errors.Is(err, tme.ErrInvalidPosition):
		return Fault{Kind: InvalidPosition, Message: err.Error()}
	case errors.Is(err, ErrBadRequest), errors.Is(err, pages.ErrBadRequest), errors.Is(err, feed.ErrBadRequest),
		errors.Is(err, origin.ErrInvalidRequest):
		return Fault{Kind: BadRequest, Message: err.Error()}
	case errors.Is(err, parser.ErrNotChannel):
		return Fault{Kind: NotAChannel, Message: msgNotAChannel}
	case errors.Is(err, parser.ErrPostNotFound), errors.Is(err, pages.ErrPostNotFound):
		return Fault{Kind: PostNotFound, Message: msgPostNotFound}
	case errors.Is(err, pages.ErrMediaNotFound):
		return Fault{Kind: MediaNotFound, Message: err.Error()}
	case errors.Is(err, origin.ErrNotFound):
		return Fault{Kind: NotFound, Message: msgNotFound}
	case errors.Is(err, origin.ErrClientBudget):
		return Fault{Kind: ClientOverBudget, Message: msgClientBudget, RetryAfter: ra}
	case errors.Is(err, origin.ErrBudget):
		return Fault{Kind: OverBudget, Message: msgOverBudget, RetryAfter: ra}
	case errors.Is(err, origin.ErrRateLimited):
		return Fault{Kind: RateLimited, Message: msgRateLimited, RetryAfter: ra}
	case errors.Is(err, origin.ErrBusy), errors.Is(err, feed.ErrBusy):
		return Fault{Kind: Unavailable, Message: msgBusy, RetryAfter: ra}
	case errors.Is(err, origin.ErrUnavailable):
		return Fault{Kind: Unavailable, Message: msgUnavailable, RetryAfter: ra}
	case errors.Is(err, origin.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return Fault{Kind: Timeout, Message: msgTimeout, RetryAfter: ra}
	case errors.Is(err, context.Canceled):
		return Fault{Kind: Canceled, Message: msgCanceled}
	}
	if msg := upstreamMessage(err); msg != "" {
		return Fault{Kind: Upstream, Message: msg, RetryAfter: ra}
	}
	return Fault{Kind: Internal, Message: msgInternal}
}

// upstreamMessage says which kind of Upstream failure err is, most
// specific first; "" if it is none.
func upstreamMessage(err error) string {
	switch {
	case errors.Is(err, pages.ErrUnsafeMediaURL):
		return "Telegram's page names a media URL that is not an https URL on Telegram's hosts; it is not followed"
	case errors.Is(err, origin.ErrTooLarge):
		return "Telegram answered with a page too large to read"
	case errors.Is(err, origin.ErrRefused):
		return "Telegram refused the connection"
	case errors.Is(err, origin.ErrUnreachable):
		return "Telegram could not be reached"
	case errors.Is(err, origin.ErrReset):
		return "Telegram dropped the connection without answering"
	case errors.Is(err, origin.ErrTruncated):
		return "Telegram's answer was cut off"
	case errors.Is(err, origin.ErrServerError):
		return "Telegram answered with a server error"
	case errors.Is(err, parser.ErrNotPage):
		return "Telegram answered with something that is not the expected page"
	case errors.Is(err, origin.ErrUpstream):
		return msgUpstream
	}
	return ""
}

// RetryAfterSeconds is how many whole seconds from now a client should
// wait, rounded up and at least 1, and whether to say so at all: when the
// time is known, and for every RateLimited, OverBudget and
// ClientOverBudget (a refusal to spare Telegram always says when).
func (f Fault) RetryAfterSeconds(now time.Time) (int, bool) {
	if f.RetryAfter.IsZero() {
		return 1, f.Kind == RateLimited || f.Kind == OverBudget || f.Kind == ClientOverBudget
	}
	d := f.RetryAfter.Sub(now)
	if d <= 0 {
		return 1, true
	}
	return int((d + time.Second - 1) / time.Second), true
}
