package live

import (
	"slices"

	"github.com/tmefeed/tmefeed/parser"
)

// Diff compares two parses of a channel's newest page, prev the older, and
// returns what changed, oldest post first within each kind: NEW posts
// (ids above every id prev showed), EDITED posts (see Edit) and REMOVED
// posts (ids within next's range that prev showed and next does not).
// Posts below next's range merely scrolled out of the newest page and
// are not removed.
func Diff(prev, next *parser.Page) []Event {
	if prev == nil || next == nil || len(next.Content.Posts) == 0 {
		return nil
	}
	header := next.Channel
	old := make(map[postKey]*parser.Post, len(prev.Content.Posts))
	maxPrev := 0
	for i := range prev.Content.Posts {
		p := &prev.Content.Posts[i]
		old[keyOf(p)] = p
		maxPrev = max(maxPrev, p.ID)
	}
	minNext := 0
	for _, p := range next.Content.Posts {
		if p.ID != 0 && (minNext == 0 || p.ID < minNext) {
			minNext = p.ID
		}
	}
	seen := make(map[postKey]bool, len(next.Content.Posts))
	var news, edits, gone []Event
	at := 0 // the number of the nearest numbered post at or before p
	for i := range next.Content.Posts {
		p := &next.Content.Posts[i]
		k := keyOf(p)
		seen[k] = true
		if p.ID != 0 {
			at = p.ID
		}
		switch o, ok := old[k]; {
		case !ok && p.ID > maxPrev,
			!ok && p.ID == 0 && at >= maxPrev:
			// A post t.me names nowhere is new when it follows every
			// post prev showed; edited, it is another post (its key is
			// its content), removed and new.
			news = append(news, Event{Kind: KindNew, Channel: header, Post: p})
		case ok && Edit(o, p):
			edits = append(edits, Event{Kind: KindEdited, Channel: header, Post: p})
		}
	}
	at = 0
	for i := range prev.Content.Posts {
		p := &prev.Content.Posts[i]
		if p.ID != 0 {
			at = p.ID
		}
		if at >= minNext && !seen[keyOf(p)] {
			gone = append(gone, Event{Kind: KindRemoved, Channel: header, Post: p})
		}
	}
	return slices.Concat(news, edits, gone)
}

// postKey identifies a post between two parses: its number, or for one
// t.me names nowhere, its content (parser.Post.UnnamedKey).
type postKey struct {
	id      int
	unnamed string
}

func keyOf(p *parser.Post) postKey { return postKey{id: p.ID, unnamed: p.UnnamedKey()} }

// Edit reports whether next is an edit of prev worth sending: its text,
// media, poll question or options, link preview, location, buttons or
// service text changed, or Telegram newly marks it edited. Views,
// reactions and poll results change all the time and are not edits; media
// and preview image URLs are not compared, since t.me signs them anew.
func Edit(prev, next *parser.Post) bool {
	a, b := &prev.Content, &next.Content
	switch {
	case next.Footer.Edited && !prev.Footer.Edited,
		!sameText(a.Text, b.Text),
		!slices.EqualFunc(a.Media, b.Media, sameMedia),
		!samePoll(a.Poll, b.Poll),
		!samePreview(a.PreviewLink, b.PreviewLink),
		!samePtr(a.Location, b.Location, func(x, y *parser.Location) bool {
			return x.Latitude == y.Latitude && x.Longitude == y.Longitude && x.Address == y.Address
		}),
		!slices.Equal(a.Inline, b.Inline),
		!samePtr(prev.Service, next.Service, func(x, y *parser.Service) bool { return *x == *y }):
		return true
	}
	return false
}

func samePtr[T any](x, y *T, eq func(x, y *T) bool) bool {
	if x == nil || y == nil {
		return x == y
	}
	return eq(x, y)
}

func sameText(x, y *parser.Text) bool {
	return samePtr(x, y, func(x, y *parser.Text) bool { return x.HTML == y.HTML && x.String == y.String })
}

func sameMedia(x, y parser.Media) bool {
	return x.Type == y.Type && x.Title == y.Title && x.Extra == y.Extra &&
		samePtr(x.Duration, y.Duration, func(a, b *parser.Duration) bool { return a.Raw == b.Raw })
}

func samePoll(x, y *parser.Poll) bool {
	return samePtr(x, y, func(x, y *parser.Poll) bool {
		return x.Question == y.Question && x.Type == y.Type &&
			slices.EqualFunc(x.Options, y.Options, func(a, b parser.PollOption) bool { return a.Name == b.Name })
	})
}

func samePreview(x, y *parser.PreviewLink) bool {
	return samePtr(x, y, func(x, y *parser.PreviewLink) bool {
		return x.URL == y.URL && x.Title == y.Title && x.SiteName == y.SiteName &&
			samePtr(x.Description, y.Description, func(a, b *parser.Rich) bool { return *a == *b })
	})
}
