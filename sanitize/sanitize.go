// Package sanitize makes Telegram's post HTML safe to put in a page that
// tmefeed serves or a feed reader shows.
//
// The parser keeps a post's text as t.me serves it (parser.Text.HTML,
// parser.Rich.HTML): bold, italic, underline, strikethrough, links, code
// and pre blocks, blockquotes, spoilers, emoji images and custom emoji, line
// breaks. A channel owner controls that text, and the origin it comes from
// is not ours, so it is treated as hostile: an allow-list of exactly that
// markup is kept (github.com/microcosm-cc/bluemonday) and everything else,
// scripts, event handlers, frames, forms, styles, javascript: and data:
// URLs, is removed. The package knows nothing about the faces that use it.
package sanitize

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Config chooses what the policy keeps beyond the text's formatting.
type Config struct {
	// EmojiImages keeps the inline background image t.me puts on an emoji
	// (<i class="emoji" style="background-image:url('//telegram.org/img/emoji/…')">)
	// when it is exactly one of Telegram's emoji images. Off, the emoji is the
	// character t.me writes inside it, and no style attribute is left: a
	// page with a strict Content-Security-Policy (no inline styles) wants
	// that.
	EmojiImages bool
}

// Policy sanitizes post HTML. It is safe for concurrent use.
type Policy struct {
	p *bluemonday.Policy
}

var (
	// Telegram's emoji images: //telegram.org/img/emoji/40/<hex>.png, the
	// only value the style attribute may keep (bluemonday lower-cases it).
	emojiImage = regexp.MustCompile(`^url\(['"]?(?:https:)?//telegram\.org/img/emoji/\d{1,3}/[0-9a-f]{2,64}\.png['"]?\)$`)
	// pre/code blocks name their language as class="language-go".
	languageClass = regexp.MustCompile(`^language-[A-Za-z0-9_+#.-]{1,32}$`)
	emojiID       = regexp.MustCompile(`^[0-9]{1,20}$`)
	direction     = regexp.MustCompile(`^(?i:ltr|rtl|auto)$`)
)

// New builds a policy.
func New(cfg Config) *Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "br", "blockquote", "pre", "code", "span")
	// bluemonday drops an element it does not know to be harmless bare;
	// a spoiler has no attributes.
	p.AllowNoAttrs().OnElements("tg-spoiler")
	// Links: web and Telegram only. Relative links are resolved against
	// the caller's base before this policy sees them (Sanitize).
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "tg")
	p.AllowRelativeURLs(false)
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.AllowAttrs("class").Matching(languageClass).OnElements("code", "pre")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^tg-spoiler$`)).OnElements("span")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^expandable$`)).OnElements("blockquote")
	p.AllowAttrs("expandable").Matching(regexp.MustCompile(`^(|expandable)$`)).OnElements("blockquote")
	p.AllowAttrs("dir").Matching(direction).Globally()
	// Custom emoji: the id only; the character inside stays.
	p.AllowAttrs("emoji-id").Matching(emojiID).OnElements("tg-emoji")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^emoji$`)).OnElements("i")
	if cfg.EmojiImages {
		p.AllowStyles("background-image").Matching(emojiImage).OnElements("i")
	}
	// Elements whose content is code or markup, not text, go whole.
	p.SkipElementsContent("script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math", "textarea", "select", "title", "xmp", "noembed", "noframes", "plaintext")
	return &Policy{p: p}
}

// Sanitize returns html with only the allowed markup left. Relative links
// (t.me writes hashtags as href="?q=%23tag") are resolved against base,
// the page the HTML was taken from; with a nil base they lose their link
// and keep their text.
func (p *Policy) Sanitize(s string, base *url.URL) string {
	if base != nil && strings.Contains(s, "href") {
		s = resolveLinks(s, base)
	}
	return balance(p.p.Sanitize(s))
}

// balance closes what the markup leaves open and drops end tags that close
// nothing: the policy works token by token, and an unclosed <b> or a
// stray </blockquote> would otherwise spill into the page around the post.
func balance(s string) string {
	if !strings.ContainsRune(s, '<') {
		return s
	}
	body := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(s), body)
	if err != nil {
		// Only a reader's error ends ParseFragment early; a string has none.
		return html.EscapeString(s)
	}
	var out bytes.Buffer
	out.Grow(len(s) + 16)
	for _, n := range nodes {
		if err := html.Render(&out, n); err != nil {
			return html.EscapeString(s)
		}
	}
	return out.String()
}

var postPolicy = New(Config{})

// Post sanitizes a post's HTML from channel's page on t.me (its relative
// links point there) with the default policy: emoji are their characters.
func Post(s, channel string) string {
	base := &url.URL{Scheme: "https", Host: "t.me", Path: "/s/" + url.PathEscape(channel)}
	return postPolicy.Sanitize(s, base)
}

// resolveLinks rewrites every relative href of an <a> in s against base.
// The result is re-serialized from tokens; the policy then parses it again,
// so nothing this pass leaves is trusted.
func resolveLinks(s string, base *url.URL) string {
	var out bytes.Buffer
	out.Grow(len(s) + 64)
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out.String()
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			out.Write(z.Raw())
			continue
		}
		tok := z.Token()
		if tok.Data != "a" {
			out.Write(z.Raw())
			continue
		}
		for i, a := range tok.Attr {
			if a.Namespace != "" || a.Key != "href" {
				continue
			}
			u, err := url.Parse(strings.TrimSpace(a.Val))
			if err != nil || u.IsAbs() || u.Host != "" {
				continue
			}
			tok.Attr[i].Val = base.ResolveReference(u).String()
		}
		out.WriteString(tok.String())
	}
}
