package feed

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// fakePages serves channel pages from memory and counts the calls.
type fakePages struct {
	mu        sync.Mutex
	pages     map[string]*parser.Page
	hashes    map[string]uint64
	errs      map[string]error
	fetchedAt time.Time
	calls     atomic.Int64
	gate      chan struct{} // when set, Page waits for it to close
}

func newFakePages(now time.Time) *fakePages {
	return &fakePages{pages: map[string]*parser.Page{}, hashes: map[string]uint64{}, errs: map[string]error{}, fetchedAt: now}
}

func (f *fakePages) set(name string, subs int64, posts ...parser.Post) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range posts {
		posts[i].Channel = name
	}
	f.pages[name] = &parser.Page{
		Channel: &parser.Channel{Username: name, Title: parser.Rich{String: name}, Counters: parser.Counters{Subscribers: "x", SubscribersCount: subs}},
		Content: parser.Content{Posts: posts},
	}
	f.hashes[name]++
}

// History serves the one page a fake channel has.
func (f *fakePages) History(ctx context.Context, channel string, _ time.Time, _ string) ([]pages.Result, error) {
	res, err := f.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: channel})
	if err != nil {
		return nil, err
	}
	return []pages.Result{res}, nil
}

func (f *fakePages) HistoryMaxPages() int { return 1 }

func (f *fakePages) Page(ctx context.Context, r tme.Request) (pages.Result, error) {
	f.calls.Add(1)
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[r.Channel]; err != nil {
		return pages.Result{}, err
	}
	p, ok := f.pages[r.Channel]
	if !ok {
		return pages.Result{}, fmt.Errorf("%s: %w", r.Channel, origin.ErrNotFound)
	}
	return pages.Result{Page: p, Hash: f.hashes[r.Channel], FetchedAt: f.fetchedAt}, nil
}

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var base = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func post(id int, hoursAgo float64, views int64) parser.Post {
	return parser.Post{
		ID: id,
		Footer: parser.Footer{
			Views: "v", ViewsCount: views,
			Date: parser.Date{Unix: base.Add(-time.Duration(hoursAgo * float64(time.Hour))).Unix()},
		},
	}
}

