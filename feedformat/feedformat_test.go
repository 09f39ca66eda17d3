package feedformat

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/parser"
)

func item(p parser.Post) feed.Item {
	p.Channel = "SomeChannel"
	p.Footer.Date.Unix = 1_700_000_000
	return feed.Item{Post: &p, Channel: &parser.Channel{Username: "SomeChannel", Title: parser.Rich{String: "Some Channel"}}}
}

func TestTitles(t *testing.T) {
	long := strings.Repeat("word ", 60)
	for _, c := range []struct {
		post parser.Post
		want string
	}{
		{parser.Post{ID: 1, Content: parser.PostContent{Text: &parser.Text{String: "\n  First line  \nsecond"}}}, "First line — second"},
		{parser.Post{ID: 8, Content: parser.PostContent{Text: &parser.Text{String: "Minister:\n«The bridge opens in May, not in June.»\nMore below."}}}, "Minister: «The bridge opens in May, not in June.»"},
		{parser.Post{ID: 9, Content: parser.PostContent{Text: &parser.Text{String: "A first line long enough to stand on its own\nsecond"}}}, "A first line long enough to stand on its own"},
		// A spoiler (UTF-16 offsets: the emoji counts two) is hidden.
		{parser.Post{ID: 10, Content: parser.PostContent{Text: &parser.Text{String: "🎬 Who won? The blue team!", Entities: []parser.Entity{{Offset: 12, Length: 13, Type: parser.EntitySpoiler}}}}}, "🎬 Who won? [spoiler]!"},
		{parser.Post{ID: 2, Content: parser.PostContent{Media: []parser.Media{{Type: parser.MediaImage}, {Type: parser.MediaImage}}}}, "2 photos"},
		{parser.Post{ID: 3, Content: parser.PostContent{Media: []parser.Media{{Type: parser.MediaVideo}, {Type: parser.MediaImage}}}}, "Video and 1 more"},
		{parser.Post{ID: 4, Content: parser.PostContent{Media: []parser.Media{{Type: parser.MediaDocument, Title: "report.pdf"}}}}, "report.pdf"},
		{parser.Post{ID: 5, Content: parser.PostContent{Poll: &parser.Poll{Question: "Tea?"}}}, "Poll: Tea?"},
		{parser.Post{ID: 6, Service: &parser.Service{Text: "Channel photo updated"}}, "Channel photo updated"},
		{parser.Post{ID: 7}, "Post 7"},
	} {
		if got := title(&c.post); got != c.want {
			t.Errorf("post %d: title %q, want %q", c.post.ID, got, c.want)
		}
	}
	got := title(&parser.Post{Content: parser.PostContent{Text: &parser.Text{String: long}}})
	if n := utf8.RuneCountInString(got); n > maxTitleRunes || !strings.HasSuffix(got, "word…") {
		t.Errorf("long title %q (%d runes): want at most %d, cut after a word", got, n, maxTitleRunes)
	}
	cyr := strings.Repeat("я", 300)
	if got := title(&parser.Post{Content: parser.PostContent{Text: &parser.Text{String: cyr}}}); !utf8.ValidString(got) || utf8.RuneCountInString(got) != maxTitleRunes {
		t.Errorf("a title without spaces is cut inside a rune or to the wrong length: %d runes", utf8.RuneCountInString(got))
	}
}

// TestXMLCharacters: characters XML 1.0 cannot hold are removed from
// every field (not replaced), and the document stays well-formed.
func TestXMLCharacters(t *testing.T) {
	bad := "a\x00b\x01c\x0bd\uFFFEe\xffg"
	p := parser.Post{ID: 9, Content: parser.PostContent{Text: &parser.Text{String: bad, HTML: bad}}}
	for _, f := range []Format{RSS, Atom} {
		b, err := Render(f, []feed.Item{item(p)}, Options{Channels: []string{"somechannel"}, SelfURL: "http://x/v1/" + f.String()})
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(bytes.NewReader(b))
		for {
			_, err := d.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Errorf("%s: not well-formed: %v", f, err)
				}
				break
			}
		}
		if !bytes.Contains(b, []byte("abcdeg")) || bytes.Contains(b, []byte("\uFFFD")) {
			t.Errorf("%s: bad characters not removed cleanly:\n%s", f, b)
		}
	}
}

