package pages

import (
	"errors"

	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/tme"
)

var (
	// ErrBadRequest: a request the service cannot answer as asked. It is
	// tme's (errors.Is matches either name), which a search query
	// tme.ValidSearchQuery refuses wraps.
	ErrBadRequest = tme.ErrBadRequest
	// ErrPostNotFound: the page around a post id does not hold that post.
	ErrPostNotFound = errors.New("post not found")
	// ErrNotFound: t.me has no such channel or page. It is the origin's
	// own error (errors.Is matches either name), named here for the faces,
	// which ask pages and never the origin.
	ErrNotFound = origin.ErrNotFound
)
