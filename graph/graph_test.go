package graph_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph/ids"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

// The recorded channels of the fixture origin.
var recorded = []string{"emoji_party", "hadashot_today", "just_launched", "kanal_novostei", "retro_channel", "tmefeed_news"}

func TestChannel(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.query(t, `query($name: String!) {
		channel(username: $name) {
			username title titleHTML description descriptionHTML avatar verified url
			counters { subscribers subscribersText photos videos files links }
			posts(first: 3) {
				edges { cursor node { id messageId url channel date } }
				pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
			}
		}
	}`, map[string]any{"name": "@TmeFeed_News"})
	var data struct {
		Channel struct {
			Username, Title, URL string
			Description          *string
			Verified             bool
			Counters             struct {
				Subscribers     *int
				SubscribersText *string
			}
			Posts struct {
				Edges []struct {
					Cursor string
					Node   struct {
						ID        string
						MessageID int
						URL       string
						Channel   string
						Date      string
					}
				}
				PageInfo struct {
					HasNextPage, HasPreviousPage bool
					StartCursor, EndCursor       string
				}
			}
		}
	}
	r.decode(t, &data)
	c := data.Channel
	if c.Username != "tmefeed_news" || c.Title == "" || !c.Verified || c.URL != "https://t.me/tmefeed_news" || c.Description == nil {
		t.Errorf("channel = %+v", c)
	}
	if c.Counters.Subscribers == nil || *c.Counters.Subscribers != 12300 || c.Counters.SubscribersText == nil {
		t.Errorf("counters = %+v", c.Counters)
	}
	var got []int
	for _, ed := range c.Posts.Edges {
		got = append(got, ed.Node.MessageID)
		if ed.Cursor != fmt.Sprint(ed.Node.MessageID) || ed.Node.Channel != "tmefeed_news" || ed.Node.URL != fmt.Sprintf("https://t.me/tmefeed_news/%d", ed.Node.MessageID) || ed.Node.ID != ids.Post("tmefeed_news", ed.Node.MessageID) {
			t.Errorf("edge = %+v", ed)
		}
		if _, err := time.Parse(time.RFC3339, ed.Node.Date); err != nil {
			t.Errorf("date %q is not RFC 3339", ed.Node.Date)
		}
	}
	if !slices.Equal(got, []int{54, 53, 52}) {
		t.Errorf("newest posts = %v, want [54 53 52]", got)
	}
	if pi := c.Posts.PageInfo; !pi.HasNextPage || pi.HasPreviousPage || pi.StartCursor != "54" || pi.EndCursor != "52" {
		t.Errorf("pageInfo = %+v", pi)
	}
	// The header came from the page the posts were read from: one origin request.
	if n := e.origin.Total(); n != 1 {
		t.Errorf("origin requests = %d, want 1", n)
	}
}

// Walking a channel's posts with after: every post once, newest first,
// across t.me's "more" chunks.
func TestChannelPostsPagination(t *testing.T) {
	e := newEnv(t, envOptions{})
	const q = `query($after: String) {
		channel(username: "tmefeed_news") {
			posts(first: 7, after: $after) { edges { node { messageId } } pageInfo { hasNextPage hasPreviousPage endCursor } }
		}
	}`
	type page struct {
		Channel struct {
			Posts struct {
				Edges    []struct{ Node struct{ MessageID int } }
				PageInfo struct {
					HasNextPage, HasPreviousPage bool
					EndCursor                    *string
				}
			}
		}
	}
	var numbers []int
	vars := map[string]any{}
	for i := 0; ; i++ {
		var p page
		e.query(t, q, vars).decode(t, &p)
		for _, ed := range p.Channel.Posts.Edges {
			numbers = append(numbers, ed.Node.MessageID)
		}
		if (i > 0) != p.Channel.Posts.PageInfo.HasPreviousPage {
			t.Errorf("page %d: hasPreviousPage = %v", i, p.Channel.Posts.PageInfo.HasPreviousPage)
		}
		if !p.Channel.Posts.PageInfo.HasNextPage {
			break
		}
		if i > 50 {
			t.Fatal("no end")
		}
		vars["after"] = *p.Channel.Posts.PageInfo.EndCursor
	}
	if len(numbers) <= 20 {
		t.Fatalf("walked only %d posts; the walk must cross into older chunks", len(numbers))
	}
	for i := 1; i < len(numbers); i++ {
		if numbers[i] >= numbers[i-1] {
			t.Fatalf("message numbers not strictly descending (a post repeated or out of order): %v", numbers)
		}
	}

	// before: the posts just newer than a cursor; around: centred on a message.
	var p page
	e.query(t, `{ channel(username: "tmefeed_news") { posts(first: 2, before: "50") { edges { node { messageId } } pageInfo { hasNextPage hasPreviousPage } } } }`, nil).decode(t, &p)
	if got := p.Channel.Posts.Edges; len(got) != 2 || got[0].Node.MessageID != 52 || got[1].Node.MessageID != 51 || !p.Channel.Posts.PageInfo.HasNextPage || !p.Channel.Posts.PageInfo.HasPreviousPage {
		t.Errorf("before 50 = %+v", p.Channel.Posts)
	}
	p = page{}
	e.query(t, `{ channel(username: "tmefeed_news") { posts(first: 3, around: 45) { edges { node { messageId } } } } }`, nil).decode(t, &p)
	var around []int
	for _, ed := range p.Channel.Posts.Edges {
		around = append(around, ed.Node.MessageID)
	}
	if !slices.Equal(around, []int{46, 45, 44}) {
		t.Errorf("around 45 = %v, want [46 45 44]", around)
	}
	r := e.query(t, `{ channel(username: "tmefeed_news") { posts(before: "50", after: "40") { edges { cursor } } } }`, nil)
	if !slices.Equal(r.codes(), []string{"BAD_USER_INPUT"}) {
		t.Errorf("before and after together: %+v", r.Errors)
	}
}