func newService(t *testing.T, src PageSource, clk *clock, refresh time.Duration) *Service {
	t.Helper()
	s, err := New(Config{Pages: src, Refresh: refresh, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ids(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = fmt.Sprintf("%s/%d", it.Channel.Username, it.Post.ID)
	}
	return out
}

func TestNewestOrderAndDeduplication(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	src.set("alpha", 1000, post(1, 5, 10), post(2, 3, 10), post(3, 1, 10))
	fwd := post(7, 2, 10)
	fwd.Forwarded = &parser.Forwarded{URL: "https://t.me/alpha/2"} // alpha's own post 2
	fwd2 := post(8, 4, 10)
	fwd2.Forwarded = &parser.Forwarded{URL: "https://t.me/Gamma/40"} // also forwarded by delta, later
	src.set("bravo", 1000, post(6, 6, 10), fwd, fwd2)
	fwd3 := post(9, 0.5, 10)
	fwd3.Forwarded = &parser.Forwarded{URL: "https://t.me/gamma/40?single"}
	src.set("delta", 1000, fwd3)
	s := newService(t, src, clk, time.Minute)

	p, err := s.Feed(context.Background(), Request{Channels: []string{"Bravo", "alpha", "@delta", "alpha"}, First: 50, Order: Newest})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alpha/3", "alpha/2", "bravo/8", "alpha/1", "bravo/6"}
	if got := ids(p.Items); !slices.Equal(got, want) {
		t.Errorf("NEWEST feed = %v, want %v (forwards of alpha/2 and of gamma/40 once each)", got, want)
	}
	if p.TotalCount != len(want) || p.HasNextPage || p.HasPreviousPage {
		t.Errorf("page info = total %d next %v prev %v", p.TotalCount, p.HasNextPage, p.HasPreviousPage)
	}
	if src.calls.Load() != 3 {
		t.Errorf("page fetches = %d, want 3 (duplicate names fetched once)", src.calls.Load())
	}
}

func TestRankedOrder(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	// Same age: views decide; a month-old post with views capped at 10× the
	// subscribers still outranks a fresh one seen by a tenth of them.
	src.set("alpha", 1000, post(1, 2, 100), post(2, 2, 5000), post(3, 30*24, 1_000_000))
	src.set("bravo", 1000, post(1, 0, 0))
	s := newService(t, src, clk, time.Minute)
	p, err := s.Feed(context.Background(), Request{Channels: []string{"alpha", "bravo"}, First: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(p.Items)
	want := []string{"alpha/2", "alpha/3", "alpha/1", "bravo/1"}
	if !slices.Equal(got, want) {
		t.Errorf("RANKED feed = %v, want %v", got, want)
	}
	for i := 1; i < len(p.Items); i++ {
		if p.Items[i].Score > p.Items[i-1].Score {
			t.Errorf("scores not descending at %d: %v > %v", i, p.Items[i].Score, p.Items[i-1].Score)
		}
	}
	if want := Rank(p.Items[0].Post, 1000, base).Total; p.Items[0].Score != want {
		t.Errorf("score = %v, want Rank's %v", p.Items[0].Score, want)
	}
}

func TestPagingWalksEveryPostOnce(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	for c := 0; c < 5; c++ {
		var posts []parser.Post
		for i := 1; i <= 9; i++ {
			posts = append(posts, post(i, float64((i*7+c*3)%11), int64(i*c*13%50)))
		}
		src.set(fmt.Sprintf("chan%d", c), 100, posts...)
	}
	s := newService(t, src, clk, time.Minute)
	// Every order: its cursors must name it.
	for _, order := range Orders() {
		req := Request{Channels: []string{"chan0", "chan1", "chan2", "chan3", "chan4"}, Order: order, First: 1000}
		full, err := s.Feed(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if full.TotalCount != 45 {
			t.Fatalf("total = %d, want 45", full.TotalCount)
		}
		var walked []string
		req.First = 4
		for pages := 0; ; pages++ {
			p, err := s.Feed(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			walked = append(walked, ids(p.Items)...)
			if !p.HasNextPage {
				break
			}
			if pages > 20 {
				t.Fatal("paging does not end")
			}
			req.After = p.Items[len(p.Items)-1].Cursor
		}
		if !slices.Equal(walked, ids(full.Items)) {
			t.Errorf("%s: walking pages of 4 gave %v, want %v", order, walked, ids(full.Items))
		}
	}
}

func TestCursorSurvivesRebuild(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	src.set("alpha", 100, post(1, 1, 0), post(2, 2, 0), post(3, 3, 0), post(4, 4, 0))
	s := newService(t, src, clk, time.Second)
	req := Request{Channels: []string{"alpha"}, Order: Newest, First: 2}
	p1, err := s.Feed(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// Post 2 (the cursor's own) disappears and a new post arrives; paging
	// continues right after where post 2 stood.
	src.set("alpha", 100, post(5, 0.5, 0), post(1, 1, 0), post(3, 3, 0), post(4, 4, 0))
	clk.Add(2 * time.Second)
	req.After = p1.Items[1].Cursor
	p2, err := s.Feed(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(p2.Items), []string{"alpha/3", "alpha/4"}; !slices.Equal(got, want) {
		t.Errorf("after the rebuild: %v, want %v", got, want)
	}
	if !p2.HasPreviousPage || p2.HasNextPage {
		t.Errorf("page info = prev %v next %v, want true false", p2.HasPreviousPage, p2.HasNextPage)
	}
}

func TestFilters(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	photo := post(1, 1, 0)
	photo.Content.Media = []parser.Media{{Type: parser.MediaImage}}
	tagged := post(2, 2, 0)
	tagged.Content.Text = &parser.Text{String: "🎉 Launch #GoLang day", Entities: []parser.Entity{{Type: parser.EntityHashtag, Offset: 10, Length: 7}}}
	forwarded := post(3, 3, 0)
	forwarded.Forwarded = &parser.Forwarded{Name: parser.Rich{String: "someone"}}
	reply := post(4, 30, 0)
	reply.Content.Reply = &parser.Reply{ToMessage: 1}
	service := post(5, 50, 0)
	service.Service = &parser.Service{Type: "pinned"}
	poll := post(6, 60, 0)
	poll.Content.Poll = &parser.Poll{Question: "Which Gopher?"}
	src.set("alpha", 100, photo, tagged, forwarded, reply, service, poll)
	s := newService(t, src, clk, time.Minute)

	for _, c := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"none", Filter{}, []string{"alpha/1", "alpha/2", "alpha/3", "alpha/4", "alpha/5", "alpha/6"}},
		{"mediaKinds", Filter{MediaKinds: []parser.MediaKind{parser.MediaVideo, parser.MediaImage}}, []string{"alpha/1"}},
		{"hashtags", Filter{Hashtags: []string{"#golang"}}, []string{"alpha/2"}},
		{"hashtag mismatch", Filter{Hashtags: []string{"launch"}}, nil},
		{"query", Filter{Query: "GOPHER"}, []string{"alpha/6"}},
		{"since", Filter{Since: base.Add(-3 * time.Hour)}, []string{"alpha/1", "alpha/2", "alpha/3"}},
		{"until", Filter{Until: base.Add(-29 * time.Hour)}, []string{"alpha/4", "alpha/5", "alpha/6"}},
		{"excludeForwarded", Filter{ExcludeForwarded: true}, []string{"alpha/1", "alpha/2", "alpha/4", "alpha/5", "alpha/6"}},
		{"excludeReplies", Filter{ExcludeReplies: true}, []string{"alpha/1", "alpha/2", "alpha/3", "alpha/5", "alpha/6"}},
		{"excludeService", Filter{ExcludeService: true}, []string{"alpha/1", "alpha/2", "alpha/3", "alpha/4", "alpha/6"}},
	} {
		p, err := s.Feed(context.Background(), Request{Channels: []string{"alpha"}, Order: Newest, First: 10, Filter: c.f})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := ids(p.Items); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFailuresAndBadInput(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	src.set("alpha", 100, post(1, 1, 0))
	src.errs["broken"] = fmt.Errorf("boom: %w", origin.ErrUpstream)
	s := newService(t, src, clk, time.Minute)

	p, err := s.Feed(context.Background(), Request{Channels: []string{"alpha", "missing", "broken", "no!"}, First: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Items); !slices.Equal(got, []string{"alpha/1"}) {
		t.Errorf("items = %v", got)
	}
	reasons := map[string]error{}
	for _, f := range p.Failed {
		reasons[f.Username] = f.Err
	}
	for name, want := range map[string]error{"missing": origin.ErrNotFound, "broken": origin.ErrUpstream, "no!": tme.ErrInvalidUsername} {
		if !errors.Is(reasons[name], want) {
			t.Errorf("failure of %q = %v, want %v", name, reasons[name], want)
		}
	}

	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("chan%03d", i)
	}
	// Duplicates are ignored, so the limit is on distinct names: 150 spellings
	// of one channel are one channel; a list far beyond the limit is refused
	// as sent.
	copies := make([]string, 150)
	for i := range copies {
		copies[i] = [...]string{"alpha", "@alpha", "ALPHA"}[i%3]
	}
	if _, err := s.Feed(context.Background(), Request{Channels: copies, First: 1}); err != nil {
		t.Errorf("150 spellings of one channel: %v", err)
	}
	flood := make([]string, 4*100+1)
	for i := range flood {
		flood[i] = "alpha"
	}
	for _, req := range []Request{
		{},
		{Channels: many, First: 1},
		{Channels: flood, First: 1},
		{Channels: []string{"alpha"}, First: -1},
		{Channels: []string{"alpha"}, First: 2001},
		{Channels: []string{"alpha"}, First: 1, After: "not-a-cursor"},
		{Channels: []string{"alpha"}, First: 1, After: p.Items[0].Cursor, Order: Newest}, // a RANKED cursor
		{Channels: []string{"alpha"}, First: 1, Filter: Filter{MediaKinds: []parser.MediaKind{"hologram"}}},
		{Channels: []string{"alpha"}, First: 1, Filter: Filter{Since: base, Until: base.Add(-time.Hour)}},
	} {
		if _, err := s.Feed(context.Background(), req); !errors.Is(err, ErrBadRequest) {
			t.Errorf("Feed(%+v) error = %v, want ErrBadRequest", req, err)
		}
	}
}

func TestSharedBuildAndKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &clock{now: base}
		src := newFakePages(base)
		names := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
		for i, n := range names {
			src.set(n, 100, post(1, float64(i), 10), post(2, float64(i)+0.5, 20))
		}
		src.gate = make(chan struct{})
		s := newService(t, src, clk, 10*time.Second)
		defer s.Close()
		req := Request{Channels: names, First: 5}

		var wg sync.WaitGroup
		results := make([]*Page, 50)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := s.Feed(context.Background(), req)
				if err != nil {
					t.Error(err)
				}
				results[i] = p
			}()
		}
		// Every caller reaches the shared flight (or the gate) before the
		// pages answer.
		synctest.Wait()
		close(src.gate)
		wg.Wait()
		src.gate = nil
		if got := src.calls.Load(); got != int64(len(names)) {
			t.Errorf("page fetches = %d, want %d", got, len(names))
		}
		if got := s.Builds(); got != 1 {
			t.Errorf("builds = %d, want 1", got)
		}
		for _, p := range results {
			if p == nil || p.Key != results[0].Key {
				t.Fatalf("callers got different pages")
			}
		}

		// Within the refresh window: neither pages nor a build.
		clk.Add(5 * time.Second)
		if _, err := s.Feed(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if src.calls.Load() != int64(len(names)) || s.Builds() != 1 {
			t.Errorf("inside the window: fetches %d builds %d", src.calls.Load(), s.Builds())
		}
		// Past the refresh point, pages unchanged: pages are looked at, the build is reused.
		clk.Add(10 * time.Second)
		src.fetchedAt = clk.Now()
		p, err := s.Feed(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if s.Builds() != 1 || p.Key != results[0].Key {
			t.Errorf("unchanged pages rebuilt the feed: builds %d", s.Builds())
		}
		if src.calls.Load() != 2*int64(len(names)) {
			t.Errorf("fetches = %d, want %d", src.calls.Load(), 2*len(names))
		}
		// A page changed: a new build.
		clk.Add(11 * time.Second)
		src.fetchedAt = clk.Now()
		src.set("echo", 100, post(3, 0, 1))
		p, err = s.Feed(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if s.Builds() != 2 || p.Key == results[0].Key {
			t.Errorf("a changed page did not rebuild the feed: builds %d", s.Builds())
		}
	})
}

func TestRenderedOncePerPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &clock{now: base}
		src := newFakePages(base)
		src.set("alpha", 100, post(1, 1, 0))
		s := newService(t, src, clk, time.Minute)
		defer s.Close()
		p, err := s.Feed(context.Background(), Request{Channels: []string{"alpha"}, First: 1})
		if err != nil {
			t.Fatal(err)
		}
		var renders atomic.Int64
		var wg sync.WaitGroup
		gate := make(chan struct{}) // the first render waits here until every caller has come
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := s.Rendered(p, "k", func() ([]byte, error) {
					renders.Add(1)
					<-gate
					return []byte("rendered"), nil
				})
				if err != nil || string(b) != "rendered" {
					t.Errorf("Rendered = %q, %v", b, err)
				}
			}()
		}
		synctest.Wait() // one render under way, the other 19 callers waiting for it
		close(gate)
		wg.Wait()
		if renders.Load() != 1 {
			t.Errorf("renders = %d, want 1", renders.Load())
		}
		if _, err := s.Rendered(p, "other", func() ([]byte, error) { return nil, errors.New("x") }); err == nil {
			t.Error("a failed render reported no error")
		}
	})
}

func TestRefreshOffStillShares(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	src.set("alpha", 100, post(1, 1, 0))
	s := newService(t, src, clk, 0)
	for range 3 {
		if _, err := s.Feed(context.Background(), Request{Channels: []string{"alpha"}, First: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if src.calls.Load() != 3 {
		t.Errorf("with Refresh 0 every request reads the pages: %d fetches, want 3", src.calls.Load())
	}
	if s.Builds() != 1 {
		t.Errorf("unchanged pages are still not merged again: builds %d, want 1", s.Builds())
	}
}

// TestBuildingPagesBoundsConcurrentBuilds: distinct cold feeds arriving
// together hold at most BuildingPages channel pages between them; the
// others wait, and all finish.
func TestBuildingPagesBoundsConcurrentBuilds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakePages(base)
		for i := range 7 {
			src.set(fmt.Sprintf("chan%d", i), 100, post(1, 1, 10))
		}
		src.gate = make(chan struct{})
		s, err := New(Config{Pages: src, Refresh: time.Minute, Now: (&clock{now: base}).Now, BuildingPages: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		feeds := [][]string{{"chan0", "chan1"}, {"chan2", "chan3"}, {"chan4", "chan5"}, {"chan0", "chan1", "chan2", "chan3", "chan4", "chan5", "chan6"}}
		errs := make(chan error, len(feeds))
		for _, chans := range feeds {
			go func() {
				_, err := s.Feed(context.Background(), Request{Channels: chans, First: 10})
				errs <- err
			}()
			synctest.Wait() // it fetches (and waits at the gate) or waits for room
		}
		if n := src.calls.Load(); n != 4 {
			t.Errorf("%d pages requested while the first builds are stuck, want 4 (BuildingPages)", n)
		}
		close(src.gate)
		for range feeds {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		// The 7-channel feed, larger than the bound, ran alone.
		if n := src.calls.Load(); n != 13 {
			t.Errorf("%d pages requested in all, want 13", n)
		}
	})
}

// TestKeptBuildsChargedForTheirPages: a kept build is weighed with the
// parses its items point into, so the bound holds builds by bytes.
func TestKeptBuildsChargedForTheirPages(t *testing.T) {
	src := newFakePages(base)
	for i := range 3 {
		src.set(fmt.Sprintf("chan%d", i), 100, post(1, 1, 10), post(2, 2, 10))
	}
	s, err := New(Config{Pages: src, Refresh: time.Minute, Now: (&clock{now: base}).Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Feed(context.Background(), Request{Channels: []string{"chan0", "chan1", "chan2"}, First: 10}); err != nil {
		t.Fatal(err)
	}
	s.CleanUp()
	st := s.Stats()
	// Fake pages carry no Parsed: the weight is the build's own bytes, key and node.
	if st.Kept != 1 || st.KeptOwnBytes <= 6*int64(unsafe.Sizeof(Item{})) || st.KeptBytes < uint64(st.KeptOwnBytes) || st.KeptBytes > uint64(st.KeptOwnBytes)+512 {
		t.Errorf("stats %+v: want one build weighed by its own bytes", st)
	}
}

// fiveChannels serves five channels whose message ids all overlap.
func fiveChannels(t *testing.T) (*fakePages, []string) {
	t.Helper()
	src := newFakePages(base)
	var names []string
	for c := 0; c < 5; c++ {
		var posts []parser.Post
		for i := 1; i <= 9; i++ {
			posts = append(posts, post(i, float64((i*7+c*3)%11), int64(i*c*13%50)))
		}
		name := fmt.Sprintf("chan%d", c)
		src.set(name, 100, posts...)
		names = append(names, name)
	}
	return src, names
}

func intp(n int) *int { return &n }

// Walking backward from the end with last/before gives every post once,
// the forward walk's order reversed page by page.
func TestBackwardPagingWalksEveryPostOnce(t *testing.T) {
	clk := &clock{now: base}
	src, names := fiveChannels(t)
	s := newService(t, src, clk, time.Minute)
	ctx := context.Background()
	for _, order := range Orders() {
		full, err := s.Feed(ctx, Request{Channels: names, Order: order, First: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var forward []string
		req := Request{Channels: names, Order: order, First: 4}
		for {
			p, err := s.Feed(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			forward = append(forward, ids(p.Items)...)
			if !p.HasNextPage {
				break
			}
			req.After = p.Items[len(p.Items)-1].Cursor
		}
		var backward [][]string
		req = Request{Channels: names, Order: order, Last: intp(4)}
		for n := 0; ; n++ {
			p, err := s.Feed(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Items) == 0 || len(p.Items) > 4 {
				t.Fatalf("%s: backward page %d has %d items", order, n, len(p.Items))
			}
			if p.HasNextPage != (n > 0) {
				t.Errorf("%s: backward page %d: hasNextPage %v", order, n, p.HasNextPage)
			}
			backward = append(backward, ids(p.Items))
			if !p.HasPreviousPage {
				break
			}
			req.Before = p.Items[0].Cursor
		}
		var joined []string
		for i := len(backward) - 1; i >= 0; i-- {
			joined = append(joined, backward[i]...)
		}
		if !slices.Equal(joined, forward) || !slices.Equal(forward, ids(full.Items)) {
			t.Errorf("%s: backward walk %v\nforward walk %v\nfull %v", order, joined, forward, ids(full.Items))
		}
		// 45 posts in pages of 4 from the end: the oldest page holds 1.
		if len(backward) != 12 || len(backward[len(backward)-1]) != 1 {
			t.Errorf("%s: %d backward pages, the last of %d", order, len(backward), len(backward[len(backward)-1]))
		}
	}
}

// after and before together select the items strictly between them.
func TestCursorWindow(t *testing.T) {
	clk := &clock{now: base}
	src, names := fiveChannels(t)
	s := newService(t, src, clk, time.Minute)
	ctx := context.Background()
	full, err := s.Feed(ctx, Request{Channels: names, Order: Newest, First: 1000})
	if err != nil {
		t.Fatal(err)
	}
	all := ids(full.Items)
	for _, c := range []struct {
		name       string
		req        Request
		want       []string
		prev, next bool
	}{
		{"between", Request{After: full.Items[3].Cursor, Before: full.Items[10].Cursor, First: 100}, all[4:10], true, true},
		{"between, first", Request{After: full.Items[3].Cursor, Before: full.Items[10].Cursor, First: 2}, all[4:6], true, true},
		{"between, last", Request{After: full.Items[3].Cursor, Before: full.Items[10].Cursor, Last: intp(2)}, all[8:10], true, true},
		{"crossed", Request{After: full.Items[10].Cursor, Before: full.Items[3].Cursor, First: 100}, nil, true, true},
		{"last of all", Request{Last: intp(3)}, all[42:], true, false},
		{"last 0", Request{Last: intp(0), Before: full.Items[5].Cursor}, nil, true, true},
		{"before the first", Request{Before: full.Items[0].Cursor, Last: intp(5)}, nil, false, true},
		{"first before", Request{Before: full.Items[2].Cursor, First: 5}, all[:2], false, true},
	} {
		c.req.Channels, c.req.Order = names, Newest
		p, err := s.Feed(ctx, c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := ids(p.Items); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if p.HasPreviousPage != c.prev || p.HasNextPage != c.next {
			t.Errorf("%s: prev %v next %v, want %v %v", c.name, p.HasPreviousPage, p.HasNextPage, c.prev, c.next)
		}
	}
	for _, last := range []int{-1, 2001} {
		if _, err := s.Feed(ctx, Request{Channels: names, Last: intp(last)}); !errors.Is(err, ErrBadRequest) {
			t.Errorf("last %d: %v", last, err)
		}
	}
}

// A cursor pages only its own feed: the same channels (in any spelling
// and order), order and filter.
func TestCursorBoundToItsFeed(t *testing.T) {
	clk := &clock{now: base}
	src, names := fiveChannels(t)
	s := newService(t, src, clk, time.Minute)
	ctx := context.Background()
	req := Request{Channels: names[:3], Order: Newest, First: 2, Filter: Filter{ExcludeReplies: true}}
	p, err := s.Feed(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	cur := p.Items[1].Cursor
	same := []Request{
		{Channels: []string{"@Chan2", "chan0", "chan1", "chan0"}, Order: Newest, First: 2, Filter: Filter{ExcludeReplies: true}},
		{Channels: []string{"chan0", "chan1", "chan2", "not a name!"}, Order: Newest, First: 2, Filter: Filter{ExcludeReplies: true}},
	}
	for _, r := range same {
		r.After = cur
		q, err := s.Feed(ctx, r)
		if err != nil {
			t.Fatalf("%v: %v", r.Channels, err)
		}
		if got, want := ids(q.Items), ids(p.Items); len(got) == 0 || slices.Contains(want, got[0]) {
			t.Errorf("%v: after the cursor came %v", r.Channels, got)
		}
	}
	foreign := []struct {
		name string
		req  Request
		msg  string
	}{
		{"other channels", Request{Channels: names[1:4], Order: Newest}, "another feed"},
		{"one channel more", Request{Channels: names[:4], Order: Newest}, "another feed"},
		{"other filter", Request{Channels: names[:3], Order: Newest}, "another feed"},
		{"other order", Request{Channels: names[:3], Order: Ranked, Filter: Filter{ExcludeReplies: true}}, "in NEWEST order"},
	}
	for _, f := range foreign {
		for _, arg := range []string{"after", "before"} {
			r := f.req
			r.First = 2
			if arg == "after" {
				r.After = cur
			} else {
				r.Before = cur
			}
			_, err := s.Feed(ctx, r)
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), arg+": the cursor belongs to") || !strings.Contains(err.Error(), f.msg) {
				t.Errorf("%s, %s: error %v", f.name, arg, err)
			}
		}
	}
}

// Cursors are sealed: their bytes reveal nothing of the feed, a changed
// byte is refused, and a service with the same key (another process, a
// restart) accepts them while one with another key does not.
func TestCursorIsOpaqueAndSealed(t *testing.T) {
	clk := &clock{now: base}
	src, names := fiveChannels(t)
	ctx := context.Background()
	newKeyed := func(key string) *Service {
		s, err := New(Config{Pages: src, Refresh: time.Minute, Now: clk.Now, CursorKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := newKeyed("")
	req := Request{Channels: names, Order: Newest, First: 45}
	p, err := s.Feed(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, it := range p.Items {
		raw, err := base64.RawURLEncoding.DecodeString(it.Cursor)
		if err != nil {
			t.Fatalf("cursor %q is not base64url: %v", it.Cursor, err)
		}
		for _, leak := range []string{"chan", it.Channel.Username, strconv.FormatInt(it.Post.Footer.Date.Unix, 10), string(Newest), "N|"} {
			if bytes.Contains(raw, []byte(leak)) {
				t.Errorf("cursor of %s/%d shows %q", it.Channel.Username, it.Post.ID, leak)
			}
		}
		if seen[it.Cursor] {
			t.Errorf("cursor %q given twice", it.Cursor)
		}
		seen[it.Cursor] = true
	}

	cur := p.Items[10].Cursor
	raw, _ := base64.RawURLEncoding.DecodeString(cur)
	for _, i := range []int{0, tagSize, len(raw) - 1} {
		bad := slices.Clone(raw)
		bad[i] ^= 1
		r := req
		r.After = base64.RawURLEncoding.EncodeToString(bad)
		if _, err := s.Feed(ctx, r); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "is not a feed cursor") {
			t.Errorf("byte %d changed: %v", i, err)
		}
	}

	req.After = cur
	want, err := s.Feed(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	restarted := newKeyed(DefaultCursorKey)
	got, err := restarted.Feed(ctx, req)
	if err != nil {
		t.Fatalf("the same key refused the cursor: %v", err)
	}
	if !slices.Equal(ids(got.Items), ids(want.Items)) || got.Items[0].Cursor != want.Items[0].Cursor {
		t.Errorf("another process with the same key pages differently: %v, want %v", ids(got.Items), ids(want.Items))
	}
	if _, err := newKeyed("another secret").Feed(ctx, req); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "is not a feed cursor") || !strings.Contains(err.Error(), "cursor key") {
		t.Errorf("another key accepted the cursor: %v", err)
	}
}

// Builds waiting for room are bounded: they outlive callers that went
// away, so beyond MaxWaitingBuilds a new build fails at once.
func TestWaitingBuildsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakePages(base)
		for i := range 8 {
			src.set(fmt.Sprintf("chan%d", i), 100, post(1, 1, 10))
		}
		src.gate = make(chan struct{})
		s, err := New(Config{Pages: src, Refresh: time.Minute, Now: (&clock{now: base}).Now, BuildingPages: 2, MaxWaitingBuilds: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// One build holds the room; two wait for it, their callers gone.
		for _, chans := range [][]string{{"chan0", "chan1"}, {"chan2", "chan3"}, {"chan4", "chan5"}} {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { _, _ = s.Feed(ctx, Request{Channels: chans, First: 10}) }()
			synctest.Wait()
			cancel()
		}
		done := make(chan error, 1)
		go func() {
			_, err := s.Feed(context.Background(), Request{Channels: []string{"chan6", "chan7"}, First: 10})
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			if !errors.Is(err, ErrBusy) {
				t.Errorf("a build beyond the waiting bound: %v, want ErrBusy", err)
			}
		default:
			t.Error("a build beyond the waiting bound waits too")
		}
		close(src.gate)
		synctest.Wait()
		if _, err := s.Feed(context.Background(), Request{Channels: []string{"chan6", "chan7"}, First: 10}); err != nil {
			t.Errorf("once the room is free: %v", err)
		}
	})
}

// TestChangedChecksKeptBuildsOfThatChannel: a channel's page refreshed
// before the kept build's refresh point (the background updater does
// that) is in the next answer once Changed names it; builds of other
// channels stay kept.
func TestChangedChecksKeptBuildsOfThatChannel(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	src.set("alpha", 100, post(1, 2, 10))
	src.set("bravo", 100, post(1, 1, 10))
	s := newService(t, src, clk, 10*time.Second)
	both := Request{Channels: []string{"alpha", "bravo"}, First: 5, Order: Newest}
	other := Request{Channels: []string{"bravo"}, First: 5, Order: Newest}
	for _, r := range []Request{both, other} {
		if _, err := s.Feed(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(7 * time.Second)
	src.fetchedAt = clk.Now()
	src.set("alpha", 100, post(2, 0, 1), post(1, 2, 10))
	p, err := s.Feed(context.Background(), both)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Items); got[0] != "bravo/1" {
		t.Fatalf("the kept build should still answer before Changed: %q", got)
	}
	calls := src.calls.Load()
	s.Changed("alpha")
	if p, err = s.Feed(context.Background(), both); err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Items); len(got) != 3 || got[0] != "alpha/2" {
		t.Errorf("after Changed: %q, want alpha/2 first", got)
	}
	if _, err := s.Feed(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if got := src.calls.Load() - calls; got != 2 {
		t.Errorf("%d page reads after Changed, want 2 (the changed feed's; the other feed stays kept)", got)
	}
}

// An answer kept by version is served while Current says its build is
// the one the feed would be answered from: not once a channel changed,
// the pages' refresh point passed, a newer build replaced it, the build
// left the kept builds, or MaxAge passed.
func TestCurrentFollowsTheKeptBuild(t *testing.T) {
	clk := &clock{now: base}
	src := newFakePages(base)
	src.set("alpha", 100, post(1, 2, 10))
	s, err := New(Config{Pages: src, Refresh: 10 * time.Second, MaxAge: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Channels: []string{"alpha"}, First: 5, Order: Newest}
	feedVersion := func() Version {
		t.Helper()
		p, err := s.Feed(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return p.Version()
	}
	current := func(v Version) bool {
		_, _, ok := s.Current(v, clk.Now())
		return ok
	}

	v1 := feedVersion()
	if !current(v1) {
		t.Fatal("a build just made is not current")
	}
	s.Changed("alpha")
	if current(v1) {
		t.Error("current after its channel changed")
	}
	// Rechecked with unchanged pages: the same build, current again.
	if v := feedVersion(); v != v1 || !current(v1) {
		t.Errorf("recheck of unchanged pages: %+v current %v, want the same build current", v, current(v1))
	}
	clk.Add(11 * time.Second)
	if current(v1) {
		t.Error("current past its pages' refresh point")
	}
	// New pages: a newer build replaces it.
	src.fetchedAt = clk.Now()
	src.set("alpha", 100, post(2, 0, 1), post(1, 2, 10))
	v2 := feedVersion()
	if v2 == v1 || current(v1) || !current(v2) {
		t.Errorf("after a rebuild from new pages: old current %v, new current %v; want only the new", current(v1), current(v2))
	}
	// Left the kept builds.
	s.kept.Invalidate(req.key(t, s))
	if current(v2) {
		t.Error("current after leaving the kept builds")
	}
	// MaxAge: reused a minute at most, however fresh its pages, so
	// current for at most a refresh window beyond.
	v3 := feedVersion()
	for range 8 {
		clk.Add(9 * time.Second)
		src.fetchedAt = clk.Now()
		if v := feedVersion(); v != v3 && current(v3) {
			t.Fatal("an older build is current beside a newer one")
		}
	}
	if current(v3) {
		t.Error("current past MaxAge")
	}
	if current(Version{}) {
		t.Error("the zero Version is current")
	}
}

// key is the kept builds' key of r.
func (r Request) key(t *testing.T, s *Service) string {
	t.Helper()
	q, err := s.normalize(r)
	if err != nil {
		t.Fatal(err)
	}
	return q.key
}
