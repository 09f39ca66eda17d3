package live_test

import (
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/parser"
)

func recorded(t *testing.T) *parser.Page {
	t.Helper()
	b, err := os.ReadFile("../fixtures/pages/s/tmefeed_news.html")
	if err != nil {
		t.Fatal(err)
	}
	p, err := parser.ParseBody(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clone copies a page deeply enough for the changes below.
func clone(p *parser.Page) *parser.Page {
	c := *p
	c.Content.Posts = slices.Clone(p.Content.Posts)
	return &c
}

func kinds(events []live.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Kind)+":"+itoa(e.Post.ID))
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// Posts that scroll out of the newest page as new ones arrive are not
// removals; views and reactions changing are not edits.
func TestDiffScrollingViewsAndReactions(t *testing.T) {
	prev := recorded(t)
	next := clone(prev)
	// Two new posts push the two oldest off the page.
	newer := next.Content.Posts[len(next.Content.Posts)-1]
	for i := range 2 {
		p := newer
		p.ID += i + 1
		next.Content.Posts = append(next.Content.Posts, p)
	}
	next.Content.Posts = next.Content.Posts[2:]
	// Counters move everywhere.
	for i := range next.Content.Posts {
		p := &next.Content.Posts[i]
		p.Footer.ViewsCount += 100
		p.Footer.Views = "more"
		p.Content.Reacts = append(slices.Clone(p.Content.Reacts), parser.React{Count: "1", CountValue: 1, Emoji: "🔥"})
	}
	got := kinds(live.Diff(prev, next))
	if want := []string{"NEW:55", "NEW:56"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// A post missing inside the page's range is removed, even the oldest one
// when an older post takes its place; a text change is an edit.
func TestDiffRemovedAndEdited(t *testing.T) {
	prev := recorded(t)
	next := clone(prev)
	oldest := next.Content.Posts[0]
	gone := next.Content.Posts[5].ID
	next.Content.Posts = slices.Delete(next.Content.Posts, 5, 6)
	// The oldest is deleted too; an older post scrolls in before it.
	older := oldest
	older.ID = oldest.ID - 1
	next.Content.Posts[0] = older
	edited := &next.Content.Posts[3]
	edited.Content.Text = &parser.Text{String: "new words", HTML: "new words"}

	got := kinds(live.Diff(prev, next))
	want := []string{"EDITED:" + itoa(edited.ID), "REMOVED:" + itoa(oldest.ID), "REMOVED:" + itoa(gone)}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if live.Diff(prev, clone(prev)) != nil {
		t.Errorf("an unchanged page gave events")
	}
}

// Posts t.me names nowhere (nameless_notes' 76 and 77, ID 0) are told
// apart by what they show: neither is taken for the other or for a post
// of that number, a new one after the newest known post is NEW, one gone
// from the page's range is REMOVED.
func TestDiffUnnamedPosts(t *testing.T) {
	b, err := os.ReadFile("../fixtures/pages/s/nameless_notes.html")
	if err != nil {
		t.Fatal(err)
	}
	prev, err := parser.ParseBody(b)
	if err != nil {
		t.Fatal(err)
	}
	if live.Diff(prev, clone(prev)) != nil {
		t.Fatal("an unchanged page with two unnamed posts gave events")
	}
	next := clone(prev)
	// 77 (the second unnamed post) is deleted; a new unnamed post follows 79.
	fresh := next.Content.Posts[len(next.Content.Posts)-1]
	fresh.ID = 0
	fresh.Content.Text = &parser.Text{String: "fresh", HTML: "fresh"}
	next.Content.Posts = append(slices.Delete(next.Content.Posts, 5, 6), fresh)

	events := live.Diff(prev, next)
	got := kinds(events)
	if want := []string{"NEW:0", "REMOVED:0"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if events[0].Post.Content.Text.String != "fresh" || events[1].Post.Content.Text.String != "Rain again. A good day for the long novel." {
		t.Errorf("NEW %q, REMOVED %q", events[0].Post.Content.Text.String, events[1].Post.Content.Text.String)
	}
}
