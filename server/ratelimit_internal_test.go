package server

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Retry-After is read off the client's bucket: the wait after which its
// next request is admitted, not sooner (it would be refused again) and
// not later, whatever the wall clock says.
func TestRetryAfterIsWhenTheNextRequestGoes(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 59, 0, time.UTC).UnixNano()) // a second before a minute ends
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	const rpm = 5
	l := NewRateLimit(RateLimitConfig{RPM: rpm, Now: clock})
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	for i := range rpm {
		if ok, _ := l.AllowMessage(r); !ok {
			t.Fatalf("request %d of %d refused", i+1, rpm)
		}
	}
	ok, retry := l.AllowMessage(r)
	if ok || retry != 12*time.Second {
		t.Fatalf("over the limit: %v, Retry-After %v; want refused for 12s (a minute/%d)", ok, retry, rpm)
	}
	now.Add(int64(retry - time.Second))
	if ok, _ := l.AllowMessage(r); ok {
		t.Error("admitted a second before Retry-After")
	}
	now.Add(int64(time.Second))
	if ok, _ := l.AllowMessage(r); !ok {
		t.Error("refused at Retry-After")
	}
	// Another client has its own budget.
	r.RemoteAddr = "192.0.2.2:1234"
	if ok, _ := l.AllowMessage(r); !ok {
		t.Error("a second client refused")
	}
	// An idle client gets its whole budget back, and no more.
	now.Add(int64(time.Hour))
	r.RemoteAddr = "192.0.2.1:1234"
	for i := range rpm {
		if ok, _ := l.AllowMessage(r); !ok {
			t.Fatalf("after an hour, request %d of %d refused", i+1, rpm)
		}
	}
	if ok, _ := l.AllowMessage(r); ok {
		t.Error("an idle hour bought more than the budget")
	}
}