func TestPost(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.query(t, `{ post(channel: "tmefeed_news", messageId: 52) {
		id messageId url channel date edited views viewsText author isService
		text { plain html entities { kind offset length url language emojiId } }
		media { kind url thumb waves duration durationText title extra available }
		poll { question type votes votesText options { text percent } }
		location { latitude longitude address url map }
		inlineButtons { text url }
		reply { toMessage name nameHTML text textHTML cover }
		linkPreview { url title siteName description descriptionHTML thumb }
		reactions { kind emoji emojiId emojiImage count countText }
		forwardedFrom { name nameHTML url }
		service { type text }
	} }`, nil)
	var data struct {
		Post struct {
			ID        string
			MessageID int
			Views     int
			ViewsText string
			Text      struct{ Plain string }
			Media     []struct{ Kind string }
			Reactions []struct {
				Kind  string
				Count int
			}
		}
	}
	r.decode(t, &data)
	p := data.Post
	if p.MessageID != 52 || p.ID != ids.Post("tmefeed_news", 52) || p.Views != 12500000 || p.ViewsText == "" || !strings.HasPrefix(p.Text.Plain, "The chart everyone") {
		t.Errorf("post = %+v", p)
	}
	if len(p.Media) != 1 || p.Media[0].Kind != "IMAGE" || len(p.Reactions) != 4 {
		t.Errorf("media %+v reactions %+v", p.Media, p.Reactions)
	}

	r = e.query(t, `{ post(channel: "tmefeed_news", messageId: 36) { id } }`, nil)
	if !slices.Equal(r.codes(), []string{"NOT_FOUND"}) || string(r.Data) != `{"post":null}` {
		t.Errorf("missing post: %s %+v", r.Data, r.Errors)
	}

	// A caption beside media the web cannot show keeps its text and says so.
	var part struct {
		Post struct {
			Text  struct{ Plain string }
			Media []struct {
				Kind      string
				Available bool
			}
		}
	}
	e.query(t, `{ post(channel: "hadashot_today", messageId: 16) { text { plain } media { kind available } } }`, nil).decode(t, &part)
	if part.Post.Text.Plain == "" || len(part.Post.Media) != 1 || part.Post.Media[0].Kind != "UNSUPPORTED" || part.Post.Media[0].Available {
		t.Errorf("post with an unsupported part = %+v", part.Post)
	}
}

func TestPreviews(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.query(t, `{ previews(usernames: ["tmefeed_news", "jane_doe_writer", "no_such_name_at_all", "x!"]) {
		username preview { username title subscribers subscribersText verified url } error { code message }
	} }`, nil)
	var data struct {
		Previews []struct {
			Username string
			Preview  *struct {
				Title       string
				Subscribers int
				Verified    bool
			}
			Error *struct{ Code, Message string }
		}
	}
	r.decode(t, &data)
	if len(data.Previews) != 4 {
		t.Fatalf("previews = %+v", data.Previews)
	}
	if p := data.Previews[0]; p.Preview == nil || p.Error != nil || p.Preview.Title == "" || !p.Preview.Verified {
		t.Errorf("tmefeed_news = %+v", p)
	}
	for i, want := range []string{"", "NOT_FOUND", "NOT_FOUND", "BAD_USER_INPUT"} {
		p := data.Previews[i]
		if want == "" {
			continue
		}
		if p.Preview != nil || p.Error == nil || p.Error.Code != want || p.Error.Message == "" {
			t.Errorf("%s: %+v, want error %s", p.Username, p, want)
		}
	}
}

// feedPost is what the feed tests select of every post.
type feedPost struct {
	ID        string
	MessageID int
	Date      string
	Text      *struct {
		Plain    string
		Entities []struct {
			Kind           string
			Offset, Length int
		}
	}
	Media         []struct{ Kind string }
	Poll          *struct{ Question string }
	LinkPreview   *struct{ Title, Description *string }
	Reply         *struct{ ToMessage *int }
	ForwardedFrom *struct{ URL *string }
	IsService     bool
}

