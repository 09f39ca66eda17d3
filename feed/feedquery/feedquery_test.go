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

// A request given as fields (a JSON body, GraphQL's arguments) reads as
// the same query string does, and with the same messages.
func TestFieldsReadAsTheQueryString(t *testing.T) {
	q, err := feedquery.Parse("channels=a,b&limit=7&order=newest&media_kinds=IMAGE,image,roundvideo&hashtags=x&query=cats"+
		"&since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00Z&exclude_service", rest)
	if err != nil {
		t.Fatal(err)
	}
	seven := 7
	f := feedquery.Fields{Channels: []string{"a", "b"}, First: &seven, Order: "NEWEST", MediaKinds: []string{"image", "IMAGE", "ROUND_VIDEO"},
		Hashtags: []string{"x"}, Query: "cats", Since: "2026-01-01T00:00:00Z", Until: "2026-02-01T00:00:00Z", ExcludeService: true}
	got, err := feedquery.Read(f, rest)
	if err != nil || !equal(got, q.Request) {
		t.Errorf("Read: %+v, %v; want %+v", got, err, q.Request)
	}
	tooMany := 501
	for _, c := range []struct {
		f   feedquery.Fields
		msg string
	}{
		{feedquery.Fields{}, `"channels" must list at least one name`},
		{feedquery.Fields{Channels: []string{"a"}, First: &tooMany}, `"limit" must be from 0 to 500`},
		{feedquery.Fields{Channels: []string{"a"}, Order: "oldest"}, `"order" must be one of "newest", "ranked"`},
		{feedquery.Fields{Channels: []string{"a"}, MediaKinds: []string{"photo"}}, `"media_kinds" must list kinds among "image", "video"`},
		{feedquery.Fields{Channels: []string{"a"}, Until: "soon"}, `"until" must be an RFC 3339 date such as 2024-05-01T12:30:00Z, not "soon"`},
	} {
		if _, err := feedquery.Read(c.f, rest); err == nil || !strings.Contains(err.Error(), c.msg) || !errors.Is(err, feed.ErrBadRequest) {
			t.Errorf("%+v: %v; want %q", c.f, err, c.msg)
		}
	}
}

// GraphQL's arguments: first and last together are refused; either alone
// pages, and nothing given is the defaults.
func TestFirstAndLast(t *testing.T) {
	gql := feedquery.Options{Names: feedquery.GraphQLNames, Style: feedquery.StyleGraphQL, DefaultLimit: 50, DefaultOrder: feed.Ranked}
	three := 3
	if _, err := feedquery.Read(feedquery.Fields{Channels: []string{"a"}, First: &three, Last: &three}, gql); err == nil ||
		!strings.Contains(err.Error(), "give first or last, not both") || !errors.Is(err, feed.ErrBadRequest) {
		t.Errorf("first and last: %v", err)
	}
	if _, err := feedquery.Read(feedquery.Fields{}, gql); err == nil || err.Error() != "no channels given" {
		t.Errorf("no channels: %v", err)
	}
	r, err := feedquery.Read(feedquery.Fields{Channels: []string{"a"}, Last: &three, Before: "c"}, gql)
	if err != nil || r.Last == nil || *r.Last != 3 || r.First != 50 || r.Before != "c" || r.Order != feed.Ranked {
		t.Errorf("last: %+v, %v", r, err)
	}
	// Without a MaxLimit the page size is feed's to check.
	big := 10000
	if r, err := feedquery.Read(feedquery.Fields{Channels: []string{"a"}, First: &big}, gql); err != nil || r.First != big {
		t.Errorf("first %d: %+v, %v", big, r, err)
	}
}

// What FieldsOf writes back, Read reads as the same request, in either
// spelling of media kinds; dates keep their instant to the nanosecond.
func TestFieldsOfReadsBack(t *testing.T) {
	last := 4
	req := feed.Request{Channels: []string{"a", "b"}, First: 9, Last: &last, After: "x", Before: "y", Order: feed.Newest, Filter: feed.Filter{
		MediaKinds: []parser.MediaKind{parser.MediaRoundVideo, parser.MediaImage}, Hashtags: []string{"h"}, Query: "q",
		Since: time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC), Until: time.Date(2026, 2, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)),
		ExcludeForwarded: true, ExcludeReplies: true,
	}}
	for _, graphQL := range []bool{false, true} {
		f := feedquery.FieldsOf(req, graphQL)
		if graphQL && !slices.Equal(f.MediaKinds, []string{"ROUND_VIDEO", "IMAGE"}) || !graphQL && !slices.Equal(f.MediaKinds, []string{"roundvideo", "image"}) {
			t.Errorf("graphQL %v: media kinds %q", graphQL, f.MediaKinds)
		}
		f.Last = nil // Read takes one of first and last
		got, err := feedquery.Read(f, rest)
		if err != nil || !equal(got, req) || got.After != "x" || got.Before != "y" {
			t.Errorf("graphQL %v: %+v, %v; want %+v", graphQL, got, err, req)
		}
	}
}
