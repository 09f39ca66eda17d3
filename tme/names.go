package tme

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The errors of the checks of what clients give; every face answers them
// as the client's mistake.
var (
	// ErrInvalidUsername: not a name Telegram allows for a public channel.
	ErrInvalidUsername = errors.New("invalid username")
	// ErrInvalidPosition: a post id or offset outside 1..MaxPosition.
	ErrInvalidPosition = errors.New("invalid position")
	// ErrBadRequest: a page request that cannot be answered as asked, a
	// search query ValidSearchQuery refuses among them. The page service
	// names it pages.ErrBadRequest for the faces.
	ErrBadRequest = errors.New("bad request")
)

// Username length bounds, as Telegram allows them for public names.
const (
	MinUsernameLen = 4
	MaxUsernameLen = 32
)

// MaxPosition is the largest post id accepted (Telegram ids are int32).
const MaxPosition = 1<<31 - 1

// ValidUsername checks s as a Telegram username — 4 to 32 ASCII letters,
// digits and underscores, starting with a letter — and returns it in lower
// case, since Telegram matches names case-insensitively (Durov and durov
// are one channel and share one cache entry).
func ValidUsername(s string) (string, error) {
	if len(s) < MinUsernameLen || len(s) > MaxUsernameLen {
		return "", fmt.Errorf("%w: %q must be %d to %d characters long", ErrInvalidUsername, truncate(s), MinUsernameLen, MaxUsernameLen)
	}
	lower := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= 'A' && c <= 'Z':
			lower = false
		case i > 0 && (c >= '0' && c <= '9' || c == '_'):
		default:
			return "", fmt.Errorf("%w: %q must be letters, digits and underscores, starting with a letter", ErrInvalidUsername, truncate(s))
		}
	}
	if lower { // the common case allocates nothing
		return s, nil
	}
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b), nil
}

// NormalizeUsername is how every face reads a channel name a client gave:
// surrounding spaces and one leading '@' (as names are written in Telegram)
// are dropped, then the name is checked and lowered by ValidUsername.
func NormalizeUsername(raw string) (string, error) {
	return ValidUsername(strings.TrimPrefix(strings.TrimSpace(raw), "@"))
}

// ParsePosition parses a post id or offset given as decimal text and
// checks it lies in 1..MaxPosition.
func ParsePosition(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > MaxPosition {
		return 0, fmt.Errorf("%w: %q must be a whole number from 1 to %d", ErrInvalidPosition, truncate(s), MaxPosition)
	}
	return int(n), nil
}

// MaxSearchQuery is the longest search query accepted, in characters.
const MaxSearchQuery = 128

// ValidSearchQuery checks a search query — 1 to MaxSearchQuery characters
// of UTF-8 text without control characters once surrounding spaces are
// trimmed — and returns it trimmed. Errors wrap ErrBadRequest and say what
// to fix.
func ValidSearchQuery(q string) (string, error) {
	q = strings.TrimSpace(q)
	switch {
	case q == "":
		return "", fmt.Errorf("%w: the search query must not be empty", ErrBadRequest)
	case !utf8.ValidString(q):
		return "", fmt.Errorf("%w: the search query must be UTF-8 text", ErrBadRequest)
	case utf8.RuneCountInString(q) > MaxSearchQuery:
		return "", fmt.Errorf("%w: the search query must be at most %d characters", ErrBadRequest, MaxSearchQuery)
	case strings.IndexFunc(q, unicode.IsControl) >= 0:
		return "", fmt.Errorf("%w: the search query must not hold control characters", ErrBadRequest)
	}
	return q, nil
}

// truncate keeps error messages short when the input is not.
func truncate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