type feedData struct {
	Feed struct {
		TotalCount int
		Edges      []struct {
			Cursor string
			Node   struct {
				Score   float64
				Channel struct{ Username string }
				Post    feedPost
			}
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
		FailedChannels []struct{ Username, Code, Reason string }
	}
}

func (d feedData) keys() []string {
	var out []string
	for _, e := range d.Feed.Edges {
		out = append(out, fmt.Sprintf("%s/%d", e.Node.Channel.Username, e.Node.Post.MessageID))
	}
	return out
}

const feedQuery = `query($channels: [String!]!, $first: Int, $after: String, $order: FeedOrder, $filter: FeedFilter) {
	feed(channels: $channels, first: $first, after: $after, order: $order, filter: $filter) {
		totalCount
		edges { cursor node { score channel { username } post {
			id messageId date isService
			text { plain entities { kind offset length } }
			media { kind } poll { question } linkPreview { title description }
			reply { toMessage } forwardedFrom { url }
		} } }
		pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
		failedChannels { username code reason }
	}
}`

func (e *env) feedPage(t *testing.T, vars map[string]any) feedData {
	t.Helper()
	var d feedData
	e.query(t, feedQuery, vars).decode(t, &d)
	return d
}

func TestFeedOrdersAndPagination(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, order := range []string{"NEWEST", "RANKED"} {
		full := e.feedPage(t, map[string]any{"channels": recorded, "first": 2000, "order": order})
		if full.Feed.TotalCount != len(full.Feed.Edges) || full.Feed.TotalCount < 80 {
			t.Fatalf("%s: total %d, %d edges", order, full.Feed.TotalCount, len(full.Feed.Edges))
		}
		for i := 1; i < len(full.Feed.Edges); i++ {
			a, b := full.Feed.Edges[i-1].Node, full.Feed.Edges[i].Node
			if order == "NEWEST" && a.Post.Date < b.Post.Date || order == "RANKED" && a.Score < b.Score {
				t.Fatalf("%s: out of order at %d: %+v then %+v", order, i, a, b)
			}
		}
		// Walk with first: 7; every post once, in the same order.
		var walked []string
		vars := map[string]any{"channels": recorded, "first": 7, "order": order}
		for i := 0; ; i++ {
			p := e.feedPage(t, vars)
			walked = append(walked, p.keys()...)
			if p.Feed.PageInfo.HasPreviousPage != (i > 0) {
				t.Errorf("%s page %d: hasPreviousPage %v", order, i, p.Feed.PageInfo.HasPreviousPage)
			}
			if !p.Feed.PageInfo.HasNextPage {
				break
			}
			vars["after"] = *p.Feed.PageInfo.EndCursor
		}
		if !slices.Equal(walked, full.keys()) {
			t.Errorf("%s: walking pages of 7 differs from the full feed:\n%v\n%v", order, walked, full.keys())
		}
	}
	// A cursor from one order does not page the other.
	p := e.feedPage(t, map[string]any{"channels": recorded, "first": 1, "order": "RANKED"})
	r := e.query(t, feedQuery, map[string]any{"channels": recorded, "first": 1, "order": "NEWEST", "after": *p.Feed.PageInfo.EndCursor})
	if !slices.Equal(r.codes(), []string{"BAD_USER_INPUT"}) {
		t.Errorf("foreign cursor: %+v", r.Errors)
	}
}

// utf16Slice cuts s at offsets counted in UTF-16 code units.
func utf16Slice(s string, off, n int) string {
	u := utf16.Encode([]rune(s))
	if off+n > len(u) {
		return ""
	}
	return string(utf16.Decode(u[off : off+n]))
}

// Each filter gives exactly the posts of the unfiltered feed that satisfy
// it, as computed here from the posts' own fields.
func TestFeedFilters(t *testing.T) {
	e := newEnv(t, envOptions{})
	all := e.feedPage(t, map[string]any{"channels": recorded, "first": 2000, "order": "NEWEST"})
	hashtags := func(p feedPost) []string {
		var out []string
		if p.Text != nil {
			for _, en := range p.Text.Entities {
				if en.Kind == "HASHTAG" {
					out = append(out, strings.ToLower(strings.TrimPrefix(utf16Slice(p.Text.Plain, en.Offset, en.Length), "#")))
				}
			}
		}
		return out
	}
	var someTag string
	for _, ed := range all.Feed.Edges {
		if tags := hashtags(ed.Node.Post); len(tags) > 0 && someTag == "" && ed.Node.Channel.Username == "kanal_novostei" {
			someTag = tags[0]
		}
	}
	since, until := "2026-06-05T00:00:00Z", "2026-06-10T00:00:00Z"
	for _, c := range []struct {
		name   string
		filter map[string]any
		keep   func(p feedPost) bool
	}{
		{"mediaKinds", map[string]any{"mediaKinds": []string{"IMAGE", "GIF"}}, func(p feedPost) bool {
			return slices.ContainsFunc(p.Media, func(m struct{ Kind string }) bool { return m.Kind == "IMAGE" || m.Kind == "GIF" })
		}},
		{"hashtags", map[string]any{"hashtags": []string{"#" + strings.ToUpper(someTag)}}, func(p feedPost) bool {
			return slices.Contains(hashtags(p), someTag)
		}},
		{"query", map[string]any{"query": "TMEFEED"}, func(p feedPost) bool {
			s := ""
			if p.Text != nil {
				s += p.Text.Plain
			}
			if p.Poll != nil {
				s += "\x00" + p.Poll.Question
			}
			if l := p.LinkPreview; l != nil {
				if l.Title != nil {
					s += "\x00" + *l.Title
				}
				if l.Description != nil {
					s += "\x00" + *l.Description
				}
			}
			return strings.Contains(strings.ToLower(s), "tmefeed")
		}},
		{"since+until", map[string]any{"since": since, "until": until}, func(p feedPost) bool { return p.Date >= since && p.Date < until }},
		{"excludeForwarded", map[string]any{"excludeForwarded": true}, func(p feedPost) bool { return p.ForwardedFrom == nil }},
		{"excludeReplies", map[string]any{"excludeReplies": true}, func(p feedPost) bool { return p.Reply == nil }},
		{"excludeService", map[string]any{"excludeService": true}, func(p feedPost) bool { return !p.IsService }},
	} {
		var want []string
		for _, ed := range all.Feed.Edges {
			if c.keep(ed.Node.Post) {
				want = append(want, fmt.Sprintf("%s/%d", ed.Node.Channel.Username, ed.Node.Post.MessageID))
			}
		}
		if len(want) == 0 || len(want) == len(all.Feed.Edges) {
			t.Fatalf("%s: the fixtures do not exercise the filter (%d of %d posts kept)", c.name, len(want), len(all.Feed.Edges))
		}
		got := e.feedPage(t, map[string]any{"channels": recorded, "first": 2000, "order": "NEWEST", "filter": c.filter})
		if !slices.Equal(got.keys(), want) || got.Feed.TotalCount != len(want) {
			t.Errorf("%s: got %v\nwant %v", c.name, got.keys(), want)
		}
	}
	// A malformed DateTime variable is a request error.
	r := e.query(t, feedQuery, map[string]any{"channels": recorded, "filter": map[string]any{"since": "yesterday"}})
	if !slices.Equal(r.codes(), []string{"GRAPHQL_VALIDATION_FAILED"}) {
		t.Errorf("a malformed DateTime: %d %+v", r.status, r.Errors)
	}
}

// The same forwarded original seen in two channels is listed once.
func TestFeedDeduplicatesForwards(t *testing.T) {
	// loadchan004 and loadchan013 are both copies of kanal_novostei (the
	// fourth of nine recorded channels), whose post 1203 forwards
	// https://t.me/gorod_novosti/4410.
	e := newEnv(t, envOptions{synthetic: 13})
	d := e.feedPage(t, map[string]any{"channels": []string{"loadchan004", "loadchan013", "loadchan004"}, "first": 2000, "order": "NEWEST"})
	forwards := 0
	seen := map[string]bool{}
	for _, ed := range d.Feed.Edges {
		p := ed.Node.Post
		if p.ForwardedFrom != nil && p.ForwardedFrom.URL != nil && strings.HasSuffix(*p.ForwardedFrom.URL, "/gorod_novosti/4410") {
			forwards++
		}
		k := fmt.Sprintf("%s/%d", ed.Node.Channel.Username, p.MessageID)
		if seen[k] {
			t.Errorf("%s listed twice", k)
		}
		seen[k] = true
	}
	if forwards != 1 {
		t.Errorf("the forward of gorod_novosti/4410 appears %d times, want 1", forwards)
	}
	if d.Feed.TotalCount != 2*20-1 {
		t.Errorf("total = %d, want 39 (two copies of 20 posts, one shared forward)", d.Feed.TotalCount)
	}
}

func TestFeedPartialFailure(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.origin.SetFault("/s/retro_channel", fixtures.Fault{Status: http.StatusBadGateway})
	d := e.feedPage(t, map[string]any{
		"channels": []string{"tmefeed_news", "emoji_party", "retro_channel", "jane_doe_writer", "nobody_at_all_here", "bad name"},
		"first":    2000,
	})
	got := map[string]string{}
	for _, f := range d.Feed.FailedChannels {
		got[f.Username] = f.Code
		if f.Reason == "" {
			t.Errorf("%s: no reason", f.Username)
		}
	}
	want := map[string]string{"retro_channel": "UPSTREAM_UNAVAILABLE", "jane_doe_writer": "NOT_FOUND", "nobody_at_all_here": "NOT_FOUND", "bad name": "BAD_USER_INPUT"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("failedChannels = %v, want %v", got, want)
	}
	channels := map[string]bool{}
	for _, ed := range d.Feed.Edges {
		channels[ed.Node.Channel.Username] = true
	}
	if len(channels) != 2 || !channels["tmefeed_news"] || !channels["emoji_party"] {
		t.Errorf("channels in the feed = %v, want tmefeed_news and emoji_party", channels)
	}
}

func TestErrorCodes(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.origin.SetFault("/s/emoji_party", fixtures.Fault{Status: http.StatusServiceUnavailable})
	for _, c := range []struct {
		name, query string
		code        string
	}{
		{"bad username", `{ channel(username: "a!") { title } }`, "BAD_USER_INPUT"},
		{"first out of range", `{ feed(channels: ["tmefeed_news"], first: -1) { totalCount } }`, "BAD_USER_INPUT"},
		{"too many channels", `{ feed(channels: [` + distinctNames(101) + `]) { totalCount } }`, "BAD_USER_INPUT"},
		{"bad cursor", `{ feed(channels: ["tmefeed_news"], after: "nope") { totalCount } }`, "BAD_USER_INPUT"},
		{"unknown channel", `{ channel(username: "nobody_at_all_here") { title } }`, "NOT_FOUND"},
		{"a user, not a channel", `{ channel(username: "jane_doe_writer") { title } }`, "NOT_FOUND"},
		{"upstream 503", `{ channel(username: "emoji_party") { title } }`, "UPSTREAM_UNAVAILABLE"},
	} {
		r := e.query(t, c.query, nil)
		if !slices.Equal(r.codes(), []string{c.code}) || r.status != http.StatusOK {
			t.Errorf("%s: %d %+v, want one %s", c.name, r.status, r.Errors, c.code)
		}
	}

	// RATE_LIMITED, with the time to wait. (The origin client backs off the
	// whole host after a 429, so this runs last.)
	e.origin.SetFault("/s/hadashot_today", fixtures.Fault{Status: http.StatusTooManyRequests, RetryAfter: "30"})
	r := e.query(t, `{ channel(username: "hadashot_today") { title } }`, nil)
	if !slices.Equal(r.codes(), []string{"RATE_LIMITED"}) {
		t.Fatalf("429: %+v", r.Errors)
	}
	if ra, _ := r.Errors[0].Extensions["retryAfter"].(float64); ra < 1 || ra > 30 {
		t.Errorf("retryAfter = %v, want 1..30", r.Errors[0].Extensions["retryAfter"])
	}
	if r.Errors[0].Path == nil || r.Errors[0].Path[0] != "channel" {
		t.Errorf("path = %v", r.Errors[0].Path)
	}
}

func TestLimits(t *testing.T) {
	// The limits are what is measured here, not time: the operation timeout
	// is lifted so that a 100-channel feed under the race detector on a busy
	// machine is not cut short.
	e := newEnv(t, envOptions{synthetic: 100, timeout: 2 * time.Minute})
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("loadchan%03d", i+1)
	}
	list, _ := json.Marshal(names)
	one := `f%d: feed(channels: ` + string(list) + `, first: 20) { totalCount edges { node { post { messageId } } } }`
	// One 100-channel feed fits the default limit; two do not: a feed costs
	// one upstream fetch per channel, a single channel far less.
	if r := e.query(t, "{"+fmt.Sprintf(one, 1)+"}", nil); len(r.Errors) > 0 {
		t.Fatalf("one 100-channel feed: %+v", r.Errors)
	}
	r := e.query(t, "{"+fmt.Sprintf(one, 1)+" "+fmt.Sprintf(one, 2)+"}", nil)
	if !slices.Equal(r.codes(), []string{"COMPLEXITY_LIMIT_EXCEEDED"}) || string(r.Data) != "" && string(r.Data) != "null" {
		t.Errorf("two 100-channel feeds: %d %s %+v", r.status, r.Data, r.Errors)
	}
	var aliases strings.Builder
	for i := range 11 {
		fmt.Fprintf(&aliases, `c%d: channel(username: "tmefeed_news") { title } `, i)
	}
	for _, c := range []struct{ name, query string }{
		{"aliases", "{" + manyAliases(31) + "}"},
		{"root fields", "{" + aliases.String() + "}"},
	} {
		r := e.query(t, c.query, nil)
		if !slices.Equal(r.codes(), []string{"COMPLEXITY_LIMIT_EXCEEDED"}) {
			t.Errorf("%s: %d %+v", c.name, r.status, r.Errors)
		}
	}
	// The deepest selection the schema allows is 10 levels; a lower limit
	// shows the check.
	shallow := newEnv(t, envOptions{maxDepth: 6})
	deep := `{ feed(channels: ["tmefeed_news"]) { edges { node { channel { posts { edges { node { messageId } } } } } } } }`
	if r := shallow.query(t, deep, nil); !slices.Equal(r.codes(), []string{"COMPLEXITY_LIMIT_EXCEEDED"}) {
		t.Errorf("depth: %d %+v", r.status, r.Errors)
	}
	if r := e.query(t, deep, nil); len(r.Errors) > 0 {
		t.Errorf("depth 7 under the default limit: %+v", r.Errors)
	}
	if e.origin.Total() != 100+1 {
		t.Errorf("origin requests = %d, want 101: rejected operations must fetch nothing", e.origin.Total())
	}

	// Request size and shape.
	big := `{"query":"{ __typename }","variables":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`
	resp, err := e.srv.Client().Post(e.srv.URL+"/graphql", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", resp.StatusCode)
	}
	batch := e.do(t, http.MethodPost, "/graphql", []byte(`[{"query":"{ __typename }"},{"query":"{ __typename }"}]`))
	if batch.status != http.StatusBadRequest || !slices.Equal(batch.codes(), []string{"BAD_REQUEST"}) {
		t.Errorf("batch: %d %s", batch.status, batch.raw)
	}
}

