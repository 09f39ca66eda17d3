// Package tme says which t.me page is meant, in one place: the kinds of
// page, the request for one (its path and method on t.me, the name and
// cache key of its bytes, who it is for), the checks of a channel name,
// a post id and a search query, and the names of answers rendered from
// pages. The origin fetches what a Request describes, the page service
// asks for pages by it, the parser reads each Kind, and the faces check
// what clients give with it.
package tme

import (
	"errors"
)

// Kind is the kind of t.me page a byte slice holds.
type Kind string

const (
	KindBody    Kind = "body"    // t.me/s/<channel>[/<id>]
	KindMore    Kind = "more"    // POST t.me/s/<channel>?before=N|after=N (a JSON string of HTML)
	KindPreview Kind = "preview" // t.me/<channel>
	KindEmbed   Kind = "embed"   // t.me/<channel>/<id>?embed=1
	KindSearch  Kind = "search"  // t.me/s/<channel>?q=<query>: the channel page with the matching posts
)

// ErrNotPage: the bytes are not a t.me page of the expected kind. The
// parser returns it; the origin's negative cache remembers it.
var ErrNotPage = errors.New("parser: not a t.me page of the expected kind")
