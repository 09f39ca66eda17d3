package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/server"
)

// A client over its share of the origin budget has its refusals held for
// their Retry-After, up to a second, before they are sent: its closed
// loop waits instead of taking the cores. Its cached answers are not
// held, and beyond its bound of held refusals it is answered at once.
// The holds are released by the test (TarpitConfig.After): no clock is
// read.
func TestTarpitHoldsBudgetRefusalsNotCachedAnswers(t *testing.T) {
	holds := make(chan time.Duration, 8) // each hold asked for, with its length
	release := make(chan time.Time)
	budget := &origin.Budget{Limiter: gcra.NewLocal(gcra.LocalConfig{}), RPM: 6000, ClientRPM: 1, ClientBurst: 1}
	e := newEnv(t, envOptions{refresh: 10 * time.Second, budget: budget, tarpit: server.TarpitConfig{
		PerClient: 2,
		After: func(d time.Duration) <-chan time.Time {
			holds <- d
			return release
		},
	}})
	// answered serves target in the background and reports its answer,
	// or fails when it is held instead.
	answered := func(what, target string) *httptest.ResponseRecorder {
		t.Helper()
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- e.get(target) }()
		select {
		case rec := <-done:
			return rec
		case d := <-holds:
			t.Fatalf("%s was held for %v", what, d)
			return nil
		}
	}
	// held serves target in the background and waits until its answer is
	// held; the answer comes on the channel once the hold is released.
	held := func(what, target string) <-chan *httptest.ResponseRecorder {
		t.Helper()
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- e.get(target) }()
		select {
		case d := <-holds:
			if d != time.Second {
				t.Errorf("%s held for %v, want its Retry-After up to a second: 1s", what, d)
			}
		case rec := <-done:
			t.Fatalf("%s answered %d at once, not held", what, rec.Code)
		}
		select {
		case rec := <-done:
			t.Fatalf("%s answered %d before its hold was released", what, rec.Code)
		default:
		}
		return done
	}

	// The client's one fetch: a cold page, within its share.
	wantOK(t, answered("a cold page within the share", "/v1/body/"+demoChannel), nil)
	// Over its share: refused, and held.
	first := held("the first refusal", "/v1/body/emoji_party")
	// Its cached answer is not held meanwhile.
	wantOK(t, answered("the client's cached answer", "/v1/body/"+demoChannel), nil)
	second := held("the second refusal", "/v1/body/hadashot_today")
	// The client holds as many as it may (PerClient 2): answered at once.
	rec := answered("a refusal beyond the client's bound", "/v1/body/just_launched")
	wantError(t, rec, http.StatusTooManyRequests, server.CodeRateLimited)
	close(release)
	for _, done := range []<-chan *httptest.ResponseRecorder{first, second} {
		rec := <-done
		wantError(t, rec, http.StatusTooManyRequests, server.CodeRateLimited)
		if rec.Header().Get("Retry-After") == "" {
			t.Error("a held refusal without Retry-After")
		}
	}
}

// Refusals for other reasons than the client's own budget (bad input, an
// unknown channel, the origin budget spent for everyone) are answered at
// once; bad input and unknown names, the client's own mistakes, only
// while it makes few (TestTarpitHoldsRepeatedMistakes).
func TestTarpitLeavesOtherErrorsAlone(t *testing.T) {
	holds := make(chan time.Duration, 8)
	// One origin request a minute for everyone, none queued for: the
	// second cold page is refused 503.
	budget := &origin.Budget{Limiter: gcra.NewLocal(gcra.LocalConfig{}), RPM: 1, Burst: 1, Wait: time.Millisecond}
	e := newEnv(t, envOptions{refresh: 10 * time.Second, budget: budget, tarpit: server.TarpitConfig{
		After: func(d time.Duration) <-chan time.Time {
			holds <- d
			return make(chan time.Time) // never released: a held answer hangs the test
		},
	}})
	for _, c := range []struct {
		target string
		status int
	}{
		{"/v1/body/no", http.StatusBadRequest},
		{"/v1/body/nobody_here_at_all", http.StatusNotFound},
		{"/v1/body/emoji_party", http.StatusServiceUnavailable},
	} {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- e.get(c.target) }()
		select {
		case rec := <-done:
			if rec.Code != c.status {
				t.Errorf("%s: %d, want %d", c.target, rec.Code, c.status)
			}
		case d := <-holds:
			t.Errorf("%s held for %v", c.target, d)
		}
	}
}

// A client making many mistakes a second (bad input, names that are not
// there) has the ones beyond the first few held, as a refusal is; another
// client's mistakes, and the client's own good answers, are not.
func TestTarpitHoldsRepeatedMistakes(t *testing.T) {
	holds := make(chan time.Duration, 8)
	release := make(chan time.Time)
	e := newEnv(t, envOptions{refresh: 10 * time.Second, tarpit: server.TarpitConfig{
		Mistakes: 2,
		After: func(d time.Duration) <-chan time.Time {
			holds <- d
			return release
		},
		// One second for the whole test: the mistakes all fall in it.
		Now: func() time.Time { return time.Unix(1e9, 0) },
	}})
	serve := func(target string, addr string) <-chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			req.RemoteAddr = addr
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			done <- rec
		}()
		return done
	}
	answered := func(what, target, addr string, status int) {
		t.Helper()
		select {
		case rec := <-serve(target, addr):
			if rec.Code != status {
				t.Errorf("%s: %d, want %d", what, rec.Code, status)
			}
		case d := <-holds:
			t.Fatalf("%s held for %v", what, d)
		}
	}
	const client, other = "192.0.2.1:1000", "192.0.2.2:1000"
	answered("the client's first mistake", "/v1/body/no", client, http.StatusBadRequest)
	answered("its second", "/v1/body/nobody_here_at_all", client, http.StatusNotFound)
	third := serve("/v1/body/no", client)
	select {
	case d := <-holds:
		if d != server.DefaultTarpitHold {
			t.Errorf("the third mistake held %v, want %v", d, server.DefaultTarpitHold)
		}
	case rec := <-third:
		t.Fatalf("the third mistake in a second answered %d at once", rec.Code)
	}
	answered("the client's good answer meanwhile", "/v1/body/"+demoChannel, client, http.StatusOK)
	answered("another client's mistake", "/v1/body/no", other, http.StatusBadRequest)
	close(release)
	if rec := <-third; rec.Code != http.StatusBadRequest {
		t.Errorf("the held mistake: %d, want 400", rec.Code)
	}
}
