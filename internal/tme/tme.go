// Package tme names the kinds of t.me page. It is the vocabulary the
// origin (which fetches pages) and the parser (which reads them) share,
// kept apart so that neither has to import the other.
package tme

import "errors"

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
