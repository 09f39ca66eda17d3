package widget

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feed/feedquery"
	"github.com/tmefeed/tmefeed/tme"
)

// Themes a widget can be shown in; auto follows the viewer's system.
var themes = []string{"auto", "light", "dark"}

// Defaults of the query parameters.
const (
	defaultLimit = 20
	defaultTheme = "auto"
	defaultOrder = feed.Newest // a live widget shows what is new first
)

// view is a widget's query: which feed, and how it looks.
type view struct {
	req   feed.Request
	limit int
	theme string
	// query is the canonical query string of the feed's parameters
	// (theme left out), for the fragment URL and the snippet.
	query string
}

// knownParams are the widget's parameters: the feed's, as GraphQL names
// them, and its theme.
var knownParams = append(feedquery.GraphQLNames.List(), "theme")

// parseView reads a widget's query (r.URL.RawQuery) with the rules and
// messages every face that takes a feed in its query shares (package
// feedquery); the channel names are checked here, since the widget names
// them in its title and its subscription.
func parseView(raw string, maxChannels, maxLimit int) (view, error) {
	q, err := feedquery.Parse(raw, feedquery.Options{
		Names:        feedquery.GraphQLNames,
		Style:        feedquery.StyleWidget,
		Extra:        []string{"theme"},
		MinLimit:     1,
		MaxLimit:     maxLimit,
		DefaultLimit: defaultLimit,
		DefaultOrder: defaultOrder,
	})
	if err != nil {
		return view{}, err
	}
	v := view{req: q.Request, limit: q.Request.First, theme: defaultTheme}
	v.req.Channels = nil
	for _, raw := range q.Request.Channels {
		ch, err := tme.NormalizeUsername(raw)
		if err != nil {
			return v, fmt.Errorf("channels: %w", err)
		}
		if !slices.Contains(v.req.Channels, ch) {
			v.req.Channels = append(v.req.Channels, ch)
		}
	}
	if len(v.req.Channels) > maxChannels {
		return v, fmt.Errorf("channels: at most %d channels, got %d", maxChannels, len(v.req.Channels))
	}
	if s, ok := q.Extra["theme"]; ok {
		if !slices.Contains(themes, s) {
			return v, fmt.Errorf("theme: want auto, light or dark, got %q", clip(s))
		}
		v.theme = s
	}
	v.query = canonicalQuery(v)
	return v, nil
}

// canonicalQuery writes the feed's parameters back in one order, leaving
// out defaults, so equal feeds have equal fragment URLs. The request is
// written back by the reader that read it (feedquery.FieldsOf).
func canonicalQuery(v view) string {
	var b strings.Builder
	add := func(k string, vals ...string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		for i, val := range vals {
			if i > 0 {
				b.WriteByte(',') // lists stay readable in a snippet
			}
			b.WriteString(url.QueryEscape(val))
		}
	}
	n := feedquery.GraphQLNames
	f := feedquery.FieldsOf(v.req, false)
	add(n.Channels, f.Channels...)
	if v.limit != defaultLimit {
		add(n.Limit, strconv.Itoa(v.limit))
	}
	if v.req.Order != defaultOrder {
		add(n.Order, strings.ToLower(f.Order))
	}
	for _, l := range []struct {
		k    string
		vals []string
	}{{n.MediaKinds, f.MediaKinds}, {n.Hashtags, f.Hashtags}} {
		if len(l.vals) > 0 {
			add(l.k, l.vals...)
		}
	}
	for _, s := range []struct{ k, v string }{{n.Query, f.Query}, {n.Since, f.Since}, {n.Until, f.Until}} {
		if s.v != "" {
			add(s.k, s.v)
		}
	}
	for _, x := range []struct {
		k string
		b bool
	}{{n.ExcludeForwarded, f.ExcludeForwarded}, {n.ExcludeReplies, f.ExcludeReplies}, {n.ExcludeService, f.ExcludeService}} {
		if x.b {
			add(x.k, "true")
		}
	}
	return b.String()
}

// clip shortens what a client sent before it is shown back.
func clip(s string) string { return feedquery.Clip(s) }
