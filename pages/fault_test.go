package pages_test

// The fault suite: the whole read path (page service, cache, origin client)
// against the fixture origin misbehaving, with the embedded cache and with
// Valkey. Each test asserts what a user would see (the error kind, a stale
// copy) and how many requests reached the origin, and logs its notable
// measurements as FIGURE lines.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/redistest"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// faultClock is the clock shared by the cache and the page service.
type faultClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *faultClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *faultClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type faultOptions struct {
	valkey          bool          // the Valkey tier over a real redis-server, else the embedded cache
	pages           fs.FS         // fixture pages; nil = the recorded ones
	synthetic       int           // synthetic channels loadchan001..
	down            bool          // nothing listens at the origin's address
	requestTimeout  time.Duration // one attempt; 0 = 30 s
	maxRetries      int           // 0 = 2
	retryBudget     float64       // 0 = the default; negative = none
	breakerFailures int           // 0 = the default
	breakerCoolDown time.Duration // 0 = the default
	negativeTTL     time.Duration // 0 = no negative caching
	deepHistory     int           // posts of fixtures.DeepChannel; 0 = not served
	historyMaxPages int           // pages.Config.HistoryMaxPages
}

type faultEnv struct {
	origin *fixtures.Origin
	svc    *pages.Service
	cache  cache.Cache
	clock  *faultClock
	dials  atomic.Int64 // connections attempted to the origin
}

