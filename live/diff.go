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
	old := make(map[int]*parser.Post, len(prev.Content.Posts))
	maxPrev := 0
	for i := range prev.Content.Posts {
		p := &prev.Content.Posts[i]
		old[p.ID] = p
		maxPrev = max(maxPrev, p.ID)
	}
	minNext := next.Content.Posts[0].ID
	seen := make(map[int]bool, len(next.Content.Posts))
	var news, edits, gone []Event
	for i := range next.Content.Posts {
		p := &next.Content.Posts[i]
		minNext = min(minNext, p.ID)
		seen[p.ID] = true
		switch o, ok := old[p.ID]; {
		case !ok && p.ID > maxPrev:
			news = append(news, Event{Kind: KindNew, Channel: header, Post: p})
		case ok && Edit(o, p):
			edits = append(edits, Event{Kind: KindEdited, Channel: header, Post: p})
		}
	}
	for i := range prev.Content.Posts {
		p := &prev.Content.Posts[i]
		if p.ID >= minNext && !seen[p.ID] {
			gone = append(gone, Event{Kind: KindRemoved, Channel: header, Post: p})
		}
	}
	return slices.Concat(news, edits, gone)
}

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
