package parser

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/net/html"
)

// Benchmarks compare the full parse with the floor a tokenizer-based parser
// cannot beat (Next plus TagAttr on every start tag, nothing kept) and with
// building a DOM via html.Parse. Compare them side by side in one run:
//
//	go test ./parser -run '^$' -bench . -benchmem -count 5

// largestFixture returns the biggest channel page in fixtures/pages/s.
func largestFixture(b *testing.B) []byte {
	b.Helper()
	var best []byte
	_ = filepath.Walk(filepath.Join(fixturesDir, "s"), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Size() > int64(len(best)) {
			best, _ = os.ReadFile(path)
		}
		return nil
	})
	if len(best) == 0 {
		b.Fatal("no channel page fixtures")
	}
	return best
}

// largestRealPage returns the biggest real channel page when ../shared is present.
func largestRealPage(b *testing.B) []byte {
	b.Helper()
	dir := realPagesDir()
	if dir == "" {
		b.Skip("../shared/realpages not present")
	}
	var best []byte
	matches, _ := filepath.Glob(filepath.Join(dir, "s_*.html"))
	for _, m := range matches {
		if d, err := os.ReadFile(m); err == nil && len(d) > len(best) {
			best = d
		}
	}
	if len(best) == 0 {
		b.Skip("no real channel pages")
	}
	return best
}

// realPagesDir is the folder of real pages as cfRealPagesDir finds it,
// "" when absent: a benchmark without them skips, in CI too.
func realPagesDir() string {
	switch d := os.Getenv(cfRealPagesEnv); d {
	case cfRealPagesNone:
		return ""
	case "":
	default:
		return d
	}
	d := filepath.Join("..", "..", "shared", "realpages")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

func bareTokenizer(data []byte) int {
	z := html.NewTokenizer(bytes.NewReader(data))
	n := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return n
		}
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			_, more := z.TagName()
			for more {
				_, _, more = z.TagAttr()
				n++
			}
		}
	}
}

func benchPage(b *testing.B, data []byte) {
	b.Run("Parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseBody(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("BareTokenizer", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			bareTokenizer(data)
		}
	})
	b.Run("HTMLParse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := html.Parse(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLargestFixture(b *testing.B)  { benchPage(b, largestFixture(b)) }
func BenchmarkLargestRealPage(b *testing.B) { benchPage(b, largestRealPage(b)) }
