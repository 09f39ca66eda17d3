package server

import (
	"math"
	"net/http/httptest"
	"testing"
	"time"
)

// admits is httprate's decision (limiter.go, v0.16.1) for a client with
// prev and curr requests, elapsed into the current window.
func admits(limit, prev, curr int, elapsed, window time.Duration) bool {
	rate := float64(prev)*float64(window-elapsed)/float64(window) + float64(curr)
	return int(math.Round(rate))+1 <= limit
}

// admitsAfter is admits, wait later: in the next window the current
// one's requests are the previous ones.
func admitsAfter(limit, prev, curr int, elapsed, wait, window time.Duration) bool {
	at := elapsed + wait
	if at >= window {
		if at >= 2*window {
			return true
		}
		return admits(limit, curr, 0, at-window, window)
	}
	return admits(limit, prev, curr, at, window)
}

// Retry-After is a wait after which the client is admitted: not the end
// of the current window, which is too soon when this window's requests
// still weigh in as the previous one's, and too late when the previous
// window's requests are what refuses the client and slide out before it.
func TestAdmitAfter(t *testing.T) {
	const w = time.Minute
	for _, c := range []struct {
		name              string
		limit, prev, curr int
		elapsed           time.Duration
		want              int
		// oldTooShort: the end of the window is refused again; else it
		// is later than needed.
		oldTooShort bool
	}{
		// Five calls at RPM=5 four seconds into a minute: the end of the
		// minute (56 s) is refused again, this minute's five weighing 5.
		{"budget spent in this window", 5, 0, 5, 4 * time.Second, 68, true},
		{"budget spent late in the window", 5, 0, 5, 59 * time.Second, 13, true},
		{"both windows", 5, 3, 5, 30 * time.Second, 42, true},
		{"limit of one", 1, 0, 1, 10 * time.Second, 110, true},
		// The previous minute's six slide out a third of the way into
		// this one, long before it ends.
		{"previous window only", 5, 6, 0, 10 * time.Second, 10, false},
		{"previous window and some of this", 10, 20, 4, 0, 45, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if admits(c.limit, c.prev, c.curr, c.elapsed, w) {
				t.Fatalf("the case is admitted now")
			}
			got := admitAfter(c.limit, c.prev, c.curr, c.elapsed, w)
			if got != c.want {
				t.Errorf("admitAfter = %d, want %d", got, c.want)
			}
			if !admitsAfter(c.limit, c.prev, c.curr, c.elapsed, time.Duration(got)*time.Second, w) {
				t.Errorf("refused again %d s later", got)
			}
			old := w - c.elapsed
			if c.oldTooShort && admitsAfter(c.limit, c.prev, c.curr, c.elapsed, old, w) {
				t.Errorf("the end of the window (%v) is admitted", old)
			}
			if !c.oldTooShort && time.Duration(got)*time.Second >= old {
				t.Errorf("%d s is no sooner than the end of the window (%v)", got, old)
			}
		})
	}
}

// The wait is worked out from the counts the limiter decides by: its
// windows are the wall clock's minutes, which the handler computes too.
func TestRetryAfterReadsTheLimitersCounts(t *testing.T) {
	// Close to the end of a minute the counts set below would move into
	// the previous window before they are read.
	if left := time.Until(time.Now().Truncate(rateWindow).Add(rateWindow)); left < 2*time.Second {
		time.Sleep(left + 100*time.Millisecond)
	}
	const rpm, key = 5, "192.0.2.1"
	l := NewRateLimit(rpm, nil)
	cw := time.Now().UTC().Truncate(rateWindow)
	if err := l.counter.IncrementBy(key, cw.Add(-rateWindow), 3); err != nil {
		t.Fatal(err)
	}
	if err := l.counter.IncrementBy(key, cw, rpm); err != nil {
		t.Fatal(err)
	}
	if !l.limiter.OnLimit(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), key) {
		t.Fatal("admitted over the limit")
	}
	before := time.Since(cw)
	got := l.retryAfter(key)
	after := time.Since(cw)
	if hi, lo := admitAfter(rpm, 3, rpm, before, rateWindow), admitAfter(rpm, 3, rpm, after, rateWindow); got > hi || got < lo {
		t.Errorf("retryAfter = %d, want %d..%d for 3 and %d requests", got, lo, hi, rpm)
	}
	// The previous minute's requests and this one's: the end of this
	// minute is too soon.
	if end := int((rateWindow - after) / time.Second); got <= end+1 {
		t.Errorf("retryAfter = %d, no later than the end of the window (%d s)", got, end)
	}
	if other := l.retryAfter("192.0.2.2"); other != 1 {
		t.Errorf("a client with no requests: retryAfter %d", other)
	}
}
