package main

import (
	"fmt"
	"html"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feedformat"
	"github.com/tmefeed/tmefeed/parser"
)

// apiItem is one post of POST /v1/feed's "result": the post and its
// channel's header.
type apiItem struct {
	parser.Post
	Channel *parser.Channel `json:"channel"`
}

// want is what a reader should show of one post, read from the JSON API
// by the rules for feed-reader documents in docs/API.md.
type want struct {
	link, title string
	date        time.Time // zero: the page does not date the post
	images      []string  // pictures shown in the content
	enclosures  []string  // "url mime", in the post's order
}

// expect reads the reader's view of the posts items from the JSON API.
// Titles are the documents' own reading of a post (feedformat.Titles);
// links, dates, pictures and attachments follow docs/API.md.
func expect(items []apiItem) []want {
	fitems := make([]feed.Item, len(items))
	for i := range items {
		p := items[i].Post
		if items[i].Channel != nil {
			p.Channel = items[i].Channel.Username
		}
		fitems[i] = feed.Item{Post: &p, Channel: items[i].Channel}
	}
	titles := feedformat.Titles(fitems)
	out := make([]want, len(items))
	for i, it := range fitems {
		p := it.Post
		ch := strings.ToLower(p.Channel)
		w := want{title: titles[i], link: fmt.Sprintf("https://t.me/%s/%d", ch, p.ID)}
		if p.ID == 0 {
			w.link = "https://t.me/s/" + ch
		}
		if p.Footer.Date.Known() {
			w.date = time.Unix(p.Footer.Date.Unix, 0).UTC()
		}
		for _, m := range p.Content.Media {
			if pic := picture(m); pic != "" {
				w.images = append(w.images, pic)
			}
			w.enclosures = append(w.enclosures, attachments(m)...)
		}
		out[i] = w
	}
	return out
}

var (
	pictureExt = []string{".jpg", ".jpeg", ".png", ".webp", ".gif"}
	videoExt   = []string{".mp4", ".webm"}
)

func ext(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(path.Ext(p.Path))
}

// file is the medium's file a reader can show or play: none for a link
// to the post's page (t.me) or an animated sticker only Telegram plays.
func file(m parser.Media) string {
	if m.URL == "" || m.Type == parser.MediaUnsupported {
		return ""
	}
	if u, err := url.Parse(m.URL); err != nil || strings.EqualFold(u.Hostname(), "t.me") {
		return ""
	}
	if m.Type == parser.MediaSticker && !slices.Contains(pictureExt, ext(m.URL)) && !slices.Contains(videoExt, ext(m.URL)) {
		return ""
	}
	return m.URL
}

// picture is what the content shows of m as an image: a picture (or a
// sticker's) itself, else the preview picture of what plays.
func picture(m parser.Media) string {
	if m.Type == parser.MediaUnsupported {
		return ""
	}
	f := file(m)
	isPic := m.Type == parser.MediaImage || (m.Type == parser.MediaSticker && slices.Contains(pictureExt, ext(f)))
	if f != "" && isPic && m.Available {
		return f
	}
	return m.Thumb
}

// attachments are m's files a reader attaches, "url mime": the file,
// typed by its extension else by its kind, and the preview picture when
// the file is not itself a picture or cannot be had.
func attachments(m parser.Media) []string {
	if m.Type == parser.MediaUnsupported {
		return nil
	}
	var out []string
	fileIsPic := false
	if f := file(m); f != "" && m.Available {
		mt := mime(f, m.Type)
		fileIsPic = strings.HasPrefix(mt, "image/")
		out = append(out, f+" "+mt)
	}
	if m.Thumb != "" && !fileIsPic {
		out = append(out, m.Thumb+" "+mime(m.Thumb, parser.MediaImage))
	}
	return out
}

