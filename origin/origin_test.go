package origin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/tme"
)

// upstream is a test origin that counts requests per path (with query)
// and answers with a replaceable handler.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int
	total  atomic.Int64
	h      atomic.Pointer[http.HandlerFunc]
}

func newUpstream(t *testing.T, h http.HandlerFunc, configure ...func(*http.Server)) *upstream {
	t.Helper()
	u := &upstream{counts: map[string]int{}}
	u.set(h)
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.counts[r.URL.RequestURI()]++
		u.mu.Unlock()
		u.total.Add(1)
		(*u.h.Load())(w, r)
	}))
	for _, f := range configure {
		f(u.Config)
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) set(h http.HandlerFunc) { u.h.Store(&h) }

func (u *upstream) count(path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[path]
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.RetryBaseDelay == 0 {
		cfg.RetryBaseDelay = time.Millisecond
	}
	if cfg.RetryMaxDelay == 0 {
		cfg.RetryMaxDelay = 5 * time.Millisecond
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func body(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(s))
	}
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", code) }
}

var (
	bodyReq    = tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news"}
	previewReq = tme.Request{Kind: tme.KindPreview, Channel: "tmefeed_news"}
)

func TestInvalidRequestSendsNothing(t *testing.T) {
	u := newUpstream(t, body("x"))
	c := newClient(t, Config{BaseURL: u.URL})
	bad := []tme.Request{
		{Kind: tme.KindBody, Channel: ""},
		{Kind: tme.KindBody, Channel: "Durov"},
		{Kind: tme.KindBody, Channel: "du/../rov"},
		{Kind: tme.KindBody, Channel: "durov?x=1"},
		{Kind: tme.KindBody, Channel: "durov", Position: -1},
		{Kind: tme.KindMore, Channel: "durov"},
		{Kind: tme.KindEmbed, Channel: "durov"},
		{Kind: "weird", Channel: "durov"},
	}
	for _, r := range bad {
		if _, err := c.Fetch(context.Background(), r); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: err = %v, want ErrInvalidRequest", r, err)
		}
	}
	if n := u.total.Load(); n != 0 {
		t.Errorf("%d requests reached the origin", n)
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, cfg := range []Config{
		{BaseURL: "ftp://t.me"},
		{BaseURL: "t.me"},
		{BaseURL: "https://t.me", FallbackURL: "://x"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestFetchSendsBrowserHeaders(t *testing.T) {
	var got http.Header
	var method, uri string
	var mu sync.Mutex
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got, method, uri = r.Header.Clone(), r.Method, r.URL.RequestURI()
		mu.Unlock()
		_, _ = w.Write([]byte("page"))
	})
	c := newClient(t, Config{BaseURL: u.URL + "/"})

	b, err := c.Fetch(context.Background(), bodyReq)
	if err != nil || string(b) != "page" {
		t.Fatalf("Fetch = %q, %v", b, err)
	}
	mu.Lock()
	if method != "GET" || uri != "/s/tmefeed_news" {
		t.Errorf("request %s %s", method, uri)
	}
	if ua := got.Get("User-Agent"); !strings.HasPrefix(ua, "Mozilla/5.0") {
		t.Errorf("User-Agent %q", ua)
	}
	if a := got.Get("Accept"); !strings.HasPrefix(a, "text/html") {
		t.Errorf("Accept %q", a)
	}
	if l := got.Get("Accept-Language"); !strings.HasPrefix(l, "en") {
		t.Errorf("Accept-Language %q", l)
	}
	if x := got.Get("X-Requested-With"); x != "" {
		t.Errorf("GET sent X-Requested-With %q", x)
	}
	mu.Unlock()

	for _, after := range []bool{false, true} {
		r := tme.Request{Kind: tme.KindMore, Channel: "tmefeed_news", Position: 100, After: after}
		if _, err := c.Fetch(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if method != "POST" || uri != r.Path() {
			t.Errorf("more request %s %s, want POST %s", method, uri, r.Path())
		}
		if x := got.Get("X-Requested-With"); x != "XMLHttpRequest" {
			t.Errorf("X-Requested-With %q", x)
		}
		if a := got.Get("Accept"); !strings.HasPrefix(a, "application/json") {
			t.Errorf("more Accept %q", a)
		}
		mu.Unlock()
	}
}

func TestFetchKeepsConnectionsAlive(t *testing.T) {
	var conns atomic.Int64
	u := newUpstream(t, body("page"), func(s *http.Server) {
		s.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}
	})
	c := newClient(t, Config{BaseURL: u.URL})
	for i := 0; i < 5; i++ {
		if _, err := c.Fetch(context.Background(), bodyReq); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 sequential fetches opened %d connections, want 1", n)
	}
}

func TestFetchUsesHTTP2WhenOffered(t *testing.T) {
	var proto atomic.Value
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		_, _ = w.Write([]byte("page"))
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	tlsCfg := s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c := newClient(t, Config{BaseURL: s.URL, TLSClientConfig: tlsCfg})
	if _, err := c.Fetch(context.Background(), bodyReq); err != nil {
		t.Fatal(err)
	}
	if p := proto.Load(); p != "HTTP/2.0" {
		t.Errorf("origin saw %v, want HTTP/2.0", p)
	}
}

func TestNotFound(t *testing.T) {
	u := newUpstream(t, status(http.StatusNotFound))
	c := newClient(t, Config{BaseURL: u.URL})
	_, err := c.Fetch(context.Background(), tme.Request{Kind: tme.KindEmbed, Channel: "tmefeed_news", Position: 9})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if n := u.total.Load(); n != 1 {
		t.Errorf("%d requests, want 1 (a 404 is not retried)", n)
	}
}

func TestRedirectOfSPageIsNotFound(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/s/") {
			http.Redirect(w, r, "/"+strings.TrimPrefix(r.URL.Path, "/s/"), http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("landing"))
	})
	c := newClient(t, Config{BaseURL: u.URL})
	_, err := c.Fetch(context.Background(), tme.Request{Kind: tme.KindBody, Channel: "some_group"})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if u.count("/s/some_group") != 1 || u.count("/some_group") != 0 {
		t.Errorf("counts /s/some_group=%d /some_group=%d, want 1 and 0 (redirect not followed)",
			u.count("/s/some_group"), u.count("/some_group"))
	}
}

