package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/tme"
	"github.com/tmefeed/tmefeed/widget"
)

// testClock is a settable clock shared by the cache and the server, so a
// test can move a cached page past its refresh point.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is the whole service against the fixture origin on a loopback port:
// real router, real page service, real embedded cache, real origin client.
type env struct {
	t      testing.TB
	origin *fixtures.Origin
	clock  *testClock
	parses atomic.Int64
	h      http.Handler
}

type envOptions struct {
	refresh        time.Duration // 0 = CACHE_MODE off
	requestTimeout time.Duration
	pages          server.PageService // replaces the real page service
	hotBytes       int64              // pages.Config.HotBytes
	feed           bool               // serve POST /v1/feed from a real feed service
	media          bool               // serve GET /media from the page service
	deepHistory    int                // posts of fixtures.DeepChannel
	synthetic      int                // fixtures.OriginOptions.Synthetic
	graphQL        http.Handler       // server.Config.GraphQL
	playground     http.Handler       // server.Config.Playground
	cors           []string           // server.Config.CORSOrigins
	publicURL      string             // server.Config.PublicURL
	originPages    fs.FS              // pages the fixture origin serves; nil = the recorded ones
	encoder        *httpcache.Encoder // server.Config.Encoder and pages.Config.Encoder
	widget         bool               // mount the widget over the feed service (needs feed)
	rateLimitRPM   int                // server.Config.RateLimit
	streams        int                // server.Config.StreamsPerClient
	budget         *origin.Budget     // origin.Config.Budget
	// tarpit is server.Config.Tarpit; its zero value releases every
	// hold at once, so that refusals are not held in tests of other
	// things.
	tarpit server.TarpitConfig
	share  server.ShareConfig // server.Config.Share
	// originWrap, when set, wraps the fixture origin's handler (a test
	// holding some of its answers).
	originWrap func(http.Handler) http.Handler
}

func newEnv(t testing.TB, opts envOptions) *env {
	t.Helper()
	e := &env{t: t, clock: &testClock{t: time.Now()}}
	e.origin = fixtures.NewOrigin(fixtures.OriginOptions{Pages: opts.originPages, DeepHistory: opts.deepHistory, Synthetic: opts.synthetic})
	var originHandler http.Handler = e.origin
	if opts.originWrap != nil {
		originHandler = opts.originWrap(e.origin)
	}
	ts := httptest.NewServer(originHandler)
	t.Cleanup(ts.Close)

	if opts.requestTimeout == 0 {
		opts.requestTimeout = 2 * time.Second
	}
	client, err := origin.New(origin.Config{
		BaseURL:           ts.URL,
		RequestTimeout:    opts.requestTimeout,
		MaxRetries:        1,
		RetryBaseDelay:    time.Millisecond,
		RetryMaxDelay:     2 * time.Millisecond,
		DefaultRetryAfter: time.Minute,
		BreakerFailures:   1 << 20, // these tests map single failures; the breaker has its own
		Budget:            opts.budget,
	})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 16 << 20, Refresh: opts.refresh, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	svc := opts.pages
	if svc == nil {
		svc = pages.New(pages.Config{
			Cache:     mem,
			Origin:    client,
			OnParse:   func(tme.Kind) { e.parses.Add(1) },
			Refresh:   opts.refresh,
			HotBytes:  opts.hotBytes,
			Now:       e.clock.Now,
			Represent: server.Represent(opts.encoder),
		})
	}
	cfg := server.Config{Pages: svc, Refresh: opts.refresh, Now: e.clock.Now, GraphQL: opts.graphQL, Playground: opts.playground, CORSOrigins: opts.cors, PublicURL: opts.publicURL, Encoder: opts.encoder}
	if opts.feed {
		src, ok := svc.(feed.PageSource)
		if !ok {
			t.Fatalf("page service %T cannot serve feeds", svc)
		}
		fs, err := feed.New(feed.Config{Pages: src, Refresh: opts.refresh, Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Feed = fs
		if opts.widget {
			w, err := widget.New(widget.Config{Feed: fs, Encoder: opts.encoder})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Widget = w
		}
	}
	cfg.RateLimit = server.NewRateLimit(server.RateLimitConfig{RPM: opts.rateLimitRPM, Trusted: cfg.TrustedProxies, Now: e.clock.Now})
	cfg.StreamsPerClient = opts.streams
	cfg.Tarpit = opts.tarpit
	cfg.Share = opts.share
	if cfg.Tarpit.After == nil {
		cfg.Tarpit.After = func(time.Duration) <-chan time.Time {
			c := make(chan time.Time, 1)
			c <- time.Time{}
			return c
		}
	}
	if opts.media {
		m, ok := svc.(server.MediaService)
		if !ok {
			t.Fatalf("page service %T cannot serve media links", svc)
		}
		cfg.Media = m
	}
	e.h = server.New(cfg)
	return e
}

func newNormalEnv(t *testing.T) *env { return newEnv(t, envOptions{refresh: 10 * time.Second}) }

// do sends a request through the router.
func (e *env) do(method, target string, body []byte) *httptest.ResponseRecorder {
	e.t.Helper()
	var req *http.Request
	if body != nil {
		req = httptest.NewRequest(method, target, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

func (e *env) get(target string) *httptest.ResponseRecorder { return e.do(http.MethodGet, target, nil) }

// wantOK checks a 200 JSON answer and decodes it into v.
func wantOK(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	if v != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("decode: %v; body %s", err, rec.Body)
		}
	}
}

// wantError checks an error answer's status, JSON code and Cache-Control.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	var b server.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("error body is not JSON: %v; %s", err, rec.Body)
	}
	if b.Error.Code != code || b.Error.Message == "" {
		t.Errorf("error %+v, want code %q and a message", b.Error, code)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("error Cache-Control %q, want no-store", cc)
	}
}

// Data the fixtures hold, found by reading them rather than hard-coded.

const demoChannel = "tmefeed_news"

func fixtureFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := fs.Glob(fixtures.Pages(), pattern)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// moreFixture returns a channel and cursor with a recorded "more" chunk.
func moreFixture(t *testing.T, dir string) (ch string, pos int) {
	t.Helper()
	for _, f := range fixtureFiles(t, "more/*/"+dir+"-*.json") {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path.Base(f), dir+"-"), ".json"))
		if err == nil {
			return path.Base(path.Dir(f)), n
		}
	}
	t.Fatalf("no fixture more/*/%s-N.json", dir)
	return "", 0
}

