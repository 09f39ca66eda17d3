// Package jsonstr is the one JSON string escaper of the JSON tmefeed
// writes by hand: the REST answers (server/restjson) and the request log
// (cmd/tmefeed). Escaping alone is no faster than encoding/json's
// (BenchmarkEscape); what it gives is a string appended to the writer's
// own buffer, with no allocation, where encoding/json only writes whole
// values to an io.Writer. The writers built on it are what the numbers
// favour: restjson's page against encoding/json (BenchmarkPage), the
// request line against slog's handlers (BenchmarkRequestLine, on every
// request's path).
package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// Append appends s as a JSON string exactly as encoding/json writes it
// with HTML escaping off: short escapes for \b \f \n \r \t, \u00XX for
// other control characters, \ufffd for invalid UTF-8, and U+2028 and
// U+2029 escaped because JavaScript source cannot hold them raw. slog's
// JSON handler writes the same bytes but for \b and \f, which it spells
// \u0008 and \u000c: the same string to any JSON reader.
func Append(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