func TestRedirectElsewhereIsUpstreamError(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	c := newClient(t, Config{BaseURL: u.URL})
	_, err := c.Fetch(context.Background(), previewReq)
	if !errors.Is(err, ErrUpstream) || errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrUpstream", err)
	}
	if n := u.total.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestRateLimitHonoursRetryAfter(t *testing.T) {
	clk := newClock()
	tests := []struct {
		name   string
		header func() string
		wait   time.Duration
	}{
		{"seconds", func() string { return "120" }, 120 * time.Second},
		{"http-date", func() string { return clk.Now().Add(90 * time.Second).Format(http.TimeFormat) }, 90 * time.Second},
		{"missing", func() string { return "" }, 30 * time.Second},
		{"garbage", func() string { return "soon" }, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if v := tt.header(); v != "" {
					w.Header().Set("Retry-After", v)
				}
				http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
			})
			c := newClient(t, Config{BaseURL: u.URL, Now: clk.Now})
			start := clk.Now()

			_, err := c.Fetch(context.Background(), bodyReq)
			var rl *RateLimitError
			if !errors.As(err, &rl) || !errors.Is(err, ErrRateLimited) {
				t.Fatalf("err = %v, want *RateLimitError", err)
			}
			if want := start.Add(tt.wait); !rl.RetryAfter.Equal(want) {
				t.Errorf("RetryAfter = %v, want %v", rl.RetryAfter, want)
			}
			if n := u.total.Load(); n != 1 {
				t.Fatalf("%d requests, want 1 (429 is not retried)", n)
			}

			// Until Retry-After passes, nothing reaches the origin, for any page.
			clk.Advance(tt.wait - time.Second)
			if _, err := c.Fetch(context.Background(), previewReq); !errors.As(err, &rl) || !rl.RetryAfter.Equal(start.Add(tt.wait)) {
				t.Fatalf("while blocked: err = %v", err)
			}
			if n := u.total.Load(); n != 1 {
				t.Fatalf("%d requests while blocked, want 1", n)
			}

			clk.Advance(time.Second)
			u.set(body("page"))
			if b, err := c.Fetch(context.Background(), bodyReq); err != nil || string(b) != "page" {
				t.Fatalf("after Retry-After: %q, %v", b, err)
			}
			if n := u.total.Load(); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

func TestRateLimitIsCapped(t *testing.T) {
	clk := newClock()
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "999999999")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := newClient(t, Config{BaseURL: u.URL, Now: clk.Now, MaxRetryAfter: 10 * time.Minute})
	_, err := c.Fetch(context.Background(), bodyReq)
	var rl *RateLimitError
	if !errors.As(err, &rl) || !rl.RetryAfter.Equal(clk.Now().Add(10*time.Minute)) {
		t.Fatalf("err = %v, want block capped at 10m", err)
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	u := newUpstream(t, status(http.StatusBadGateway))
	c := newClient(t, Config{BaseURL: u.URL})
	_, err := c.Fetch(context.Background(), bodyReq)
	if !errors.Is(err, ErrUpstream) {
		t.Fatalf("err = %v, want ErrUpstream", err)
	}
	if n := u.count("/s/tmefeed_news"); n != 3 {
		t.Errorf("%d requests, want 3 (1 + MaxRetries 2)", n)
	}

	u2 := newUpstream(t, status(http.StatusInternalServerError))
	c2 := newClient(t, Config{BaseURL: u2.URL, MaxRetries: 4})
	if _, err := c2.Fetch(context.Background(), bodyReq); !errors.Is(err, ErrUpstream) {
		t.Fatalf("err = %v", err)
	}
	if n := u2.total.Load(); n != 5 {
		t.Errorf("MaxRetries 4: %d requests, want 5", n)
	}

	u3 := newUpstream(t, status(http.StatusServiceUnavailable))
	c3 := newClient(t, Config{BaseURL: u3.URL, MaxRetries: -1})
	if _, err := c3.Fetch(context.Background(), bodyReq); !errors.Is(err, ErrUpstream) {
		t.Fatalf("err = %v", err)
	}
	if n := u3.total.Load(); n != 1 {
		t.Errorf("MaxRetries -1: %d requests, want 1", n)
	}
}

func TestRetrySucceedsAfterTransientErrors(t *testing.T) {
	var calls atomic.Int64
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("page"))
	})
	c := newClient(t, Config{BaseURL: u.URL})
	b, err := c.Fetch(context.Background(), bodyReq)
	if err != nil || string(b) != "page" {
		t.Fatalf("Fetch = %q, %v", b, err)
	}
	if n := u.total.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestOtherClientErrorsAreNotRetried(t *testing.T) {
	u := newUpstream(t, status(http.StatusForbidden))
	c := newClient(t, Config{BaseURL: u.URL})
	_, err := c.Fetch(context.Background(), bodyReq)
	if !errors.Is(err, ErrUpstream) {
		t.Fatalf("err = %v, want ErrUpstream", err)
	}
	if n := u.total.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// hang answers only when the request is abandoned or the test ends.
func hang(stop <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}
}

