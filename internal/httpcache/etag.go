// Package httpcache is what every HTTP face shares to make its answers
// cheap to send again: entity tags and If-None-Match (RFC 9110 §8.8.3,
// §13.1.2), content-coding negotiation by Accept-Encoding (§12.5.3), and
// representations whose compressed forms are made once and kept beside the
// identity bytes, so that a compressed cache hit does no compression work.
package httpcache

import (
	"encoding/hex"
	"strings"

	"github.com/zeebo/xxh3"
)

// ETag is a strong validator of the bytes given, in order: a 128-bit hash,
// quoted. Callers include whatever else makes the representation (its
// media type, say) as one of the parts.
func ETag(parts ...[]byte) string {
	h := xxh3.New()
	for _, p := range parts {
		_, _ = h.Write(p)
	}
	sum := h.Sum128().Bytes()
	var b [2 + 32]byte
	b[0] = '"'
	hex.Encode(b[1:33], sum[:])
	b[33] = '"'
	return string(b[:])
}

// Weak turns a strong tag into the weak tag of the same content, as sent
// with a compressed form: the bytes differ from the identity form's, the
// content does not (the weak-comparison of If-None-Match still matches).
func Weak(etag string) string {
	if strings.HasPrefix(etag, "W/") {
		return etag
	}
	return "W/" + etag
}

// NoneMatch reports whether an If-None-Match field value matches etag, so
// that a GET may be answered 304: "*" matches any current representation,
// else the comma-separated list is compared with the weak comparison
// (W/ ignored on both sides), as RFC 9110 §13.1.2 asks for this field.
// Entity tags may contain commas, so the list is scanned quote by quote
// rather than split; a malformed member ends the scan without a match.
func NoneMatch(field, etag string) bool {
	if field == "" || etag == "" {
		return false
	}
	want := opaque(etag)
	s := field
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return false
		}
		if s[0] == '*' {
			return true
		}
		s = strings.TrimPrefix(s, "W/")
		if s == "" || s[0] != '"' {
			return false
		}
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return false
		}
		if s[:end+2] == want {
			return true
		}
		s = s[end+2:]
	}
}

// opaque is a tag without its weakness indicator.
func opaque(etag string) string { return strings.TrimPrefix(etag, "W/") }
