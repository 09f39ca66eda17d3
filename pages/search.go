package pages

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

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

// SearchRequest is the request for Telegram's search page of channel,
// made for client (see tme.Request.Client); query must have passed
// ValidSearchQuery. A search is history for the origin budget.
func SearchRequest(channel, query, client string) tme.Request {
	return tme.Request{Kind: tme.KindSearch, Channel: channel, Query: query, Class: tme.ClassHistory, Client: client}
}

// Found is the outcome of a search: the matching posts of one search
// page, newest first.
type Found struct {
	Channel *parser.Channel // the page's header; nil if it had none
	List    []*parser.Post  // shared, must not be modified
	HasMore bool            // Telegram offers older matches beyond List
}

// Search returns up to first posts of channel matching query, newest
// first, from Telegram's own search page (t.me/s/<channel>?q=<query>),
// read and cached like any page, for client (see tme.Request.Client).
// No match is an empty List, not an error.
func (s *Service) Search(ctx context.Context, channel, query string, first int, client string) (Found, error) {
	q, err := ValidSearchQuery(query)
	if err != nil {
		return Found{}, err
	}
	if first < 0 {
		return Found{}, fmt.Errorf("%w: first must not be negative", ErrBadRequest)
	}
	res, err := s.get(ctx, SearchRequest(channel, q, client), cache.GetOptions{})
	if err != nil {
		return Found{}, err
	}
	posts := res.Page.Content.Posts // oldest first
	out := Found{Channel: res.Page.Channel, List: make([]*parser.Post, 0, min(first, len(posts)))}
	for i := len(posts) - 1; i >= 0 && len(out.List) < first; i-- {
		out.List = append(out.List, &posts[i])
	}
	out.HasMore = len(out.List) < len(posts) || res.Page.Meta.Offset.Before != 0
	return out, nil
}
