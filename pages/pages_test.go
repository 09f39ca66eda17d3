package pages_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// fakeOrigin answers from fixture files, or with body when set, and counts.
type fakeOrigin struct {
	mu    sync.Mutex
	body  []byte // when set, every answer
	err   error
	calls map[string]int
}

func (f *fakeOrigin) Fetch(_ context.Context, r tme.Request) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[r.Path()]++
	if f.err != nil {
		return nil, f.err
	}
	if f.body != nil {
		return f.body, nil
	}
	var file string
	switch r.Kind {
	case tme.KindBody:
		file = "s/" + r.Channel + ".html"
	case tme.KindPreview:
		file = "preview/" + r.Channel + ".html"
	default:
		return nil, origin.ErrNotFound
	}
	b, err := fs.ReadFile(fixtures.Pages(), file)
	if err != nil {
		return nil, origin.ErrNotFound
	}
	return b, nil
}

func (f *fakeOrigin) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

type setup struct {
	svc    *pages.Service
	origin *fakeOrigin
	parses atomic.Int64
}

func newSetup(t *testing.T, refresh time.Duration) *setup {
	t.Helper()
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 8 << 20, Refresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	s := &setup{origin: &fakeOrigin{}}
	s.svc = pages.New(pages.Config{Cache: mem, Origin: s.origin, OnParse: func(tme.Kind) { s.parses.Add(1) }})
	return s
}

var body = tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news"}

func TestPageIsParsedOncePerContent(t *testing.T) {
	// CACHE_MODE=off: every call fetches, but the same bytes parse once.
	s := newSetup(t, 0)
	var first pages.Result
	for i := range 3 {
		res, err := s.svc.Page(context.Background(), body)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Page.Content.Posts) == 0 || res.Hash == 0 || res.FetchedAt.IsZero() {
			t.Fatalf("result %d: %d posts, hash %x, fetched %v", i, len(res.Page.Content.Posts), res.Hash, res.FetchedAt)
		}
		if i == 0 {
			first = res
		} else if res.Page != first.Page || res.Hash != first.Hash {
			t.Error("the same bytes gave a different parse")
		}
	}
	if n := s.origin.count("/s/tmefeed_news"); n != 3 {
		t.Errorf("%d fetches, want 3 with nothing cached", n)
	}
	if n := s.parses.Load(); n != 1 {
		t.Errorf("%d parses, want 1", n)
	}
}

func TestRenderedHitSkipsRender(t *testing.T) {
	s := newSetup(t, 10*time.Second)
	var renders atomic.Int64
	render := func(res pages.Result) ([]byte, error) {
		renders.Add(1)
		return fmt.Appendf(nil, `{"posts":%d}`, len(res.Page.Content.Posts)), nil
	}
	a, err := s.svc.Rendered(context.Background(), "test:0", body, render)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.svc.Rendered(context.Background(), "test:0", body, render)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("hit %q differs from miss %q", b, a)
	}
	if renders.Load() != 1 || s.parses.Load() != 1 || s.origin.count("/s/tmefeed_news") != 1 {
		t.Errorf("renders %d, parses %d, fetches %d; want 1 each", renders.Load(), s.parses.Load(), s.origin.count("/s/tmefeed_news"))
	}

	// Another rendering of the same page reuses the cached page and its parse.
	if _, err := s.svc.Rendered(context.Background(), "test:1", body, render); err != nil {
		t.Fatal(err)
	}
	if renders.Load() != 2 || s.parses.Load() != 1 || s.origin.count("/s/tmefeed_news") != 1 {
		t.Errorf("renders %d, parses %d, fetches %d; want 2, 1, 1", renders.Load(), s.parses.Load(), s.origin.count("/s/tmefeed_news"))
	}
}

func TestGarbageIsAnUpstreamErrorAndNotCached(t *testing.T) {
	s := newSetup(t, 10*time.Second)
	s.origin.body = []byte(`<html><body>Please solve this captcha</body></html>`)
	for range 2 {
		_, err := s.svc.Page(context.Background(), body)
		if !errors.Is(err, origin.ErrUpstream) || !errors.Is(err, parser.ErrNotPage) {
			t.Fatalf("err %v, want ErrUpstream and ErrNotPage", err)
		}
	}
	if n := s.origin.count("/s/tmefeed_news"); n != 2 {
		t.Errorf("%d fetches, want 2: a page that is not one must not be cached", n)
	}
}

func TestPreview(t *testing.T) {
	s := newSetup(t, 10*time.Second)
	p, err := s.svc.Preview(context.Background(), "TmeFeed_News", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Title == "" {
		t.Errorf("preview %+v, want a title", p)
	}

	// A user's landing page is a valid page: kept, and answered from the cache.
	for range 2 {
		if _, err := s.svc.Preview(context.Background(), "jane_doe_writer", ""); !errors.Is(err, parser.ErrNotChannel) {
			t.Fatalf("err %v, want ErrNotChannel", err)
		}
	}
	if n := s.origin.count("/jane_doe_writer"); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}

	if _, err := s.svc.Preview(context.Background(), "no", ""); !errors.Is(err, tme.ErrInvalidUsername) {
		t.Errorf("err %v, want tme.ErrInvalidUsername", err)
	}
}

func TestErrorsPassThrough(t *testing.T) {
	s := newSetup(t, 10*time.Second)
	rl := &origin.RateLimitError{RetryAfter: time.Now().Add(time.Minute)}
	s.origin.err = rl
	_, err := s.svc.Page(context.Background(), body)
	var got *origin.RateLimitError
	if !errors.As(err, &got) || !errors.Is(err, origin.ErrRateLimited) {
		t.Errorf("err %v, want the origin's *RateLimitError", err)
	}

	if _, err := s.svc.Page(context.Background(), tme.Request{Kind: tme.KindPreview, Channel: "tmefeed_news"}); !errors.Is(err, pages.ErrBadRequest) {
		t.Errorf("Page of a preview: err %v, want ErrBadRequest", err)
	}
}

// The in-process copy of a rendered response is served only while the
// cache would serve it fresh; past the refresh point the page is reloaded.
func TestHotRenderedFollowsRefresh(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 8 << 20, Refresh: 10 * time.Second, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	fo := &fakeOrigin{}
	var renders atomic.Int64
	svc := pages.New(pages.Config{Cache: mem, Origin: fo, Refresh: 10 * time.Second, Now: clock})
	render := func(res pages.Result) ([]byte, error) {
		renders.Add(1)
		return fmt.Appendf(nil, "%d", renders.Load()), nil
	}
	get := func() string {
		b, err := svc.Rendered(context.Background(), "test", body, render)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if a, b := get(), get(); a != "1" || b != "1" {
		t.Fatalf("got %q then %q, want 1 twice", a, b)
	}
	mu.Lock()
	now = now.Add(9 * time.Second)
	mu.Unlock()
	if got := get(); got != "1" || fo.count("/s/tmefeed_news") != 1 {
		t.Fatalf("9 s later: %q after %d fetches, want the cached 1 after 1", got, fo.count("/s/tmefeed_news"))
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	// Past the refresh point the cached response is served, stale, while
	// the page and the response are refreshed in the background.
	if got := get(); got != "1" {
		t.Fatalf("past the refresh point: %q, want the stale 1", got)
	}
	for deadline := time.Now().Add(10 * time.Second); renders.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := get(); got != "2" || fo.count("/s/tmefeed_news") != 2 {
		t.Errorf("after the refresh: %q after %d fetches, want a new render from the refetched page, after 2", got, fo.count("/s/tmefeed_news"))
	}
}