func TestTimeoutsAreRetriedThenErrTimeout(t *testing.T) {
	stop := make(chan struct{})
	u := newUpstream(t, hang(stop))
	t.Cleanup(func() { close(stop) })
	c := newClient(t, Config{BaseURL: u.URL, RequestTimeout: 50 * time.Millisecond})
	_, err := c.Fetch(context.Background(), bodyReq)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if n := u.total.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestSlowBodyTimesOut(t *testing.T) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte(strings.Repeat("a", 100)))
		w.(http.Flusher).Flush()
		hang(stop)(w, r)
	})
	c := newClient(t, Config{BaseURL: u.URL, RequestTimeout: 50 * time.Millisecond, MaxRetries: 1})
	_, err := c.Fetch(context.Background(), bodyReq)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if n := u.total.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// truncated declares the full length, sends half and drops the connection.
func truncated(full string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(full)))
		_, _ = w.Write([]byte(full[:len(full)/2]))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

func TestTruncatedBodyIsRetried(t *testing.T) {
	page := strings.Repeat("<div>post</div>", 200)
	u := newUpstream(t, truncated(page))
	c := newClient(t, Config{BaseURL: u.URL})
	_, err := c.Fetch(context.Background(), bodyReq)
	if !errors.Is(err, ErrUpstream) {
		t.Fatalf("err = %v, want ErrUpstream", err)
	}
	if n := u.total.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}

	var calls atomic.Int64
	u.set(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			truncated(page)(w, r)
			return
		}
		body(page)(w, r)
	})
	b, err := c.Fetch(context.Background(), bodyReq)
	if err != nil || string(b) != page {
		t.Fatalf("second Fetch: %d bytes, %v", len(b), err)
	}
}

