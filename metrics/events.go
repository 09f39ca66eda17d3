package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var originBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Origin holds the series of requests to t.me (or the configured origin).
type Origin struct {
	requests *prometheus.CounterVec   // egress, host, outcome
	duration *prometheus.HistogramVec // egress, host, outcome
	budget   *prometheus.CounterVec   // egress, class, outcome
	waits    *prometheus.HistogramVec // egress, class
}

var budgetWaitBuckets = []float64{.01, .05, .1, .25, .5, 1, 2, 5, 15, 60}

func newOrigin() *Origin {
	return &Origin{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("origin", "requests_total"),
			Help: "Requests sent to the origin, by egress (direct or a proxy of ORIGIN_PROXIES), host and outcome (ok, not_found, rate_limited, timeout, refused, unreachable, reset, truncated, server_error, error).",
		}, []string{"egress", "host", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name("origin", "request_duration_seconds"),
			Help:    "Time of one request to the origin, body included, by egress, host and outcome.",
			Buckets: originBuckets,
		}, []string{"egress", "host", "outcome"}),
		budget: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("origin_budget", "decisions_total"),
			Help: "Requests to the origin that asked the origin budget (ORIGIN_RPM, CLIENT_ORIGIN_RPM), by egress, class (reader, refresh, updater, history) and outcome (admitted, waited, refused: the egress's budget was short; client_refused: the client's share was).",
		}, []string{"egress", "class", "outcome"}),
		waits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name("origin_budget", "wait_seconds"),
			Help:    "How long a request queued for a token of the origin budget before it went, by egress and class.",
			Buckets: budgetWaitBuckets,
		}, []string{"egress", "class"}),
	}
}

// Budget records one decision of the origin budget (origin.Budget.Observe).
// Labels are bounded: egress addresses are configured, classes and
// outcomes fixed.
func (o *Origin) Budget(egress, class, outcome string, wait time.Duration) {
	o.budget.WithLabelValues(egress, class, outcome).Inc()
	if outcome == "waited" {
		o.waits.WithLabelValues(egress, class).Observe(wait.Seconds())
	}
}

func (o *Origin) register(reg *prometheus.Registry) {
	reg.MustRegister(o.requests, o.duration, o.budget, o.waits)
}

// Attempt records one request sent to an origin host through an egress.
// Origin requests are few (one per page per refresh window), so labels are
// resolved here.
func (o *Origin) Attempt(egress, host, outcome string, d time.Duration) {
	o.requests.WithLabelValues(egress, host, outcome).Inc()
	o.duration.WithLabelValues(egress, host, outcome).Observe(d.Seconds())
}

// Cache holds the event counters of the Valkey tier, fed by its hooks.
// (The embedded-only tier keeps counters of its own, which a
// NewFuncCollector reads at scrape time under the same names.)
type Cache struct {
	hits, stale [3]prometheus.Counter // by tier: l1, l2, embedded
	misses      prometheus.Counter
	leases      *prometheus.CounterVec
	loads       *prometheus.CounterVec
	breaker     *prometheus.CounterVec
}

// Names of the cache metrics, shared with the collector of the embedded
// tier's own counters.
var (
	CacheHitsName   = name("cache", "hits_total")
	CacheStaleName  = name("cache", "stale_total")
	CacheMissesName = name("cache", "misses_total")
)

// Help texts of the cache metrics.
const (
	CacheHitsHelp   = "Cache reads answered from a tier (l1: client-side cache, l2: Valkey, embedded: in-process), stale copies included."
	CacheStaleHelp  = "Cache reads answered with a copy past its refresh point (also counted in hits_total), by tier."
	CacheMissesHelp = "Cache reads that found no usable copy and waited for a load."
)

var cacheTiers = [3]string{"l1", "l2", "embedded"}

// NewCache registers the Valkey tier's event counters.
func (r *Registry) NewCache() (*Cache, error) {
	hits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: CacheHitsName, Help: CacheHitsHelp}, []string{"tier"})
	stale := prometheus.NewCounterVec(prometheus.CounterOpts{Name: CacheStaleName, Help: CacheStaleHelp}, []string{"tier"})
	c := &Cache{
		misses: prometheus.NewCounter(prometheus.CounterOpts{Name: CacheMissesName, Help: CacheMissesHelp}),
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("cache", "lease_total"),
			Help: "Bids for the fetch lease of a key, by outcome (won: this process fetches; lost: another does; waited: its value arrived).",
		}, []string{"outcome"}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("cache", "loads_total"),
			Help: "Loads (origin fetch and parse, or render) run by this process, by result (ok, error).",
		}, []string{"result"}),
		breaker: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("cache", "breaker_transitions_total"),
			Help: "Changes of the Valkey circuit breaker's state, by the state entered.",
		}, []string{"to"}),
	}
	for i, t := range cacheTiers {
		c.hits[i] = hits.WithLabelValues(t)
		c.stale[i] = stale.WithLabelValues(t)
	}
	for _, col := range []prometheus.Collector{hits, stale, c.misses, c.leases, c.loads, c.breaker} {
		if err := r.reg.Register(col); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func tierIndex(tier string) int {
	switch tier {
	case "l1":
		return 0
	case "l2":
		return 1
	}
	return 2
}

// Hit, Stale, Miss, Lease, Load and BreakerChange are the Valkey tier's
// hooks; they run on the request path, so Hit and Stale use children
// resolved in advance.
func (c *Cache) Hit(tier string)   { c.hits[tierIndex(tier)].Inc() }
func (c *Cache) Stale(tier string) { c.stale[tierIndex(tier)].Inc() }
func (c *Cache) Miss()             { c.misses.Inc() }
func (c *Cache) Lease(outcome string) {
	c.leases.WithLabelValues(outcome).Inc()
}
func (c *Cache) Load(err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	c.loads.WithLabelValues(result).Inc()
}
func (c *Cache) BreakerChange(_, to string) { c.breaker.WithLabelValues(to).Inc() }
