package pages

import (
	"context"
	"fmt"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// SearchRequest is the request for Telegram's search page of channel,
// made for client (see tme.Request.Client); query must have passed
// tme.ValidSearchQuery. A search is history for the origin budget.
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
	q, err := tme.ValidSearchQuery(query)
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
