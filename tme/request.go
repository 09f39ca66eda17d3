package tme

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tmefeed/tmefeed/internal/keys"
)

// ErrInvalidRequest: the Request cannot be turned into a t.me URL.
var ErrInvalidRequest = errors.New("invalid page request")

// Request names one t.me page, and who it is asked for.
type Request struct {
	Kind     Kind   // KindBody, KindMore, KindPreview, KindEmbed or KindSearch
	Channel  string // lower-cased, validated username
	Position int    // body: post id to centre on (0 = newest page); more: the N of before=N/after=N; embed: post id
	After    bool   // more only: after=N instead of before=N
	Query    string // search only: the text searched for, validated by the caller
	// CacheOnly asks the page service to answer from the cache alone
	// (ANONYMOUS=cached): a page it does not hold fails with
	// pages.ErrNotCached instead of being fetched. Not part of Key: the
	// page is the same one.
	CacheOnly bool

	// Class and Client say who the request is for, for the origin budget
	// (origin.Config.Budget): its priority, and the client (the key of
	// RATE_LIMIT_RPM) whose share it is charged to; "" is nobody's. A
	// load shared by several callers is charged to the one that started
	// it. Neither is part of the page's identity (Key).
	Class  Class
	Client string
}

// Path is the request's path and query on t.me.
func (r Request) Path() string {
	switch r.Kind {
	case KindBody:
		if r.Position > 0 {
			return "/s/" + r.Channel + "/" + strconv.Itoa(r.Position)
		}
		return "/s/" + r.Channel
	case KindMore:
		return "/s/" + r.Channel + "?" + r.direction() + "=" + strconv.Itoa(r.Position)
	case KindPreview:
		return "/" + r.Channel
	case KindEmbed:
		return "/" + r.Channel + "/" + strconv.Itoa(r.Position) + "?embed=1"
	case KindSearch:
		return "/s/" + r.Channel + "?q=" + url.QueryEscape(r.Query)
	}
	return ""
}

// Shown is Path as errors show it: a search's text is the user's own and,
// since errors end up in request logs, it is left out.
func (r Request) Shown() string {
	if r.Kind == KindSearch {
		return "/s/" + r.Channel + "?q=…"
	}
	return r.Path()
}

// Method is the HTTP method t.me expects: "more" chunks are POSTed, as
// t.me's own page script loads them.
func (r Request) Method() string {
	if r.Kind == KindMore {
		return http.MethodPost
	}
	return http.MethodGet
}

// Name names the page within its channel ("body:0", "more:before:42",
// "preview", "embed:7", "search:<escaped query>"): the last part of its
// cache key, and the part of an answer's name that says which page it is
// rendered from (see Answer). The newest page's and the preview's names
// are constants: a hit naming them builds no string.
func (r Request) Name() string {
	switch r.Kind {
	case KindBody:
		if r.Position == 0 {
			return "body:0"
		}
		return "body:" + strconv.Itoa(r.Position)
	case KindMore:
		return "more:" + r.direction() + ":" + strconv.Itoa(r.Position)
	case KindPreview:
		return "preview"
	case KindEmbed:
		return "embed:" + strconv.Itoa(r.Position)
	case KindSearch:
		// Escaped, so that no query can reach into another key's name.
		return "search:" + url.QueryEscape(r.Query)
	}
	return "unknown"
}

// Key is the cache key of the page's bytes: its Name, in its channel's
// hash tag (package keys lays the keys out).
func (r Request) Key() string { return keys.Page(r.Channel, r.Name()) }

func (r Request) direction() string {
	if r.After {
		return "after"
	}
	return "before"
}

// maxChannelLen bounds the username; Telegram's own limit is 32, a little
// slack keeps old or special names fetchable.
const maxChannelLen = 64

// maxQueryLen bounds a search query in bytes; the API layer's own limit
// is tighter.
const maxQueryLen = 1024

// Validate reports whether the request can be sent. Username rules proper
// live with the API layer; this only keeps the path well-formed.
func (r Request) Validate() error {
	if r.Channel == "" || len(r.Channel) > maxChannelLen {
		return fmt.Errorf("%w: channel %q", ErrInvalidRequest, r.Channel)
	}
	for i := 0; i < len(r.Channel); i++ {
		c := r.Channel[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%w: channel %q", ErrInvalidRequest, r.Channel)
		}
	}
	switch r.Kind {
	case KindBody, KindPreview:
		if r.Position < 0 {
			return fmt.Errorf("%w: position %d", ErrInvalidRequest, r.Position)
		}
	case KindMore, KindEmbed:
		if r.Position <= 0 {
			return fmt.Errorf("%w: position %d", ErrInvalidRequest, r.Position)
		}
	case KindSearch:
		if r.Query == "" || len(r.Query) > maxQueryLen || r.Position != 0 {
			return fmt.Errorf("%w: search query of %d bytes", ErrInvalidRequest, len(r.Query))
		}
	default:
		return fmt.Errorf("%w: kind %q", ErrInvalidRequest, r.Kind)
	}
	return nil
}
