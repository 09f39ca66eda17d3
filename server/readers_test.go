package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/mmcdole/gofeed"
)

// readDoc fetches and parses a feed-reader document as a reader does.
func readDoc(t *testing.T, target string) *gofeed.Feed {
	t.Helper()
	res, body := httpGet(t, target)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", target, res.StatusCode, body)
	}
	doc, err := gofeed.NewParser().Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	return doc
}

func itemByLink(t *testing.T, doc *gofeed.Feed, link string) *gofeed.Item {
	t.Helper()
	for _, it := range doc.Items {
		if it.Link == link {
			return it
		}
	}
	t.Fatalf("no item %s", link)
	return nil
}

// restMedia is the media of every post of channels as POST /v1/feed gives
// them, by the post's link.
func restMedia(t *testing.T, e *env, channels ...string) map[string][]struct{ Type, URL, Thumb string } {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"channels": channels, "order": "newest", "limit": 500})
	var out struct {
		Result []struct {
			restPost
			Content struct {
				Media []struct{ Type, URL, Thumb string } `json:"media"`
			} `json:"content"`
		} `json:"result"`
	}
	wantOK(t, e.do(http.MethodPost, "/v1/feed", body), &out)
	m := map[string][]struct{ Type, URL, Thumb string }{}
	for _, p := range out.Result {
		m[p.link()] = p.Content.Media
	}
	return m
}

