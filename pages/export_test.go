package pages

import "github.com/tmefeed/tmefeed/parser"

// ParsedSize is parsedSize for tests: the estimate for parsing b as kind.
func ParsedSize(kind parser.Kind, b []byte) int64 {
	s := &Service{}
	return s.parse(kind, b).mem.bytes
}
