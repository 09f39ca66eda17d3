package origin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// resetConn drops the connection with a TCP RST before answering.
func resetConn(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.(*net.TCPConn).SetLinger(0)
	conn.Close()
}

func TestErrorKinds(t *testing.T) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	page := strings.Repeat("<div>post</div>", 200)
	tests := []struct {
		name     string
		base     func() string
		want     error
		upstream bool // errors.Is(err, ErrUpstream) too
	}{
		{"refused", func() string { return closedPort(t) }, ErrRefused, true},
		{"reset", func() string { return newUpstream(t, resetConn).URL }, ErrReset, true},
		{"truncated", func() string { return newUpstream(t, truncated(page)).URL }, ErrTruncated, true},
		{"5xx", func() string { return newUpstream(t, status(http.StatusServiceUnavailable)).URL }, ErrServerError, true},
		{"timeout", func() string { return newUpstream(t, hang(stop)).URL }, ErrTimeout, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, Config{BaseURL: tt.base(), RequestTimeout: 100 * time.Millisecond, MaxRetries: -1})
			_, err := c.Fetch(context.Background(), bodyReq)
			if !errors.Is(err, tt.want) || errors.Is(err, ErrUpstream) != tt.upstream {
				t.Fatalf("err = %v, want %v (ErrUpstream: %v)", err, tt.want, tt.upstream)
			}
			for _, other := range []error{ErrRefused, ErrReset, ErrTruncated, ErrServerError, ErrTimeout, ErrUnreachable} {
				if other != tt.want && errors.Is(err, other) {
					t.Errorf("err = %v also matches %v", err, other)
				}
			}
			code, ok := Failures{}.Code(err)
			if !ok {
				t.Fatalf("failure %v not worth remembering", err)
			}
			until := time.Now().Add(5 * time.Second)
			back := Failures{}.Error(code, until)
			if !errors.Is(back, tt.want) || errors.Is(back, ErrUpstream) != tt.upstream {
				t.Errorf("remembered %q comes back as %v, want %v", code, back, tt.want)
			}
			if ra, ok := RetryAfter(back); !ok || !ra.Equal(until) {
				t.Errorf("RetryAfter(%v) = %v, %v; want %v", back, ra, ok, until)
			}
		})
	}
}

// A name t.me does not know is remembered as such: asked in a loop, it
// would otherwise cost t.me one request per call.
func TestNotFoundIsRemembered(t *testing.T) {
	code, ok := Failures{}.Code(fmt.Errorf("fetch: %w", ErrNotFound))
	if !ok {
		t.Fatal("not found is not remembered")
	}
	back := Failures{}.Error(code, time.Now().Add(5*time.Second))
	if !errors.Is(back, ErrNotFound) || errors.Is(back, ErrUpstream) {
		t.Errorf("remembered not-found comes back as %v: want ErrNotFound, not an upstream failure", back)
	}
}

func TestAnswersAreNotRememberedAsFailures(t *testing.T) {
	for _, err := range []error{
		&RateLimitError{RetryAfter: time.Now(), Host: "t.me"},
		ErrInvalidRequest,
		context.Canceled,
	} {
		if code, ok := (Failures{}).Code(err); ok {
			t.Errorf("%v remembered as %q", err, code)
		}
	}
}