// nonChannelPreview returns a recorded preview page of a user or group.
func nonChannelPreview(t *testing.T) string {
	t.Helper()
	for _, f := range fixtureFiles(t, "preview/*.html") {
		b, err := fs.ReadFile(fixtures.Pages(), f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.ParsePreview(b); err != nil {
			return strings.TrimSuffix(path.Base(f), ".html")
		}
	}
	t.Fatal("no fixture preview of a user or group")
	return ""
}

type bodyJSON struct {
	Channel *struct {
		Username string `json:"username"`
	} `json:"channel"`
	Content struct {
		Posts []struct {
			ID int `json:"id"`
		} `json:"posts"`
	} `json:"content"`
	Meta struct {
		Offset map[string]int `json:"offset"`
	} `json:"meta"`
}

func TestBody(t *testing.T) {
	e := newNormalEnv(t)
	rec := e.get("/v1/body/" + demoChannel)
	var b bodyJSON
	wantOK(t, rec, &b)
	if b.Channel == nil || b.Channel.Username != demoChannel {
		t.Errorf("channel %+v, want username %q", b.Channel, demoChannel)
	}
	if len(b.Content.Posts) == 0 {
		t.Fatal("no posts")
	}
	cc := rec.Header().Get("Cache-Control")
	if !regexp.MustCompile(`^public, max-age=(10|[0-9]), stale-while-revalidate=10$`).MatchString(cc) {
		t.Errorf("Cache-Control %q", cc)
	}

	// The page around an older post, by ?position=.
	id := b.Content.Posts[0].ID
	var around bodyJSON
	wantOK(t, e.get(fmt.Sprintf("/v1/body/%s?position=%d", demoChannel, id)), &around)
	if !hasPost(around, id) {
		t.Errorf("page around post %d does not hold it: %+v", id, around.Content.Posts)
	}
	if n := e.origin.Requests(fmt.Sprintf("/s/%s/%d", demoChannel, id)); n != 1 {
		t.Errorf("origin saw %d requests for /s/%s/%d, want 1", n, demoChannel, id)
	}
}

func hasPost(b bodyJSON, id int) bool {
	for _, p := range b.Content.Posts {
		if p.ID == id {
			return true
		}
	}
	return false
}

func TestBodyNamesAreCaseInsensitive(t *testing.T) {
	e := newNormalEnv(t)
	first := e.get("/v1/body/TmeFeed_News")
	wantOK(t, first, nil)
	second := e.get("/v1/body/" + demoChannel)
	wantOK(t, second, nil)
	if !bytes.Equal(first.Body.Bytes(), second.Body.Bytes()) {
		t.Error("Durov and durov answered differently")
	}
	if n := e.origin.Total(); n != 1 {
		t.Errorf("origin saw %d requests, want 1 shared by both spellings", n)
	}
}

func TestBadInputIs400AndNeverReachesTheOrigin(t *testing.T) {
	e := newNormalEnv(t)
	cases := []struct {
		target, code string
	}{
		{"/v1/body/abc", server.CodeInvalidUsername},
		{"/v1/body/" + strings.Repeat("a", 33), server.CodeInvalidUsername},
		{"/v1/body/1channel", server.CodeInvalidUsername},
		{"/v1/body/bad-name", server.CodeInvalidUsername},
		{"/v1/body/_under", server.CodeInvalidUsername},
		{"/v1/body/%D0%B4%D1%83%D1%80%D0%BE%D0%B2", server.CodeInvalidUsername},
		{"/v1/body/" + demoChannel + "?position=0", server.CodeInvalidPosition},
		{"/v1/body/" + demoChannel + "?position=-5", server.CodeInvalidPosition},
		{"/v1/body/" + demoChannel + "?position=2147483648", server.CodeInvalidPosition},
		{"/v1/body/" + demoChannel + "?position=abc", server.CodeInvalidPosition},
		{"/v1/body/" + demoChannel + "?position=", server.CodeInvalidPosition},
		{"/v1/post/abc/1", server.CodeInvalidUsername},
		{"/v1/post/" + demoChannel + "/0", server.CodeInvalidPosition},
		{"/v1/post/" + demoChannel + "/99999999999", server.CodeInvalidPosition},
		{"/v1/post/" + demoChannel + "/1x", server.CodeInvalidPosition},
		{"/v1/more/abc/before/10", server.CodeInvalidUsername},
		{"/v1/more/" + demoChannel + "/sideways/10", server.CodeBadRequest},
		{"/v1/more/" + demoChannel + "/before/0", server.CodeInvalidPosition},
		{"/v1/more/" + demoChannel + "/after/2147483648", server.CodeInvalidPosition},
		{"/v1/preview/a", server.CodeInvalidUsername},
		{"/v1/preview/9lives", server.CodeInvalidUsername},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			wantError(t, e.get(c.target), http.StatusBadRequest, c.code)
		})
	}
	if n := e.origin.Total(); n != 0 {
		t.Errorf("origin saw %d requests for bad input, want 0", n)
	}
}

