package feed_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
)

// historyStack is the feed over the real page service, cache and origin
// client, against the fixture origin serving fixtures.DeepChannel.
type historyStack struct {
	origin *fixtures.Origin
	pages  *pages.Service
	feeds  *feed.Service
}

func newHistoryStack(t *testing.T, posts, maxPages int) *historyStack {
	t.Helper()
	o := fixtures.NewOrigin(fixtures.OriginOptions{DeepHistory: posts})
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	client, err := origin.New(origin.Config{BaseURL: srv.URL, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 64 << 20, Refresh: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	ps := pages.New(pages.Config{Cache: mem, Origin: client, Refresh: time.Minute, HistoryMaxPages: maxPages})
	fs, err := feed.New(feed.Config{Pages: ps, Refresh: time.Minute, KeptBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Close)
	return &historyStack{origin: o, pages: ps, feeds: fs}
}

// A feed with since holds the posts since that date from older pages too,
// each once, newest first, read through the cache: another feed over the
// same walk fetches nothing.
func TestFeedSinceReachesPastTheNewestPage(t *testing.T) {
	const total = 500
	s := newHistoryStack(t, total, 0)
	ctx := context.Background()
	ch := fixtures.DeepChannel
	p, err := s.feeds.Feed(ctx, feed.Request{Channels: []string{ch}, First: 500, Order: feed.Newest, Filter: feed.Filter{Since: fixtures.DeepPostDate(401)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Failed) > 0 {
		t.Fatalf("failed channels %v", p.Failed[0].Err)
	}
	if p.TotalCount != 100 || len(p.Items) != 100 {
		t.Fatalf("%d items of %d, want the 100 posts since post 401", len(p.Items), p.TotalCount)
	}
	for i, it := range p.Items {
		if it.Post.ID != total-i {
			t.Fatalf("item %d is post %d, want %d", i, it.Post.ID, total-i)
		}
	}
	// 481..500 down to 381..400, the first page holding an older post.
	if n := s.origin.Total(); n != 6 {
		t.Errorf("origin requests %d, want 6", n)
	}
	if _, err := s.feeds.Feed(ctx, feed.Request{Channels: []string{ch}, First: 10, Order: feed.Ranked, Filter: feed.Filter{Since: fixtures.DeepPostDate(401)}}); err != nil {
		t.Fatal(err)
	}
	if n := s.origin.Total(); n != 6 {
		t.Errorf("origin requests %d after a second feed over the same pages, want still 6", n)
	}
}

// However far since reaches, a channel is read at most HistoryMaxPages
// pages deep.
func TestFeedSinceIsBoundedByHistoryMaxPages(t *testing.T) {
	s := newHistoryStack(t, 500, 4)
	p, err := s.feeds.Feed(context.Background(), feed.Request{Channels: []string{fixtures.DeepChannel}, First: 500, Order: feed.Newest, Filter: feed.Filter{Since: fixtures.DeepPostDate(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if p.TotalCount != 80 || p.Items[79].Post.ID != 421 {
		t.Fatalf("%d items, want the 80 of 4 pages", p.TotalCount)
	}
	if n := s.origin.Total(); n != 4 {
		t.Errorf("origin requests %d, want 4", n)
	}
}

// A kept build is charged for every page its items come from, so a feed
// reaching back holds proportionally more of the kept-builds bound.
func TestFeedSinceBuildIsChargedForItsPages(t *testing.T) {
	s := newHistoryStack(t, 500, 0)
	ctx := context.Background()
	ch := fixtures.DeepChannel
	if _, err := s.feeds.Feed(ctx, feed.Request{Channels: []string{ch}, First: 20, Order: feed.Newest}); err != nil {
		t.Fatal(err)
	}
	s.feeds.CleanUp()
	one := s.feeds.Stats().KeptBytes
	if _, err := s.feeds.Feed(ctx, feed.Request{Channels: []string{ch}, First: 20, Order: feed.Newest, Filter: feed.Filter{Since: fixtures.DeepPostDate(1)}}); err != nil {
		t.Fatal(err)
	}
	s.feeds.CleanUp()
	deep := s.feeds.Stats().KeptBytes - one
	if deep < 8*one {
		t.Errorf("a build over 10 pages weighs %d bytes, one over 1 page %d; want about 10 times", deep, one)
	}
}

// A feed with since names few enough channels that their walks together
// stay within MaxHistoryPages: one request cannot make hundreds of origin
// fetches, through any face. The refusal costs the origin nothing.
func TestFeedSinceBoundsItsChannels(t *testing.T) {
	s := newHistoryStack(t, 100, 10) // 200 pages in all: 20 channels
	since := fixtures.DeepPostDate(1)
	names := func(n int) []string {
		out := []string{fixtures.DeepChannel}
		for i := 1; i < n; i++ {
			out = append(out, fmt.Sprintf("channel_%03d", i))
		}
		return out
	}
	_, err := s.feeds.Feed(context.Background(), feed.Request{Channels: names(21), First: 10, Filter: feed.Filter{Since: since}})
	if !errors.Is(err, feed.ErrBadRequest) || !strings.Contains(err.Error(), "at most 20 channels") {
		t.Fatalf("21 channels with since: %v, want a bad request naming the bound", err)
	}
	if n := s.origin.Total(); n != 0 {
		t.Errorf("a refused feed made %d origin requests", n)
	}
	// Without since the same channels are an ordinary feed.
	if _, err := s.feeds.Feed(context.Background(), feed.Request{Channels: names(21), First: 10}); err != nil {
		t.Fatalf("21 channels without since: %v", err)
	}
	// At the bound, the feed is built.
	p, err := s.feeds.Feed(context.Background(), feed.Request{Channels: names(20)[:1], First: 200, Order: feed.Newest, Filter: feed.Filter{Since: since}})
	if err != nil || p.TotalCount != 100 {
		t.Fatalf("one channel with since: %v, %v posts", err, p)
	}
}
