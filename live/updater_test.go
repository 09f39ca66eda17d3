package live_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/redistest"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
)

// answers counts what users were answered: reads of the newest pages,
// REST responses rendered from them (as /v1/body serves them) and feeds
// over all of them, and how many of each were stale.
type answers struct {
	pages, pagesStale       int
	rendered, renderedStale int
	feeds, feedsStale       int
}

func (a answers) stale() int { return a.pagesStale + a.renderedStale + a.feedsStale }

// readAll reads every channel's newest page, its rendered response and a
// feed of them all once per tick over the given number of refresh windows.
func readAll(t *testing.T, p *process, fs *feed.Service, channels []string, windows int, refresh time.Duration) answers {
	t.Helper()
	var a answers
	ctx := t.Context()
	render := func(res pages.Result) ([]byte, error) { return []byte(strconv.FormatUint(res.Hash, 16)), nil }
	end := time.Now().Add(time.Duration(windows) * refresh)
	for time.Now().Before(end) {
		for _, ch := range channels {
			a.pages++
			if p.read(t, ch).Stale {
				a.pagesStale++
			}
			e, err := p.pages.RenderedEntry(ctx, "test:body", origin.Request{Kind: parser.KindBody, Channel: ch}, render)
			if err != nil {
				t.Fatalf("rendered %s: %v", ch, err)
			}
			a.rendered++
			if e.Stale || !time.Now().Before(e.RefreshAt) {
				a.renderedStale++
			}
		}
		fctx, fresh := pages.WithFreshness(ctx)
		f, err := fs.Feed(fctx, feed.Request{Channels: channels, First: 20})
		if err != nil {
			t.Fatalf("feed: %v", err)
		}
		a.feeds++
		if f.Stale || fresh.Stale() {
			a.feedsStale++
		}
		time.Sleep(refresh / 15)
	}
	return a
}

// Popular pages are refreshed before users see them stale: users reading
// the top channels over two refresh windows — their pages, the responses
// rendered from them, a feed of them — get no stale answer with the
// updater on, and some with it off (same load, same origin). The updater
// keeps one fetch per page per refresh window.
func TestUpdaterKeepsPopularPagesFresh(t *testing.T) {
	// A window long enough for a loaded machine (or the race detector) to
	// parse the pages in a fraction of it.
	const refresh = time.Second
	const windows = 2
	w := newWorld(t, fixtures.OriginOptions{Synthetic: 10})
	channels := w.origin.Channels()[len(w.origin.Channels())-10:]
	for _, on := range []bool{true, false} {
		// A lead of 400 ms (the default would be 250 ms): room for a
		// cycle's ten fetches and parses on a loaded machine under the
		// race detector. In production the lead is 2.5 s.
		p := w.process(t, processOptions{refresh: refresh, hub: live.Config{Updater: live.UpdaterConfig{Off: !on, Lead: 400 * time.Millisecond}}})
		fs, err := feed.New(feed.Config{Pages: p.pages, Refresh: refresh})
		if err != nil {
			t.Fatal(err)
		}
		before := w.origin.Total()
		start := time.Now()
		for _, ch := range channels {
			p.read(t, ch) // cold: each a miss, as no one read them before
		}
		if on {
			waitFor(t, "the updater to track the channels", func() bool { return p.hub.Stats().Updater.Tracked == len(channels) })
		}
		a := readAll(t, p, fs, channels, windows, refresh)
		fetches := w.origin.Total() - before
		elapsed := time.Since(start)
		p.hub.Close() // its updater fetches no more while the next process is measured
		t.Logf("updater on=%v: stale pages %d/%d, rendered %d/%d, feeds %d/%d; %d fetches of %d pages in %v (refresh %v)",
			on, a.pagesStale, a.pages, a.renderedStale, a.rendered, a.feedsStale, a.feeds, fetches, len(channels), elapsed.Round(time.Millisecond), refresh)
		switch {
		case on && a.stale() != 0:
			t.Errorf("updater on: %+v stale answers, want none (stats %+v)", a, p.hub.Stats().Updater)
		case !on && (a.pagesStale == 0 || a.renderedStale == 0 || a.feedsStale == 0):
			t.Errorf("updater off: %+v; the load does not reach the refresh point", a)
		}
		// One fetch per page per window the reads reached: the cold one,
		// then one ahead of each refresh point.
		if most := int64(len(channels)) * int64(math.Ceil(elapsed.Seconds()/refresh.Seconds())+1); on && fetches > most {
			t.Errorf("updater on: %d fetches of %d pages in %v, want at most %d (one per page per window)", fetches, len(channels), elapsed, most)
		}
	}
}

