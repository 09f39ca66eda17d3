package pages

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/internal/safeurl"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// ErrMediaNotFound: the post exists but has no attachment at the index
// asked for, or the attachment has no URL (a thumbnail it lacks, media the
// web preview does not show).
var ErrMediaNotFound = errors.New("media not found")

// ErrUnsafeMediaURL: the page names, for the attachment, a URL that is not
// an https URL on Telegram's hosts (safeurl.Media) nor on
// Config.MediaOrigins, such as
// javascript:alert(1). Nothing may be sent there: it is Telegram's page
// that is wrong, so faces answer it as a bad upstream answer (502).
var ErrUnsafeMediaURL = errors.New("the page names a media URL that is not an https URL on Telegram's hosts")

// MediaLink is where one attachment of a post can be fetched now.
type MediaLink struct {
	URL string
	// FetchedAt is when the page naming URL was read from Telegram; the
	// URL is as good as that page copy is fresh. Stale is set when the
	// copy is past its refresh point because re-reading it failed.
	FetchedAt time.Time
	RefreshAt time.Time // the page copy's refresh point
	Stale     bool
}

// MediaURL returns the current URL of a post's attachment: the index-th
// (0-based, in the order of the post's media list) or, with thumb, its
// thumbnail. The URL is remembered in the cached copy of the page around
// the post (the page /v1/post reads too). Telegram's CDN URLs expire, so a
// copy past its refresh point is not served as is: the read waits for the
// page to be re-read, through the cache's lease like any refresh, and gets
// the old copy only when that fails. A missing post gives ErrPostNotFound,
// a missing attachment ErrMediaNotFound. The re-read is charged to
// client's share of the origin budget, as history (tme.ClassHistory).
//
// cacheOnly reads the page from the cache alone (tme.Request's
// CacheOnly): without a copy, ErrNotCached; a stale copy is not re-read.
func (s *Service) MediaURL(ctx context.Context, channel string, id, index int, thumb, cacheOnly bool, client string) (MediaLink, error) {
	if id < 1 || id > tme.MaxPosition {
		return MediaLink{}, fmt.Errorf("%w: post id must be from 1 to %d", tme.ErrInvalidPosition, tme.MaxPosition)
	}
	if index < 0 {
		return MediaLink{}, fmt.Errorf("%w: media index must not be negative", ErrBadRequest)
	}
	req := tme.Request{Kind: tme.KindBody, Channel: channel, Position: id, CacheOnly: cacheOnly, Class: tme.ClassHistory, Client: client}
	res, err := s.get(ctx, req, cache.GetOptions{Revalidate: !cacheOnly})
	if err != nil {
		return MediaLink{}, err
	}
	var post *parser.Post
	for i := range res.Page.Content.Posts {
		if res.Page.Content.Posts[i].ID == id {
			post = &res.Page.Content.Posts[i]
			break
		}
	}
	if post == nil {
		return MediaLink{}, fmt.Errorf("%s/%d: %w", channel, id, ErrPostNotFound)
	}
	if index >= len(post.Content.Media) {
		return MediaLink{}, fmt.Errorf("%w: post %s/%d has %d attachments (indexes from 0), none at %d", ErrMediaNotFound, channel, id, len(post.Content.Media), index)
	}
	m := post.Content.Media[index]
	url, what := m.URL, "a URL"
	if thumb {
		url, what = m.Thumb, "a thumbnail"
	}
	if url == "" {
		return MediaLink{}, fmt.Errorf("%w: attachment %d of post %s/%d (%s) has no %s on the web", ErrMediaNotFound, index, channel, id, m.Type, what)
	}
	// Protocol-relative URLs, as some t.me markup writes them, become https.
	url, ok := safeurl.MediaOn(url, s.mediaOrigins)
	if !ok {
		return MediaLink{}, fmt.Errorf("attachment %d of post %s/%d: %w", index, channel, id, ErrUnsafeMediaURL)
	}
	return MediaLink{URL: url, FetchedAt: res.FetchedAt, RefreshAt: res.RefreshAt, Stale: res.Stale}, nil
}