func newFaultEnv(t *testing.T, o faultOptions) *faultEnv {
	t.Helper()
	e := &faultEnv{clock: &faultClock{t: time.Now()}}
	e.origin = fixtures.NewOrigin(fixtures.OriginOptions{Pages: o.pages, Synthetic: o.synthetic, DeepHistory: o.deepHistory})
	var base string
	if o.down {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base = "http://" + ln.Addr().String()
		ln.Close()
	} else {
		srv := httptest.NewServer(e.origin)
		t.Cleanup(srv.Close) // after the cache's cleanup, which ends hung loads
		base = srv.URL
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			e.dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		MaxConnsPerHost: 64, MaxIdleConnsPerHost: 64,
	}
	t.Cleanup(tr.CloseIdleConnections)
	if o.requestTimeout == 0 {
		o.requestTimeout = 30 * time.Second
	}
	client, err := origin.New(origin.Config{
		BaseURL:         base,
		Transport:       tr,
		RequestTimeout:  o.requestTimeout,
		MaxRetries:      o.maxRetries,
		RetryBudget:     o.retryBudget,
		RetryBaseDelay:  time.Millisecond,
		RetryMaxDelay:   5 * time.Millisecond,
		BreakerFailures: o.breakerFailures,
		BreakerCoolDown: o.breakerCoolDown,
	})
	if err != nil {
		t.Fatal(err)
	}
	var failures cache.Failures
	if o.negativeTTL > 0 {
		failures = origin.Failures{}
	}
	const refresh = 10 * time.Second
	var c cache.Cache
	if o.valkey {
		rs := redistest.Start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err = cache.NewValkey(ctx, cache.ValkeyConfig{
			URL: rs.URL, Refresh: refresh, Now: e.clock.Now,
			Failures: failures, NegativeTTL: o.negativeTTL,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	} else {
		c, err = cache.NewMemory(cache.MemoryConfig{
			Refresh: refresh, Now: e.clock.Now,
			Failures: failures, NegativeTTL: o.negativeTTL,
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.cache = c
	e.svc = pages.New(pages.Config{Cache: c, Origin: client, Refresh: refresh, Now: e.clock.Now, HistoryMaxPages: o.historyMaxPages})
	return e
}

func tiers(t *testing.T, f func(t *testing.T, valkey bool)) {
	t.Run("embedded", func(t *testing.T) { f(t, false) })
	t.Run("valkey", func(t *testing.T) { f(t, true) })
}

func tierName(valkey bool) string {
	if valkey {
		return "valkey"
	}
	return "embedded"
}

func pageCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var news = tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news"}

// With a copy past its refresh point and an origin that never answers, the
// copy is served at once; one refresh hangs in the origin, however many
// requests come.
func TestFaultStaleServedWhileOriginHangs(t *testing.T) {
	tiers(t, func(t *testing.T, valkey bool) {
		e := newFaultEnv(t, faultOptions{valkey: valkey})
		ctx := pageCtx(t)
		fresh, err := e.svc.Page(ctx, news)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		e.origin.SetLatency(time.Hour) // the slow knob: every answer waits an hour

		const requests = 50
		for i := range requests {
			res, err := e.svc.Page(ctx, news)
			if err != nil || !res.Stale || res.Hash != fresh.Hash {
				t.Fatalf("request %d with the origin hung: stale=%v, %v; want the stale copy", i, res.Stale, err)
			}
			if i == 0 {
				// The refresh reaches the origin and stays there; the
				// requests below complete while its handler is blocked.
				waitUntil(t, "the refresh to reach the origin", func() bool { return e.origin.InFlight() == 1 })
			}
		}
		if n := e.origin.InFlight(); n != 1 {
			t.Errorf("%d requests held by the origin, want the 1 refresh", n)
		}
		if n := e.origin.Requests("/s/tmefeed_news"); n != 2 {
			t.Errorf("origin saw %d requests, want 2: the first load and one refresh", n)
		}
		t.Logf("FIGURE: cache | %s, origin hung, %d requests for a stale page: answered stale, refreshes started | %d", tierName(valkey), requests, e.origin.Requests("/s/tmefeed_news")-1)
	})
}

// Every misbehaviour of the origin gives its own error kind when no copy is
// held, the stale copy when one is, and nothing is cached from it.
func TestFaultErrorKinds(t *testing.T) {
	garbage := fstest.MapFS{
		"s/tmefeed_news.html": {Data: []byte("<html><body><h1>Please verify you are human</h1></body></html>")},
	}
	cases := []struct {
		name  string
		opts  faultOptions
		fault fixtures.Fault
		want  error
	}{
		{"500", faultOptions{}, fixtures.Fault{Status: 500}, origin.ErrServerError},
		{"hang", faultOptions{requestTimeout: 50 * time.Millisecond}, fixtures.Fault{Hang: true}, origin.ErrTimeout},
		{"429", faultOptions{}, fixtures.Fault{Status: 429, RetryAfter: "30"}, origin.ErrRateLimited},
		{"truncated", faultOptions{}, fixtures.Fault{Truncate: true}, origin.ErrTruncated},
		{"reset", faultOptions{}, fixtures.Fault{Reset: true}, origin.ErrReset},
		{"refused", faultOptions{down: true}, fixtures.Fault{}, origin.ErrRefused},
		{"markup change", faultOptions{pages: garbage}, fixtures.Fault{}, parser.ErrNotPage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.negativeTTL = time.Minute
			e := newFaultEnv(t, tc.opts)
			e.origin.SetFault("/s/", tc.fault)
			ctx := pageCtx(t)
			_, err := e.svc.Page(ctx, news)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			requests, dials := e.origin.Total(), e.dials.Load()
			// Asked again at once: the same kind, when to retry, and
			// nothing sent.
			_, err = e.svc.Page(ctx, news)
			if !errors.Is(err, tc.want) {
				t.Fatalf("again: err = %v, want %v", err, tc.want)
			}
			if _, ok := origin.RetryAfter(err); !ok {
				t.Errorf("again: %v says nothing of when to retry", err)
			}
			if r, d := e.origin.Total(), e.dials.Load(); r != requests || d != dials {
				t.Errorf("asking again sent %d more requests and %d connections, want 0", r-requests, d-dials)
			}
			unit, n := "origin requests", requests
			if tc.opts.down {
				unit, n = "connects", dials
			}
			t.Logf("FIGURE: origin | %s, no copy, 2 requests in a row: %s | %d", tc.name, unit, n)
		})
	}
}

// With a copy held, every fault of the refresh is hidden from users, and
// the failed refresh is not repeated by the stale hits that follow.
func TestFaultStaleIfError(t *testing.T) {
	faults := map[string]fixtures.Fault{
		"500":       {Status: 500},
		"429":       {Status: 429, RetryAfter: "30"},
		"truncated": {Truncate: true},
		"reset":     {Reset: true},
	}
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t, faultOptions{negativeTTL: time.Minute})
			ctx := pageCtx(t)
			if _, err := e.svc.Page(ctx, news); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Minute)
			e.origin.SetFault("/s/", f)
			mem := e.cache.(*cache.Memory)
			for i := range 20 {
				res, err := e.svc.Page(ctx, news)
				if err != nil || !res.Stale {
					t.Fatalf("request %d: stale=%v, %v; want the stale copy", i, res.Stale, err)
				}
				if i == 0 {
					waitUntil(t, "the refresh to fail", func() bool { return mem.Stats().LoadErrors == 1 })
				}
			}
			refresh := e.origin.Requests("/s/tmefeed_news") - 1
			mem.Close() // waits for any refresh the hits started
			if n := e.origin.Requests("/s/tmefeed_news") - 1; refresh < 1 || n != refresh {
				t.Errorf("origin requests: %d for the failed refresh, %d after 19 more stale hits; want them equal", refresh, n)
			}
			t.Logf("FIGURE: origin | %s on refresh, copy held, 20 requests: answered stale, origin requests | %d", name, refresh)
		})
	}
}

