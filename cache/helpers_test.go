package cache

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for MemoryConfig.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testPage is one page body and where it came from.
type testPage struct {
	name string
	body []byte
}

// fixturePagesDir holds the recorded t.me pages.
const fixturePagesDir = "../fixtures/pages"

// fixturePages returns the recorded HTML pages, sorted by path.
func fixturePages(t testing.TB) []testPage {
	t.Helper()
	var pages []testPage
	err := filepath.WalkDir(fixturePagesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".html") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixturePagesDir, path)
		pages = append(pages, testPage{name: rel, body: b})
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("reading fixtures: %v", err)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].name < pages[j].name })
	return pages
}

// realisticPages returns the fixture pages, or, while fewer than three
// exist, generated pages shaped like t.me's channel HTML.
func realisticPages(t testing.TB) []testPage {
	t.Helper()
	if pages := fixturePages(t); len(pages) >= 3 {
		return pages
	}
	t.Logf("fewer than 3 pages in %s; using generated HTML", fixturePagesDir)
	rng := rand.New(rand.NewPCG(1, 2))
	pages := make([]testPage, 8)
	for i := range pages {
		pages[i] = testPage{name: fmt.Sprintf("generated-%d", i), body: generatePage(rng, 5+i*3)}
	}
	return pages
}

var words = strings.Fields(`the channel post update release today news video photo read more
	telegram durov project team users million servers privacy security message group launch
	feature version app android ios desktop web bot api open source community thanks world
	новости канал сегодня обновление пользователи приложение время проект команда`)

// generatePage builds a channel page of n message widgets with varied text,
// numbers and links, so it compresses about as well as a real one.
func generatePage(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>Channel – Telegram</title>` +
		`<link href="//telegram.org/css/widget-frame.css?71" rel="stylesheet"></head><body class="widget_frame_base tgme_widget body_widget_post emoji_image nodark">` +
		`<main class="tgme_main"><section class="tgme_channel_history js-message_history">`)
	for i := 0; i < n; i++ {
		id := 1000 + rng.IntN(90000)
		fmt.Fprintf(&b, `<div class="tgme_widget_message_wrap js-widget_message_wrap"><div class="tgme_widget_message text_not_supported_wrap js-widget_message" data-post="channel/%d" data-view="%x">`, id, rng.Uint64())
		fmt.Fprintf(&b, `<div class="tgme_widget_message_user"><a href="https://t.me/channel"><i class="tgme_widget_message_user_photo bgcolor%d" data-content="C"><img src="https://cdn%d.telesco.pe/file/%x.jpg"></i></a></div>`, rng.IntN(8), rng.IntN(5), rng.Uint64())
		b.WriteString(`<div class="tgme_widget_message_bubble"><div class="tgme_widget_message_text js-message_text" dir="auto">`)
		for w := 20 + rng.IntN(120); w > 0; w-- {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(12) == 0 {
				fmt.Fprintf(&b, ` <a href="https://example.org/%x" target="_blank">link</a>`, rng.Uint32())
			}
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, `</div><div class="tgme_widget_message_footer compact js-message_footer"><div class="tgme_widget_message_info short js-message_info"><span class="tgme_widget_message_views">%d.%dK</span><span class="tgme_widget_message_meta"><a class="tgme_widget_message_date" href="https://t.me/channel/%d"><time datetime="2026-0%d-%02dT%02d:%02d:%02d+00:00" class="time">%02d:%02d</time></a></span></div></div></div></div></div>`,
			rng.IntN(999), rng.IntN(10), id, 1+rng.IntN(9), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(24), rng.IntN(60))
	}
	b.WriteString(`</section></main></body></html>`)
	return b.Bytes()
}

// varyPage returns a copy of page made unique by n, the way two fetches of
// the same channel differ, while compressing like the original.
func varyPage(page []byte, n int) []byte {
	tag := fmt.Appendf(nil, "<!-- fetch %d -->", n)
	i := bytes.Index(page, []byte("<body"))
	if i < 0 {
		i = 0
	}
	out := make([]byte, 0, len(page)+len(tag))
	out = append(out, page[:i]...)
	out = append(out, tag...)
	return append(out, page[i:]...)
}
