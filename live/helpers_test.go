package live_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// testRefresh is a short refresh point, so that tests span several
// refresh windows quickly.
const testRefresh = 300 * time.Millisecond

// world is a fixture origin with the service stack of one process on top
// of it: over real HTTP on loopback (newWorld), or handed each request in
// process (newLocalWorld).
type world struct {
	origin *fixtures.Origin
	url    string
	// transport, when set, serves the origin client's requests in
	// process instead of over the network.
	transport http.RoundTripper
}

func newWorld(t testing.TB, opts fixtures.OriginOptions) *world {
	t.Helper()
	o := fixtures.NewOrigin(opts)
	s := httptest.NewServer(o)
	t.Cleanup(s.Close)
	return &world{origin: o, url: s.URL}
}

// newLocalWorld is a world whose origin serves requests in the calling
// goroutine, without a socket: the one a testing/synctest bubble can hold,
// since network I/O does not block durably and would stop its fake clock.
func newLocalWorld(opts fixtures.OriginOptions) *world {
	o := fixtures.NewOrigin(opts)
	return &world{origin: o, url: "http://t.me.test", transport: handlerTransport{o}}
}

// handlerTransport answers a request with its handler, in the caller's
// goroutine.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err // the request ended before its answer, as a client sees it
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}

// process is one tmefeed process's page service and hub.
type process struct {
	pages *pages.Service
	hub   *live.Hub
	cache cache.Cache
	// close stops the hub and closes the origin client and the cache the
	// process made; it runs at the test's end if not before.
	close func()
}

type processOptions struct {
	cache   cache.Cache // nil: an embedded tier
	hub     live.Config // Pages, Refresh and Logger are filled in
	noHub   bool
	refresh time.Duration // 0: testRefresh
	// negativeTTL is how long the embedded tier remembers a failed load;
	// 0: half the refresh point, as NEGATIVE_CACHE_TTL's 5 s is to
	// CACHE_MODE=normal's 10 s.
	negativeTTL time.Duration
	// breakerFailures and breakerCoolDown tune the origin client's
	// breaker; 0: its defaults.
	breakerFailures int
	breakerCoolDown time.Duration
	// budget, when set, is the origin client's budget (ORIGIN_RPM).
	budget *origin.Budget
}

func (w *world) process(t testing.TB, po processOptions) *process {
	t.Helper()
	refresh := po.refresh
	if refresh == 0 {
		refresh = testRefresh
	}
	oc, err := origin.New(origin.Config{
		BaseURL: w.url, Transport: w.transport, MaxRetries: -1, MaxConnsPerHost: 64, RequestTimeout: 5 * time.Second,
		BreakerFailures: po.breakerFailures, BreakerCoolDown: po.breakerCoolDown,
		Budget: po.budget,
	})
	if err != nil {
		t.Fatal(err)
	}
	closers := []func(){func() { oc.Close() }}
	c := po.cache
	if c == nil {
		negative := po.negativeTTL
		if negative == 0 {
			negative = refresh / 2
		}
		m, err := cache.NewMemory(cache.MemoryConfig{Refresh: refresh, Failures: origin.Failures{}, NegativeTTL: negative})
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, func() { m.Close() })
		c = m
	}
	p := &process{cache: c, pages: pages.New(pages.Config{Cache: c, Origin: oc, Refresh: refresh})}
	closers = append(closers, p.pages.Close)
	p.close = sync.OnceFunc(func() {
		// The hub first: its updater uses the others.
		if p.hub != nil {
			p.hub.Close()
		}
		for _, c := range closers {
			c()
		}
	})
	t.Cleanup(p.close)
	if po.noHub {
		return p
	}
	cfg := po.hub
	cfg.Pages = p.pages
	cfg.Refresh = refresh
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p.hub, err = live.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// read reads channel's newest page as a user would.
func (p *process) read(t testing.TB, channel string) pages.Result {
	t.Helper()
	res, err := p.pages.Page(context.Background(), tme.Request{Kind: tme.KindBody, Channel: channel})
	if err != nil {
		t.Fatalf("reading %s: %v", channel, err)
	}
	return res
}

// readAs reads channel's newest page as client would.
func (p *process) readAs(t testing.TB, channel, client string) pages.Result {
	t.Helper()
	res, err := p.pages.Page(context.Background(), tme.Request{Kind: tme.KindBody, Channel: channel, Client: client})
	if err != nil {
		t.Fatalf("reading %s as %s: %v", channel, client, err)
	}
	return res
}

// next waits for the subscription's next event, up to a generous bound
// that only a broken hub reaches.
func next(t testing.TB, s *live.Subscription) (live.Event, bool) {
	t.Helper()
	select {
	case e, ok := <-s.Events():
		return e, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return live.Event{}, false
	}
}

func text(p *parser.Post) string {
	if p == nil || p.Content.Text == nil {
		return ""
	}
	return p.Content.Text.String
}