func TestUnknownChannel(t *testing.T) {
	e := newNormalEnv(t)
	wantError(t, e.get("/v1/body/nosuchchannel"), http.StatusNotFound, server.CodeNotFound)
	wantError(t, e.get("/v1/post/nosuchchannel/5"), http.StatusNotFound, server.CodeNotFound)
	wantError(t, e.get("/v1/more/nosuchchannel/before/5"), http.StatusNotFound, server.CodeNotFound)
	// t.me answers an unknown name's landing page with "Contact @name".
	wantError(t, e.get("/v1/preview/nosuchchannel"), http.StatusNotFound, server.CodeNotAChannel)
}

func TestNotAChannel(t *testing.T) {
	e := newNormalEnv(t)
	name := nonChannelPreview(t)
	wantError(t, e.get("/v1/preview/"+name), http.StatusNotFound, server.CodeNotAChannel)
	// t.me redirects /s/<user> to the landing page: not a public channel.
	wantError(t, e.get("/v1/body/"+name), http.StatusNotFound, server.CodeNotFound)
}

func TestPost(t *testing.T) {
	e := newNormalEnv(t)
	var b bodyJSON
	wantOK(t, e.get("/v1/body/"+demoChannel), &b)
	id := b.Content.Posts[len(b.Content.Posts)/2].ID

	var p struct {
		ID      int             `json:"id"`
		Content json.RawMessage `json:"content"`
		Footer  struct {
			Date struct {
				Unix int64 `json:"unix"`
			} `json:"date"`
		} `json:"footer"`
	}
	wantOK(t, e.get(fmt.Sprintf("/v1/post/%s/%d", demoChannel, id)), &p)
	if p.ID != id || len(p.Content) == 0 || p.Footer.Date.Unix == 0 {
		t.Errorf("post %+v, want id %d with content and a date", p, id)
	}

	// A post the page around it does not hold.
	wantError(t, e.get("/v1/post/"+demoChannel+"/2147483000"), http.StatusNotFound, server.CodePostNotFound)
}