// TestFormatsReaderMedia: each kind of medium reaches a reader as it can
// use it, in every format. A video too big for the web shows its preview
// picture, attached as an image, and links the post; a document or audio
// file Telegram links to the post's own page is a link in the content,
// never an enclosure; a static sticker is a picture, a video sticker a
// video/webm file, an animated .tgs sticker (which only Telegram plays, and
// which has no picture on the page) a word linking the post.
func TestFormatsReaderMedia(t *testing.T) {
	e, ts := formatEnv(t, envOptions{})
	channels := []string{"video_desk", "emoji_party", "kanal_novostei", "hadashot_today"}
	media := restMedia(t, e, channels...)
	one := func(link, typ string) struct{ Type, URL, Thumb string } {
		t.Helper()
		ms := media[link]
		if len(ms) != 1 || ms[0].Type != typ {
			t.Fatalf("%s: media %+v, want one %s", link, ms, typ)
		}
		return ms[0]
	}
	tooBig := one("https://t.me/video_desk/502", "video")
	tooBigBare := one("https://t.me/video_desk/503", "video")
	if tooBig.URL != "" || tooBig.Thumb == "" || tooBigBare.Thumb == "" {
		t.Fatalf("the fixture's too-big videos: %+v, %+v", tooBig, tooBigBare)
	}
	webm := one("https://t.me/emoji_party/105", "sticker")
	webp := one("https://t.me/emoji_party/106", "sticker")
	tgs := one("https://t.me/emoji_party/104", "sticker")
	if !strings.Contains(webm.URL, ".webm") || !strings.Contains(webp.URL, ".webp") || !strings.Contains(tgs.URL, ".tgs") {
		t.Fatalf("the fixture's stickers: %q, %q, %q", webm.URL, webp.URL, tgs.URL)
	}
	postPages := []string{"https://t.me/video_desk/504", "https://t.me/kanal_novostei/1200", "https://t.me/kanal_novostei/1211", "https://t.me/hadashot_today/15"}
	for _, l := range postPages {
		if ms := media[l]; len(ms) != 1 || ms[0].URL != l {
			t.Fatalf("%s: media %+v, want one linking the post's page", l, ms)
		}
	}

	type enclosure struct{ url, typ string }
	enclosures := func(it *gofeed.Item) []enclosure {
		var out []enclosure
		for _, en := range it.Enclosures {
			out = append(out, enclosure{en.URL, en.Type})
		}
		return out
	}
	content := func(it *gofeed.Item) string {
		if it.Content != "" {
			return it.Content
		}
		return it.Description
	}
	for name, f := range formatRoutes {
		t.Run(name, func(t *testing.T) {
			doc := readDoc(t, ts.URL+f.path+"?channels="+strings.Join(channels, ","))

			for _, v := range []struct {
				link  string
				thumb string
			}{{"https://t.me/video_desk/502", tooBig.Thumb}, {"https://t.me/video_desk/503", tooBigBare.Thumb}} {
				it := itemByLink(t, doc, v.link)
				if got := enclosures(it); !slices.Equal(got, []enclosure{{v.thumb, "image/jpeg"}}) {
					t.Errorf("%s (too big for the web): enclosures %v, want its preview picture as image/jpeg", v.link, got)
				}
				c := content(it)
				if !strings.Contains(c, `<img src="`+htmlAttr(v.thumb)+`"`) || !strings.Contains(c, `href="`+v.link+`"`) {
					t.Errorf("%s: content does not show the preview picture linking the post: %s", v.link, c)
				}
				if name == "jsonfeed" && (it.Image == nil || it.Image.URL != v.thumb) {
					t.Errorf("%s: JSON Feed image %+v, want the preview picture", v.link, it.Image)
				}
			}
			if it := itemByLink(t, doc, "https://t.me/video_desk/503"); it.Title != "Video" {
				t.Errorf("a video without text is titled %q", it.Title)
			}

			for _, l := range postPages {
				it := itemByLink(t, doc, l)
				if got := enclosures(it); len(got) != 0 {
					t.Errorf("%s (a document on the post's page): enclosures %v, want none", l, got)
				}
				if c := content(it); !strings.Contains(c, `<a href="`+l+`">`) {
					t.Errorf("%s: content does not link the post's page: %s", l, c)
				}
			}

			it := itemByLink(t, doc, "https://t.me/emoji_party/106")
			if got := enclosures(it); !slices.Equal(got, []enclosure{{webp.URL, "image/webp"}}) {
				t.Errorf("static sticker: enclosures %v, want its picture as image/webp", got)
			}
			if c := content(it); !strings.Contains(c, `<img src="`+htmlAttr(webp.URL)+`"`) {
				t.Errorf("static sticker: content does not show its picture: %s", c)
			}

			it = itemByLink(t, doc, "https://t.me/emoji_party/105")
			if got := enclosures(it); !slices.Equal(got, []enclosure{{webm.URL, "video/webm"}}) {
				t.Errorf("video sticker: enclosures %v, want its file as video/webm", got)
			}
			if c := content(it); strings.Contains(c, "<img") || !strings.Contains(c, `href="`+htmlAttr(webm.URL)+`"`) {
				t.Errorf("video sticker: content shows it as a picture or does not link it: %s", c)
			}

			it = itemByLink(t, doc, "https://t.me/emoji_party/104")
			if got := enclosures(it); len(got) != 0 {
				t.Errorf("animated .tgs sticker: enclosures %v, want none", got)
			}
			if c := content(it); strings.Contains(c, ".tgs") || strings.Contains(c, "<img") || !strings.Contains(c, "Sticker") {
				t.Errorf("animated .tgs sticker: content %s, want the word and no file", c)
			}
			for _, it := range doc.Items {
				for _, en := range it.Enclosures {
					if strings.Contains(en.URL, ".tgs") || strings.HasPrefix(en.URL, "https://t.me/") || en.Type == "application/octet-stream" {
						t.Errorf("%s: enclosure %s (%s) is nothing a reader can open", it.Link, en.URL, en.Type)
					}
				}
			}
		})
	}
}

// htmlAttr is s as html.EscapeString writes it in an attribute.
func htmlAttr(s string) string { return strings.ReplaceAll(s, "&", "&amp;") }