// hammer runs clients that each request random pages of channels until
// the duration passes, and returns how many requests failed and succeeded.
func hammer(e *faultEnv, clients int, d time.Duration, channels []string) (failed, ok int64) {
	var wg sync.WaitGroup
	var nf, nok atomic.Int64
	stop := time.Now().Add(d)
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for time.Now().Before(stop) {
				ch := channels[rng.IntN(len(channels))]
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := e.svc.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: ch})
				cancel()
				if err != nil {
					nf.Add(1)
				} else {
					nok.Add(1)
				}
				time.Sleep(time.Millisecond) // a client, not a busy loop: spares the CPU

			}
		})
	}
	wg.Wait()
	return nf.Load(), nok.Load()
}

// 20 clients hammer cold pages of an origin that fails every request:
// origin traffic stays within the breaker's trip, its probes per cool-down
// and the retries the budget allows, whatever the request rate. Failures
// are not remembered here: with negative caching (and the fake clock, which
// never lets a remembered failure expire) each page would be asked for
// once, breaker or not, and the test would say nothing of the breaker.
func TestFaultFailingOriginIsNotHammered(t *testing.T) {
	const (
		clients  = 20
		keys     = 20
		duration = 2 * time.Second
		coolDown = 250 * time.Millisecond
		trip     = 5
		probes   = origin.DefaultBreakerProbes
	)
	channels := make([]string, keys)
	for i := range channels {
		channels[i] = fmt.Sprintf("loadchan%03d", i+1)
	}
	for _, down := range []bool{false, true} {
		what, unit := "origin 500 on every page", "origin requests"
		if down {
			what, unit = "origin down (connection refused)", "connects"
		}
		t.Run(what, func(t *testing.T) {
			tiers(t, func(t *testing.T, valkey bool) {
				e := newFaultEnv(t, faultOptions{
					valkey: valkey, synthetic: keys, down: down,
					breakerFailures: trip, breakerCoolDown: coolDown,
				})
				e.origin.SetFault("", fixtures.Fault{Status: 500})
				start := time.Now()
				failed, ok := hammer(e, clients, duration, channels)
				elapsed := time.Since(start)
				sent := e.origin.Total()
				if down {
					sent = e.dials.Load()
				}
				if ok != 0 || failed == 0 {
					t.Fatalf("%d requests succeeded and %d failed, want every one to fail", ok, failed)
				}
				// The first burst: every client in flight at once, the
				// failures that trip the breaker, and the retry reserve.
				// Then, per cool-down, the half-open probes.
				periods := int64(elapsed/coolDown) + 1
				most := int64(clients+trip+10) + periods*probes
				if sent > most {
					t.Errorf("%d %s for %d requests in %v, want at most %d", sent, unit, failed, elapsed.Round(time.Millisecond), most)
				}
				perKeyPeriod := float64(sent) / keys / float64(periods)
				t.Logf("FIGURE: origin | %s, %s, %s, %d clients x %v over %d cold pages (%d requests answered) | %d", unit, what, tierName(valkey), clients, duration, keys, failed, sent)
				t.Logf("FIGURE: origin | %s per page per breaker cool-down (%v), %s, %s | %.2f", unit, coolDown, what, tierName(valkey), perKeyPeriod)
			})
		})
	}
}