func TestBreakerOpensAndProbes(t *testing.T) {
	u := newUpstream(t, status(http.StatusInternalServerError))
	c := newClient(t, Config{
		BaseURL: u.URL, MaxRetries: -1,
		BreakerFailures: 3, BreakerCoolDown: 100 * time.Millisecond, BreakerProbes: 2,
	})
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.Fetch(ctx, bodyReq); !errors.Is(err, ErrServerError) {
			t.Fatalf("Fetch %d: err = %v, want a server error", i, err)
		}
	}
	// Open: answered at once, nothing sent, and the error says why.
	_, err := c.Fetch(ctx, bodyReq)
	var un *UnavailableError
	if !errors.As(err, &un) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrServerError) {
		t.Fatalf("err = %v, want an *UnavailableError after server errors", err)
	}
	if ra, ok := RetryAfter(err); !ok || !ra.After(time.Now().Add(-time.Second)) {
		t.Errorf("RetryAfter = %v, %v", ra, ok)
	}
	if n := u.total.Load(); n != 3 {
		t.Fatalf("%d requests, want 3: an open breaker sends nothing", n)
	}

	// Half-open: a probe that fails opens it again.
	eventually(t, "a probe", func() bool {
		_, _ = c.Fetch(ctx, bodyReq)
		return u.total.Load() == 4
	})
	if _, err := c.Fetch(ctx, bodyReq); !errors.Is(err, ErrUnavailable) || u.total.Load() != 4 {
		t.Fatalf("after a failed probe: err = %v, %d requests; want open again, 4", err, u.total.Load())
	}

	// Recovered: the probes succeed and the breaker closes.
	u.set(body("ok"))
	eventually(t, "the breaker to close", func() bool {
		_, err := c.Fetch(ctx, bodyReq)
		return err == nil && c.egresses[0].primary.cb.State().String() == "closed"
	})
}

func TestBreakerSendsTrafficToFallback(t *testing.T) {
	primary := newUpstream(t, status(http.StatusBadGateway))
	fallback := newUpstream(t, body("from fallback"))
	c := newClient(t, Config{
		BaseURL: primary.URL, FallbackURL: fallback.URL, MaxRetries: -1,
		FallbackAfter:   100, // only the breaker diverts here
		BreakerFailures: 2, BreakerCoolDown: time.Hour,
	})
	ctx := context.Background()
	for range 2 {
		if _, err := c.Fetch(ctx, bodyReq); !errors.Is(err, ErrServerError) {
			t.Fatalf("err = %v", err)
		}
	}
	for range 3 {
		if b, err := c.Fetch(ctx, bodyReq); err != nil || string(b) != "from fallback" {
			t.Fatalf("with the primary's breaker open: %q, %v", b, err)
		}
	}
	if p, f := primary.total.Load(), fallback.total.Load(); p != 2 || f != 3 {
		t.Errorf("primary %d fallback %d, want 2 and 3", p, f)
	}
}

func TestFaultRetryBudgetCapsRetries(t *testing.T) {
	u := newUpstream(t, status(http.StatusInternalServerError))
	const budget = 0.2
	c := newClient(t, Config{BaseURL: u.URL, MaxRetries: 2, RetryBudget: budget, BreakerFailures: 1 << 20})
	const requests = 200
	for range requests {
		if _, err := c.Fetch(context.Background(), bodyReq); !errors.Is(err, ErrServerError) {
			t.Fatalf("err = %v", err)
		}
	}
	n := u.total.Load()
	most := int64(requests + retryBurst + budget*requests)
	if n < requests || n > most {
		t.Errorf("%d origin requests for %d failing fetches, want %d..%d (unbudgeted: %d)", n, requests, requests, most, 3*requests)
	}
	t.Logf("FIGURE: origin | origin requests per fetch, origin 500, MaxRetries 2, budget %.0f%% | %.2f", budget*100, float64(n)/requests)
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An open breaker is not remembered as a failure of the page: the breaker
// answers at once by itself and knows when it closes, while a remembered
// failure would outlive it, and through Valkey reach processes whose
// breaker is closed.
func TestOpenBreakerIsNotRememberedAsFailure(t *testing.T) {
	for _, err := range []error{
		&UnavailableError{RetryAfter: time.Now().Add(time.Second), Host: "t.me", Last: ErrServerError},
		&UnavailableError{RetryAfter: time.Now().Add(time.Second), Host: "t.me"},
	} {
		if code, ok := (Failures{}).Code(err); ok {
			t.Errorf("%v remembered as %q", err, code)
		}
	}
}
