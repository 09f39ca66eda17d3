package server_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/server"
)

// A client with a feed working (here: waiting on the origin, which the
// test holds) has its next feed requests wait their turn, and the one
// past its queue is refused with 429 and Retry-After; meanwhile its
// cached page answers are served at once, and so is another client's
// feed. Once the first feed ends, the waiting one is served.
func TestShareMakesAClientsExtraWorkWait(t *testing.T) {
	// The held request keeps counting: no stall.
	e, arrived, release := heldOriginEnv(t, server.ShareConfig{PerClient: 1, Stall: time.Hour, Queue: 1})
	const client, other = "192.0.2.1:1000", "192.0.2.2:1000"
	serve := func(method, target, body, addr string) <-chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- serveAs(e, method, target, body, addr) }()
		return done
	}
	// Warm: the client's page and a feed of it.
	if rec := <-serve(http.MethodGet, "/v1/body/"+demoChannel, "", client); rec.Code != http.StatusOK {
		t.Fatalf("warming: %d %s", rec.Code, rec.Body)
	}
	if rec := <-serve(http.MethodPost, "/v1/feed", feedOf(demoChannel), client); rec.Code != http.StatusOK {
		t.Fatalf("warming the feed: %d %s", rec.Code, rec.Body)
	}

	held := serve(http.MethodPost, "/v1/feed", feedOf("hadashot_today"), client)
	<-arrived // the client's first feed works, waiting on the origin
	stillHeld := func(what string) {
		t.Helper()
		select {
		case rec := <-held:
			t.Fatalf("the held feed answered %d before %s", rec.Code, what)
		default:
		}
	}

	if rec := <-serve(http.MethodGet, "/v1/body/"+demoChannel, "", client); rec.Code != http.StatusOK {
		t.Errorf("the client's cached page: %d, want 200 at once", rec.Code)
	}
	stillHeld("the client's cached page")
	if rec := <-serve(http.MethodPost, "/v1/feed", feedOf(demoChannel), other); rec.Code != http.StatusOK {
		t.Errorf("another client's feed: %d, want 200 at once", rec.Code)
	}
	stillHeld("another client's feed")

	// Two more feeds from the client: one waits (its queue holds one), the
	// other is refused, whichever came second.
	a := serve(http.MethodPost, "/v1/feed", feedOf(demoChannel), client)
	b := serve(http.MethodPost, "/v1/feed", feedOf(demoChannel), client)
	var refused *httptest.ResponseRecorder
	var waiting <-chan *httptest.ResponseRecorder
	select {
	case refused = <-a:
		waiting = b
	case refused = <-b:
		waiting = a
	}
	wantError(t, refused, http.StatusTooManyRequests, server.CodeRateLimited)
	if got := refused.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	select {
	case rec := <-waiting:
		t.Fatalf("the waiting feed answered %d while the client's first works", rec.Code)
	default:
	}
	stillHeld("the refusal")

	close(release)
	if rec := <-held; rec.Code != http.StatusOK {
		t.Errorf("the held feed: %d %s", rec.Code, rec.Body)
	}
	if rec := <-waiting; rec.Code != http.StatusOK {
		t.Errorf("the waiting feed: %d %s", rec.Code, rec.Body)
	}
}

// A client whose requests have worked beyond its share of the cores over
// time (here: one feed held on the origin for longer than its burst) has
// its next feed refused with 429 and the wait until it is within its
// burst again as Retry-After; its cached page and another client's feed
// are answered at once.
func TestShareRefusesAClientThatWorkedBeyondItsShare(t *testing.T) {
	// Held work counts in full (no stall, no cap). A twentieth of one core pays
	// back 50ms a second: 100ms beyond a 100ms burst is 2s away.
	e, arrived, release := heldOriginEnv(t, server.ShareConfig{
		PerClient: 4, Stall: time.Hour, Counted: time.Hour,
		CPU:   0.05 / float64(runtime.GOMAXPROCS(0)),
		Burst: 100 * time.Millisecond, MaxWait: time.Second,
	})
	const client, other = "192.0.2.1:1000", "192.0.2.2:1000"
	serve := func(method, target, body, addr string) *httptest.ResponseRecorder {
		return serveAs(e, method, target, body, addr)
	}
	if rec := serve(http.MethodGet, "/v1/body/"+demoChannel, "", client); rec.Code != http.StatusOK {
		t.Fatalf("warming: %d %s", rec.Code, rec.Body)
	}

	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- serve(http.MethodPost, "/v1/feed", feedOf("hadashot_today"), client) }()
	<-arrived
	time.Sleep(200 * time.Millisecond) // the work its client will owe: at least this
	close(release)
	if rec := <-done; rec.Code != http.StatusOK {
		t.Fatalf("the held feed: %d %s", rec.Code, rec.Body)
	}

	rec := serve(http.MethodPost, "/v1/feed", feedOf(demoChannel), client)
	wantError(t, rec, http.StatusTooManyRequests, server.CodeRateLimited)
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || retry < 2 {
		t.Errorf("Retry-After %q, want the wait until the client is within its burst, 2s or more", rec.Header().Get("Retry-After"))
	}
	if rec := serve(http.MethodGet, "/v1/body/"+demoChannel, "", client); rec.Code != http.StatusOK {
		t.Errorf("the client's cached page: %d, want 200", rec.Code)
	}
	if rec := serve(http.MethodPost, "/v1/feed", feedOf(demoChannel), other); rec.Code != http.StatusOK {
		t.Errorf("another client's feed: %d, want 200", rec.Code)
	}
}

// heldOriginEnv is an env with the feed and share, whose origin holds
// every request for hadashot_today until release is closed, telling
// arrived as each comes in.
func heldOriginEnv(t *testing.T, share server.ShareConfig) (e *env, arrived <-chan struct{}, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	in := make(chan struct{}, 16)
	e = newEnv(t, envOptions{
		refresh:        10 * time.Second,
		feed:           true,
		requestTimeout: time.Minute,
		share:          share,
		originWrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "hadashot_today") {
					in <- struct{}{}
					<-release
				}
				next.ServeHTTP(w, r)
			})
		},
	})
	return e, in, release
}

// serveAs answers a request sent from addr, as a client there would.
func serveAs(e *env, method, target, body, addr string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = addr
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// feedOf is a feed request body for one channel.
func feedOf(ch string) string { return `{"channels":["` + ch + `"]}` }