func TestMore(t *testing.T) {
	for _, dir := range []string{"before", "after"} {
		t.Run(dir, func(t *testing.T) {
			e := newNormalEnv(t)
			ch, pos := moreFixture(t, dir)
			var m struct {
				Posts []struct {
					ID int `json:"id"`
				} `json:"posts"`
				Meta struct {
					Offset map[string]int `json:"offset"`
				} `json:"meta"`
				Content json.RawMessage `json:"content"`
			}
			wantOK(t, e.get(fmt.Sprintf("/v1/more/%s/%s/%d", ch, dir, pos)), &m)
			if len(m.Posts) == 0 || m.Content != nil {
				t.Errorf("more: %d posts, content %s; want posts at the top level", len(m.Posts), m.Content)
			}
			for _, p := range m.Posts {
				if dir == "before" && p.ID >= pos || dir == "after" && p.ID <= pos {
					t.Errorf("post %d is not %s %d", p.ID, dir, pos)
				}
			}
			if n := e.origin.Requests(fmt.Sprintf("/s/%s?%s=%d", ch, dir, pos)); n != 1 {
				t.Errorf("origin saw %d POSTs for the chunk, want 1", n)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	e := newNormalEnv(t)
	var p struct {
		Channel struct {
			Username   string `json:"username"`
			Title      string `json:"title"`
			IsVerified *bool  `json:"is_verified"`
		} `json:"channel"`
	}
	wantOK(t, e.get("/v1/preview/"+demoChannel), &p)
	if p.Channel.Title == "" || p.Channel.IsVerified == nil {
		t.Errorf("preview %+v, want a title and is_verified", p.Channel)
	}
}

func TestPreviews(t *testing.T) {
	e := newNormalEnv(t)
	user := nonChannelPreview(t)
	req := map[string]any{"channels": []string{demoChannel, "TMEFEED_NEWS", "Tmefeed_News", user, "bad-name", "nosuchchannel"}}
	body, _ := json.Marshal(req)
	rec := e.do(http.MethodPost, "/v1/previews", body)
	var out map[string]struct {
		Channel *struct {
			Title string `json:"title"`
		} `json:"channel"`
		Error *server.ErrorInfo `json:"error"`
	}
	wantOK(t, rec, &out)
	if len(out) != 4 {
		t.Errorf("%d results, want 4 (duplicates merged case-insensitively): %s", len(out), rec.Body)
	}
	if r := out[demoChannel]; r.Channel == nil || r.Channel.Title == "" {
		t.Errorf("%s: %+v, want a preview", demoChannel, r)
	}
	for name, code := range map[string]string{user: server.CodeNotAChannel, "bad-name": server.CodeInvalidUsername, "nosuchchannel": server.CodeNotAChannel} {
		if r := out[name]; r.Error == nil || r.Error.Code != code {
			t.Errorf("%s: %+v, want error %s", name, r, code)
		}
	}
	if n := e.origin.Requests("/" + demoChannel); n != 1 {
		t.Errorf("origin saw %d requests for /%s, want 1", n, demoChannel)
	}
}

func TestPreviewsBadRequests(t *testing.T) {
	e := newNormalEnv(t)
	many := make([]string, server.MaxPreviews+1)
	for i := range many {
		many[i] = fmt.Sprintf("chan%04d", i)
	}
	tooMany, _ := json.Marshal(map[string]any{"channels": many})
	for name, body := range map[string][]byte{
		"not JSON":     []byte("channels=durov"),
		"wrong type":   []byte(`{"channels": "durov"}`),
		"empty list":   []byte(`{"channels": []}`),
		"no list":      []byte(`{}`),
		"over the cap": tooMany,
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, e.do(http.MethodPost, "/v1/previews", body), http.StatusBadRequest, server.CodeBadRequest)
		})
	}
	huge := []byte(`{"channels": ["` + strings.Repeat("a", server.DefaultMaxRequestBytes) + `"]}`)
	wantError(t, e.do(http.MethodPost, "/v1/previews", huge), http.StatusRequestEntityTooLarge, server.CodeTooLarge)

	// Without a Content-Length the cap is hit while reading.
	req := httptest.NewRequest(http.MethodPost, "/v1/previews", struct{ *bytes.Reader }{bytes.NewReader(huge)})
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	wantError(t, rec, http.StatusRequestEntityTooLarge, server.CodeTooLarge)

	if n := e.origin.Total(); n != 0 {
		t.Errorf("origin saw %d requests, want 0", n)
	}
}

func TestUpstream5xx(t *testing.T) {
	e := newNormalEnv(t)
	e.origin.SetFault("/s/"+demoChannel, fixtures.Fault{Status: http.StatusServiceUnavailable})
	e.origin.SetFault("/"+demoChannel, fixtures.Fault{Status: http.StatusInternalServerError})
	wantError(t, e.get("/v1/body/"+demoChannel), http.StatusBadGateway, server.CodeUpstreamError)
	wantError(t, e.get("/v1/preview/"+demoChannel), http.StatusBadGateway, server.CodeUpstreamError)
	ch, pos := moreFixture(t, "before")
	e.origin.SetFault("/s/"+ch+"?before", fixtures.Fault{Status: http.StatusBadGateway})
	wantError(t, e.get(fmt.Sprintf("/v1/more/%s/before/%d", ch, pos)), http.StatusBadGateway, server.CodeUpstreamError)

	// Failures are not cached: once the origin recovers, so does the API.
	e.origin.ClearFaults()
	wantOK(t, e.get("/v1/body/"+demoChannel), nil)
	wantOK(t, e.get("/v1/preview/"+demoChannel), nil)
}

func TestUpstreamTimeout(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, requestTimeout: 100 * time.Millisecond})
	e.origin.SetLatency(time.Second)
	wantError(t, e.get("/v1/body/"+demoChannel), http.StatusGatewayTimeout, server.CodeUpstreamTimeout)
	wantError(t, e.get("/v1/preview/"+demoChannel), http.StatusGatewayTimeout, server.CodeUpstreamTimeout)
}