// The updater never has more than its Concurrency loads at the origin,
// and uses them all when many pages are due.
func TestUpdaterBoundsOriginConcurrency(t *testing.T) {
	w := newWorld(t, fixtures.OriginOptions{Synthetic: 40, Latency: 20 * time.Millisecond})
	p := w.process(t, processOptions{hub: live.Config{Updater: live.UpdaterConfig{Concurrency: 4}}})
	if _, err := p.hub.Subscribe(t.Context(), live.Request{Channels: w.origin.Channels()[len(w.origin.Channels())-40:]}); err != nil {
		t.Fatal(err)
	}
	// Cold loads of all 40, then refreshes over two more windows.
	waitFor(t, "three rounds of loads", func() bool { return w.origin.Total() >= 3*40 })
	if hw := w.origin.MaxInFlight(); hw != 4 {
		t.Errorf("origin saw %d requests in flight at most, want exactly the updater's 4", hw)
	}
	if hw := p.hub.Stats().Updater.MaxInFlight; hw != 4 {
		t.Errorf("updater had %d loads in flight at most, want 4", hw)
	}
}

// A 429 with Retry-After pauses the updater: no request reaches the origin
// until it passes, then refreshes resume.
func TestUpdaterWaitsOutRetryAfter(t *testing.T) {
	w := newWorld(t, fixtures.OriginOptions{Synthetic: 5})
	p := w.process(t, processOptions{hub: live.Config{}})
	channels := w.origin.Channels()[len(w.origin.Channels())-5:]
	if _, err := p.hub.Subscribe(t.Context(), live.Request{Channels: channels}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first copies", func() bool { return w.origin.Total() >= 5 })

	w.origin.SetFault("/s/", fixtures.Fault{Status: 429, RetryAfter: "1", Times: 1})
	waitFor(t, "the 429", func() bool { return p.hub.Stats().Updater.Errors > 0 })
	limited := time.Now()
	after := w.origin.Total()
	paused := p.hub.Stats().Updater.PausedUntil
	if paused.Before(limited.Add(500 * time.Millisecond)) {
		t.Errorf("paused until %v, want about a second after the 429 at %v", paused, limited)
	}
	// Several refresh windows pass inside the Retry-After second.
	for time.Now().Before(paused.Add(-50 * time.Millisecond)) {
		if n := w.origin.Total(); n != after {
			t.Fatalf("%d requests reached the origin while Retry-After was pending", n-after)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, "refreshes to resume", func() bool { return w.origin.Total() > after })
}

// Two processes sharing Valkey: a post published at the origin reaches the
// subscribers of both, the page changed is compared once (by the process
// that fetched it), and the origin sees about one fetch of the page per
// refresh window in total.
func TestTwoProcessesShareUpdatesThroughValkey(t *testing.T) {
	srv := redistest.Start(t)
	w := newWorld(t, fixtures.OriginOptions{})
	var procs []*process
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := cache.NewValkey(ctx, cache.ValkeyConfig{
			URL: srv.URL, Refresh: testRefresh, Failures: origin.Failures{},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		procs = append(procs, w.process(t, processOptions{cache: v, hub: live.Config{Publisher: v.Bus("tmefeed:test:live")}}))
	}
	var subs []*live.Subscription
	for _, p := range procs {
		for range 3 {
			s, err := p.hub.Subscribe(t.Context(), live.Request{Channels: []string{"tmefeed_news"}})
			if err != nil {
				t.Fatal(err)
			}
			subs = append(subs, s)
		}
	}
	waitFor(t, "the first copy", func() bool { return w.origin.Requests("/s/tmefeed_news") > 0 })
	time.Sleep(testRefresh) // both receivers subscribed by now

	start, fetched := time.Now(), w.origin.Requests("/s/tmefeed_news")
	id := w.origin.PublishPost("tmefeed_news", "to everyone")
	for i, s := range subs {
		e, _ := next(t, s)
		if e.Kind != live.KindNew || e.Post.ID != id || text(e.Post) != "to everyone" || e.Channel.Username != "tmefeed_news" {
			t.Fatalf("subscriber %d got %s %d %q", i, e.Kind, e.Post.ID, text(e.Post))
		}
	}
	// Let a few more windows pass to count fetches per window.
	time.Sleep(4 * testRefresh)
	windows := float64(time.Since(start)) / float64(testRefresh)
	n := w.origin.Requests("/s/tmefeed_news") - fetched
	// The updater refreshes a page ahead of its refresh point, and the
	// copy it gets is fresh until a window after that point: one fetch
	// per window, for both processes together.
	t.Logf("%d fetches of the page over %.1f refresh windows, two processes", n, windows)
	if most := math.Ceil(windows) + 1; float64(n) > most {
		t.Errorf("%d fetches over %.1f windows: more than one per window (%.0f)", n, windows, most)
	}
	var changes, published uint64
	for _, p := range procs {
		st := p.hub.Stats()
		changes += st.Changes
		published += st.Published
	}
	if changes != 1 || published != 1 {
		t.Errorf("changes compared %d, events published %d across both processes; want 1 and 1", changes, published)
	}
	for i, s := range subs {
		select {
		case e := <-s.Events():
			t.Errorf("subscriber %d got a second event %s %d", i, e.Kind, e.Post.ID)
		default:
		}
	}
}
