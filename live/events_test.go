package live_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// A subscriber sees a published post, an edit and a removal at the origin
// as NEW, EDITED and REMOVED, carrying the post and the channel header,
// without any user reading the page: the updater keeps the watched channel
// fresh.
func TestSubscriberSeesNewEditedRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLocalWorld(fixtures.OriginOptions{})
		p := w.process(t, processOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sub, err := p.hub.Subscribe(ctx, live.Request{Channels: []string{"@TmeFeed_News"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sub.Channels(); len(got) != 1 || got[0] != "tmefeed_news" {
			t.Fatalf("channels %v", got)
		}
		waitFor(t, "the updater to load the watched channel", func() bool { return w.origin.Requests("/s/tmefeed_news") > 0 })

		id := w.origin.PublishPost("tmefeed_news", "fresh news")
		e, _ := next(t, sub)
		if e.Kind != live.KindNew || e.Post.ID != id || text(e.Post) != "fresh news" || e.Channel == nil || e.Channel.Username != "tmefeed_news" {
			t.Fatalf("got %s %d %q, want NEW %d with the channel header", e.Kind, e.Post.ID, text(e.Post), id)
		}

		w.origin.EditPost("tmefeed_news", 50, "corrected")
		e, _ = next(t, sub)
		if e.Kind != live.KindEdited || e.Post.ID != 50 || text(e.Post) != "corrected" || !e.Post.Footer.Edited {
			t.Fatalf("got %s %d %q, want EDITED 50", e.Kind, e.Post.ID, text(e.Post))
		}

		before := p.read(t, "tmefeed_news")
		var old *parser.Post
		for i := range before.Page.Content.Posts {
			if before.Page.Content.Posts[i].ID == 45 {
				old = &before.Page.Content.Posts[i]
			}
		}
		w.origin.RemovePost("tmefeed_news", 45)
		e, _ = next(t, sub)
		if e.Kind != live.KindRemoved || e.Post.ID != 45 || text(e.Post) != text(old) {
			t.Fatalf("got %s %d, want REMOVED 45 as last seen", e.Kind, e.Post.ID)
		}
		waitFor(t, "the delivery count", func() bool { return p.hub.Stats().Delivered == 3 })
		if st := p.hub.Stats(); st.Subscribers != 1 || st.Watched != 1 || st.Published != 3 {
			t.Errorf("stats %+v", st)
		}

		cancel()
		if _, ok := next(t, sub); ok || sub.Err() != nil {
			t.Errorf("after ctx ended: events open %v, Err %v", ok, sub.Err())
		}
		if st := p.hub.Stats(); st.Subscribers != 0 || st.Watched != 0 {
			t.Errorf("stats after the subscriber left %+v", st)
		}
	})
}

// Filters mean what feed's mean: a subscriber with a query gets only the
// posts matching it; one on another channel gets nothing.
func TestSubscriptionFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLocalWorld(fixtures.OriginOptions{})
		p := w.process(t, processOptions{})
		ctx := t.Context()
		all, _ := p.hub.Subscribe(ctx, live.Request{Channels: []string{"tmefeed_news"}})
		release, err := p.hub.Subscribe(ctx, live.Request{Channels: []string{"tmefeed_news", "emoji_party"}, Filter: feed.Filter{Query: "RELEASE"}})
		if err != nil {
			t.Fatal(err)
		}
		other, _ := p.hub.Subscribe(ctx, live.Request{Channels: []string{"emoji_party"}})
		waitFor(t, "the first copies", func() bool {
			return w.origin.Requests("/s/tmefeed_news") > 0 && w.origin.Requests("/s/emoji_party") > 0
		})

		w.origin.PublishPost("tmefeed_news", "just chatting")
		w.origin.PublishPost("tmefeed_news", "Release 2.0 is out")
		var got []string
		for range 2 {
			e, _ := next(t, all)
			got = append(got, text(e.Post))
		}
		if e, _ := next(t, release); text(e.Post) != "Release 2.0 is out" {
			t.Errorf("filtered subscriber got %q, want only the release", text(e.Post))
		}
		if len(got) != 2 || got[0] != "just chatting" || got[1] != "Release 2.0 is out" {
			t.Errorf("unfiltered subscriber got %q", got)
		}
		// A later post on the other channel shows that nothing from
		// tmefeed_news went there first.
		w.origin.PublishPost("emoji_party", "party")
		if e, _ := next(t, other); e.Post.Channel != "emoji_party" || text(e.Post) != "party" {
			t.Errorf("emoji_party subscriber got %s %q", e.Post.Channel, text(e.Post))
		}
		select {
		case e := <-release.Events():
			t.Errorf("filtered subscriber also got %q", text(e.Post))
		default:
		}
	})
}

func TestSubscribeRejectsBadRequests(t *testing.T) {
	w := newWorld(t, fixtures.OriginOptions{})
	p := w.process(t, processOptions{hub: live.Config{MaxChannels: 2}})
	for _, c := range []struct {
		name string
		req  live.Request
		want []error
	}{
		{"invalid name", live.Request{Channels: []string{"no"}}, []error{tme.ErrInvalidUsername}},
		{"no channels", live.Request{}, []error{feed.ErrBadRequest}},
		{"too many", live.Request{Channels: []string{"aaaa", "bbbb", "@CCCC"}}, []error{live.ErrTooManyChannels, feed.ErrBadRequest}},
		{"bad filter", live.Request{Channels: []string{"aaaa"}, Filter: feed.Filter{MediaKinds: []parser.MediaKind{"hologram"}}}, []error{feed.ErrBadRequest}},
	} {
		_, err := p.hub.Subscribe(t.Context(), c.req)
		for _, want := range c.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", c.name, err, want)
			}
		}
	}
	// Duplicates count once.
	if _, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"aaaa", "@AAAA", "bbbb"}}); err != nil {
		t.Errorf("two distinct channels: %v", err)
	}
}

