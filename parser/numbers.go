package parser

import (
	"strings"
	"unicode"
)

// ParseCount turns a counter as Telegram displays it into an integer:
// "845" → 845, "1.2K" → 1200, "7.03K" → 7030, "12.5M" → 12500000,
// "11 110 268" → 11110268, "2,832" → 2832. It returns 0 and false when s
// holds no number. Fractions are computed in integers so "1.1M" is exactly
// 1100000, not 1099999.
func ParseCount(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	var (
		whole, frac  int64
		fracDigits   int
		inFrac, seen bool
		mult         int64 = 1
	)
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			seen = true
			if inFrac {
				if fracDigits < 9 {
					frac = frac*10 + int64(r-'0')
					fracDigits++
				}
				continue
			}
			if whole > (1<<62)/10 {
				return 0, false
			}
			whole = whole*10 + int64(r-'0')
		case r == '.' && seen && !inFrac:
			inFrac = true
		case r == ',' || r == ' ' || r == '\u00a0' || r == '\u202f' || r == '\u2009' || r == '\'':
			// thousands separators; a comma after a K/M mantissa never occurs
		case r == 'K' || r == 'k':
			mult = 1_000
		case r == 'M' || r == 'm':
			mult = 1_000_000
		case r == 'B' || r == 'b' || r == 'G':
			mult = 1_000_000_000
		case unicode.IsSpace(r):
		default:
			if seen {
				// a trailing word such as "subscribers" ends the number
				goto done
			}
			return 0, false
		}
	}
done:
	if !seen {
		return 0, false
	}
	if !inFrac || mult == 1 {
		// a fraction only means something before K, M or B; "1.5" keeps its whole part
		return whole * mult, true
	}
	pow := int64(1)
	for range fracDigits {
		pow *= 10
	}
	return whole*mult + frac*mult/pow, true
}

// parseDuration reads "0:15", "12:03" or "1:02:03" into seconds.
func parseDuration(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	total, part, digits := 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			part = part*10 + int(c-'0')
			digits++
			if digits > 6 {
				return 0, false
			}
		case c == ':':
			if digits == 0 {
				return 0, false
			}
			total = total*60 + part
			part, digits = 0, 0
		default:
			return 0, false
		}
	}
	if digits == 0 {
		return 0, false
	}
	return total*60 + part, true
}

// parsePercent reads "42%" into 42: the leading digits, ignoring spaces.
func parsePercent(s string) int {
	s = strings.TrimSpace(s)
	n := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9' && n <= 1000; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if n > 1000 {
		return 0
	}
	return n
}

// parseInt reads a non-negative decimal that fits in an int32.
func parseInt(s string) int {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 10 {
		return 0
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	if n > 1<<31-1 {
		return 0
	}
	return n
}
