package server_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/memsize"
)

// Allocation budgets of the hot paths: counted, not timed, so they hold on
// any machine. A change that adds allocations to a cached hit fails here
// before it shows in `make hitbench`. The budgets are the counts measured
// when they were set (Go 1.26): a hit allocates the request's context and
// its copy of the request and chi's path value (two); the status-keeping
// ResponseWriter is part of the request's context. The request id, header values, Cache-Control,
// Content-Length and the hot store's key cost none (they were seven more
// before: see docs/PERFORMANCE.md).
const (
	bodyHitAllocs           = 4
	bodyHitCompressedAllocs = 4  // the compressed form is kept: nothing is compressed or hashed
	warmFeedAllocs          = 50 // JSON decoding of the request, the feed request, the kept build's lookup
)

// hitRefresh is the refresh window of these tests: CACHE_MODE=aggressive's.
// The test clock stands still, so the answers stay fresh throughout.
const hitRefresh = 2 * time.Minute

// hitRequest serves req through e and checks its status and coding.
func hitRequest(t *testing.T, e *env, req *http.Request, w *discardWriter, coding string) {
	clear(w.h)
	w.status, w.n = 0, 0
	e.h.ServeHTTP(w, req)
	if w.status != http.StatusOK || w.h.Get("Content-Encoding") != coding {
		t.Fatalf("status %d, Content-Encoding %q, want %q", w.status, w.h.Get("Content-Encoding"), coding)
	}
}

func TestBodyHitAllocations(t *testing.T) {
	e := newEnv(t, envOptions{refresh: hitRefresh, encoder: newEncoder(t)})
	for _, c := range []struct {
		ae, coding string
		budget     float64
	}{
		{"", "", bodyHitAllocs},
		{"gzip", "gzip", bodyHitCompressedAllocs},
		{"zstd, gzip", "zstd", bodyHitCompressedAllocs},
	} {
		req := httptest.NewRequest(http.MethodGet, "/v1/body/"+demoChannel, nil)
		if c.ae != "" {
			req.Header.Set("Accept-Encoding", c.ae)
		}
		w := &discardWriter{h: http.Header{}}
		hitRequest(t, e, req, w, c.coding) // warm
		got := testing.AllocsPerRun(200, func() { hitRequest(t, e, req, w, c.coding) })
		t.Logf("cached GET /v1/body, Accept-Encoding %q: %.1f allocations", c.ae, got)
		if got > c.budget+raceSlack {
			t.Errorf("cached GET /v1/body, Accept-Encoding %q: %.1f allocations, budget %.0f", c.ae, got, c.budget)
		}
	}
}

func TestWarmFeedAllocations(t *testing.T) {
	e := newEnv(t, envOptions{refresh: hitRefresh, feed: true, encoder: newEncoder(t)})
	body := `{"channels": ["` + demoChannel + `", "kanal_novostei", "emoji_party"], "limit": 20}`
	w := &discardWriter{h: http.Header{}}
	serve := func() {
		clear(w.h)
		w.status, w.n = 0, 0
		req := httptest.NewRequest(http.MethodPost, "/v1/feed", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Encoding", "gzip")
		e.h.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.h.Get("Content-Encoding") != "gzip" {
			t.Fatalf("status %d, Content-Encoding %q", w.status, w.h.Get("Content-Encoding"))
		}
	}
	serve()
	// The request itself (httptest.NewRequest and its reader) is counted
	// too: measured alone and taken off.
	reqOnly := testing.AllocsPerRun(200, func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/feed", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Encoding", "gzip")
	})
	got := testing.AllocsPerRun(200, serve) - reqOnly
	t.Logf("warm POST /v1/feed of 3 channels: %.1f allocations (request construction, %.1f, not counted)", got, reqOnly)
	if got > warmFeedAllocs+raceSlack {
		t.Errorf("warm POST /v1/feed: %.1f allocations, budget %d", got, warmFeedAllocs)
	}
}

// After warm-up, serving the same cached answers again and again must not
// grow the live heap: nothing per request may be kept.
func TestNoHeapGrowthAfterWarmup(t *testing.T) {
	e := newEnv(t, envOptions{refresh: hitRefresh, feed: true, encoder: newEncoder(t)})
	targets := []string{"/v1/body/" + demoChannel, "/v1/body/kanal_novostei", "/v1/preview/" + demoChannel, "/v1/more/" + demoChannel + "/before/32"}
	feedBody := `{"channels": ["` + demoChannel + `", "kanal_novostei"]}`
	w := &discardWriter{h: http.Header{}}
	round := func(n int) {
		for i := range n {
			for _, ae := range []string{"", "gzip", "zstd"} {
				for _, target := range targets {
					req := httptest.NewRequest(http.MethodGet, target, nil)
					req.Header.Set("Accept-Encoding", ae)
					clear(w.h)
					e.h.ServeHTTP(w, req)
					if w.status != http.StatusOK {
						t.Fatalf("%s: %d", target, w.status)
					}
				}
				req := httptest.NewRequest(http.MethodPost, "/v1/feed", strings.NewReader(feedBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept-Encoding", ae)
				clear(w.h)
				e.h.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					t.Fatalf("feed: %d", w.status)
				}
			}
			_ = i
		}
	}
	round(200)
	before := memsize.LiveHeap()
	round(2000) // 30,000 requests
	after := memsize.LiveHeap()
	runtime.KeepAlive(e)
	growth := int64(after) - int64(before)
	t.Logf("live heap %d → %d B after 30,000 cached requests (%+d B)", before, after, growth)
	// A byte kept per request would be 30 KB; allow the runtime's own noise.
	if growth > 256<<10 {
		t.Errorf("live heap grew %d B over 30,000 cached requests", growth)
	}
}