func TestTooLarge(t *testing.T) {
	big := strings.Repeat("x", 2048)
	u := newUpstream(t, body(big))
	c := newClient(t, Config{BaseURL: u.URL, MaxBodyBytes: 1024})
	_, err := c.Fetch(context.Background(), bodyReq)
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrUpstream) {
		t.Fatalf("declared length: err = %v, want ErrTooLarge (and ErrUpstream)", err)
	}

	// Without a Content-Length (chunked), the cap applies while reading.
	u.set(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 4; i++ {
			_, _ = w.Write([]byte(big[:512]))
			w.(http.Flusher).Flush()
		}
	})
	_, err = c.Fetch(context.Background(), bodyReq)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("chunked: err = %v, want ErrTooLarge", err)
	}
	if n := u.total.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (too large is not retried)", n)
	}

	u.set(body(big[:1024]))
	if b, err := c.Fetch(context.Background(), bodyReq); err != nil || len(b) != 1024 {
		t.Errorf("body at the limit: %d bytes, %v", len(b), err)
	}
}

func TestCallerContextEndsRetries(t *testing.T) {
	u := newUpstream(t, status(http.StatusBadGateway))
	c := newClient(t, Config{BaseURL: u.URL, RetryBaseDelay: time.Hour, RetryMaxDelay: time.Hour})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Fetch(ctx, bodyReq)
		done <- err
	}()
	// The first attempt fails, then Fetch waits an hour for its retry.
	for u.total.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}

}

func TestCallerDeadlineIsTimeout(t *testing.T) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	u := newUpstream(t, hang(stop))
	c := newClient(t, Config{BaseURL: u.URL, RequestTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Fetch(ctx, bodyReq); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrTimeout wrapping DeadlineExceeded", err)
	}
	if n := u.total.Load(); n > 1 {
		t.Errorf("%d requests after the caller's deadline, want at most 1", n)
	}
}

func TestFallbackOnFinalAttemptAndCoolDown(t *testing.T) {
	clk := newClock()
	primary := newUpstream(t, status(http.StatusBadGateway))
	fallback := newUpstream(t, body("from fallback"))
	c := newClient(t, Config{
		BaseURL: primary.URL, FallbackURL: fallback.URL, Now: clk.Now,
		FallbackAfter: 3, FallbackCooldown: time.Minute,
	})

	// Request 1: two failures on the primary, the last attempt on the fallback.
	b, err := c.Fetch(context.Background(), bodyReq)
	if err != nil || string(b) != "from fallback" {
		t.Fatalf("Fetch 1 = %q, %v", b, err)
	}
	if p, f := primary.total.Load(), fallback.total.Load(); p != 2 || f != 1 {
		t.Fatalf("after 1: primary %d fallback %d, want 2 and 1", p, f)
	}

	// Request 2: the third consecutive failure starts the cool-down, so the
	// retry goes to the fallback at once.
	if _, err := c.Fetch(context.Background(), bodyReq); err != nil {
		t.Fatal(err)
	}
	if p, f := primary.total.Load(), fallback.total.Load(); p != 3 || f != 2 {
		t.Fatalf("after 2: primary %d fallback %d, want 3 and 2", p, f)
	}

	// During the cool-down the primary is not asked.
	if _, err := c.Fetch(context.Background(), previewReq); err != nil {
		t.Fatal(err)
	}
	if p, f := primary.total.Load(), fallback.total.Load(); p != 3 || f != 3 {
		t.Fatalf("cool-down: primary %d fallback %d, want 3 and 3", p, f)
	}

	// After it, the primary is tried again, and serves.
	clk.Advance(time.Minute)
	primary.set(body("from primary"))
	if b, err := c.Fetch(context.Background(), bodyReq); err != nil || string(b) != "from primary" {
		t.Fatalf("after cool-down: %q, %v", b, err)
	}
	if p, f := primary.total.Load(), fallback.total.Load(); p != 4 || f != 3 {
		t.Fatalf("after cool-down: primary %d fallback %d, want 4 and 3", p, f)
	}
}