func manyAliases(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "t%d: __typename ", i)
	}
	return b.String()
}

func TestGetAndPost(t *testing.T) {
	e := newEnv(t, envOptions{})
	req := request{Query: `query($n: String!) { channel(username: $n) { title posts(first: 2) { edges { node { id messageId } } } } }`, Variables: map[string]any{"n": "tmefeed_news"}}
	post, get := e.post(t, req), e.get(t, req)
	if len(post.Errors) > 0 || string(post.Data) != string(get.Data) || get.status != http.StatusOK {
		t.Errorf("GET %d %s differs from POST %s", get.status, get.Data, post.Data)
	}
	fq := request{Query: `{ feed(channels: ["tmefeed_news", "emoji_party"], first: 3) { edges { cursor node { score post { id messageId } } } } }`}
	post, get = e.post(t, fq), e.get(t, fq)
	if len(post.Errors) > 0 || string(post.Data) != string(get.Data) {
		t.Errorf("feed: GET %s differs from POST %s", get.Data, post.Data)
	}
	// No mutations exist; GET rejects anything but a query before running it.
	r := e.get(t, request{Query: `mutation { x }`})
	if r.status == http.StatusOK || len(r.Errors) == 0 {
		t.Errorf("GET mutation: %d %s", r.status, r.raw)
	}
	r = e.do(t, http.MethodPut, "/graphql", []byte(`{}`))
	if r.status == http.StatusOK {
		t.Errorf("PUT: %d", r.status)
	}
}

