package bench

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/net/html"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/parser"
)

// ParseConfig is one `tmefeed bench parse` run.
type ParseConfig struct {
	RealDir  string        // also measure the s_*.html pages of this directory ("" = fixtures only)
	Rounds   int           // alternating rounds per page
	Duration time.Duration // length of one measurement
}

type page struct {
	name string
	data []byte
}

// Parse measures, per channel page, parser.ParseBody beside the floor of
// any tokenizer-based parser (html.Tokenizer's Next and TagAttr over every
// tag, nothing kept) and beside html.Parse building a DOM, alternating the
// three; the ratios are medians over rounds.
func Parse(w io.Writer, cfg ParseConfig) error {
	var pages []page
	files, _ := fs.Glob(fixtures.Pages(), "s/*.html")
	for _, f := range files {
		b, err := fs.ReadFile(fixtures.Pages(), f)
		if err != nil {
			return fmt.Errorf("bench parse: %w", err)
		}
		pages = append(pages, page{"fixture " + path.Base(f), b})
	}
	if cfg.RealDir != "" {
		real, _ := filepath.Glob(filepath.Join(cfg.RealDir, "s_*.html"))
		if len(real) == 0 {
			return fmt.Errorf("bench parse: no s_*.html pages in %s", cfg.RealDir)
		}
		for _, f := range real {
			b, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("bench parse: %w", err)
			}
			pages = append(pages, page{"real " + filepath.Base(f), b})
		}
	}
	rows := [][]string{{"page", "KB", "parse µs", "parse MB/s", "parse allocs", "tokenizer µs", "html.Parse µs", "parse / tokenizer", "parse / html.Parse"}}
	var ratios []float64
	for _, p := range pages {
		if _, err := parser.ParseBody(p.data); err != nil {
			continue // not a channel page
		}
		s := Alternate(cfg.Rounds, cfg.Duration,
			func() { _, _ = parser.ParseBody(p.data) },
			func() { bareTokenizer(p.data) },
			func() { _, _ = html.Parse(bytes.NewReader(p.data)) },
		)
		ps, ts, hs := MedianSample(s[0]), MedianSample(s[1]), MedianSample(s[2])
		r := MedianRatio(s[0], s[1], CPU)
		ratios = append(ratios, r)
		rows = append(rows, []string{
			p.name, fmt.Sprintf("%.0f", float64(len(p.data))/1024),
			us(Wall(ps)), fmt.Sprintf("%.0f", float64(len(p.data))/ps.Wall.Seconds()/1e6), fmt.Sprintf("%.0f", ps.Allocs),
			us(Wall(ts)), us(Wall(hs)),
			fmt.Sprintf("%.2f", r), fmt.Sprintf("%.2f", MedianRatio(s[0], s[2], CPU)),
		})
	}
	Table(w, rows)
	slices.Sort(ratios)
	fmt.Fprintf(w, "\nparse / bare tokenizer (CPU, median of %d rounds per page): median %.2f, worst %.2f over %d pages (standing figure: ≤ 1.3)\n",
		cfg.Rounds, Median(ratios), ratios[len(ratios)-1], len(ratios))
	return nil
}

// bareTokenizer is the least a tokenizer-based parser does: every token,
// every attribute of every start tag.
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
