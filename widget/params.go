package widget

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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
// out defaults, so equal feeds have equal fragment URLs.
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
	add("channels", v.req.Channels...)
	if v.limit != defaultLimit {
		add("limit", strconv.Itoa(v.limit))
	}
	if v.req.Order != defaultOrder {
		add("order", strings.ToLower(string(v.req.Order)))
	}
	f := v.req.Filter
	if len(f.MediaKinds) > 0 {
		var ks []string
		for _, k := range f.MediaKinds {
			ks = append(ks, string(k))
		}
		add("mediaKinds", ks...)
	}
	if len(f.Hashtags) > 0 {
		add("hashtags", f.Hashtags...)
	}
	if f.Query != "" {
		add("query", f.Query)
	}
	if !f.Since.IsZero() {
		add("since", f.Since.Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		add("until", f.Until.Format(time.RFC3339))
	}
	for _, x := range []struct {
		k string
		b bool
	}{{"excludeForwarded", f.ExcludeForwarded}, {"excludeReplies", f.ExcludeReplies}, {"excludeService", f.ExcludeService}} {
		if x.b {
			add(x.k, "true")
		}
	}
	return b.String()
}

// clip shortens what a client sent before it is shown back.
func clip(s string) string { return feedquery.Clip(s) }