// Persisted queries through two replicas sharing a Valkey, counted in the
// commands Valkey runs: an unknown hash is one GET, registering a query one
// SET, and a replica that does not know a query yet reads it with one GET.
// Pages are cached in process here, so every command is the APQ store's.
func TestAutomaticPersistedQueries(t *testing.T) {
	srv := redistest.Start(t)
	e := newEnv(t, envOptions{apq: newValkeyKV(t, srv)})
	q := `{ channel(username: "tmefeed_news") { title } }`
	sum := sha256.Sum256([]byte(q))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}

	before := commandStats(t, srv)
	r := e.post(t, request{Extensions: ext})
	if !slices.Equal(r.codes(), []string{"PERSISTED_QUERY_NOT_FOUND"}) {
		t.Fatalf("unknown hash: %+v", r.Errors)
	}
	if got, want := commandsSince(t, srv, before), map[string]int64{"get": 1}; !maps.Equal(got, want) {
		t.Errorf("an unknown hash ran %v in Valkey, want %v", got, want)
	}
	before = commandStats(t, srv)
	r = e.post(t, request{Query: q, Extensions: ext})
	if len(r.Errors) > 0 || !strings.Contains(string(r.Data), "title") {
		t.Fatalf("registering: %s %+v", r.Data, r.Errors)
	}
	if got, want := commandsSince(t, srv, before), map[string]int64{"set": 1}; !maps.Equal(got, want) {
		t.Errorf("registering ran %v in Valkey, want %v", got, want)
	}
	before = commandStats(t, srv)
	for _, r := range []response{e.post(t, request{Extensions: ext}), e.get(t, request{Extensions: ext})} {
		if len(r.Errors) > 0 || !strings.Contains(string(r.Data), "title") {
			t.Errorf("by hash: %d %s %+v", r.status, r.Data, r.Errors)
		}
	}
	if got := commandsSince(t, srv, before); len(got) > 0 {
		t.Errorf("known hashes ran %v in Valkey, want nothing: the replica keeps its own copy", got)
	}

	// Another replica, with a client of its own, knows the query too.
	other := newEnv(t, envOptions{apq: newValkeyKV(t, srv)})
	before = commandStats(t, srv)
	if r := other.get(t, request{Extensions: ext}); len(r.Errors) > 0 || !strings.Contains(string(r.Data), "title") {
		t.Errorf("another replica: %s %+v", r.Data, r.Errors)
	}
	if got, want := commandsSince(t, srv, before), map[string]int64{"get": 1}; !maps.Equal(got, want) {
		t.Errorf("another replica's first use ran %v in Valkey, want %v", got, want)
	}
	bad := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": strings.Repeat("0", 64)}}
	if r := e.post(t, request{Query: q, Extensions: bad}); len(r.Errors) == 0 {
		t.Error("a query with a mismatched hash was accepted")
	}
}

