package graph

import (
	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph/model"
)

// feedRequest turns feed's arguments into a feed.Request. Giving both
// first and last is refused, as Relay's spec discourages it (the result
// would be the last of the first n).
func feedRequest(channels []string, first *int, after *string, last *int, before *string, order *model.FeedOrder, filter *model.FeedFilter) (feed.Request, error) {
	req := feed.Request{Channels: channels, First: feed.DefaultFirst, Order: feed.Ranked}
	switch {
	case first != nil && last != nil:
		return req, inputError("give first or last, not both: first pages forwards from after, last backwards from before")
	case first != nil:
		req.First = *first
	case last != nil:
		req.Last = last
	}
	if after != nil {
		req.After = *after
	}
	if before != nil {
		req.Before = *before
	}
	if order != nil {
		o, err := model.FeedOrderOf(*order)
		if err != nil {
			return req, err
		}
		req.Order = o
	}
	var err error
	req.Filter, err = feedFilter(filter)
	return req, err
}

// feedFilter turns a FeedFilter argument (of feed and feedUpdates) into a
// feed.Filter.
func feedFilter(f *model.FeedFilter) (feed.Filter, error) {
	var out feed.Filter
	if f == nil {
		return out, nil
	}
	for _, k := range f.MediaKinds {
		mk, err := model.ParserMediaKind(k)
		if err != nil {
			return out, err
		}
		out.MediaKinds = append(out.MediaKinds, mk)
	}
	out.Hashtags = f.Hashtags
	if f.Query != nil {
		out.Query = *f.Query
	}
	if f.Since != nil {
		out.Since = *f.Since
	}
	if f.Until != nil {
		out.Until = *f.Until
	}
	out.ExcludeForwarded = f.ExcludeForwarded != nil && *f.ExcludeForwarded
	out.ExcludeReplies = f.ExcludeReplies != nil && *f.ExcludeReplies
	out.ExcludeService = f.ExcludeService != nil && *f.ExcludeService
	return out, nil
}

// feedPageSize is the most posts a feed field with these arguments can
// return, for pricing it.
func feedPageSize(first, last *int) int {
	switch {
	case first != nil:
		return *first
	case last != nil:
		return *last
	}
	return feed.DefaultFirst
}

// feedConnection adapts a feed page to the schema.
func feedConnection(p *feed.Page) *model.FeedConnection {
	c := &model.FeedConnection{
		Edges:          make([]*model.FeedEdge, len(p.Items)),
		PageInfo:       feedPageInfo(p),
		TotalCount:     p.TotalCount,
		FailedChannels: failedChannels(p),
	}
	for i := range p.Items {
		it := &p.Items[i]
		c.Edges[i] = &model.FeedEdge{Cursor: it.Cursor, Node: model.ItemOf(it, p.Feed)}
	}
	return c
}

func feedPageInfo(p *feed.Page) *model.PageInfo {
	pi := &model.PageInfo{HasNextPage: p.HasNextPage, HasPreviousPage: p.HasPreviousPage}
	if n := len(p.Items); n > 0 {
		pi.StartCursor = &p.Items[0].Cursor
		pi.EndCursor = &p.Items[n-1].Cursor
	}
	return pi
}

func failedChannels(p *feed.Page) []*model.FailedChannel {
	out := make([]*model.FailedChannel, len(p.Failed))
	for i, f := range p.Failed {
		c := fault.Classify(f.Err)
		out[i] = &model.FailedChannel{Username: f.Username, Code: model.ChannelErrorCode(graphCode(c.Kind)), Reason: c.Message, Feed: p.Feed}
	}
	return out
}
