package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/parser"
)

// The comparison reports each way a reader's entry can differ from the
// API's post, and nothing for an entry that agrees.
func TestCompareFeedReportsEachDifference(t *testing.T) {
	date := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	pic := "http://127.0.0.1:1/cdn/cdn4.telesco.pe/file/a.jpg"
	clip := "http://127.0.0.1:1/cdn/cdn4.telesco.pe/file/b.mp4"
	thumb := "http://127.0.0.1:1/cdn/cdn4.telesco.pe/file/b.jpg"
	item := apiItem{Channel: &parser.Channel{Username: "news"}}
	item.ID = 7
	item.Footer.Date = parser.Date{String: date.Format(time.RFC3339), Unix: date.Unix()}
	item.Content.Text = &parser.Text{String: "Hello & welcome", HTML: "Hello &amp; welcome"}
	item.Content.Media = []parser.Media{
		{Type: parser.MediaImage, URL: pic, Available: true},
		{Type: parser.MediaVideo, URL: clip, Thumb: thumb, Available: true},
	}
	wants := expect([]apiItem{item})
	if len(wants) != 1 || wants[0].link != "https://t.me/news/7" || wants[0].title != "Hello & welcome" {
		t.Fatalf("expected %+v", wants)
	}
	if got := strings.Join(wants[0].enclosures, ","); got != pic+" image/jpeg,"+clip+" video/mp4,"+thumb+" image/jpeg" {
		t.Fatalf("enclosures %s", got)
	}
	good := func() mfEntry {
		e := mfEntry{URL: "https://t.me/news/7", Title: "Hello & welcome", PublishedAt: date,
			Content: `<p><img src="` + pic + `" loading="lazy"></p><a href="` + clip + `"><img src="` + thumb + `"></a>`}
		for _, en := range wants[0].enclosures {
			u, m, _ := strings.Cut(en, " ")
			e.Enclosures = append(e.Enclosures, struct {
				URL      string `json:"url"`
				MimeType string `json:"mime_type"`
			}{u, m})
		}
		return e
	}
	if st, diffs, _ := compareFeed([]mfEntry{good()}, wants, false, date); len(diffs) != 0 || st.entries != 1 || st.images != 2 || st.enclosures != 3 {
		t.Fatalf("an agreeing entry: %+v %q", st, diffs)
	}
	for name, c := range map[string]struct {
		change func(*mfEntry)
		rss    bool
	}{
		"date":                    {change: func(e *mfEntry) { e.PublishedAt = date.Add(time.Hour) }},
		"picture":                 {change: func(e *mfEntry) { e.Content = strings.Replace(e.Content, pic, "x", 1) }},
		"enclosure":               {change: func(e *mfEntry) { e.Enclosures[1].MimeType = "application/octet-stream" }},
		"rss keeps one enclosure": {change: func(*mfEntry) {}, rss: true},
		"title":                   {change: func(e *mfEntry) { e.Title = "Hello" }},
		"link":                    {change: func(e *mfEntry) { e.URL = "https://t.me/news/8" }},
	} {
		e := good()
		c.change(&e)
		if _, diffs, _ := compareFeed([]mfEntry{e}, wants, c.rss, date); len(diffs) == 0 {
			t.Errorf("%s: no difference reported", name)
		}
	}
}
