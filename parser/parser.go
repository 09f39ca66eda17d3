// Package parser reads t.me pages with a single pass of the x/net/html
// Tokenizer and returns the domain model in model.go. It never builds a DOM:
// a small state machine keyed on class names and nesting depth reads what
// it needs while the tokens go by, so a 150 KB page costs little more than
// tokenizing it.
package parser

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmefeed/tmefeed/tme"
)

var (
	// ErrNotChannel: the page is a preview of a user, group, bot or unknown name.
	ErrNotChannel = errors.New("parser: not a public channel")
	// ErrPostNotFound: an embed page that shows Telegram's "post not found" message.
	ErrPostNotFound = errors.New("parser: post not found")
	// ErrNotPage: the bytes are not a t.me page of the expected kind.
	ErrNotPage = tme.ErrNotPage
)

// ParseBody reads a channel page, t.me/s/<channel> or t.me/s/<channel>/<id>.
// Posts come oldest first, as Telegram lists them.
func ParseBody(b []byte) (*Page, error) {
	s := newScanner(b)
	s.run()
	if !s.hasTitle && len(s.posts) == 0 && s.channel.Username == "" {
		if s.userIcon || s.preview.Title != "" || s.preview.Subscribers != "" {
			return nil, ErrNotChannel
		}
		return nil, fmt.Errorf("%w: no channel header and no posts", ErrNotPage)
	}
	p := &Page{Content: Content{Posts: s.posts}}
	ch := s.channel
	if !s.hasTitle && s.ogTitle != "" {
		ch.Title = Rich{String: s.ogTitle, HTML: escapeHTML(s.ogTitle)}
	}
	if ch.Username == "" {
		ch.Username = usernameFrom(s)
	}
	if ch.Avatar == "" {
		ch.Avatar = s.ogImage
	}
	if ch.Description == nil && s.ogDesc != "" && s.hasTitle {
		ch.Description = &Rich{String: s.ogDesc, HTML: escapeHTML(s.ogDesc)}
	}
	// Fragments of posts carry no header: they get no channel object.
	if s.hasTitle || s.channel.Username != "" || s.ogTitle != "" {
		p.Channel = &ch
	}
	fillChannel(p)
	p.Meta.Offset = Offset{Before: cursorFrom(s.prev, "before"), After: cursorFrom(s.next, "after")}
	if p.Meta.Offset.Before == 0 && s.prev == "" {
		p.Meta.Offset.Before = s.moreBefore
	}
	if p.Meta.Offset.After == 0 && s.next == "" {
		p.Meta.Offset.After = s.moreAfter
	}
	if s.undated {
		// No newer page: the newest post here is the channel's newest.
		estimateDates(p.Content.Posts, p.Meta.Offset.After == 0)
	}
	return p, nil
}

// ParseSearch reads Telegram's search page of a channel,
// t.me/s/<channel>?q=<query>: the channel page, header included, holding
// only the posts that match, newest last as on any channel page. A search
// without results is the same page without posts, which is not an error.
// Its offsets lead to older matches.
func ParseSearch(b []byte) (*Page, error) { return ParseBody(b) }

// ParseMore reads the body of POST t.me/s/<channel>?before=N (or after=N):
// a JSON string whose value is an HTML chunk of posts. Raw HTML chunks are
// accepted too. Offsets come from the chunk's load-more links.
func ParseMore(b []byte) (*Page, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '"' {
		var h string
		if err := json.Unmarshal(trimmed, &h); err != nil {
			return nil, fmt.Errorf("%w: more response is not a JSON string: %v", ErrNotPage, err)
		}
		trimmed = []byte(h)
	} else if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return nil, fmt.Errorf("%w: more response is JSON but not a string", ErrNotPage)
	}
	s := newScanner(trimmed)
	s.run()
	if len(s.posts) == 0 && s.moreBefore == 0 && s.moreAfter == 0 {
		if bytes.Contains(trimmed, []byte("tgme_widget_message")) || len(bytes.TrimSpace(trimmed)) == 0 {
			return &Page{Content: Content{Posts: []Post{}}}, nil
		}
		return nil, fmt.Errorf("%w: no posts in more response", ErrNotPage)
	}
	p := &Page{Content: Content{Posts: s.posts}}
	p.Meta.Offset = Offset{Before: s.moreBefore, After: s.moreAfter}
	if s.undated {
		// A chunk cannot tell whether newer posts follow it (a "before"
		// chunk has no anchor after its posts either): never the newest.
		estimateDates(p.Content.Posts, false)
	}
	return p, nil
}

