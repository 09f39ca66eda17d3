package feedquery_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feed/feedquery"
	"github.com/tmefeed/tmefeed/parser"
)

var (
	rest   = feedquery.Options{Names: feedquery.RESTNames, Style: feedquery.StyleREST, RepeatLists: true, MaxLimit: 500, DefaultLimit: 100}
	widget = feedquery.Options{Names: feedquery.GraphQLNames, Style: feedquery.StyleWidget, Extra: []string{"theme"},
		MinLimit: 1, MaxLimit: 100, DefaultLimit: 20, DefaultOrder: feed.Newest}
)

// The same feed, asked in each face's spelling, is the same request.
func TestBothSpellingsReadTheSameRequest(t *testing.T) {
	r, err := feedquery.Parse("channels=a,b&channels=c&order=RANKED&limit=7&media_kinds=image,ROUND_VIDEO&hashtags=%23x,+y&query=+cats+"+
		"&since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00Z&exclude_forwarded&exclude_replies=false&exclude_service=1", rest)
	if err != nil {
		t.Fatal(err)
	}
	w, err := feedquery.Parse("channels=a,b,c&order=ranked&limit=7&mediaKinds=IMAGE,roundvideo&hashtags=%23x,y&query=cats"+
		"&since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00Z&excludeForwarded=true&excludeService=true&theme=dark", widget)
	if err != nil {
		t.Fatal(err)
	}
	want := feed.Request{Channels: []string{"a", "b", "c"}, First: 7, Order: feed.Ranked, Filter: feed.Filter{
		MediaKinds: []parser.MediaKind{parser.MediaImage, parser.MediaRoundVideo}, Hashtags: []string{"#x", "y"}, Query: "cats",
		Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
		ExcludeForwarded: true, ExcludeService: true,
	}}
	for name, got := range map[string]feed.Request{"rest": r.Request, "widget": w.Request} {
		if !equal(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if w.Extra["theme"] != "dark" || r.Given["media_kinds"] != "image,ROUND_VIDEO" {
		t.Errorf("extra %q, given %q", w.Extra, r.Given)
	}
	// Defaults.
	d, err := feedquery.Parse("channels=a", widget)
	if err != nil || d.Request.First != 20 || d.Request.Order != feed.Newest {
		t.Errorf("defaults: %+v %v", d.Request, err)
	}
}

func equal(a, b feed.Request) bool {
	fa, fb := a.Filter, b.Filter
	return slices.Equal(a.Channels, b.Channels) && a.First == b.First && a.Order == b.Order &&
		slices.Equal(fa.MediaKinds, fb.MediaKinds) && slices.Equal(fa.Hashtags, fb.Hashtags) && fa.Query == fb.Query &&
		fa.Since.Equal(fb.Since) && fa.Until.Equal(fb.Until) &&
		fa.ExcludeForwarded == fb.ExcludeForwarded && fa.ExcludeReplies == fb.ExcludeReplies && fa.ExcludeService == fb.ExcludeService
}

// Every mistake is refused with a message naming the parameter as the
// face spells it, in that face's wording, and matches feed.ErrBadRequest.
func TestMistakesAreNamed(t *testing.T) {
	for _, c := range []struct {
		opts       feedquery.Options
		query, msg string
	}{
		{rest, "", `"channels" must list at least one name`},
		{widget, "channels=", "channels: list at least one channel"},
		{rest, "channels=a&limt=3", `unknown parameter "limt"; want channels, limit, order, media_kinds`},
		{widget, "channels=a&media_kinds=image", `unknown parameter "media_kinds"; known: channels, limit, order, mediaKinds`},
		{rest, "channels=a&limit=1&limit=2", `"limit" must be given once`},
		{widget, "channels=a&channels=b", `"channels" is given 2 times`},
		{rest, "channels=a&limit=x", `"limit" must be a whole number, not "x"`},
		{rest, "channels=a&limit=501", `"limit" must be from 0 to 500`},
		{widget, "channels=a&limit=0", `limit: want a whole number from 1 to 100, got "0"`},
		{rest, "channels=a&order=oldest", `"order" must be one of "newest", "ranked"`},
		{widget, "channels=a&order=oldest", `order: want newest or ranked, got "oldest"`},
		{rest, "channels=a&media_kinds=image,hologram", `"media_kinds" must list kinds among "image"`},
		{widget, "channels=a&mediaKinds=hologram", `mediaKinds: unknown kind "hologram"; known: image,`},
		{rest, "channels=a&since=yesterday", `"since" must be an RFC 3339 date`},
		{widget, "channels=a&until=tomorrow", `until: want an RFC 3339 date-time`},
		{rest, "channels=a&exclude_replies=maybe", `"exclude_replies" must be true or false, not "maybe"`},
		{widget, "channels=a&excludeReplies=maybe", `excludeReplies: want true or false, got "maybe"`},
		{widget, "channels=a&q=%zz", "the query string is malformed"},
		{rest, "channels=a&query=" + strings.Repeat("é", 100) + "&limit=" + strings.Repeat("9", 100), `"limit" must be a whole number, not "99999`},
	} {
		_, err := feedquery.Parse(c.query, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.msg) || !errors.Is(err, feed.ErrBadRequest) {
			t.Errorf("?%s: %v; want %q", c.query, err, c.msg)
		}
	}
	if _, err := feedquery.Parse("channels=a&limit="+strings.Repeat("9", 100), rest); err == nil || len(err.Error()) > 200 {
		t.Errorf("a long value is not clipped: %v", err)
	}
}
