package parser

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/tme"
)

// The text block t.me nests inside copies of itself on media posts and albums.
const textBlockOpen = `<div class="tgme_widget_message_text js-message_text" dir="auto">`

// bubblePost is a one-post "more" chunk with inner as the bubble's content
// before the footer.
func bubblePost(inner string) []byte {
	return []byte(`<div class="tgme_widget_message_wrap"><div class="tgme_widget_message js-widget_message" data-post="chan_name/7">` +
		`<div class="tgme_widget_message_bubble">` + inner +
		`<div class="tgme_widget_message_footer"><div class="tgme_widget_message_info"><span class="tgme_widget_message_views">1.2K</span>` +
		`<span class="tgme_widget_message_meta"><a class="tgme_widget_message_date" href="https://t.me/chan_name/7"><time datetime="2026-03-01T10:00:00+00:00" class="time">10:00</time></a></span>` +
		`</div></div></div></div></div>`)
}

func onePost(t *testing.T, page []byte) Post {
	t.Helper()
	p, err := ParseMore(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Content.Posts) != 1 {
		t.Fatalf("want 1 post, got %d", len(p.Content.Posts))
	}
	return p.Content.Posts[0]
}

func nest(inner, sep string, levels int) string {
	for range levels {
		inner = textBlockOpen + sep + inner + sep + "</div>"
	}
	return inner
}

// Whatever the nesting depth, text.html is the innermost block's markup and
// text.string and the entities are those of the flat post.
func TestNestedTextBlocks(t *testing.T) {
	const inner = `Line <b>one</b><br/>two <a href="https://x.example/a?b=1&amp;c=2">link</a> ` +
		`<i class="emoji" style="background-image:url('//telegram.org/img/emoji/40/F09F9880.png')"><b>😀</b></i>`
	flat := onePost(t, wrapPost(inner)).Content.Text
	if flat == nil || flat.HTML != inner {
		t.Fatalf("flat post: text %+v, want html %q", flat, inner)
	}
	for levels := 1; levels <= 5; levels++ {
		// t.me writes the copies back to back; re-indented pages put line breaks between them.
		for _, sep := range []string{"", "\n      "} {
			got := onePost(t, wrapPost(nest(inner, sep, levels))).Content.Text
			if got == nil {
				t.Fatalf("%d extra levels: no text", levels)
			}
			if got.HTML != inner {
				t.Errorf("%d extra levels, separator %q: html = %q, want %q", levels, sep, got.HTML, inner)
			}
			if got.String != flat.String || !reflect.DeepEqual(got.Entities, flat.Entities) {
				t.Errorf("%d extra levels: text %q %+v, want %q %+v", levels, got.String, got.Entities, flat.String, flat.Entities)
			}
		}
	}
}

// Markup that encloses a whole text but is part of it stays; so does a
// nested block that other text follows.
func TestTextMarkupIsNotAWrapper(t *testing.T) {
	for _, html := range []string{
		`<b>all bold</b>`,
		`<span class="tg-spoiler">all hidden</span>`,
		`<tg-spoiler>all hidden</tg-spoiler>`,
		`<i class="emoji" style="background-image:url('//telegram.org/img/emoji/40/F09F8E81.png')"><b>🎁</b></i>`,
		`<a href="https://x.example/">https://x.example/</a>`,
		`<span dir="auto">one</span> <span dir="auto">two</span>`,
		`<blockquote>quoted</blockquote>`,
		textBlockOpen + `first</div> then more`,
	} {
		got := onePost(t, wrapPost(html)).Content.Text
		if got == nil || got.HTML != html {
			t.Errorf("html = %+v, want %q kept as it is", got, html)
		}
	}
}

// A page cut inside nested blocks still gives the markup read so far.
func TestNestedTextTruncated(t *testing.T) {
	page := bubblePost(nest(`Hello <b>world</b>`, "", 3))
	cut := page[:bytes.Index(page, []byte("</div>"))]
	got := onePost(t, cut).Content.Text
	if got == nil || got.HTML != `Hello <b>world</b>` || got.String != "Hello world" {
		t.Errorf("truncated nested text = %+v", got)
	}
}

// A spacer t.me's script adds after the inner block adds no text: it goes
// with the wrapper (a browser-saved 2023 album has one).
func TestNestedTextWithSpacer(t *testing.T) {
	html := textBlockOpen + `<b>Caption</b></div>` + "\n" + `<span style="display: inline-block; width: 97px;"></span>`
	got := onePost(t, wrapPost(html)).Content.Text
	if got == nil || got.HTML != `<b>Caption</b>` {
		t.Errorf("html = %+v, want the inner block's markup", got)
	}
}