func TestTruncatedBody(t *testing.T) {
	e := newNormalEnv(t)
	e.origin.SetFault("/s/"+demoChannel, fixtures.Fault{Truncate: true})
	wantError(t, e.get("/v1/body/"+demoChannel), http.StatusBadGateway, server.CodeUpstreamError)

	// The cut-off page was not cached.
	e.origin.ClearFaults()
	var b bodyJSON
	wantOK(t, e.get("/v1/body/"+demoChannel), &b)
	if len(b.Content.Posts) == 0 {
		t.Error("no posts after the origin recovered")
	}
}

func TestRateLimitedWithoutCachedCopy(t *testing.T) {
	e := newNormalEnv(t)
	e.origin.SetFault("/s/"+demoChannel, fixtures.Fault{Status: http.StatusTooManyRequests, RetryAfter: "30"})
	rec := e.get("/v1/body/" + demoChannel)
	wantError(t, rec, http.StatusTooManyRequests, server.CodeRateLimited)
	ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || ra < 29 || ra > 31 { // 30 s, give or take the test clock's offset
		t.Errorf("Retry-After %q, want about 30 seconds", rec.Header().Get("Retry-After"))
	}
	// Retry-After is honoured: the next request does not reach Telegram.
	wantError(t, e.get("/v1/body/"+demoChannel), http.StatusTooManyRequests, server.CodeRateLimited)
	if n := e.origin.Requests("/s/" + demoChannel); n != 1 {
		t.Errorf("origin saw %d requests, want 1", n)
	}
}

