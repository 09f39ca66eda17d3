package origin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/internal/tme"
)

// Request names one t.me page.
type Request struct {
	Kind     tme.Kind // KindBody, KindMore, KindPreview or KindEmbed
	Channel  string   // lower-cased, validated username
	Position int      // body: post id to centre on (0 = newest page); more: the N of before=N/after=N; embed: post id
	After    bool     // more only: after=N instead of before=N
	Query    string   // search only: the text searched for, validated by the caller
	// CacheOnly asks the page service to answer from the cache alone
	// (ANONYMOUS=cached): a page it does not hold fails with
	// pages.ErrNotCached instead of being fetched. Not part of Key: the
	// page is the same one.
	CacheOnly bool

	// Class and Client say who the request is for, for the origin budget
	// (Config.Budget): its priority, and the client (the key of
	// RATE_LIMIT_RPM) whose share it is charged to; "" is nobody's. A
	// load shared by several callers is charged to the one that started
	// it. Neither is part of the page's identity (Key).
	Class  Class
	Client string
}

// Path is the request's path and query on t.me.
func (r Request) Path() string {
	switch r.Kind {
	case tme.KindBody:
		if r.Position > 0 {
			return "/s/" + r.Channel + "/" + strconv.Itoa(r.Position)
		}
		return "/s/" + r.Channel
	case tme.KindMore:
		return "/s/" + r.Channel + "?" + r.direction() + "=" + strconv.Itoa(r.Position)
	case tme.KindPreview:
		return "/" + r.Channel
	case tme.KindEmbed:
		return "/" + r.Channel + "/" + strconv.Itoa(r.Position) + "?embed=1"
	case tme.KindSearch:
		return "/s/" + r.Channel + "?q=" + url.QueryEscape(r.Query)
	}
	return ""
}

// Shown is Path as errors show it: a search's text is the user's own and,
// since errors end up in request logs, it is left out.
func (r Request) Shown() string {
	if r.Kind == tme.KindSearch {
		return "/s/" + r.Channel + "?q=…"
	}
	return r.Path()
}

// Method is the HTTP method t.me expects: "more" chunks are POSTed, as
// t.me's own page script loads them.
func (r Request) Method() string {
	if r.Kind == tme.KindMore {
		return http.MethodPost
	}
	return http.MethodGet
}

// Key is the cache key of the page's bytes (see package keys).
func (r Request) Key() string {
	switch r.Kind {
	case tme.KindBody:
		return keys.Page(r.Channel, "body:"+strconv.Itoa(r.Position))
	case tme.KindMore:
		return keys.Page(r.Channel, "more:"+r.direction()+":"+strconv.Itoa(r.Position))
	case tme.KindPreview:
		return keys.Page(r.Channel, "preview")
	case tme.KindEmbed:
		return keys.Page(r.Channel, "embed:"+strconv.Itoa(r.Position))
	case tme.KindSearch:
		// Escaped, so that no query can reach into another key's name.
		return keys.Page(r.Channel, "search:"+url.QueryEscape(r.Query))
	}
	return keys.Page(r.Channel, "unknown")
}

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
	case tme.KindBody, tme.KindPreview:
		if r.Position < 0 {
			return fmt.Errorf("%w: position %d", ErrInvalidRequest, r.Position)
		}
	case tme.KindMore, tme.KindEmbed:
		if r.Position <= 0 {
			return fmt.Errorf("%w: position %d", ErrInvalidRequest, r.Position)
		}
	case tme.KindSearch:
		if r.Query == "" || len(r.Query) > maxQueryLen || r.Position != 0 {
			return fmt.Errorf("%w: search query of %d bytes", ErrInvalidRequest, len(r.Query))
		}
	default:
		return fmt.Errorf("%w: kind %q", ErrInvalidRequest, r.Kind)
	}
	return nil
}