// ParsePreview reads the small card at t.me/<name>. Users, bots, groups and
// unknown names give ErrNotChannel.
func ParsePreview(b []byte) (*Preview, error) {
	s := newScanner(b)
	s.run()
	pv := s.preview
	if pv.Title == "" && !s.userIcon {
		return nil, fmt.Errorf("%w: no tgme_page_title", ErrNotPage)
	}
	extra := strings.ToLower(pv.Subscribers)
	isChannel := strings.HasPrefix(s.contextLink, "/s/") || strings.Contains(extra, "subscriber")
	if pv.Title == "" || !isChannel {
		return nil, ErrNotChannel
	}
	pv.Username = strings.ToLower(s.resolveDomain)
	if pv.Username == "" && strings.HasPrefix(s.contextLink, "/s/") {
		pv.Username = strings.ToLower(strings.TrimPrefix(s.contextLink, "/s/"))
	}
	if n, ok := ParseCount(pv.Subscribers); ok {
		pv.SubscribersCount = n
		pv.Subscribers = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(pv.Subscribers), "subscribers"), "subscriber"))
	}
	if len(s.channel.Labels) > 0 {
		for _, l := range s.channel.Labels {
			if l == "verified" {
				pv.IsVerified = true
			}
		}
	}
	if pv.Avatar == "" {
		pv.Avatar = s.pageAvatar
	}
	if pv.Avatar == "" && s.ogImage != "" && !strings.Contains(s.ogImage, "t_logo") {
		pv.Avatar = s.ogImage
	}
	return &pv, nil
}

// ParseEmbed reads a single-post embed page, t.me/<channel>/<id>?embed=1.
func ParseEmbed(b []byte) (*Post, error) {
	s := newScanner(b)
	s.run()
	if len(s.posts) == 0 {
		if s.errorPage {
			return nil, ErrPostNotFound
		}
		return nil, fmt.Errorf("%w: no post in embed page", ErrNotPage)
	}
	p := s.posts[0]
	return &p, nil
}

// Detect tells which kind of page b holds, or "" when it is none of them.
// It looks only for the class names that mark each kind.
func Detect(b []byte) tme.Kind {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return ""
	}
	if t[0] == '"' {
		return tme.KindMore
	}
	has := func(s string) bool { return bytes.Contains(b, []byte(s)) }
	switch {
	case has("tgme_channel_history") || has("tgme_channel_info"):
		return tme.KindBody
	case has("tgme_page_extra") || has("tgme_page_title") || has("tgme_icon_user") || has("tgme_page_context_link"):
		return tme.KindPreview
	case has("tgme_widget_message_error") || (has("tgme_widget_message") && (has("widget_frame") || has(`id="widget_message"`) || has("tgme_widget_message_link"))):
		return tme.KindEmbed
	case has("tgme_widget_message_wrap") || has("tme_messages_more"):
		return tme.KindMore
	}
	return ""
}

// fillChannel gives posts without a data-post channel the page's username.
func fillChannel(p *Page) {
	if p.Channel == nil {
		return
	}
	for i := range p.Content.Posts {
		if p.Content.Posts[i].Channel == "" {
			p.Content.Posts[i].Channel = p.Channel.Username
		}
	}
}

func usernameFrom(s *scanner) string {
	for _, href := range [...]string{s.canonical, s.prev, s.next} {
		if name := channelFromURL(strings.TrimPrefix(href, "/")); name != "" {
			return name
		}
		if strings.HasPrefix(href, "/s/") {
			n := strings.TrimPrefix(href, "/s/")
			if i := strings.IndexAny(n, "?/"); i >= 0 {
				n = n[:i]
			}
			return strings.ToLower(n)
		}
	}
	for _, p := range s.posts {
		if p.Channel != "" {
			return p.Channel
		}
	}
	return ""
}

func escapeHTML(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;")
	return r.Replace(s)
}