// Without a shared store, persisted queries work within the replica.
func TestAutomaticPersistedQueriesInProcess(t *testing.T) {
	e := newEnv(t, envOptions{})
	q := `{ channel(username: "tmefeed_news") { title } }`
	sum := sha256.Sum256([]byte(q))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	if r := e.post(t, request{Extensions: ext}); !slices.Equal(r.codes(), []string{"PERSISTED_QUERY_NOT_FOUND"}) {
		t.Fatalf("unknown hash: %+v", r.Errors)
	}
	if r := e.post(t, request{Query: q, Extensions: ext}); len(r.Errors) > 0 {
		t.Fatalf("registering: %+v", r.Errors)
	}
	if r := e.get(t, request{Extensions: ext}); len(r.Errors) > 0 || !strings.Contains(string(r.Data), "title") {
		t.Errorf("by hash: %d %s %+v", r.status, r.Data, r.Errors)
	}
	if r := newEnv(t, envOptions{}).get(t, request{Extensions: ext}); !slices.Equal(r.codes(), []string{"PERSISTED_QUERY_NOT_FOUND"}) {
		t.Errorf("a replica sharing nothing knew the query: %+v", r.Errors)
	}
}

// 50 concurrent identical feed queries over 6 uncached channels: 6 origin
// requests and one feed build.
func TestConcurrentIdenticalFeeds(t *testing.T) {
	e := newEnv(t, envOptions{originLatency: 50 * time.Millisecond})
	var wg sync.WaitGroup
	bodies := make([]string, 50)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.query(t, feedQuery, map[string]any{"channels": recorded, "first": 50})
			if len(r.Errors) > 0 {
				t.Errorf("errors: %+v", r.Errors)
			}
			bodies[i] = string(r.raw)
		}()
	}
	wg.Wait()
	if n := e.origin.Total(); n != 6 {
		t.Errorf("origin requests = %d, want 6", n)
	}
	for _, ch := range recorded {
		if n := e.origin.Requests("/s/" + ch); n != 1 {
			t.Errorf("/s/%s requested %d times", ch, n)
		}
	}
	if n := e.feed.Builds(); n != 1 {
		t.Errorf("feed builds = %d, want 1", n)
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatal("identical queries got different answers")
		}
	}
}