func TestRateLimitedWithCachedCopy(t *testing.T) {
	e := newNormalEnv(t)
	fresh := e.get("/v1/body/" + demoChannel)
	wantOK(t, fresh, nil)

	// Past the refresh point, Telegram rate-limits the reload: the cached
	// copy is served instead of an error.
	e.clock.Advance(11 * time.Second)
	e.origin.SetFault("/s/"+demoChannel, fixtures.Fault{Status: http.StatusTooManyRequests, RetryAfter: "30"})
	stale := e.get("/v1/body/" + demoChannel)
	wantOK(t, stale, nil)
	if !bytes.Equal(stale.Body.Bytes(), fresh.Body.Bytes()) {
		t.Error("the stale answer differs from the cached page")
	}
	if cc := stale.Header().Get("Cache-Control"); !strings.HasPrefix(cc, "public, max-age=0,") {
		t.Errorf("stale Cache-Control %q, want max-age=0", cc)
	}
	// The reload runs in the background; nobody waits for it.
	for deadline := time.Now().Add(10 * time.Second); e.origin.Requests("/s/"+demoChannel) < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := e.origin.Requests("/s/" + demoChannel); n != 2 {
		t.Errorf("origin saw %d requests, want 2 (the fill and the rate-limited reload)", n)
	}
}

func TestCacheModeOff(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 0})
	first := e.get("/v1/body/" + demoChannel)
	wantOK(t, first, nil)
	if cc := first.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	wantOK(t, e.get("/v1/body/"+demoChannel), nil)
	if n := e.origin.Requests("/s/" + demoChannel); n != 2 {
		t.Errorf("origin saw %d requests, want 2: nothing is cached", n)
	}
	// Identical bytes are still parsed only once.
	if n := e.parses.Load(); n != 1 {
		t.Errorf("%d parses, want 1", n)
	}
}

// 100 concurrent requests for one uncached page make one request to Telegram.
func TestConcurrentMissesShareOneFetch(t *testing.T) {
	e := newNormalEnv(t)
	e.origin.SetLatency(50 * time.Millisecond) // keep the fetch in flight while requests pile up
	const n = 100
	bodies := make([][]byte, n)
	codes := make([]int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rec := e.get("/v1/body/" + demoChannel)
			codes[i], bodies[i] = rec.Code, rec.Body.Bytes()
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if codes[i] != http.StatusOK || !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("request %d: status %d, same body %v", i, codes[i], bytes.Equal(bodies[i], bodies[0]))
		}
	}
	if got := e.origin.Requests("/s/" + demoChannel); got != 1 {
		t.Errorf("origin saw %d requests, want 1", got)
	}
}

// A cached hit serves stored bytes: no parsing, no encoding.
func TestCachedHitDoesNotParse(t *testing.T) {
	e := newNormalEnv(t)
	first := e.get("/v1/body/" + demoChannel)
	wantOK(t, first, nil)
	if e.parses.Load() == 0 {
		t.Fatal("the miss parsed nothing")
	}
	e.parses.Store(0)
	for range 3 {
		rec := e.get("/v1/body/" + demoChannel)
		wantOK(t, rec, nil)
		if !bytes.Equal(rec.Body.Bytes(), first.Body.Bytes()) {
			t.Fatal("hit differs from the first answer")
		}
	}
	if n := e.parses.Load(); n != 0 {
		t.Errorf("%d parses on cached hits, want 0", n)
	}
	if n := e.origin.Total(); n != 1 {
		t.Errorf("origin saw %d requests, want 1", n)
	}
}

