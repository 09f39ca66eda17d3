package pages_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/pages"
)

const deep = fixtures.DeepChannel

// A 200-post window walks the newest page and nine "more" chunks through
// the cache and returns every post once, newest first; the same walk again
// costs no origin fetch.
func TestPostsWalk200(t *testing.T) {
	tiers(t, func(t *testing.T, valkey bool) {
		const total = 500
		e := newFaultEnv(t, faultOptions{valkey: valkey, deepHistory: total})
		ctx := pageCtx(t)
		p, err := e.svc.Posts(ctx, deep, pages.Window{First: 200})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, 200)
		for i := range want {
			want[i] = total - i
		}
		if got := ids(p.List); !slices.Equal(got, want) {
			t.Fatalf("ids %v…, want %d..%d newest first", got[:min(len(got), 5)], total, total-199)
		}
		if !p.HasOlder || p.HasNewer {
			t.Errorf("HasOlder %v HasNewer %v, want true false", p.HasOlder, p.HasNewer)
		}
		if n := e.origin.Total(); n != 10 {
			t.Errorf("origin requests %d, want 10 (the channel page and 9 chunks)", n)
		}
		for i := range 9 {
			before := total - 19 - 20*i
			if n := e.origin.Requests("/s/" + deep + "?before=" + strconv.Itoa(before)); n != 1 {
				t.Errorf("chunk before=%d fetched %d times, want 1", before, n)
			}
		}
		again, err := e.svc.Posts(ctx, deep, pages.Window{First: 200})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(again.List), want) {
			t.Error("the second walk answers differently")
		}
		if n := e.origin.Total(); n != 10 {
			t.Errorf("origin requests %d after a second walk, want still 10", n)
		}
		if n := e.svc.Walks(); n != 2 {
			t.Errorf("walks %d, want 2: the second ran, from the cache", n)
		}
	})
}

// HistoryMaxPages bounds every walk: a window larger than the pages allowed
// hold ends early, with HasOlder and a last post to go on from, and a
// History walk stops at the cap however far since reaches.
func TestHistoryPageCap(t *testing.T) {
	const total = 500
	e := newFaultEnv(t, faultOptions{deepHistory: total, historyMaxPages: 3})
	ctx := pageCtx(t)
	p, err := e.svc.Posts(ctx, deep, pages.Window{First: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.List) != 60 || p.List[59].ID != total-59 || !p.HasOlder {
		t.Fatalf("%d posts (last %d), HasOlder %v; want the 60 of 3 pages and HasOlder", len(p.List), ids(p.List)[len(p.List)-1], p.HasOlder)
	}
	if n := e.origin.Total(); n != 3 {
		t.Fatalf("origin requests %d, want 3", n)
	}
	next, err := e.svc.Posts(ctx, deep, pages.Window{First: 20, After: &p.List[59].ID})
	if err != nil {
		t.Fatal(err)
	}
	if next.List[0].ID != total-60 {
		t.Errorf("the next window starts at %d, want %d", next.List[0].ID, total-60)
	}

	e.origin.Reset()
	res, err := e.svc.History(ctx, deep, fixtures.DeepPostDate(1), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("History read %d pages, want the cap of 3", len(res))
	}
	if n := e.origin.Total(); n != 0 {
		t.Errorf("History fetched %d pages the window walk had cached, want 0", n)
	}
}

// History walks back only as far as since: to the first page holding an
// older post.
func TestHistoryStopsAtSince(t *testing.T) {
	const total = 500
	e := newFaultEnv(t, faultOptions{deepHistory: total})
	ctx := pageCtx(t)
	for _, c := range []struct {
		since time.Time
		pages int
	}{
		{time.Time{}, 1},
		{fixtures.DeepPostDate(total - 5), 1}, // within the newest page
		{fixtures.DeepPostDate(total - 30), 2},
		{fixtures.DeepPostDate(total - 60), 4}, // post 440 is on the 4th page
		{fixtures.DeepPostDate(1), 10},         // the cap
	} {
		res, err := e.svc.History(ctx, deep, c.since, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != c.pages {
			t.Errorf("since %v: %d pages, want %d", c.since, len(res), c.pages)
		}
		oldest := res[len(res)-1].Page.Content.Posts[0]
		if !c.since.IsZero() && len(res) < 10 && oldest.Footer.Date.Unix >= c.since.Unix() && res[len(res)-1].Page.Meta.Offset.Before != 0 {
			t.Errorf("since %v: stopped at post %d, which is not older", c.since, oldest.ID)
		}
	}
}

// Identical concurrent walks share one walk, and its pages come through
// the cache: one origin fetch each.
func TestConcurrentWalksShareOne(t *testing.T) {
	e := newFaultEnv(t, faultOptions{deepHistory: 300})
	e.origin.SetLatency(50 * time.Millisecond) // the walk runs while the others arrive
	ctx := pageCtx(t)
	const callers = 8
	var wg sync.WaitGroup
	got := make([][]int, callers)
	hist := make([]int, callers)
	errs := make([]error, 2*callers)
	for i := range callers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			p, err := e.svc.Posts(ctx, deep, pages.Window{First: 100})
			got[i], errs[i] = ids(p.List), err
		}()
		go func() {
			defer wg.Done()
			res, err := e.svc.History(context.WithoutCancel(ctx), deep, fixtures.DeepPostDate(150), "")
			hist[i], errs[callers+i] = len(res), err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	for i := range got {
		if len(got[i]) != 100 || !slices.Equal(got[i], got[0]) || hist[i] != hist[0] {
			t.Fatalf("caller %d got %d posts / %d pages, caller 0 %d / %d", i, len(got[i]), hist[i], len(got[0]), hist[0])
		}
	}
	if n := e.svc.Walks(); n != 2 {
		t.Errorf("walks %d, want 2: one per distinct walk", n)
	}
	// The window walk reads pages 1..6, the history walk 1..8: eight
	// distinct pages, each fetched once.
	if n := e.origin.Total(); n != 8 {
		t.Errorf("origin requests %d, want 8", n)
	}
}
