package graph

import (
	"fmt"
	"time"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feed/feedquery"
	"github.com/tmefeed/tmefeed/graph/model"
)

// feedOptions read GraphQL's feed arguments: the schema's types have
// checked the values already (orders and media kinds are enums, dates
// DateTime), so what is left to refuse is first and last together, and
// feed checks the channels, the page size and the cursors.
var feedOptions = feedquery.Options{
	Names:        feedquery.GraphQLNames,
	Style:        feedquery.StyleGraphQL,
	DefaultLimit: feed.DefaultFirst,
	DefaultOrder: feed.Ranked,
}

// feedRequest turns feed's arguments into a feed.Request with the reader
// every face's feed request passes (feedquery.Read). Giving both first
// and last is refused, as Relay's spec discourages it (the result would
// be the last of the first n).
func feedRequest(channels []string, first *int, after *string, last *int, before *string, order *model.FeedOrder, filter *model.FeedFilter) (feed.Request, error) {
	f := filterFields(channels, filter)
	f.First, f.Last = first, last
	if after != nil {
		f.After = *after
	}
	if before != nil {
		f.Before = *before
	}
	if order != nil {
		f.Order = string(*order)
	}
	return readFeed(f)
}

// feedFilter turns a FeedFilter argument of feedUpdates, watching
// channels, into a feed.Filter, read as feed's is.
func feedFilter(channels []string, filter *model.FeedFilter) (feed.Filter, error) {
	req, err := readFeed(filterFields(channels, filter))
	return req.Filter, err
}

func readFeed(f feedquery.Fields) (feed.Request, error) {
	req, err := feedquery.Read(f, feedOptions)
	if err != nil {
		return req, fmt.Errorf("%w: %w", fault.ErrBadRequest, err)
	}
	return req, nil
}

// filterFields are the fields of a feed request with channels and filter.
func filterFields(channels []string, f *model.FeedFilter) feedquery.Fields {
	out := feedquery.Fields{Channels: channels}
	if f == nil {
		return out
	}
	for _, k := range f.MediaKinds {
		out.MediaKinds = append(out.MediaKinds, string(k))
	}
	out.Hashtags = f.Hashtags
	if f.Query != nil {
		out.Query = *f.Query
	}
	// Read takes dates as text; to the nanosecond, they read back as the
	// same instants.
	if f.Since != nil {
		out.Since = f.Since.Format(time.RFC3339Nano)
	}
	if f.Until != nil {
		out.Until = f.Until.Format(time.RFC3339Nano)
	}
	out.ExcludeForwarded = f.ExcludeForwarded != nil && *f.ExcludeForwarded
	out.ExcludeReplies = f.ExcludeReplies != nil && *f.ExcludeReplies
	out.ExcludeService = f.ExcludeService != nil && *f.ExcludeService
	return out
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
