package parser

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// unnamedPost is a "more" chunk of one post with the given data-post,
// data-view and datetime; its date link has no number when data-post has
// none, as t.me writes them.
func unnamedPost(dataPost, dataView, datetime string) []byte {
	link := "https://t.me/" + dataPost
	return []byte(`<div class="tgme_widget_message_wrap"><div class="tgme_widget_message js-widget_message" data-post="` + dataPost + `" data-view="` + dataView + `">` +
		`<div class="tgme_widget_message_bubble"><div class="tgme_widget_message_text js-message_text" dir="auto">text of ` + dataPost +
		`</div><div class="tgme_widget_message_footer"><div class="tgme_widget_message_info"><span class="tgme_widget_message_views">12</span>` +
		`<span class="tgme_widget_message_meta"><a class="tgme_widget_message_date" href="` + link + `"><time datetime="` + datetime + `" class="time"></time></a></span>` +
		`</div></div></div></div></div>`)
}

func readFixture(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func postIDs(posts []Post) []int {
	ids := make([]int, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	return ids
}

func TestViewFacts(t *testing.T) {
	for _, c := range []struct {
		view   string
		post   int
		served int64
	}{
		{"eyJjIjotMTAwNjUwMzEyMiwicCI6NTIzLCJ0IjoxNzg3NDMxNDM1LCJoIjoiZDAwYTRiODhjZmNlYzA1YTgwIn0", 523, 1787431435}, // a real page's
		{"eyJjIjotMTAwLCJwIjoiNzNnIiwidCI6MTc3OTI3ODQwMH0", 73, 1779278400},                                          // an album: "73g"
		{"eyJjIjotMTAwLCJ0IjoxNzc5Mjc4NDAwfQ==", 0, 1779278400},                                                      // no "p"; padded
		{"eyJwIjo4LCJ0IjoiMTc3OTI3ODQwMCJ9", 8, 1779278400},                                                          // "t" as a string
		{"eyJwIjoiLTUiLCJ0IjotMX0", 0, 0},                                                                            // negative numbers name nothing
		{"bm90IGpzb24", 0, 0},                                                                                        // "not json"
		{"%%%", 0, 0},
		{"", 0, 0},
	} {
		post, served := viewFacts(c.view)
		if post != c.post || served != c.served {
			t.Errorf("viewFacts(%q) = %d, %d; want %d, %d", c.view, post, served, c.post, c.served)
		}
	}
}

// t.me writes some posts as data-post="<channel>/" with a date link
// without the number: the number is data-view's "p". A post whose number
// is nowhere has none: id 0 in the model (null in the REST JSON), never
// another post's number.
func TestUnnamedPostsTakeTheirNumberFromDataView(t *testing.T) {
	page, err := ParseBody(readFixture(t, "s/nameless_notes.html"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := postIDs(page.Content.Posts), []int{70, 71, 72, 73, 0, 0, 78, 79}; !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v (71, 73 and 78 from data-view; 76 and 77 named nowhere)", got, want)
	}
	for _, p := range page.Content.Posts {
		if p.Channel != "nameless_notes" {
			t.Errorf("post %d: channel %q", p.ID, p.Channel)
		}
		if p.Content.Text == nil || p.Footer.Date.Estimated || !p.Footer.Date.Known() {
			t.Errorf("post %d lost its text or date: %+v", p.ID, p)
		}
	}
	if got := page.Content.Posts[3].Content.Media; len(got) != 3 {
		t.Errorf("album 73: %d items, want 3", len(got))
	}
}

func TestUnnamedPostInAChunk(t *testing.T) {
	p := onePost(t, unnamedPost("chan_name/", "eyJjIjotMTAwLCJwIjoiNzNnIiwidCI6MTc3OTI3ODQwMH0", "2026-03-01T10:00:00+00:00"))
	if p.ID != 73 || p.Channel != "chan_name" {
		t.Errorf("id %d channel %q, want 73 of chan_name", p.ID, p.Channel)
	}
	// A number on data-post wins over data-view (which is not decoded).
	if p := onePost(t, unnamedPost("chan_name/9", "eyJjIjotMTAwLCJwIjoiNzNnIiwidCI6MTc3OTI3ODQwMH0", "2026-03-01T10:00:00+00:00")); p.ID != 9 {
		t.Errorf("id %d, want data-post's 9", p.ID)
	}
	// A number nowhere: the post is kept (it has text and a date), unnamed.
	if p := onePost(t, unnamedPost("chan_name/", "bm90IGpzb24", "2026-03-01T10:00:00+00:00")); p.ID != 0 || p.Content.Text == nil {
		t.Errorf("id %d text %v, want an unnamed post with its text", p.ID, p.Content.Text)
	}
}

// An empty or unparseable datetime is no date of 1970: the post is dated
// by its neighbours, marked as an estimate.
func TestUndatedPostsAreEstimatedFromTheirNeighbours(t *testing.T) {
	page, err := ParseBody(readFixture(t, "s/late_edition.html"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int]Date{}
	for _, p := range page.Content.Posts {
		byID[p.ID] = p.Footer.Date
		if p.Footer.Date.Unix == 0 || !p.Footer.Date.Known() {
			t.Errorf("post %d: date %+v", p.ID, p.Footer.Date)
		}
	}
	// 302's datetime is not RFC 3339: published after 301, it takes 301's date.
	if d := byID[302]; !d.Estimated || d.Unix != byID[301].Unix || d.Unix >= byID[303].Unix {
		t.Errorf("302: %+v, want 301's date (%d) marked as an estimate", d, byID[301].Unix)
	}
	// 305 has datetime="" and is the newest post of the channel's newest
	// page: as new as the page, which t.me served at data-view's "t".
	served := time.Date(2026, 6, 19, 9, 15, 0, 0, time.UTC)
	if d := byID[305]; !d.Estimated || d.Unix != served.Unix() || d.String != "2026-06-19T09:15:00+00:00" {
		t.Errorf("305: %+v, want the capture time %v marked as an estimate", d, served)
	}
	for _, id := range []int{300, 301, 303, 304} {
		if byID[id].Estimated {
			t.Errorf("%d: a date the page writes is marked as an estimate", id)
		}
	}
	// The embed of 305 has no neighbours and cannot tell whether it is the
	// newest: its date is unknown.
	post, err := ParseEmbed(readFixture(t, "embed/late_edition/305.html"))
	if err != nil {
		t.Fatal(err)
	}
	if post.ID != 305 || post.Footer.Date != (Date{}) {
		t.Errorf("embed 305: id %d date %+v, want an unknown date", post.ID, post.Footer.Date)
	}
}

// In a "more" chunk the newest post may have newer ones on another page:
// it takes its older neighbour's date, never the capture time.
func TestUndatedPostsInAChunk(t *testing.T) {
	const view = "eyJwIjo4LCJ0IjoiMTc3OTI3ODQwMCJ9" // "t": 2026-05-20T12:00:00Z
	chunk := append(wrapPost("older"), unnamedPost("chan_name/8", view, "")...)
	page, err := ParseMore(chunk)
	if err != nil {
		t.Fatal(err)
	}
	posts := page.Content.Posts
	if len(posts) != 2 {
		t.Fatalf("%d posts", len(posts))
	}
	if d := posts[1].Footer.Date; !d.Estimated || d.Unix != posts[0].Footer.Date.Unix {
		t.Errorf("newest of a chunk: %+v, want its older neighbour's date %d", d, posts[0].Footer.Date.Unix)
	}
	// Oldest of the page and undated: the newer neighbour's date.
	page, err = ParseMore(append(unnamedPost("chan_name/6", view, "garbled"), wrapPost("newer")...))
	if err != nil {
		t.Fatal(err)
	}
	if d := page.Content.Posts[0].Footer.Date; !d.Estimated || d.Unix != page.Content.Posts[1].Footer.Date.Unix {
		t.Errorf("oldest of a chunk: %+v, want its newer neighbour's date", d)
	}
	// Alone, with nothing to go by: unknown.
	if p := onePost(t, unnamedPost("chan_name/8", view, "")); p.Footer.Date != (Date{}) {
		t.Errorf("a lone undated post in a chunk: %+v, want unknown", p.Footer.Date)
	}
}

// A capture time before the older neighbour's date is no estimate of a
// newer post (a page assembled from a stale view): the neighbour's is.
func TestCaptureTimeBeforeNeighbourIsNotTaken(t *testing.T) {
	posts := []Post{
		{ID: 1, Footer: Footer{Date: Date{String: "2026-03-01T10:00:00+00:00", Unix: 1772359200}}},
		{ID: 2, View: "eyJwIjoyLCJ0IjoxMDB9"}, // "t": 100
	}
	estimateDates(posts, true)
	if d := posts[1].Footer.Date; d.Unix != 1772359200 || !d.Estimated {
		t.Errorf("%+v", d)
	}
}
