package pages

import (
	"errors"

	"github.com/tmefeed/tmefeed/origin"
)

var (
	// ErrBadRequest: a request the service cannot answer as asked.
	ErrBadRequest = errors.New("bad request")
	// ErrPostNotFound: the page around a post id does not hold that post.
	ErrPostNotFound = errors.New("post not found")
	// ErrNotFound: t.me has no such channel or page. It is the origin's
	// own error (errors.Is matches either name), named here for the faces,
	// which ask pages and never the origin.
	ErrNotFound = origin.ErrNotFound
)
