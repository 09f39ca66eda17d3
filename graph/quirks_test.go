package graph_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/graph/ids"
)

// Posts t.me leaves unnamed or undated, over the fixture origin's pages
// late_edition (its newest post has datetime="", an older one a datetime
// that is not RFC 3339) and nameless_notes (five posts written as
// data-post="nameless_notes/", two of them named nowhere).

// quirkPost is what these tests select of a post.
type quirkPost struct {
	ID            string
	MessageID     *int
	URL           string
	Date          *string
	DateEstimated bool
	Text          *struct{ Plain string }
}

type quirkFeed struct {
	Feed struct {
		TotalCount int
		Edges      []struct {
			Cursor string
			Node   struct {
				Channel struct{ Username string }
				Post    quirkPost
			}
		}
	}
}

const quirkFeedQuery = `query($channels: [String!]!, $first: Int, $order: FeedOrder, $filter: FeedFilter) {
	feed(channels: $channels, first: $first, order: $order, filter: $filter) {
		totalCount
		edges { cursor node { channel { username } post { id messageId url date dateEstimated text { plain } } } }
	}
}`

// The page's capture time (data-view "t") of late_edition: its undated
// newest post was being published then.
const lateEditionServed = "2026-06-19T09:15:00Z"

func TestUndatedNewestPostLeadsTheMergedFeed(t *testing.T) {
	// The feed is read 45 minutes after t.me served late_edition's page, so
	// that RANKED's freshness tells a post of that morning from one of 1970.
	now := time.Date(2026, 6, 19, 10, 0, 0, 0, time.UTC)
	e := newEnv(t, envOptions{now: func() time.Time { return now }})
	channels := append(slices.Clone(recorded), "late_edition")
	for _, order := range []string{"NEWEST", "RANKED"} {
		var d quirkFeed
		e.query(t, quirkFeedQuery, map[string]any{"channels": channels, "first": 2000, "order": order}).decode(t, &d)
		if len(d.Feed.Edges) < 80 {
			t.Fatalf("%s: %d posts", order, len(d.Feed.Edges))
		}
		pos := map[int]int{}
		for i, ed := range d.Feed.Edges {
			p := ed.Node.Post
			if p.Date == nil || strings.HasPrefix(*p.Date, "1970") {
				t.Errorf("%s: %s/%v dated %v", order, ed.Node.Channel.Username, p.MessageID, p.Date)
			}
			if ed.Node.Channel.Username == "late_edition" && p.MessageID != nil {
				pos[*p.MessageID] = i
			}
		}
		first := d.Feed.Edges[0].Node
		if order == "NEWEST" {
			// Under 1970 it was last; dated by its older neighbour (12 June)
			// it would follow other channels' posts of 13–18 June.
			if first.Channel.Username != "late_edition" || first.Post.MessageID == nil || *first.Post.MessageID != 305 ||
				!first.Post.DateEstimated || *first.Post.Date != lateEditionServed {
				t.Errorf("NEWEST starts with %s %+v, want late_edition/305 dated %s, estimated", first.Channel.Username, first.Post, lateEditionServed)
			}
			// 302 (a garbled datetime) sits between its neighbours 301 and 303.
			if !(pos[303] < pos[302] && pos[302] < pos[301]) {
				t.Errorf("NEWEST places 301, 302, 303 at %d, %d, %d; want 302 between them", pos[301], pos[302], pos[303])
			}
		}
		if order == "RANKED" {
			// Freshness counts in the score: dated 1970 (no freshness) it
			// ranked below its older neighbour, which has seven times its views.
			if pos[305] > pos[304] {
				t.Errorf("RANKED places the undated newest post (%d) after its older neighbour (%d)", pos[305], pos[304])
			}
		}
	}

	// A since filter keeps it (dated 1970, it was dropped), and only it.
	var d quirkFeed
	e.query(t, quirkFeedQuery, map[string]any{"channels": channels, "first": 100, "order": "NEWEST",
		"filter": map[string]any{"since": "2026-06-19T00:00:00Z"}}).decode(t, &d)
	if len(d.Feed.Edges) != 1 || d.Feed.Edges[0].Node.Post.MessageID == nil || *d.Feed.Edges[0].Node.Post.MessageID != 305 {
		t.Errorf("since 19 June: %+v, want late_edition/305 alone", d.Feed.Edges)
	}
	// until excludes it, since it is dated after.
	e.query(t, quirkFeedQuery, map[string]any{"channels": []string{"late_edition"}, "first": 100, "order": "NEWEST",
		"filter": map[string]any{"until": "2026-06-19T00:00:00Z"}}).decode(t, &d)
	if d.Feed.TotalCount != 5 {
		t.Errorf("until 19 June: %d posts, want 300–304", d.Feed.TotalCount)
	}

	// REST gives the same date, marked as an estimate, in telegram-me's types.
	r := e.do(t, http.MethodPost, "/v1/feed", []byte(`{"channels": ["late_edition", "emoji_party"], "order": "newest", "limit": 1}`))
	var rest struct {
		Result []struct {
			ID     int `json:"id"`
			Footer struct {
				Date struct {
					String    string `json:"string"`
					Unix      int64  `json:"unix"`
					Estimated bool   `json:"estimated"`
				} `json:"date"`
			} `json:"footer"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.raw, &rest); err != nil || r.status != http.StatusOK || len(rest.Result) != 1 {
		t.Fatalf("REST feed: %d %v %s", r.status, err, r.raw)
	}
	served, _ := time.Parse(time.RFC3339, lateEditionServed)
	if got := rest.Result[0]; got.ID != 305 || got.Footer.Date.Unix != served.Unix() || !got.Footer.Date.Estimated || got.Footer.Date.String != "2026-06-19T09:15:00+00:00" {
		t.Errorf("REST newest = %+v", got)
	}
}

func TestUnnamedPosts(t *testing.T) {
	e := newEnv(t, envOptions{})
	var d quirkFeed
	// Twice the same channel: a feed merges copies of one post, which two
	// unnamed posts are not, to each other or to anything.
	e.query(t, quirkFeedQuery, map[string]any{"channels": []string{"nameless_notes", "nameless_notes"}, "first": 100, "order": "NEWEST"}).decode(t, &d)
	var numbers []int
	seenIDs := map[string]bool{}
	var unnamed []quirkPost
	for _, ed := range d.Feed.Edges {
		p := ed.Node.Post
		if seenIDs[p.ID] {
			t.Errorf("id %s given twice", p.ID)
		}
		seenIDs[p.ID] = true
		if p.MessageID == nil {
			unnamed = append(unnamed, p)
			continue
		}
		numbers = append(numbers, *p.MessageID)
		if p.ID != ids.Post("nameless_notes", *p.MessageID) || !strings.HasSuffix(p.URL, "/nameless_notes/"+itoa(*p.MessageID)) {
			t.Errorf("post %d: id %s url %s", *p.MessageID, p.ID, p.URL)
		}
	}
	if want := []int{79, 78, 73, 72, 71, 70}; !slices.Equal(numbers, want) {
		t.Errorf("numbered posts %v, want %v (71, 73 and 78 from data-view)", numbers, want)
	}
	if len(unnamed) != 2 || d.Feed.TotalCount != 8 {
		t.Fatalf("%d unnamed posts of %d, want 2 of 8", len(unnamed), d.Feed.TotalCount)
	}
	// Newest first: 77 then 76, by their dates, between 78 and 73.
	if unnamed[0].Text.Plain != "Rain again. A good day for the long novel." || unnamed[1].Text.Plain != "Note to self: return the library books on Friday." {
		t.Errorf("unnamed posts out of order: %+v", unnamed)
	}
	for _, p := range unnamed {
		if p.ID == ids.Post("nameless_notes", 0) || p.URL != "https://t.me/s/nameless_notes" || p.Date == nil || p.DateEstimated {
			t.Errorf("unnamed post %+v", p)
		}
		// Its id is one this API issued, and names no post it can find again.
		r := e.query(t, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": p.ID})
		if len(r.Errors) > 0 || string(r.Data) != `{"node":null}` {
			t.Errorf("node(%s) = %s %+v, want null", p.ID, r.Data, r.Errors)
		}
	}

	// The channel's own posts list them too, and page past them.
	var ch struct {
		Channel struct {
			Posts struct {
				Edges []struct {
					Cursor string
					Node   quirkPost
				}
			}
		}
	}
	e.query(t, `{ channel(username: "nameless_notes") { posts(first: 8) { edges { cursor node { id messageId url date dateEstimated text { plain } } } } } }`, nil).decode(t, &ch)
	var order []int
	for _, ed := range ch.Channel.Posts.Edges {
		n := 0
		if ed.Node.MessageID != nil {
			n = *ed.Node.MessageID
		}
		order = append(order, n)
	}
	if want := []int{79, 78, 0, 0, 73, 72, 71, 70}; !slices.Equal(order, want) {
		t.Errorf("channel posts %v, want %v (0: named nowhere)", order, want)
	}

	// REST: id null, never 0.
	r := e.do(t, http.MethodGet, "/v1/body/nameless_notes", nil)
	if r.status != http.StatusOK || strings.Count(string(r.raw), `{"id":null,`) != 2 || strings.Contains(string(r.raw), `"id":0,`) {
		t.Errorf("REST body: %d, %d null ids:\n%.400s", r.status, strings.Count(string(r.raw), `{"id":null,`), r.raw)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