// spoilerTexts are the texts every post of channels hides as spoilers,
// from the REST API's entities (UTF-16 offsets).
func spoilerTexts(t *testing.T, e *env, channels []string) []string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"channels": channels, "order": "newest", "limit": 500})
	var out struct {
		Result []struct {
			Content struct {
				Text *struct {
					String   string `json:"string"`
					Entities []struct {
						Offset, Length int
						Type           string
					} `json:"entities"`
				} `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	wantOK(t, e.do(http.MethodPost, "/v1/feed", body), &out)
	var texts []string
	for _, p := range out.Result {
		if p.Content.Text == nil {
			continue
		}
		units := utf16Encode(p.Content.Text.String)
		for _, en := range p.Content.Text.Entities {
			if en.Type == "spoiler" {
				texts = append(texts, utf16Decode(units[en.Offset:en.Offset+en.Length]))
			}
		}
	}
	return texts
}

// TestFormatsHideSpoilers: no document shows the text of a spoiler, in
// an item's content or its title; a placeholder stands in its place.
func TestFormatsHideSpoilers(t *testing.T) {
	e, ts := formatEnv(t, envOptions{})
	channels := append(slices.Clone(formatChannels), "video_desk")
	spoilers := spoilerTexts(t, e, channels)
	if len(spoilers) < 4 || !slices.Contains(spoilers, "The bridge, by four votes") {
		t.Fatalf("the fixtures' spoilers: %q", spoilers)
	}
	for name, f := range formatRoutes {
		doc := readDoc(t, ts.URL+f.path+"?channels="+strings.Join(channels, ","))
		placeholders := 0
		for _, it := range doc.Items {
			text := it.Title + "\n" + it.Content + "\n" + it.Description
			placeholders += strings.Count(text, "[spoiler]")
			text = strings.ReplaceAll(text, "[spoiler]", "")
			for _, s := range spoilers {
				if strings.Contains(text, s) {
					t.Errorf("%s: %s shows the spoiler %q", name, it.Link, s)
				}
			}
		}
		if placeholders < len(spoilers) {
			t.Errorf("%s: %d spoiler placeholders for %d spoilers", name, placeholders, len(spoilers))
		}
		if it := itemByLink(t, doc, "https://t.me/video_desk/507"); it.Title != "Who won the vote? [spoiler] Watch the count in tonight's replay." {
			t.Errorf("%s: the title of a post opening with a spoiler: %q", name, it.Title)
		}
	}
}

// TestFormatsTitlesAndNames: posts of a channel never share a title, a
// short first line is read on into the next, a feed with no posts is
// named by its channel and dated when it was read, not in 1970, and a
// feed's site is a page for people: the widget for several channels, the
// channel on t.me for one.
func TestFormatsTitlesAndNames(t *testing.T) {
	_, ts := formatEnv(t, envOptions{widget: true})
	for name, f := range formatRoutes {
		doc := readDoc(t, ts.URL+f.path+"?channels=video_desk,tmefeed_news,kanal_novostei")
		seen := map[string]string{}
		for _, it := range doc.Items {
			ch := it.Link[:strings.LastIndexByte(it.Link, '/')]
			if prev, ok := seen[ch+"\x00"+it.Title]; ok {
				t.Errorf("%s: %s and %s share the title %q", name, prev, it.Link, it.Title)
			}
			seen[ch+"\x00"+it.Title] = it.Link
		}
		for link, want := range map[string]string{
			"https://t.me/video_desk/500": "Minister: «The bridge opens in May, not in June.»",
			"https://t.me/video_desk/505": "Live at 19:00. (#505)",
			"https://t.me/video_desk/506": "Live at 19:00. (#506)",
		} {
			if it := itemByLink(t, doc, link); it.Title != want {
				t.Errorf("%s: %s titled %q, want %q", name, link, it.Title, want)
			}
		}
		home := ts.URL + "/embed?" + url.Values{"channels": {"video_desk,tmefeed_news,kanal_novostei"}}.Encode()
		if doc.Link != home {
			t.Errorf("%s: a merged feed's site is %q, want the widget %q", name, doc.Link, home)
		}
		if res, _ := httpGet(t, doc.Link); res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: the site link answers %d %s", name, res.StatusCode, res.Header.Get("Content-Type"))
		}

		empty := readDoc(t, ts.URL+f.path+"?channels=video_desk&query=nothing+says+this")
		if len(empty.Items) != 0 || empty.Title != "Video Desk" || empty.Link != "https://t.me/s/video_desk" {
			t.Errorf("%s: empty feed: %d items, title %q, link %q; want none, the channel's title and page", name, len(empty.Items), empty.Title, empty.Link)
		}
		if name == "jsonfeed" {
			continue // JSON Feed dates no feed
		}
		if u := empty.UpdatedParsed; u == nil || time.Since(*u) > 2*time.Hour || time.Until(*u) > time.Minute {
			t.Errorf("%s: an empty feed dated %v (%q), want within the hour it was read", name, u, empty.Updated)
		}
	}
}

func utf16Encode(s string) []uint16 { return utf16.Encode([]rune(s)) }

func utf16Decode(u []uint16) string { return string(utf16.Decode(u)) }
