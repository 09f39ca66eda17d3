package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Operation names are capped: past MaxOperations, and for absurdly long
// names, the series is "other", so a client cannot grow the scrape.
func TestOperationNamesBounded(t *testing.T) {
	r := New()
	for i := range MaxOperations + 10 {
		r.HTTP.Operation("Op"+strconv.Itoa(i)).Observe(200, time.Millisecond)
	}
	r.HTTP.Operation(strings.Repeat("x", 200)).Observe(200, time.Millisecond)
	r.HTTP.Operation("").Observe(200, time.Millisecond)
	if n := testutil.CollectAndCount(r.HTTP.opRequests); n != MaxOperations+2 {
		t.Errorf("%d operation series, want %d (the cap, other and anonymous)", n, MaxOperations+2)
	}
	if got := testutil.ToFloat64(r.HTTP.opRequests.WithLabelValues(OperationOther, "200")); got != 11 {
		t.Errorf("other: %v operations, want 11 (10 past the cap, 1 too long)", got)
	}
	if first, again := r.HTTP.Operation("Op0"), r.HTTP.Operation("Op0"); first != again {
		t.Error("a known name resolved twice")
	}
}

// A request's bookkeeping allocates nothing once its route and status
// have been seen: it is on every cached answer's path.
func TestRouteObserveAllocatesNothing(t *testing.T) {
	h := New().HTTP
	h.Route("/v1/body/{channel}").Observe(200, time.Millisecond, CacheHit)
	allocs := testing.AllocsPerRun(200, func() {
		h.Begin()
		h.Route("/v1/body/{channel}").Observe(200, 50*time.Microsecond, CacheHit)
		h.End()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request", allocs)
	}
	if got := testutil.ToFloat64(h.requests.WithLabelValues("/v1/body/{channel}", "200")); got != 202 {
		t.Errorf("requests_total = %v, want 202", got)
	}
	if got := testutil.ToFloat64(h.cache.WithLabelValues("/v1/body/{channel}", "hit")); got != 202 {
		t.Errorf("cache hits = %v, want 202", got)
	}
	h.Route("").Observe(404, time.Millisecond, CacheBypass)
	if got := testutil.ToFloat64(h.requests.WithLabelValues(RouteUnmatched, "404")); got != 1 {
		t.Errorf("unmatched 404s = %v, want 1", got)
	}
}