func TestFallbackIsNotUsedForDefinitiveAnswers(t *testing.T) {
	primary := newUpstream(t, status(http.StatusNotFound))
	fallback := newUpstream(t, body("x"))
	c := newClient(t, Config{BaseURL: primary.URL, FallbackURL: fallback.URL})
	if _, err := c.Fetch(context.Background(), bodyReq); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if f := fallback.total.Load(); f != 0 {
		t.Errorf("fallback asked %d times for a 404", f)
	}
}

func TestFallbackWhilePrimaryRateLimited(t *testing.T) {
	clk := newClock()
	primary := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	fallback := newUpstream(t, body("from fallback"))
	c := newClient(t, Config{BaseURL: primary.URL, FallbackURL: fallback.URL, Now: clk.Now})
	for i := 0; i < 3; i++ {
		if b, err := c.Fetch(context.Background(), bodyReq); err != nil || string(b) != "from fallback" {
			t.Fatalf("Fetch %d = %q, %v", i, b, err)
		}
	}
	if p, f := primary.total.Load(), fallback.total.Load(); p != 1 || f != 3 {
		t.Fatalf("primary %d fallback %d, want 1 and 3", p, f)
	}

	// Both limited: the earliest time either may be asked again.
	fallback.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "10")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	_, err := c.Fetch(context.Background(), bodyReq)
	var rl *RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("err = %v, want *RateLimitError", err)
	}
	_, err = c.Fetch(context.Background(), bodyReq)
	if !errors.As(err, &rl) || !rl.RetryAfter.Equal(clk.Now().Add(10*time.Second)) {
		t.Fatalf("both blocked: err = %v, want retry at +10s", err)
	}
	if p, f := primary.total.Load(), fallback.total.Load(); p != 1 || f != 4 {
		t.Fatalf("primary %d fallback %d, want 1 and 4", p, f)
	}
}

func TestConcurrentFetches(t *testing.T) {
	var calls atomic.Int64
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%3 == 0 {
			http.Error(w, "flaky", http.StatusBadGateway)
			return
		}
		_, _ = w.Write([]byte(r.URL.RequestURI()))
	})
	// One answer in three fails: more retries than a budget allows, and
	// enough failures in a row, now and then, to trip a default breaker.
	c := newClient(t, Config{BaseURL: u.URL, MaxRetries: 5, RetryBudget: -1, BreakerFailures: 1000})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 1; i <= 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := tme.Request{Kind: tme.KindEmbed, Channel: "tmefeed_news", Position: i}
			b, err := c.Fetch(context.Background(), r)
			if err == nil && string(b) != r.Path() {
				err = errors.New("wrong body " + string(b))
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Fetches beyond MaxInFlight fail at once, without asking the origin and
// without counting against its breaker; the slots come back when the
// fetches holding them end.
func TestInFlightCap(t *testing.T) {
	stop := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/s/held" {
			started.Done()
			<-stop
		}
		body("<html></html>")(w, r)
	})
	c := newClient(t, Config{BaseURL: u.URL, MaxInFlight: 2, BreakerFailures: 1})
	var held sync.WaitGroup
	for range 2 {
		held.Go(func() { _, _ = c.Fetch(context.Background(), tme.Request{Kind: tme.KindBody, Channel: "held"}) })
	}
	started.Wait()
	for range 3 {
		_, err := c.Fetch(context.Background(), bodyReq)
		var un *UnavailableError
		if !errors.As(err, &un) || !errors.Is(err, ErrBusy) || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("a fetch beyond the cap: %v, want an *UnavailableError wrapping ErrBusy", err)
		}
		if _, ok := RetryAfter(err); !ok {
			t.Errorf("%v: no retry time", err)
		}
	}
	if n := u.count(bodyReq.Path()); n != 0 {
		t.Errorf("the origin was asked %d times beyond the cap", n)
	}
	close(stop)
	held.Wait()
	if _, err := c.Fetch(context.Background(), bodyReq); err != nil {
		t.Fatalf("after the held fetches ended: %v", err)
	}
}
