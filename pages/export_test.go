package pages

import "github.com/tmefeed/tmefeed/tme"

// ParsedSize is parsedSize for tests: the estimate for parsing b as kind.
func ParsedSize(kind tme.Kind, b []byte) int64 {
	s := &Service{}
	return s.parse(kind, b).mem.bytes
}