// A subscriber that reads nothing is closed with ErrSlowSubscriber once
// its buffer is full; another one on the same channel keeps getting every
// event.
func TestSlowSubscriberIsClosedAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLocalWorld(fixtures.OriginOptions{})
		p := w.process(t, processOptions{hub: live.Config{Buffer: 2}})
		slow, _ := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}})
		fast, _ := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}})
		waitFor(t, "the first copy", func() bool { return w.origin.Requests("/s/tmefeed_news") > 0 })

		var want []int
		for i := range 4 {
			want = append(want, w.origin.PublishPost("tmefeed_news", "post"))
			e, _ := next(t, fast)
			if e.Post.ID != want[i] {
				t.Fatalf("fast subscriber got %d, want %d", e.Post.ID, want[i])
			}
		}
		var got []int
		for e := range slow.Events() {
			got = append(got, e.Post.ID)
		}
		if !errors.Is(slow.Err(), live.ErrSlowSubscriber) || len(got) != 2 || got[0] != want[0] {
			t.Errorf("slow subscriber: Err %v after %v", slow.Err(), got)
		}
		if fast.Err() != nil {
			t.Errorf("fast subscriber: %v", fast.Err())
		}
		waitFor(t, "the slow subscriber to be dropped", func() bool { return p.hub.Stats().Subscribers == 1 })
		if st := p.hub.Stats(); st.SlowClosed != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

// Close ends every open subscription with ErrClosed, and later Subscribes
// fail with it.
func TestCloseEndsSubscriptions(t *testing.T) {
	w := newWorld(t, fixtures.OriginOptions{})
	p := w.process(t, processOptions{})
	var subs []*live.Subscription
	for _, ch := range []string{"tmefeed_news", "emoji_party", "tmefeed_news"} {
		s, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{ch}})
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	p.hub.Close()
	for i, s := range subs {
		if _, ok := next(t, s); ok || !errors.Is(s.Err(), live.ErrClosed) {
			t.Errorf("subscription %d: open %v, Err %v", i, ok, s.Err())
		}
	}
	if _, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}}); !errors.Is(err, live.ErrClosed) {
		t.Errorf("Subscribe after Close: %v", err)
	}
	// Pages keep working without the hub.
	p.read(t, "tmefeed_news")
}

// waitFor polls cond; tests bound it generously so that only a broken
// behaviour reaches the bound. In a synctest bubble each poll moves the
// bubble's clock on by the step, once everything else waits.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFeedsHearOfChangesBeforeSubscribers: a client that refetches its
// feed on an event gets the feed with the change, although the page was
// refreshed before the kept build's refresh point. On the real clock: the
// feed orders posts by date, and a post published in a synctest bubble
// is dated 2000, before every recorded one. Nothing here waits on the
// clock but for the event.
func TestFeedsHearOfChangesBeforeSubscribers(t *testing.T) {
	w := newWorld(t, fixtures.OriginOptions{})
	const refresh = 4 * time.Second // the updater reloads a page 1 s before its kept feeds go stale
	p := w.process(t, processOptions{refresh: refresh})
	feeds, err := feed.New(feed.Config{Pages: p.pages, Refresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(feeds.Close)
	p.hub.TellFeeds(feeds)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := p.hub.Subscribe(ctx, live.Request{Channels: []string{"tmefeed_news"}})
	if err != nil {
		t.Fatal(err)
	}
	req := feed.Request{Channels: []string{"tmefeed_news"}, First: 3, Order: feed.Newest}
	if _, err := feeds.Feed(ctx, req); err != nil {
		t.Fatal(err)
	}
	id := w.origin.PublishPost("tmefeed_news", "fresh news")
	if e, _ := next(t, sub); e.Kind != live.KindNew || e.Post.ID != id {
		t.Fatalf("got %s %d, want NEW %d", e.Kind, e.Post.ID, id)
	}
	page, err := feeds.Feed(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := page.Items[0].Post.ID; got != id {
		t.Errorf("the feed read right after the event starts with post %d, want the new %d", got, id)
	}
}

// A subscriber hears of what happens after it subscribed. The first
// refresh after it came compares the page with a copy held from before, so
// a post published in between would otherwise reach it as NEW although it
// was there when the subscription began.
func TestSubscriberIsNotToldOfEarlierPosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLocalWorld(fixtures.OriginOptions{})
		// A window long enough that the copy read first is still the one held
		// when the subscription begins.
		p := w.process(t, processOptions{refresh: 10 * time.Second})
		p.read(t, "tmefeed_news") // the copy the next refresh is compared with
		earlier := w.origin.PublishPost("tmefeed_news", "published before anyone subscribed")
		// Post dates have whole seconds; the subscription starts well after
		// (on the bubble's clock).
		time.Sleep(3 * time.Second)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sub, err := p.hub.Subscribe(ctx, live.Request{Channels: []string{"tmefeed_news"}})
		if err != nil {
			t.Fatal(err)
		}
		later := w.origin.PublishPost("tmefeed_news", "published after")
		e, _ := next(t, sub)
		if e.Kind != live.KindNew || e.Post.ID != later {
			t.Fatalf("first event %s %d, want NEW %d (not the earlier %d)", e.Kind, e.Post.ID, later, earlier)
		}
		if n := p.hub.Stats().Published; n != 2 {
			t.Errorf("%d events found, want 2 (both posts, from one refresh)", n)
		}
		select {
		case e := <-sub.Events():
			t.Errorf("another event: %s %d", e.Kind, e.Post.ID)
		default:
		}
	})
}
