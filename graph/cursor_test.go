package graph_test

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const pagingQuery = `query($channels: [String!]!, $first: Int, $after: String, $last: Int, $before: String, $order: FeedOrder, $filter: FeedFilter) {
	feed(channels: $channels, first: $first, after: $after, last: $last, before: $before, order: $order, filter: $filter) {
		totalCount
		edges { cursor node { score channel { username } post { id messageId date isService } } }
		pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
	}
}`

// Walking a feed backward from its end with last/before gives every post
// once: the forward walk, page by page in reverse.
func TestFeedBackwardPaging(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, order := range []string{"NEWEST", "RANKED"} {
		var forward []string
		vars := map[string]any{"channels": recorded, "first": 9, "order": order}
		for i := 0; ; i++ {
			var p feedData
			e.query(t, pagingQuery, vars).decode(t, &p)
			forward = append(forward, p.keys()...)
			if !p.Feed.PageInfo.HasNextPage {
				break
			}
			vars["after"] = *p.Feed.PageInfo.EndCursor
		}
		var pages [][]string
		vars = map[string]any{"channels": recorded, "last": 9, "order": order}
		for i := 0; ; i++ {
			var p feedData
			e.query(t, pagingQuery, vars).decode(t, &p)
			if n := len(p.Feed.Edges); n == 0 || n > 9 {
				t.Fatalf("%s: backward page %d has %d edges", order, i, n)
			}
			// Page 0 is the end of the feed; every later one has posts after it.
			if pi := p.Feed.PageInfo; pi.HasNextPage != (i > 0) || *pi.StartCursor != p.Feed.Edges[0].Cursor {
				t.Errorf("%s: backward page %d: %+v", order, i, pi)
			}
			pages = append(pages, p.keys())
			if !p.Feed.PageInfo.HasPreviousPage {
				break
			}
			if i > 50 {
				t.Fatal("paging does not end")
			}
			vars["before"] = *p.Feed.PageInfo.StartCursor
		}
		var backward []string
		for i := len(pages) - 1; i >= 0; i-- {
			backward = append(backward, pages[i]...)
		}
		if len(forward) < 80 || !slices.Equal(backward, forward) {
			t.Errorf("%s: backward walk differs from the forward walk:\n%v\n%v", order, backward, forward)
		}
	}
}

// A cursor pages only its own feed; the refusal says why.
func TestFeedRefusesForeignCursors(t *testing.T) {
	e := newEnv(t, envOptions{})
	var p feedData
	e.query(t, pagingQuery, map[string]any{"channels": recorded, "first": 3, "order": "NEWEST"}).decode(t, &p)
	cur := *p.Feed.PageInfo.EndCursor

	// The same feed, its names in another order and spelling: accepted.
	var same feedData
	e.query(t, pagingQuery, map[string]any{"channels": []string{"@TmeFeed_News", "retro_channel", "kanal_novostei", "just_launched", "hadashot_today", "emoji_party"}, "first": 3, "order": "NEWEST", "after": cur}).decode(t, &same)
	if len(same.Feed.Edges) != 3 || slices.Contains(p.keys(), same.keys()[0]) {
		t.Errorf("the same feed after its cursor: %v", same.keys())
	}

	for _, c := range []struct {
		name string
		vars map[string]any
		msg  string
	}{
		{"other channels, after", map[string]any{"channels": recorded[1:], "first": 3, "order": "NEWEST", "after": cur}, "after: the cursor belongs to another feed"},
		{"other channels, before", map[string]any{"channels": []string{"tmefeed_news", "emoji_party"}, "last": 3, "order": "NEWEST", "before": cur}, "before: the cursor belongs to another feed"},
		{"other filter", map[string]any{"channels": recorded, "first": 3, "order": "NEWEST", "after": cur, "filter": map[string]any{"excludeService": true}}, "after: the cursor belongs to another feed"},
		{"other order", map[string]any{"channels": recorded, "first": 3, "order": "RANKED", "after": cur}, "in NEWEST order"},
		{"altered", map[string]any{"channels": recorded, "first": 3, "order": "NEWEST", "after": alter(cur)}, "is not a feed cursor"},
		{"first and last", map[string]any{"channels": recorded, "first": 3, "last": 3}, "not both"},
		{"no channels", map[string]any{"channels": []string{}, "first": 3}, "bad request: no channels given"},
		{"last out of range", map[string]any{"channels": recorded, "last": -1}, "last must be from 0"},
	} {
		r := e.query(t, pagingQuery, c.vars)
		if !slices.Equal(r.codes(), []string{"BAD_USER_INPUT"}) || !strings.Contains(r.Errors[0].Message, c.msg) {
			t.Errorf("%s: %+v, want BAD_USER_INPUT saying %q", c.name, r.Errors, c.msg)
		}
	}
}

// Cursors are opaque: decoded, they show neither channel names nor dates.
func TestFeedCursorsAreOpaque(t *testing.T) {
	e := newEnv(t, envOptions{})
	var p feedData
	e.query(t, pagingQuery, map[string]any{"channels": recorded, "first": 2000, "order": "NEWEST"}).decode(t, &p)
	if len(p.Feed.Edges) < 80 {
		t.Fatalf("%d edges", len(p.Feed.Edges))
	}
	for _, ed := range p.Feed.Edges {
		raw, err := base64.RawURLEncoding.DecodeString(ed.Cursor)
		if err != nil {
			t.Fatalf("cursor %q: %v", ed.Cursor, err)
		}
		for _, name := range recorded {
			if strings.Contains(string(raw), name) || strings.Contains(string(raw), name[:4]) {
				t.Errorf("cursor of %s/%d shows %q", ed.Node.Channel.Username, ed.Node.Post.MessageID, name)
			}
		}
		date, err := time.Parse(time.RFC3339, ed.Node.Post.Date)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "NEWEST") || strings.Contains(string(raw), strconv.FormatInt(date.Unix(), 10)) {
			t.Errorf("cursor of %s/%d is readable: %q", ed.Node.Channel.Username, ed.Node.Post.MessageID, raw)
		}
	}
}

// alter changes one character in the middle of a cursor (the last may
// carry only padding bits).
func alter(s string) string {
	b := []byte(s)
	if b[10] == 'A' {
		b[10] = 'B'
	} else {
		b[10] = 'A'
	}
	return string(b)
}