// A chunk with no posts (before a channel's first post) is an empty chunk,
// not "no such channel".
func TestMoreChunkWithoutPostsIsEmpty(t *testing.T) {
	e := newFaultEnv(t, faultOptions{})
	res, err := e.svc.Page(pageCtx(t), tme.Request{Kind: tme.KindMore, Channel: "tmefeed_news", Position: 1})
	if err != nil {
		t.Fatalf("err = %v, want an empty chunk", err)
	}
	if n := len(res.Page.Content.Posts); n != 0 {
		t.Errorf("%d posts before post 1", n)
	}
	_, err = e.svc.Page(pageCtx(t), tme.Request{Kind: tme.KindMore, Channel: "nobody_here", Position: 5})
	if !errors.Is(err, origin.ErrNotFound) {
		t.Errorf("a chunk of a name with no channel: err = %v, want ErrNotFound", err)
	}
}

// A response never rendered before, from a page past its refresh point,
// is rendered from the stale page at once when the origin hangs: only
// the refresh of a response already held waits for a fresh page.
func TestFaultColdResponseFromStalePageWhileOriginHangs(t *testing.T) {
	tiers(t, func(t *testing.T, valkey bool) {
		e := newFaultEnv(t, faultOptions{valkey: valkey})
		render := func(res pages.Result) ([]byte, error) { return []byte(fmt.Sprint(res.Hash)), nil }
		if _, err := e.svc.RenderedEntry(pageCtx(t), "a", news, render); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		e.origin.SetLatency(time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		got, err := e.svc.RenderedEntry(ctx, "b", news, render)
		if err != nil || e.clock.Now().Sub(got.FetchedAt) < time.Minute {
			t.Fatalf("a new response of a stale page, origin hung: fetched %v ago, %v after %v; want the stale page rendered at once",
				e.clock.Now().Sub(got.FetchedAt), err, time.Since(start).Round(time.Millisecond))
		}
	})
}

// An unknown name asked for in a loop costs t.me one request per
// negative-cache period, not one per call, and keeps its 404 meaning.
func TestFaultUnknownNameAskedInALoop(t *testing.T) {
	tiers(t, func(t *testing.T, valkey bool) {
		e := newFaultEnv(t, faultOptions{valkey: valkey, negativeTTL: time.Minute})
		ctx := pageCtx(t)
		unknown := tme.Request{Kind: tme.KindBody, Channel: "nobody_here_404"}
		const calls = 50
		for i := range calls {
			if _, err := e.svc.Page(ctx, unknown); !errors.Is(err, origin.ErrNotFound) {
				t.Fatalf("call %d: err = %v, want not found", i, err)
			}
		}
		if n := e.origin.Total(); n != 1 {
			t.Errorf("%d calls for an unknown name sent %d origin requests, want 1", calls, n)
		}
		t.Logf("FIGURE: origin | unknown name, %d calls in a row, %s: origin requests | %d", calls, tierName(valkey), e.origin.Total())
	})
}
