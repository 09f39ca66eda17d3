package httpcache

import (
	"strconv"
	"strings"
)

// Coding is a content coding the answers can be sent in.
type Coding uint8

const (
	Identity Coding = iota
	Gzip
	Zstd
)

// String is the coding's token in Content-Encoding.
func (c Coding) String() string {
	switch c {
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	}
	return "identity"
}

// Negotiate picks the coding of an answer from an Accept-Encoding field
// (RFC 9110 §12.5.3): the acceptable coding of the highest q-value, zstd
// before gzip at equal weight (it is smaller and faster to decode); "*"
// weighs every coding not named; q=0 refuses. Identity is the answer when
// the field is absent or accepts neither coding: this server sends
// identity rather than 406 even when the field refuses it, which the RFC
// allows.
func Negotiate(field string) Coding {
	if field == "" {
		return Identity
	}
	gz, zs, star := -1.0, -1.0, -1.0
	for part := range strings.SplitSeq(field, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.TrimSpace(name)
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1 {
				q = 0 // a weight that does not parse is not a yes
				break
			}
			q = f
		}
		switch {
		case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
			gz = max(gz, q)
		case strings.EqualFold(name, "zstd"):
			zs = max(zs, q)
		case name == "*":
			star = max(star, q)
		}
	}
	if gz < 0 {
		gz = star
	}
	if zs < 0 {
		zs = star
	}
	switch {
	case zs > 0 && zs >= gz:
		return Zstd
	case gz > 0:
		return Gzip
	}
	return Identity
}
