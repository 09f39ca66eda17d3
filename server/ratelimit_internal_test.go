package server

import (
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/pages"
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

// The number a hit tells the updater its reader by is the hash of the
// name every per-client limit counts the reader by, however it is made:
// a read over REST and one over GraphQL from the same client count once.
func TestRateKeyIDIsTheClientNamesID(t *testing.T) {
	for _, s := range []string{"203.0.113.7", "2001:db8:1:2:3:4:5:6", "::ffff:198.51.100.1", "2001:db8:1:2::1"} {
		a := netip.MustParseAddr(s).Unmap()
		if got, want := rateKeyID(a), pages.ClientID(rateKey(a)); got != want {
			t.Errorf("%s: rateKeyID %x, want pages.ClientID(%q) %x", s, got, rateKey(a), want)
		}
	}
	if rateKeyID(netip.MustParseAddr("2001:db8:1:2::1")) != rateKeyID(netip.MustParseAddr("2001:db8:1:2::ff")) {
		t.Error("two addresses of one /64 count as two clients")
	}
	if rateKeyID(netip.MustParseAddr("203.0.113.7")) == rateKeyID(netip.MustParseAddr("203.0.113.8")) {
		t.Error("two IPv4 addresses count as one client")
	}
	if got, want := rateKeyID(netip.Addr{}), pages.ClientID(rateKey(netip.Addr{})); got != want {
		t.Errorf("the zero address: %x, want %x", got, want)
	}
}
