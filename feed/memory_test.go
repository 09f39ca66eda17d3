package feed_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/memsize"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// variedOrigin serves one recorded page under any channel name, with the
// name appended as a comment so every channel's bytes (and parse) differ.
type variedOrigin struct{ page []byte }

func (o variedOrigin) Fetch(_ context.Context, r tme.Request) ([]byte, error) {
	return fmt.Appendf(append([]byte(nil), o.page...), "<!-- %s -->", r.Channel), nil
}

type stack struct {
	mem   *cache.Memory
	pages *pages.Service
	feeds *feed.Service
}

func newStack(t *testing.T, parsedBytes, keptBytes, renderedBytes int64) *stack {
	t.Helper()
	page, err := fs.ReadFile(fixtures.Pages(), "s/tmefeed_news.html")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 1 << 30, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	ps := pages.New(pages.Config{Cache: mem, Origin: variedOrigin{page: page}, ParsedBytes: parsedBytes})
	fs, err := feed.New(feed.Config{Pages: ps, Refresh: time.Hour, KeptBytes: keptBytes, RenderedBytes: renderedBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Close)
	return &stack{mem: mem, pages: ps, feeds: fs}
}

// feedOf asks for the feed of channels first..first+n-1 and renders it.
func (s *stack) feedOf(t *testing.T, first, n int) {
	t.Helper()
	chans := make([]string, n)
	for i := range chans {
		chans[i] = fmt.Sprintf("chan%05d", first+i)
	}
	p, err := s.feeds.Feed(context.Background(), feed.Request{Channels: chans, First: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) == 0 || len(p.Failed) > 0 {
		t.Fatalf("feed of %d channels: %d items, %d failed", n, len(p.Items), len(p.Failed))
	}
	_, err = s.feeds.Rendered(p, "test", func() ([]byte, error) {
		var buf bytes.Buffer // grown as a renderer grows it, with spare capacity
		for _, it := range p.Items {
			buf.WriteString(it.Cursor)
			buf.WriteString(it.Post.Footer.Date.String)
		}
		return buf.Bytes(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// accounted is what the stack says it holds.
func (s *stack) accounted() (total float64, parts string) {
	s.pages.CleanUp()
	s.feeds.CleanUp()
	c, p, f := s.mem.Stats(), s.pages.Stats(), s.feeds.Stats()
	total = float64(c.Bytes) + float64(p.HeldBytes) + float64(f.KeptOwnBytes) + float64(f.RenderedBytes)
	return total, fmt.Sprintf("cache %d, parses %d, builds %d (%d kept), rendered %d", c.Bytes, p.HeldBytes, f.KeptOwnBytes, f.Kept, f.RenderedBytes)
}

// TestBuildAccounting keeps many feed builds whose parses the small
// parsed-page cache has mostly dropped, and checks that the accounted
// bytes — each parse once, whoever holds it — match the heap's growth.
func TestBuildAccounting(t *testing.T) {
	if raceEnabled {
		// The race detector's own allocations and a loaded machine move
		// the heap by more than the margin; make test measures the
		// real build in its second, non-race pass.
		t.Skip("heap measurements are for the real build (make test's non-race pass)")
	}
	feeds, width := 30, 20
	s := newStack(t, 1<<20, 1<<30, 1<<30)
	s.feedOf(t, 100_000, 4) // codec state and the like, not the stores'
	s.pages.CleanUp()
	before := memsize.LiveHeap()
	base, _ := s.accounted()
	for i := range feeds {
		s.feedOf(t, i*width, width)
	}
	acc, parts := s.accounted()
	growth := float64(memsize.LiveHeap()) - float64(before)
	acc -= base
	t.Logf("%d feeds of %d channels: accounted %.0f B (%s), heap grew %.0f B (%+.1f%%)", feeds, width, acc, parts, growth, 100*(acc-growth)/growth)
	if math.Abs(acc-growth) > 0.1*growth {
		t.Errorf("accounted %.0f B, heap grew %.0f B: more than 10%% apart", acc, growth)
	}
	if st := s.feeds.Stats(); st.Kept != feeds+1 {
		t.Errorf("%d builds kept, want %d", st.Kept, feeds+1)
	}
}

// TestKeptBuildsWithinBound: builds and rendered feeds past their bounds
// are dropped by bytes, and dropping a build releases its parses.
func TestKeptBuildsWithinBound(t *testing.T) {
	const keptMax, renderedMax = 2 << 20, 64 << 10
	width := 10 // each build ~0.5 MB with its parses: 20 of them into 2 MiB
	if raceEnabled {
		width = 5
	}
	s := newStack(t, 1<<20, keptMax, renderedMax)
	for i := range 20 {
		s.feedOf(t, i*width, width)
	}
	s.pages.CleanUp()
	s.feeds.CleanUp()
	f, p := s.feeds.Stats(), s.pages.Stats()
	t.Logf("20 feeds of %d channels: builds %d B in %d (bound %d), rendered %d B (bound %d), parses held %d B, parsed cache %d B",
		width, f.KeptBytes, f.Kept, keptMax, f.RenderedBytes, renderedMax, p.HeldBytes, p.ParsedBytes)
	if f.KeptBytes > keptMax || f.RenderedBytes > renderedMax {
		t.Errorf("over a bound: builds %d/%d B, rendered %d/%d B", f.KeptBytes, keptMax, f.RenderedBytes, renderedMax)
	}
	if f.Kept == 0 || f.Kept >= 20 {
		t.Errorf("%d builds kept; want some but not all", f.Kept)
	}
	// Parses are held by the parsed-page cache or by a kept build, nothing else.
	if limit := int64(p.ParsedBytes) + int64(f.KeptBytes); p.HeldBytes > limit {
		t.Errorf("parses held %d B, more than the cache's %d B and the builds' %d B together", p.HeldBytes, p.ParsedBytes, f.KeptBytes)
	}
}
