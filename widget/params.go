package widget

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
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

// errBadParam is a query parameter the widget cannot answer; its text says
// what to fix.
var errBadParam = errors.New("bad parameter")

func badParam(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadParam}, a...)...)
}

// The query parameters, as the GraphQL FeedFilter names its fields.
var knownParams = []string{"channels", "limit", "order", "theme", "mediaKinds", "hashtags", "query",
	"since", "until", "excludeForwarded", "excludeReplies", "excludeService"}

// parseView reads a widget's query. Every parameter is checked: an unknown
// or repeated one is an error rather than silently ignored.
func parseView(q url.Values, maxChannels, maxLimit int) (view, error) {
	v := view{limit: defaultLimit, theme: defaultTheme, req: feed.Request{Order: defaultOrder}}
	for k, vals := range q {
		if !slices.Contains(knownParams, k) {
			return v, badParam("unknown parameter %q; known: %s", clip(k), strings.Join(knownParams, ", "))
		}
		if len(vals) > 1 {
			return v, badParam("%q is given %d times; give it once (lists are comma-separated)", k, len(vals))
		}
	}
	for _, raw := range splitList(q.Get("channels")) {
		ch, err := pages.NormalizeUsername(raw)
		if err != nil {
			return v, badParam("channels: %v", err)
		}
		if !slices.Contains(v.req.Channels, ch) {
			v.req.Channels = append(v.req.Channels, ch)
		}
	}
	if len(v.req.Channels) == 0 {
		return v, badParam("channels: list at least one channel, e.g. ?channels=durov,telegram")
	}
	if len(v.req.Channels) > maxChannels {
		return v, badParam("channels: at most %d channels, got %d", maxChannels, len(v.req.Channels))
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			return v, badParam("limit: want a whole number from 1 to %d, got %q", maxLimit, clip(s))
		}
		v.limit = n
	}
	v.req.First = v.limit
	if s := q.Get("order"); s != "" {
		o, ok := orderOf(s)
		if !ok {
			return v, badParam("order: want newest or ranked, got %q", clip(s))
		}
		v.req.Order = o
	}
	if s := q.Get("theme"); s != "" {
		if !slices.Contains(themes, s) {
			return v, badParam("theme: want auto, light or dark, got %q", clip(s))
		}
		v.theme = s
	}
	f := &v.req.Filter
	for _, s := range splitList(q.Get("mediaKinds")) {
		k, ok := mediaKindOf(s)
		if !ok {
			var names []string
			for _, k := range parser.MediaKinds() {
				names = append(names, string(k))
			}
			return v, badParam("mediaKinds: unknown kind %q; known: %s", clip(s), strings.Join(names, ", "))
		}
		f.MediaKinds = append(f.MediaKinds, k)
	}
	f.Hashtags = splitList(q.Get("hashtags"))
	f.Query = strings.TrimSpace(q.Get("query"))
	var err error
	if f.Since, err = timeParam(q, "since"); err != nil {
		return v, err
	}
	if f.Until, err = timeParam(q, "until"); err != nil {
		return v, err
	}
	for name, dst := range map[string]*bool{"excludeForwarded": &f.ExcludeForwarded, "excludeReplies": &f.ExcludeReplies, "excludeService": &f.ExcludeService} {
		if s := q.Get(name); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return v, badParam("%s: want true or false, got %q", name, clip(s))
			}
			*dst = b
		}
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

func orderOf(s string) (feed.Order, bool) {
	for _, o := range feed.Orders() {
		if strings.EqualFold(s, string(o)) {
			return o, true
		}
	}
	return "", false
}

// mediaKindOf reads a media kind as the parser (image) or GraphQL (IMAGE,
// ROUND_VIDEO) spells it.
func mediaKindOf(s string) (parser.MediaKind, bool) {
	norm := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	for _, k := range parser.MediaKinds() {
		if norm == string(k) {
			return k, true
		}
	}
	return "", false
}

func timeParam(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, badParam("%s: want an RFC 3339 date-time such as 2026-03-01T00:00:00Z, got %q", name, clip(s))
	}
	return t, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// clip shortens what a client sent before it is shown back.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	r := []rune(s)
	if len(r) > max {
		r = r[:max]
	}
	return string(r) + "…"
}
