package pages_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// readingWatcher reads the changed page back from the cache as it hears of
// the change, as a subscriber refetching its feed on an event would.
type readingWatcher struct {
	svc *pages.Service
	ctx context.Context

	mu   sync.Mutex
	told []string // per change: the new post's id in Next, and in the copy read
}

func (w *readingWatcher) NewestChanged(c pages.Change) {
	res, err := w.svc.Page(w.ctx, tme.Request{Kind: tme.KindBody, Channel: c.Channel, CacheOnly: true})
	read := "nothing"
	if err == nil {
		read = newest(res.Page)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.told = append(w.told, "next "+newest(c.Next)+", cache "+read)
}

func (w *readingWatcher) changes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.told)
}

func newest(p *parser.Page) string {
	if p == nil || len(p.Content.Posts) == 0 {
		return "none"
	}
	return strconv.Itoa(p.Content.Posts[len(p.Content.Posts)-1].ID)
}

// A changed newest page is told after the cache stores it: whoever reads
// the page on hearing of the change gets the new copy, in either tier.
func TestNewestChangedAfterStore(t *testing.T) {
	tiers(t, func(t *testing.T, valkey bool) {
		e := newFaultEnv(t, faultOptions{valkey: valkey})
		ctx := pageCtx(t)
		w := &readingWatcher{svc: e.svc, ctx: ctx}
		e.svc.Watch(w)
		before, err := e.svc.Page(ctx, news)
		if err != nil {
			t.Fatal(err)
		}
		id := e.origin.PublishPost(news.Channel, "published after the first read")
		e.clock.Advance(11 * time.Second) // past the refresh point
		res, err := e.svc.RefreshNewest(ctx, news.Channel, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := newest(res.Page); got == newest(before.Page) {
			t.Fatalf("the refresh still ends with post %s; want the published %d", got, id)
		}
		want := []string{"next " + newest(res.Page) + ", cache " + newest(res.Page)}
		if got := w.changes(); !slices.Equal(got, want) {
			t.Errorf("told %q, want %q: the change must be readable from the cache when told", got, want)
		}
	})
}