func TestRoutesAndHealth(t *testing.T) {
	e := newNormalEnv(t)
	rec := e.get("/healthz")
	var h struct{ Status string }
	wantOK(t, rec, &h)
	if h.Status != "ok" {
		t.Errorf("healthz %+v", h)
	}
	wantError(t, e.get("/v1/nothing"), http.StatusNotFound, server.CodeNotFound)
	wantError(t, e.get("/v1/body/"), http.StatusNotFound, server.CodeNotFound)
	wantError(t, e.do(http.MethodDelete, "/v1/body/"+demoChannel, nil), http.StatusMethodNotAllowed, server.CodeMethodNotAllowed)
	wantError(t, e.get("/v1/previews"), http.StatusMethodNotAllowed, server.CodeMethodNotAllowed)
	if id := rec.Header().Get("X-Request-Id"); id == "" {
		t.Error("no X-Request-Id")
	}

	head := e.do(http.MethodHead, "/v1/body/"+demoChannel, nil)
	if head.Code != http.StatusOK {
		t.Errorf("HEAD: %d", head.Code)
	}
}

// No input reaches the last-resort 500.
func TestNoInputGives500(t *testing.T) {
	e := newNormalEnv(t)
	targets := []string{
		"/v1/body/%00", "/v1/body/%FF%FE", "/v1/body/" + strings.Repeat("z", 5000),
		"/v1/body/" + demoChannel + "?position=%00", "/v1/body/" + demoChannel + "?position=1&position=2",
		"/v1/post/" + demoChannel + "/%2e%2e", "/v1/post/" + demoChannel + "/1/2",
		"/v1/more/" + demoChannel + "/before/", "/v1/more/" + demoChannel + "/BEFORE/5",
		"/v1/preview/..%2f..%2fetc", "/v1//body", "//v1/body/" + demoChannel, "/v1/body/" + demoChannel + "/",
	}
	for _, target := range targets {
		rec := e.get(target)
		if rec.Code >= 500 {
			t.Errorf("%s: %d %s", target, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Errorf("%s: body is not JSON: %s", target, rec.Body)
		}
	}
}

// panicking is a page service that panics, to exercise the last resort.
type panicking struct{}

func (panicking) RenderedRepFor(context.Context, string, tme.Request, pages.ClientNamer, func(pages.Result) ([]byte, error)) (pages.Rendered, pages.Representation, error) {
	panic("boom")
}

func TestPanicBecomesJSON500(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, pages: panicking{}})
	wantError(t, e.get("/v1/body/"+demoChannel), http.StatusInternalServerError, server.CodeInternal)
}

// A request without a usable X-Request-Id gets an id of its own, distinct
// from every other request's, and echoed in the answer.
func TestGeneratedRequestIDs(t *testing.T) {
	e := newNormalEnv(t)
	seen := map[string]bool{}
	valid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9]+$`)
	for range 50 {
		id := e.get("/v1/body/" + demoChannel).Header().Get("X-Request-Id")
		if !valid.MatchString(id) || seen[id] {
			t.Fatalf("request id %q: not a fresh generated id (seen %v)", id, seen[id])
		}
		seen[id] = true
	}
}

// Names written the way encodeURIComponent writes them ("%40name",
// "%5F") are the names themselves; what does not decode to a username
// is still refused before the origin.
func TestPercentEncodedNames(t *testing.T) {
	e := newNormalEnv(t)
	plain := e.get("/v1/body/" + demoChannel)
	wantOK(t, plain, nil)
	for _, target := range []string{
		"/v1/body/%40" + demoChannel,
		"/v1/body/tmefeed%5Fnews",
		"/v1/body/%74mefeed_news",
	} {
		got := e.get(target)
		wantOK(t, got, nil)
		if !bytes.Equal(got.Body.Bytes(), plain.Body.Bytes()) {
			t.Errorf("%s answered differently from /v1/body/%s", target, demoChannel)
		}
	}
	wantOK(t, e.get("/v1/post/%40"+demoChannel+"/52"), nil)
	wantOK(t, e.get("/v1/more/%40"+demoChannel+"/before/%33%32"), nil)
	for _, target := range []string{"/v1/body/tmefeed%2Fnews", "/v1/body/%40%40" + demoChannel, "/v1/body/%2540" + demoChannel} {
		got := e.get(target)
		if got.Code != http.StatusBadRequest || !strings.Contains(got.Body.String(), server.CodeInvalidUsername) {
			t.Errorf("%s: %d %s, want 400 %s", target, got.Code, got.Body.String(), server.CodeInvalidUsername)
		}
	}
	if n := e.origin.Total(); n > 3 {
		t.Errorf("origin saw %d requests, want the page, the post's and the older chunk's at most", n)
	}
}
