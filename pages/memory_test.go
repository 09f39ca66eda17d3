package pages_test

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/memsize"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// fixturePages returns every recorded page of a kind the service parses.
func fixturePages(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, pat := range []string{"s/*.html", "preview/*.html"} {
		files, err := fs.Glob(fixtures.Pages(), pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := fs.ReadFile(fixtures.Pages(), f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = b
		}
	}
	if len(out) < 5 {
		t.Fatalf("only %d fixture pages", len(out))
	}
	return out
}

func kindOf(file string) tme.Kind {
	if file[:2] == "s/" {
		return tme.KindBody
	}
	return tme.KindPreview
}

// TestParsedSizeMatchesHeap checks the size estimate of a parse against
// what keeping many parses of each fixture page really costs.
func TestParsedSizeMatchesHeap(t *testing.T) {
	var estTotal, heapTotal float64
	for file, b := range fixturePages(t) {
		kind := kindOf(file)
		est := float64(pages.ParsedSize(kind, b))
		// Enough parses to hold a MiB, so that memory freed elsewhere in
		// the process (a cache's goroutine, a finished test) is small
		// beside what is measured; and a few tries, since such noise comes
		// and goes while a wrong estimate stays wrong.
		n := max(100, int((1<<20)/max(est, 1)))
		var per float64
		ok := false
		for try := 0; try < 3 && !ok; try++ {
			held := make([]any, n)
			before := memsize.LiveHeap()
			var err error
			for i := range held {
				if kind == tme.KindBody {
					held[i], err = parser.ParseBody(b)
				} else {
					held[i], err = parser.ParsePreview(b)
				}
			}
			after := memsize.LiveHeap()
			runtime.KeepAlive(held)
			if err != nil {
				break // not a channel: nothing is allocated per parse
			}
			per = (float64(after) - float64(before)) / float64(n)
			ok = math.Abs(est-per) <= 0.1*per+64
			t.Logf("%-28s %7d B raw: estimate %6.0f B, heap %8.0f B per parse (%+.1f%%), try %d", file, len(b), est, per, 100*(est-per)/per, try+1)
		}
		if per == 0 {
			continue
		}
		if !ok {
			t.Errorf("%s: estimate %.0f B, heap %.0f B: more than 10%% apart", file, est, per)
		}
		estTotal += est
		heapTotal += per
	}
	if heapTotal == 0 {
		t.Fatal("no page parsed")
	}
	t.Logf("all pages: estimate %.0f B, heap %.0f B (%+.1f%%)", estTotal, heapTotal, 100*(estTotal-heapTotal)/heapTotal)
}

// variedOrigin serves one recorded page under any channel name, with the
// name appended as a comment so every channel's bytes (and parse) differ.
type variedOrigin struct{ page []byte }

func (o variedOrigin) Fetch(_ context.Context, r tme.Request) ([]byte, error) {
	return fmt.Appendf(append([]byte(nil), o.page...), "<!-- %s -->", r.Channel), nil
}

// measureService fills a fresh Service with n distinct pages through
// RenderedEntry (render returns what renderSize says) and returns the
// heap growth and the service after filling.
func measureService(t *testing.T, page []byte, n int, cfg pages.Config, refresh time.Duration, renderSize int) (growth float64, svc *pages.Service, mem *cache.Memory) {
	t.Helper()
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 1 << 30, Refresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	cfg.Cache, cfg.Origin, cfg.Refresh = mem, variedOrigin{page: page}, refresh
	svc = pages.New(cfg)
	render := func(res pages.Result) ([]byte, error) {
		b := make([]byte, renderSize)
		copy(b, res.Page.Channel.Username)
		return b, nil
	}
	get := func(i int) {
		r := tme.Request{Kind: tme.KindBody, Channel: fmt.Sprintf("chan%06d", i)}
		if _, err := svc.RenderedEntry(context.Background(), "body:0", r, render); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 * runtime.GOMAXPROCS(0) { // the codec's lazily built state is not the stores'
		get(-1 - i)
	}
	before := memsize.LiveHeap()
	for i := range n {
		get(i)
	}
	svc.CleanUp()
	after := memsize.LiveHeap()
	return float64(after) - float64(before), svc, mem
}

// TestStoreAccounting fills the parsed-page cache and the hot store with
// many small entries, where per-entry overhead dominates, and checks that
// what the service accounts matches the heap it grew.
func TestStoreAccounting(t *testing.T) {
	files := fixturePages(t)
	preview := files["s/just_launched.html"]
	if raceEnabled {
		// See feed's TestBuildAccounting: make test measures the real
		// build in its non-race pass.
		t.Skip("heap measurements are for the real build (make test's non-race pass)")
	}
	n := 5000

	t.Run("parsed", func(t *testing.T) {
		// CACHE_MODE=off: nothing but the parses is kept.
		growth, svc, _ := measureService(t, preview, n, pages.Config{ParsedBytes: 1 << 30}, 0, 0)
		st := svc.Stats()
		t.Logf("%d parses: accounted %d B (weight %d B), heap grew %.0f B (%+.1f%%)", n, st.HeldBytes, st.ParsedBytes, growth, 100*(float64(st.HeldBytes)-growth)/growth)
		check(t, float64(st.HeldBytes), growth)
		if uint64(st.HeldBytes) != st.ParsedBytes {
			t.Errorf("held %d B, weight %d B: with no other holder they must agree", st.HeldBytes, st.ParsedBytes)
		}
	})
	t.Run("hot", func(t *testing.T) {
		growth, svc, mem := measureService(t, preview, n, pages.Config{ParsedBytes: 1 << 30, HotBytes: 1 << 30}, time.Hour, 200)
		st := svc.Stats()
		cs := mem.Stats()
		acc := float64(st.HotBytes) + float64(st.HeldBytes) + float64(cs.Bytes)
		t.Logf("%d pages: accounted %.0f B (hot %d, parsed %d, cache %d), heap grew %.0f B (%+.1f%%)", n, acc, st.HotBytes, st.HeldBytes, cs.Bytes, growth, 100*(acc-growth)/growth)
		check(t, acc, growth)
	})
}

func check(t *testing.T, accounted, growth float64) {
	t.Helper()
	if math.Abs(accounted-growth) > 0.1*growth {
		t.Errorf("accounted %.0f B, heap grew %.0f B: more than 10%% apart", accounted, growth)
	}
}

// TestStoresStayWithinBounds fills the parsed-page cache and the hot store
// far past their bounds.
func TestStoresStayWithinBounds(t *testing.T) {
	const parsedMax, hotMax = 256 << 10, 64 << 10
	page := fixturePages(t)["s/tmefeed_news.html"]
	_, svc, _ := measureService(t, page, 30, pages.Config{ParsedBytes: parsedMax, HotBytes: hotMax}, time.Hour, 4000)
	st := svc.Stats()
	t.Logf("30 pages of %d B: parsed %d B (bound %d), hot %d B (bound %d)", len(page), st.ParsedBytes, parsedMax, st.HotBytes, hotMax)
	if st.ParsedBytes > parsedMax || st.HotBytes > hotMax {
		t.Errorf("over a bound: parsed %d/%d B, hot %d/%d B", st.ParsedBytes, parsedMax, st.HotBytes, hotMax)
	}
	// Each store is full to within one entry: the bound, not a count, limits it.
	if st.ParsedBytes < parsedMax-uint64(pages.ParsedSize(tme.KindBody, page))-1024 || st.HotBytes < hotMax-5000 {
		t.Errorf("stores not filled to their bounds: parsed %d B, hot %d B", st.ParsedBytes, st.HotBytes)
	}
}

// TestParsedHeldOnce: a parse held by the cache and by another holder
// counts once, and still counts after the cache dropped it until the last
// holder releases it.
func TestParsedHeldOnce(t *testing.T) {
	page := fixturePages(t)["s/tmefeed_news.html"]
	mem, err := cache.NewMemory(cache.MemoryConfig{Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	size := pages.ParsedSize(tme.KindBody, page)
	// Room for two parses.
	svc := pages.New(pages.Config{Cache: mem, Origin: variedOrigin{page: page}, ParsedBytes: 2*size + 2048})
	get := func(name string) pages.Result {
		res, err := svc.Page(context.Background(), tme.Request{Kind: tme.KindBody, Channel: name})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := get("chan0")
	if first.Parsed.Bytes() < size-100 || first.Parsed.Bytes() > size+100 {
		t.Fatalf("Parsed.Bytes() = %d, estimate %d", first.Parsed.Bytes(), size)
	}
	first.Parsed.Hold()
	svc.CleanUp()
	one := svc.Stats().HeldBytes
	if one < first.Parsed.Bytes() || one > first.Parsed.Bytes()+1024 {
		t.Fatalf("held %d B with one parse of %d B held twice", one, first.Parsed.Bytes())
	}
	for i := 1; i <= 5; i++ { // evicts chan0 from the cache
		get(fmt.Sprintf("chan%d", i))
	}
	svc.CleanUp()
	withHold := svc.Stats().HeldBytes
	first.Parsed.Release()
	svc.CleanUp()
	without := svc.Stats().HeldBytes
	if d := withHold - without; d != first.Parsed.Bytes() {
		t.Errorf("releasing an evicted parse freed %d B of the account, want its %d B", d, first.Parsed.Bytes())
	}
	if st := svc.Stats(); st.HeldBytes < int64(st.ParsedBytes)-1024 || st.HeldBytes > int64(st.ParsedBytes)+1024 {
		t.Errorf("with no other holder, held %d B and cache weight %d B differ", st.HeldBytes, st.ParsedBytes)
	}
}