// The fast path answers exactly what the regular executor answers.
func TestFastPathMatchesExecutor(t *testing.T) {
	fast, slow := newEnv(t, envOptions{}), newEnv(t, envOptions{disableFastPath: true})
	q := `query($channels: [String!]!, $withText: Boolean!, $before: String!) {
		__typename
		first: feed(channels: $channels, first: 40, order: NEWEST) { ...conn }
		second: feed(channels: $channels, first: 5, filter: { excludeService: true }) {
			totalCount pageInfo { endCursor } edges { node { post { id messageId } } }
		}
		third: feed(channels: $channels, last: 7, before: $before, order: NEWEST) { ...conn }
	}
	fragment conn on FeedConnection {
		__typename totalCount
		pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
		failedChannels { username code reason }
		edges { cursor node {
			__typename score
			channel { username title titleHTML description descriptionHTML avatar verified url counters { subscribers subscribersText photos videos files links } }
			post { ...post text @include(if: $withText) { plain html entities { kind offset length url language emojiId } } }
		} }
	}
	fragment post on Post {
		id messageId url channel date edited views viewsText author isService
		media { kind url thumb waves duration durationText title extra available }
		poll { question type votes votesText options { text percent } }
		location { latitude longitude address url map }
		inlineButtons { text url }
		reply { toMessage name nameHTML text textHTML cover }
		linkPreview { url title siteName description descriptionHTML thumb }
		reactions { kind emoji emojiId emojiImage count countText }
		forwardedFrom { name nameHTML url }
		service { type text }
		alias: id
	}`
	channels := append(slices.Clone(recorded), "nobody_at_all_here")
	var end feedData
	fast.query(t, `query($channels: [String!]!) { feed(channels: $channels, last: 20, order: NEWEST) { edges { cursor } } }`,
		map[string]any{"channels": channels}).decode(t, &end)
	if len(end.Feed.Edges) != 20 {
		t.Fatalf("%d edges", len(end.Feed.Edges))
	}
	for _, withText := range []bool{true, false} {
		vars := map[string]any{"channels": channels, "withText": withText, "before": end.Feed.Edges[0].Cursor}
		b := slow.query(t, q, vars)
		// The first answer is rendered, the second one kept.
		for i, a := range []response{fast.query(t, q, vars), fast.query(t, q, vars)} {
			if len(a.Errors) > 0 || len(b.Errors) > 0 {
				t.Fatalf("errors: %+v %+v", a.Errors, b.Errors)
			}
			// The executor re-encodes its response with HTML escaping (\u003c
			// for <); the fast path leaves the characters as they are.
			unescaped := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b.raw))
			if string(a.raw) != unescaped {
				t.Errorf("withText %v, answer %d: fast path answer differs:\nfast: %.600s\nslow: %.600s", withText, i+1, a.raw, b.raw)
			}
		}
	}
	fast.feed.CleanUp()
	if fast.feed.Stats().RenderedBytes == 0 {
		t.Error("no answer was kept")
	}
	if fast.feed.Builds() != 2 {
		t.Errorf("builds = %d, want 2 (one per distinct feed)", fast.feed.Builds())
	}
	if !strings.Contains(string(fast.query(t, q, map[string]any{"channels": channels, "withText": true, "before": end.Feed.Edges[0].Cursor}).raw), `"third":{"__typename":"FeedConnection","totalCount":`) {
		t.Error("the backward page is missing")
	}
}

