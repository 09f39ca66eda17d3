package tme

import (
	"errors"
	"strings"
	"testing"
)

func TestValidUsername(t *testing.T) {
	good := map[string]string{
		"durov":                       "durov",
		"Durov":                       "durov",
		"TMEFEED_News":                "tmefeed_news",
		"abcd":                        "abcd",
		"a23_":                        "a23_",
		strings.Repeat("x", 32):       strings.Repeat("x", 32),
		"Z" + strings.Repeat("9", 31): "z" + strings.Repeat("9", 31),
	}
	for in, want := range good {
		got, err := ValidUsername(in)
		if err != nil || got != want {
			t.Errorf("ValidUsername(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{
		"", "abc", strings.Repeat("x", 33), "1abc", "_abc", "ab-cd", "ab cd", "abc.d",
		"durоv", // Cyrillic о
		"abc\x00", "../etc", "abcd/", "ab%2f",
	}
	for _, in := range bad {
		if got, err := ValidUsername(in); !errors.Is(err, ErrInvalidUsername) {
			t.Errorf("ValidUsername(%q) = %q, %v; want ErrInvalidUsername", in, got, err)
		}
	}
}

func TestParsePosition(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "42": 42, "2147483647": MaxPosition} {
		if got, err := ParsePosition(in); err != nil || got != want {
			t.Errorf("ParsePosition(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "2147483648", "99999999999999999999", "1.5", "1e3", " 1", "+1x", "abc"} {
		if got, err := ParsePosition(in); !errors.Is(err, ErrInvalidPosition) {
			t.Errorf("ParsePosition(%q) = %d, %v; want ErrInvalidPosition", in, got, err)
		}
	}
}

// Every face reads client names with NormalizeUsername, so "@Name" means
// the same channel in REST paths and bodies, feeds and GraphQL.
func TestNormalizeUsername(t *testing.T) {
	for in, want := range map[string]string{
		"tmefeed_news": "tmefeed_news", "@tmefeed_news": "tmefeed_news", "@TmeFeed_News": "tmefeed_news",
		" @durov ": "durov", "Durov\n": "durov",
	} {
		if got, err := NormalizeUsername(in); err != nil || got != want {
			t.Errorf("NormalizeUsername(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// One '@' only, and the rest is checked as ValidUsername checks it.
	for _, in := range []string{"@@durov", "@", "@abc", "d@urov", "durov@", "@1abc", ""} {
		if got, err := NormalizeUsername(in); !errors.Is(err, ErrInvalidUsername) {
			t.Errorf("NormalizeUsername(%q) = %q, %v; want ErrInvalidUsername", in, got, err)
		}
	}
}

func TestValidSearchQuery(t *testing.T) {
	for in, want := range map[string]string{
		"retro":                             "retro",
		"  two words ":                      "two words",
		"шалом עולם":                        "шалом עולם",
		strings.Repeat("я", MaxSearchQuery): strings.Repeat("я", MaxSearchQuery),
	} {
		if got, err := ValidSearchQuery(in); err != nil || got != want {
			t.Errorf("ValidSearchQuery(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"":                                    "bad request: the search query must not be empty",
		"   ":                                 "bad request: the search query must not be empty",
		"\xff\xfe":                            "bad request: the search query must be UTF-8 text",
		strings.Repeat("x", MaxSearchQuery+1): "bad request: the search query must be at most 128 characters",
		"a\x00b":                              "bad request: the search query must not hold control characters",
	} {
		if _, err := ValidSearchQuery(in); !errors.Is(err, ErrBadRequest) || err.Error() != msg {
			t.Errorf("ValidSearchQuery(%q): %v, want %q wrapping ErrBadRequest", in, err, msg)
		}
	}
}