func mime(u string, k parser.MediaKind) string {
	switch ext(u) {
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".png":
		return "image/png"
	case ".webp":
		return "image/webp"
	case ".gif":
		return "image/gif"
	case ".mp4":
		return "video/mp4"
	case ".webm":
		return "video/webm"
	case ".ogg", ".oga":
		return "audio/ogg"
	case ".mp3":
		return "audio/mpeg"
	case ".m4a":
		return "audio/mp4"
	case ".pdf":
		return "application/pdf"
	}
	switch k {
	case parser.MediaImage:
		return "image/jpeg"
	case parser.MediaVideo, parser.MediaGIF, parser.MediaRoundVideo:
		return "video/mp4"
	case parser.MediaVoice:
		return "audio/ogg"
	case parser.MediaAudio:
		return "audio/mpeg"
	}
	return "application/octet-stream"
}

var imgSrc = regexp.MustCompile(`<img[^>]*\ssrc="([^"]*)"`)

// compareFeed matches the reader's entries of one feed with the posts the
// JSON API gives for it, by link and title (a post t.me names nowhere
// shares its channel's link with others), and lists every difference.
// rss: RSS gives an item one enclosure, the first.
//
// Miniflux decodes HTML entities in an RSS title twice (its rss adapter's
// findEntryTitle), as if every RSS title were escaped HTML: a post whose
// text spells an entity ("&amp;") is titled with it decoded there. Such a
// title is matched as that reading of the API's, and listed in notes.
func compareFeed(entries []mfEntry, wants []want, rss bool, started time.Time) (st stats, diffs, notes []string) {
	used := make([]bool, len(entries))
	for _, w := range wants {
		at := -1
		for i, e := range entries {
			if !used[i] && e.URL == w.link && e.Title == w.title {
				at = i
				break
			}
		}
		if decoded := html.UnescapeString(html.UnescapeString(w.title)); at < 0 && rss && decoded != w.title {
			for i, e := range entries {
				if !used[i] && e.URL == w.link && e.Title == decoded {
					at = i
					notes = append(notes, fmt.Sprintf("%s: RSS title %q read as %q", w.link, w.title, decoded))
					break
				}
			}
		}
		if at < 0 {
			diffs = append(diffs, fmt.Sprintf("%s %q: no entry with this link and title", w.link, w.title))
			continue
		}
		used[at] = true
		st.entries++
		e := entries[at]
		d := func(format string, args ...any) {
			diffs = append(diffs, fmt.Sprintf("%s %q: ", w.link, w.title)+fmt.Sprintf(format, args...))
		}
		switch {
		case w.date.IsZero():
			st.undated++
			// An undated post is dated by the reader when it first saw
			// it, never 1970.
			if e.PublishedAt.Before(started.Add(-time.Minute)) {
				d("undated post published at %s", e.PublishedAt)
			}
		case !e.PublishedAt.Equal(w.date):
			d("published %s, the API says %s", e.PublishedAt.UTC(), w.date)
		}
		var shown []string
		for _, m := range imgSrc.FindAllStringSubmatch(e.Content, -1) {
			shown = append(shown, html.UnescapeString(m[1]))
		}
		for _, img := range w.images {
			st.images++
			if !slices.Contains(shown, img) {
				d("picture %s not in the content (images: %q)", img, shown)
			}
		}
		want := w.enclosures
		if rss && len(want) > 1 {
			want = want[:1]
		}
		var got []string
		for _, en := range e.Enclosures {
			got = append(got, en.URL+" "+en.MimeType)
		}
		st.enclosures += len(want)
		if strings.Join(sorted(got), "\n") != strings.Join(sorted(want), "\n") {
			d("enclosures %q, want %q", got, want)
		}
	}
	for i, e := range entries {
		if !used[i] {
			diffs = append(diffs, fmt.Sprintf("%s %q: an entry the API has no post for", e.URL, e.Title))
		}
	}
	return st, diffs, notes
}

// stats count what one comparison checked.
type stats struct {
	entries    int // matched with a post of the API
	images     int // pictures looked for in the content
	enclosures int // enclosures expected
	undated    int // posts the page does not date
}

func (s *stats) add(o stats) {
	s.entries += o.entries
	s.images += o.images
	s.enclosures += o.enclosures
	s.undated += o.undated
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