// The other HTML fields read from blocks t.me may wrap.
func TestOtherFieldsUnwrapped(t *testing.T) {
	p := onePost(t, bubblePost(
		`<div class="tgme_widget_message_forwarded_from accent_color">Forwarded from&nbsp;<a class="tgme_widget_message_forwarded_from_name" href="https://t.me/src/3">`+
			`<span dir="auto">Source <i class="emoji" style="background-image:url('//telegram.org/img/emoji/40/E29C85.png')"><b>✅</b></i></span></a></div>`+
			`<a class="tgme_widget_message_reply" href="https://t.me/chan_name/5"><div class="tgme_widget_message_author accent_color">`+
			`<span class="tgme_widget_message_author_name" dir="auto">Chan</span></div>`+
			`<div class="tgme_widget_message_metatext js-message_reply_text" dir="auto">`+nest(`Quoted <b>bit</b>`, "", 2)+`</div></a>`+
			wrapText(`Body`)+
			`<a class="tgme_widget_message_link_preview" href="https://x.example/"><div class="link_preview_site_name" dir="auto">X</div>`+
			`<div class="link_preview_description" dir="auto"><div class="link_preview_description" dir="auto">Desc <b>bold</b></div></div></a>`))
	if f := p.Forwarded; f == nil || !strings.HasPrefix(f.Name.HTML, "Source <i class=\"emoji\"") || !strings.HasSuffix(f.Name.HTML, "</i>") {
		t.Errorf("forwarded = %+v, want the name's markup without <span dir=\"auto\">", f)
	}
	if r := p.Content.Reply; r == nil || r.Text.HTML != `Quoted <b>bit</b>` || r.Text.String != "Quoted bit" || r.Name.HTML != "Chan" {
		t.Errorf("reply = %+v", r)
	}
	if l := p.Content.PreviewLink; l == nil || l.Description == nil || l.Description.HTML != `Desc <b>bold</b>` {
		t.Errorf("preview link = %+v", l)
	}
	if x := p.Content.Text; x == nil || x.HTML != "Body" {
		t.Errorf("text = %+v", x)
	}
}

func wrapText(inner string) string { return textBlockOpen + inner + `</div>` }

// The fixtures hold text nested two and three blocks deep (tmefeed_news 35,
// kanal_novostei 1214); every HTML field they yield is unwrapped, and a
// nested post's html is the innermost block's markup as the page holds it.
func TestFixturesUnwrapped(t *testing.T) {
	nested := map[string]int{"tmefeed_news/35": 2, "kanal_novostei/1214": 3}
	seen := map[string]bool{}
	for _, f := range loadFixtures(t) {
		v, err := parseAs(f.kind, f.data)
		if err != nil {
			continue
		}
		var posts []Post
		switch p := v.(type) {
		case *Page:
			posts = p.Content.Posts
			if p.Channel != nil {
				cfUnwrapped(t, f.rel+": channel", "Title.HTML", p.Channel.Title.HTML)
			}
		case *Post:
			posts = []Post{*p}
		}
		raw := f.data
		if f.kind == tme.KindMore {
			raw = nil // JSON-escaped: the checks on raw markup use the HTML pages
		}
		for i := range posts {
			p := &posts[i]
			where := f.rel + ": post " + itoa(p.ID)
			cfPostUnwrapped(t, where, p)
			key := p.Channel + "/" + itoa(p.ID)
			levels, ok := nested[key]
			if !ok || raw == nil {
				continue
			}
			seen[key] = true
			want, got := innermostText(raw, key, levels), ""
			if p.Content.Text != nil {
				got = p.Content.Text.HTML
			}
			if want == "" || got != want {
				t.Errorf("%s: html = %q, want the innermost of %d text blocks, %q", where, got, levels, want)
			}
		}
	}
	for key := range nested {
		if !seen[key] {
			t.Errorf("no fixture page holds post %s", key)
		}
	}
}

// innermostText reads, from a page's bytes, the markup of post key's text
// block when it is nested exactly levels deep, or "" when it is not.
func innermostText(page []byte, key string, levels int) string {
	i := bytes.Index(page, []byte(`data-post="`+key+`"`))
	if i < 0 {
		return ""
	}
	rest := page[i:]
	j := bytes.Index(rest, []byte(strings.Repeat(textBlockOpen, levels)))
	if j < 0 || bytes.HasPrefix(rest[j+levels*len(textBlockOpen):], []byte(textBlockOpen)) {
		return ""
	}
	inner := rest[j+levels*len(textBlockOpen):]
	end := bytes.Index(inner, []byte(strings.Repeat("</div>", levels)))
	if end < 0 {
		return ""
	}
	return string(inner[:end])
}
