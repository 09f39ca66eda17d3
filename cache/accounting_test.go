package cache

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/memsize"
)

// warmCodec makes c allocate its lazily built zstd state (one per encoder
// and decoder slot) so that it is not counted as the cache's growth.
func warmCodec(t testing.TB, c *Codec, pages []testPage) {
	t.Helper()
	for range 2 * runtime.GOMAXPROCS(0) {
		for _, p := range pages {
			b, err := c.Encode(Entry{Value: p.body, FetchedAt: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Decode(b); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fill stores n entries through Get, with keys shaped like origin's
// (prefix first), and returns the raw bytes loaded. Each key is read reads
// times: once leaves it in the trial queue, twice moves it to the main
// store.
func fill(t testing.TB, m *Memory, prefix string, n, reads int, value func(i int) []byte) int {
	t.Helper()
	raw := 0
	for i := range n {
		v := value(i)
		raw += len(v)
		key := fmt.Sprintf("tme:v1:page:{%s%06d}:body:0", prefix, i)
		for range reads {
			_, err := m.Get(context.Background(), key, func(context.Context, Previous) (Entry, error) {
				return Entry{Value: v}, nil
			}, GetOptions{})

			if err != nil {
				t.Fatal(err)
			}
		}
	}
	m.store.CleanUp() // finish pending eviction before measuring
	return raw
}

// TestEntryOverhead measures what an entry costs beyond its encoded bytes
// and key, the entryOverhead constant of the weigher (the main store) and
// trialOverhead (the trial queue), with many small entries so the
// per-entry part dominates. It fails when a constant no longer matches
// the measurement, e.g. after an otter or Go upgrade.
func TestEntryOverhead(t *testing.T) {
	t.Run("main", func(t *testing.T) { testEntryOverhead(t, 2, entryOverhead) })
	t.Run("trial", func(t *testing.T) { testEntryOverhead(t, 1, trialOverhead) })
}

func testEntryOverhead(t *testing.T, reads int, overhead int) {
	n := 20_000
	if raceEnabled {
		n /= 2 // still a per-entry part far above the heap's noise
	}
	// The clock stands still: a slow machine takes no entry past its
	// refresh point, which would reload it.
	m, err := NewMemory(MemoryConfig{MaxBytes: 1 << 30, Refresh: time.Minute, Now: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	noise := rand.NewChaCha8([32]byte{3, 4})
	values := make([][]byte, n)
	for i := range values {
		values[i] = make([]byte, 50+rng.IntN(400))
		_, _ = noise.Read(values[i]) // a block at a time, as the race detector slows a byte at a time
	}
	warmCodec(t, m.codec, []testPage{{body: values[0]}})

	before := memsize.LiveHeap()
	fill(t, m, "chan", n, reads, func(i int) []byte { return values[i] })
	after := memsize.LiveHeap()
	runtime.KeepAlive(values)

	s := m.Stats()
	if s.Entries != n {
		t.Fatalf("entries = %d, want %d (nothing should be evicted)", s.Entries, n)
	}
	payload := float64(s.Bytes) - float64(n*overhead) // Σ len(encoded)+len(key)
	measured := (float64(after) - float64(before) - payload) / float64(n)
	t.Logf("heap growth %d B for %d entries holding %.0f B: overhead %.0f B/entry (constant %d)",
		after-before, n, payload, measured, overhead)
	if math.Abs(measured-float64(overhead)) > 0.25*float64(overhead) {
		t.Errorf("measured overhead %.0f B/entry; the constant %d is off by more than 25%%", measured, overhead)
	}
}

// TestMemoryAccounting fills the cache well past its bound with real pages,
// read twice (the main store) and once (the trial queue), and checks that
// the accounted size stays within the bound and matches what the heap
// actually grew by.
func TestMemoryAccounting(t *testing.T) {
	// Not shrunk under the race detector, as the others are: the heap
	// this test holds beside the cache's bytes does not shrink with the
	// bound, and at 4 MiB it is a fifth of it.
	const maxBytes = 8 << 20
	pages := realisticPages(t)
	// The clock stands still, as in testEntryOverhead.
	m, err := NewMemory(MemoryConfig{MaxBytes: maxBytes, Refresh: time.Minute, Now: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	warmCodec(t, m.codec, pages)

	// Enough entries that, compressed, they come to 1.5 times the bound.
	var compressed int
	for _, p := range pages {
		b, _ := m.codec.Encode(Entry{Value: p.body})
		compressed += len(b)
	}
	n := 3 * maxBytes / 2 * len(pages) / compressed

	before := memsize.LiveHeap()
	raw := fill(t, m, "chan", n, 2, func(i int) []byte { return varyPage(pages[i%len(pages)].body, i) })
	raw += fill(t, m, "once", n/2, 1, func(i int) []byte { return varyPage(pages[i%len(pages)].body, n+i) })
	after := memsize.LiveHeap()

	s := m.Stats()
	growth := float64(after) - float64(before)
	t.Logf("%d pages, %d MiB raw, into a %d MiB bound: %d entries held, %d B accounted, heap grew %.0f B (%+.1f%%)",
		n, raw>>20, maxBytes>>20, s.Entries, s.Bytes, growth, 100*(float64(s.Bytes)-growth)/growth)
	if s.Bytes > maxBytes {
		t.Errorf("accounted %d B, over the %d B bound", s.Bytes, maxBytes)
	}
	if s.Entries >= n+n/2 {
		t.Errorf("all %d entries kept: the bound was never reached", n)
	}
	if math.Abs(float64(s.Bytes)-growth) > 0.2*growth {
		t.Errorf("accounted %d B but the heap grew %.0f B: more than 20%% apart", s.Bytes, growth)
	}
}

// TestCompressionRatio reports how well the fixture pages compress, and
// checks that compression is worth its cost on them.
func TestCompressionRatio(t *testing.T) {
	pages := realisticPages(t)
	c, err := NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	var raw, enc int
	for _, p := range pages {
		b, err := c.Encode(Entry{Value: p.body})
		if err != nil {
			t.Fatal(err)
		}
		raw += len(p.body)
		enc += len(b)
		t.Logf("%-50s %7d -> %6d B  %.3f", p.name, len(p.body), len(b), float64(len(b))/float64(len(p.body)))
	}
	ratio := float64(enc) / float64(raw)
	t.Logf("%d pages: %d -> %d B, compressed/raw = %.3f", len(pages), raw, enc, ratio)
	if ratio > 0.5 {
		t.Errorf("compressed/raw = %.3f; HTML pages should compress at least 2:1", ratio)
	}
}

// BenchmarkGetHit measures a fresh hit: a lookup, a header check and
// decompression of the page into a new slice.
func BenchmarkGetHit(b *testing.B) {
	pages := realisticPages(b)
	m, err := NewMemory(MemoryConfig{Refresh: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	keys := make([]string, len(pages))
	for i, p := range pages {
		keys[i] = fmt.Sprintf("tme:v1:page:{chan%03d}:body:0", i)
		if _, err := m.Get(ctx, keys[i], func(context.Context, Previous) (Entry, error) { return Entry{Value: p.body}, nil }, GetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	noLoad := func(context.Context, Previous) (Entry, error) {
		b.Fatal("hit called the loader")
		return Entry{}, nil
	}
	smallest, largest := 0, 0
	for j, p := range pages {
		if len(p.body) < len(pages[smallest].body) {
			smallest = j
		}
		if len(p.body) > len(pages[largest].body) {
			largest = j
		}
	}
	for _, i := range []int{smallest, largest} {
		b.Run(fmt.Sprintf("page=%dB", len(pages[i].body)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(pages[i].body)))
			for b.Loop() {
				if _, err := m.Get(ctx, keys[i], noLoad, GetOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