func TestRESTFeed(t *testing.T) {
	e := newEnv(t, envOptions{})
	g := e.feedPage(t, map[string]any{"channels": recorded, "first": 2000})
	r := e.do(t, http.MethodPost, "/v1/feed", []byte(`{"channels": ["tmefeed_news", "emoji_party", "hadashot_today", "just_launched", "kanal_novostei", "retro_channel", "nobody_at_all_here"]}`))
	var rest struct {
		Result []struct {
			ID      int             `json:"id"`
			Content json.RawMessage `json:"content"`
			Footer  struct {
				Views string `json:"views"`
			} `json:"footer"`
			Channel struct {
				Username string `json:"username"`
				Title    struct {
					String string `json:"string"`
				} `json:"title"`
			} `json:"channel"`
		} `json:"result"`
		Failed []struct {
			Channel string `json:"channel"`
			Error   struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"failed_channels"`
	}
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	if err := json.Unmarshal(r.raw, &rest); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range rest.Result {
		keys = append(keys, fmt.Sprintf("%s/%d", p.Channel.Username, p.ID))
		if p.Channel.Title.String == "" || len(p.Content) == 0 {
			t.Errorf("post %d lacks its channel or content", p.ID)
		}
	}
	if !slices.Equal(keys, g.keys()) {
		t.Errorf("REST feed differs from the GraphQL feed:\n%v\n%v", keys, g.keys())
	}
	if len(rest.Failed) != 1 || rest.Failed[0].Channel != "nobody_at_all_here" || rest.Failed[0].Error.Code != "not_found" {
		t.Errorf("failed_channels = %+v", rest.Failed)
	}
	limited := e.do(t, http.MethodPost, "/v1/feed", []byte(`{"channels": ["tmefeed_news"], "order": "newest", "limit": 2}`))
	if !strings.Contains(string(limited.raw), `"next":`) || strings.Count(string(limited.raw), `"channel":{`) != 2 {
		t.Errorf("limit 2: %.300s", limited.raw)
	}
	bad := e.do(t, http.MethodPost, "/v1/feed", []byte(`{"channels": []}`))
	if bad.status != http.StatusBadRequest {
		t.Errorf("no channels: %d %s", bad.status, bad.raw)
	}
	// GraphQL and REST read the same builds.
	if e.feed.Builds() != 3 {
		t.Errorf("builds = %d, want 3 (GraphQL+REST share one; the REST 7-name and 1-name feeds)", e.feed.Builds())
	}
}

func TestIntrospection(t *testing.T) {
	on, off := newEnv(t, envOptions{}), newEnv(t, envOptions{noIntrospection: true})
	q := `{ __schema { queryType { name } } __type(name: "MediaKind") { enumValues { name } } }`
	if r := on.query(t, q, nil); len(r.Errors) > 0 || !strings.Contains(string(r.Data), "ROUND_VIDEO") {
		t.Errorf("introspection on: %s %+v", r.Data, r.Errors)
	}
	if r := off.query(t, q, nil); r.status != http.StatusOK || !slices.Equal(r.codes(), []string{"GRAPHQL_VALIDATION_FAILED"}) {
		t.Errorf("introspection off: %d %s %+v", r.status, r.Data, r.Errors)
	}
	if r := off.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil); len(r.Errors) > 0 {
		t.Errorf("introspection off, a plain query: %+v", r.Errors)
	}
}

// CORS is the server's one policy; here it is checked against the real
// GraphQL handler, with the headers Apollo Client sends.
func TestCORS(t *testing.T) {
	e := newEnv(t, envOptions{corsOrigins: []string{"https://app.example"}})
	req, _ := http.NewRequest(http.MethodOptions, e.srv.URL+"/graphql", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-request-id,apollographql-client-name,apollographql-client-version")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example" || resp.StatusCode != http.StatusNoContent {
		t.Errorf("preflight: status %d, Allow-Origin %q", resp.StatusCode, got)
	}
	if got := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(got, "apollographql-client-name") || !strings.Contains(got, "x-request-id") {
		t.Errorf("preflight Allow-Headers %q", got)
	}
	req.Header.Set("Origin", "https://evil.example")
	resp, err = e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("foreign origin allowed: %q", got)
	}

	post, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/graphql", strings.NewReader(`{"query": "{ channel(username: \"tmefeed_news\") { title } }"}`))
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("Origin", "https://app.example")
	post.Header.Set("Apollographql-Client-Name", "web")
	resp, err = e.srv.Client().Do(post)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Data   struct{ Channel struct{ Title string } }
		Errors []json.RawMessage
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || out.Data.Channel.Title == "" || len(out.Errors) > 0 {
		t.Fatalf("POST: status %d, %v, %+v", resp.StatusCode, err, out)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example" {
		t.Errorf("POST Allow-Origin %q", got)
	}
	if got := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(got, "X-Request-Id") || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("POST Expose-Headers %q, X-Request-Id %q", got, resp.Header.Get("X-Request-Id"))
	}
}

func TestPlayground(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, path := range []string{"/", "/playground"} {
		resp, err := e.srv.Client().Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = fmt.Fprint(&b, readAll(t, resp))
		page := b.String()
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, "/playground/assets/graphiql.min.js") || !strings.Contains(page, "tmefeed_news") {
			t.Errorf("%s: %d %.300s", path, resp.StatusCode, page)
		}
		if strings.Contains(page, "unpkg") || strings.Contains(page, "jsdelivr") || strings.Contains(page, "src=\"http") {
			t.Errorf("%s loads from a CDN", path)
		}
	}
	for _, asset := range []string{"graphiql.min.js", "graphiql.min.css", "react.production.min.js", "react-dom.production.min.js"} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/playground/assets/"+asset+"?v=1", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" || len(body) < 1000 {
			t.Errorf("%s: %d %q %d bytes", asset, resp.StatusCode, resp.Header.Get("Content-Encoding"), len(body))
		}
	}
	// Browsers ask for the icon at the root, whatever the page links.
	resp, err := e.srv.Client().Get(e.srv.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/x-icon" || len(body) == 0 {
		t.Errorf("/favicon.ico: %d %q %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// distinctNames lists n distinct valid usernames as GraphQL string literals.
func distinctNames(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"name_%04d",`, i)
	}
	return b.String()
}

// Identical new documents arriving together wait for the first of them to
// be parsed and validated instead of queueing at the gate for the same
// work: with one turn for expensive work, 100 concurrent copies of a new
// query are all answered, and the document is parsed once.
func TestIdenticalNewDocumentsShareOneParse(t *testing.T) {
	var parses atomic.Int64
	// Parsing made slow, as a large document's is, so that the copies
	// arrive while the first is still being parsed.
	e := newEnv(t, envOptions{maxExpensive: 1, onParse: func(string) {
		parses.Add(1)
		time.Sleep(50 * time.Millisecond)
	}})
	const q = `query Burst { channel(username: "tmefeed_news") { title } }`
	e.query(t, `{ channel(username: "tmefeed_news") { username } }`, nil) // the page cached; another document
	parses.Store(0)
	var wg sync.WaitGroup
	var refused atomic.Int64
	start := make(chan struct{})
	for range 100 {
		wg.Go(func() {
			<-start
			if r := e.query(t, q, nil); len(r.Errors) > 0 {
				refused.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := refused.Load(); n != 0 {
		t.Errorf("%d of 100 identical queries refused", n)
	}
	if n := parses.Load(); n != 1 {
		t.Errorf("the document was parsed %d times, want once", n)
	}
}