// TestMediaLinks: only http(s) media URLs are linked or attached; with a
// media base they become durable links.
func TestMediaLinks(t *testing.T) {
	p := parser.Post{ID: 5, Content: parser.PostContent{Media: []parser.Media{
		{Type: parser.MediaImage, URL: "javascript:alert(1)", Available: true},
		{Type: parser.MediaVideo, URL: "//cdn.example/v.mp4", Thumb: "https://cdn.example/t.jpg", Available: true},
		{Type: parser.MediaVideo, Thumb: "https://cdn.example/big.jpg", Available: true},
		{Type: parser.MediaUnsupported},
	}}}
	e := newEntry(item(p), &Options{})
	if len(e.attachments) != 3 || e.attachments[0].url != "https://cdn.example/v.mp4" || e.attachments[0].mimeType != "video/mp4" ||
		e.attachments[1].url != "https://cdn.example/t.jpg" || e.attachments[1].mimeType != "image/jpeg" ||
		e.attachments[2].url != "https://cdn.example/big.jpg" || e.attachments[2].mimeType != "image/jpeg" {
		t.Errorf("attachments %+v", e.attachments)
	}
	if strings.Contains(e.content, "javascript") {
		t.Errorf("content links a javascript: URL: %s", e.content)
	}
	e = newEntry(item(p), &Options{MediaBase: "https://pub.example"})
	if len(e.attachments) != 3 || e.attachments[0].url != "https://pub.example/media/somechannel/5/1" ||
		e.attachments[1].url != "https://pub.example/media/somechannel/5/1?thumb=1" || e.attachments[2].url != "https://pub.example/media/somechannel/5/2?thumb=1" {
		t.Errorf("durable attachments %+v", e.attachments)
	}
	if !strings.Contains(e.content, `src="https://pub.example/media/somechannel/5/1?thumb=1"`) || strings.Contains(e.content, "cdn.example") {
		t.Errorf("content does not link media through the base: %s", e.content)
	}
}

// A post t.me names nowhere has an id and link of its own; a date nothing
// gives is left out where the format allows it and is the feed's own date
// where Atom requires one, never 1970.
func TestUnnamedAndUndatedPosts(t *testing.T) {
	dated := item(parser.Post{ID: 7, Content: parser.PostContent{Text: &parser.Text{String: "dated"}}})
	p := parser.Post{Content: parser.PostContent{
		Text:  &parser.Text{String: "no number, no date"},
		Media: []parser.Media{{Type: parser.MediaImage, URL: "https://cdn.example/p.jpg", Available: true}},
	}}
	unnamed := item(p)
	unnamed.Post.Footer.Date = parser.Date{}
	items := []feed.Item{dated, unnamed}
	o := Options{Channels: []string{"somechannel"}, SelfURL: "https://pub.example/v1/atom", MediaBase: "https://pub.example"}

	e := newEntry(unnamed, &o)
	if e.link != "https://t.me/s/somechannel" || !strings.HasPrefix(e.id, e.link+"#unnamed-") || e.title != "no number, no date" || !e.date.IsZero() {
		t.Errorf("entry %+v", e)
	}
	if len(e.attachments) != 1 || e.attachments[0].url != "https://cdn.example/p.jpg" {
		t.Errorf("media of a post without a number is linked through /media: %+v", e.attachments)
	}
	if again := newEntry(unnamed, &o); again.id != e.id {
		t.Errorf("id changes: %q, %q", e.id, again.id)
	}

	for _, f := range []Format{RSS, Atom, JSONFeed} {
		b, err := Render(f, items, o)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(s, "1970") || strings.Contains(s, "Jan 1970") {
			t.Errorf("%d: a date of 1970:\n%s", f, s)
		}
		switch f {
		case RSS:
			if strings.Count(s, "<pubDate>") != 2 { // the channel's and the dated item's
				t.Errorf("RSS pubDates:\n%s", s)
			}
			if !strings.Contains(s, `<guid isPermaLink="false">https://t.me/s/somechannel#unnamed-`) {
				t.Errorf("RSS guid of the unnamed post:\n%s", s)
			}
		case Atom:
			// Both entries carry the feed's updated date, the dated one as published too.
			if strings.Count(s, "<updated>2023-11-14T22:13:20Z</updated>") != 3 || strings.Count(s, "<published>") != 1 {
				t.Errorf("Atom dates:\n%s", s)
			}
		case JSONFeed:
			if strings.Count(s, `"date_published"`) != 1 {
				t.Errorf("JSON Feed dates:\n%s", s)
			}
		}
	}
}

// Titles are the titles the documents give, shared ones numbered.
func TestExportedTitlesAreTheDocuments(t *testing.T) {
	items := []feed.Item{
		item(parser.Post{ID: 5, Content: parser.PostContent{Text: &parser.Text{String: "Live at 19:00."}}}),
		item(parser.Post{ID: 6, Content: parser.PostContent{Text: &parser.Text{String: "Live at 19:00."}}}),
		item(parser.Post{ID: 7, Content: parser.PostContent{Media: []parser.Media{{Type: parser.MediaImage}}}}),
	}
	got := strings.Join(Titles(items), "|")
	if want := "Live at 19:00. (#5)|Live at 19:00. (#6)|Photo"; got != want {
		t.Fatalf("Titles %q, want %q", got, want)
	}
	b, err := Render(RSS, items, Options{Channels: []string{"somechannel"}, SelfURL: "http://x/v1/rss"})
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range Titles(items) {
		if !bytes.Contains(b, []byte("<title>"+title+"</title>")) {
			t.Errorf("the RSS document has no item titled %q", title)
		}
	}
}
