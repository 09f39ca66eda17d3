package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CacheOutcome is how a request's answer relates to the cache.
type CacheOutcome uint8

const (
	// CacheBypass: the answer is not a cached answer (an error before the
	// cache was asked, a health check, GraphQL, a composed list).
	CacheBypass CacheOutcome = iota
	CacheHit                 // a fresh cached answer
	CacheStale               // a cached answer past its refresh point, refreshed in the background
	CacheMiss                // the request rendered the answer, loading the page if needed
	numCacheOutcomes
)

var cacheOutcomeNames = [numCacheOutcomes]string{"bypass", "hit", "stale", "miss"}

func (o CacheOutcome) String() string {
	if o < numCacheOutcomes {
		return cacheOutcomeNames[o]
	}
	return "bypass"
}

// Label values for requests outside any route and for GraphQL operations
// beyond the cap.
const (
	RouteUnmatched     = "unmatched"
	OperationAnonymous = "anonymous"
	OperationOther     = "other"
)

// MaxOperations caps the distinct GraphQL operation names with series of
// their own; later names count as OperationOther. Names longer than
// maxOperationName do too.
const (
	MaxOperations    = 64
	maxOperationName = 64
)

// Latency buckets: a cached answer takes tens of microseconds, a cold one
// the origin's round trip and more.
var requestBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// HTTP holds the per-request series. Route and Operation resolve their
// label values once; observing a request then costs a few atomic adds and
// no allocation.
type HTTP struct {
	requests   *prometheus.CounterVec   // route, code
	duration   *prometheus.HistogramVec // route
	cache      *prometheus.CounterVec   // route, outcome
	limited    *prometheus.CounterVec   // route, limit
	opRequests *prometheus.CounterVec   // operation, code
	opDuration *prometheus.HistogramVec // operation
	consumers  *prometheus.CounterVec   // consumer, code
	heldVec    *prometheus.CounterVec   // outcome
	held       [2]prometheus.Counter    // refusals answered at once, held
	inFlight   atomic.Int64             // read at scrape time by inFlightGauge
	inFlightG  prometheus.GaugeFunc

	mu     sync.Mutex                        // serializes adding to the maps below
	routes atomic.Pointer[map[string]*Route] // copied on write: read without a lock
	ops    atomic.Pointer[map[string]*Operation]
}

func newHTTP() *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("http", "requests_total"),
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name("http", "request_duration_seconds"),
			Help:    "Time from a request's arrival to the end of its answer, by route pattern.",
			Buckets: requestBuckets,
		}, []string{"route"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("http", "cache_total"),
			Help: "HTTP answers by route pattern and cache outcome (hit, stale, miss, bypass).",
		}, []string{"route", "outcome"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("http", "rate_limited_total"),
			Help: "Requests refused with 429 by a per-client limit, by route pattern and limit: requests (RATE_LIMIT_RPM) or streams (STREAMS_PER_CLIENT).",
		}, []string{"route", "limit"}),
		opRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("graphql", "operations_total"),
			Help: "GraphQL operations that passed the limits, by operation name (capped; \"other\" beyond) and HTTP status code.",
		}, []string{"operation", "code"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name("graphql", "operation_duration_seconds"),
			Help:    "Time to answer a GraphQL operation, by operation name.",
			Buckets: requestBuckets,
		}, []string{"operation"}),
		consumers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("http", "consumer_requests_total"),
			Help: "HTTP requests answered with API keys on, by the consumer whose key they carried (API_KEYS_FILE's names) and status code.",
		}, []string{"consumer", "code"}),
	}
	heldVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name("http", "refusals_held_total"),
		Help: "Refusals for the client's own budget (429 of RATE_LIMIT_RPM or CLIENT_ORIGIN_RPM, whole answers or parts of them) by outcome: held for their Retry-After up to a second before they were sent, or answered at once because their client (or the process) held as many as it may.",
	}, []string{"outcome"})
	h.heldVec = heldVec
	h.held = [2]prometheus.Counter{heldVec.WithLabelValues("answered"), heldVec.WithLabelValues("held")}
	// An integer add per request rather than a float gauge's
	// compare-and-swap loop, which two cores contend on.
	h.inFlightG = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: name("http", "requests_in_flight"),
		Help: "HTTP requests being served.",
	}, func() float64 { return float64(h.inFlight.Load()) })
	h.routes.Store(&map[string]*Route{})
	h.ops.Store(&map[string]*Operation{})
	return h
}

func (h *HTTP) register(reg *prometheus.Registry) {
	reg.MustRegister(h.requests, h.duration, h.cache, h.limited, h.opRequests, h.opDuration, h.consumers, h.heldVec, h.inFlightG)
}

// RefusalHeld counts a refusal for budget reasons, held or answered at
// once.
func (h *HTTP) RefusalHeld(held bool) {
	if held {
		h.held[1].Inc()
	} else {
		h.held[0].Inc()
	}
}

// Consumer counts a request answered with code that carried consumer's
// key. Consumers are the keys file's lines, so the label is bounded.
func (h *HTTP) Consumer(consumer string, code int) {
	h.consumers.WithLabelValues(consumer, strconv.Itoa(code)).Inc()
}

// Begin counts a request in flight; End counts it out.
func (h *HTTP) Begin() { h.inFlight.Add(1) }
func (h *HTTP) End()   { h.inFlight.Add(-1) }

// Route returns the series of a route pattern ("" for a request no route
// matched). Patterns come from the router, so there are few of them.
func (h *HTTP) Route(pattern string) *Route {
	if pattern == "" {
		pattern = RouteUnmatched
	}
	if r, ok := (*h.routes.Load())[pattern]; ok {
		return r
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.routes.Load()
	if r, ok := old[pattern]; ok {
		return r
	}
	r := &Route{
		name:     pattern,
		duration: h.duration.WithLabelValues(pattern),
		limited:  h.limited.WithLabelValues(pattern, "requests"),
		limits:   h.limited,
	}
	r.codes.name, r.codes.vec = pattern, h.requests
	for o := range numCacheOutcomes {
		r.cache[o] = h.cache.WithLabelValues(pattern, o.String())
	}
	m := make(map[string]*Route, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[pattern] = r
	h.routes.Store(&m)
	return r
}

// Operation returns the series of a GraphQL operation name: "" is
// OperationAnonymous (always kept); past MaxOperations names, or for a
// name longer than maxOperationName, OperationOther. Only names of documents that passed
// the limits should come here.
func (h *HTTP) Operation(opName string) *Operation {
	switch {
	case opName == "":
		opName = OperationAnonymous
	case len(opName) > maxOperationName:
		opName = OperationOther
	}
	if o, ok := (*h.ops.Load())[opName]; ok {
		return o
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old := *h.ops.Load()
	if o, ok := old[opName]; ok {
		return o
	}
	if len(old) >= MaxOperations && opName != OperationOther && opName != OperationAnonymous {
		if o, ok := old[OperationOther]; ok {
			return o
		}
		opName = OperationOther
	}
	o := &Operation{duration: h.opDuration.WithLabelValues(opName)}
	o.name, o.vec = opName, h.opRequests
	m := make(map[string]*Operation, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[opName] = o
	h.ops.Store(&m)
	return o
}

// Route is one route pattern's series.
type Route struct {
	name     string
	duration prometheus.Observer
	limited  prometheus.Counter // limit="requests"
	cache    [numCacheOutcomes]prometheus.Counter
	codes    statuses
	// streams is limit="streams", made on first use: only /graphql has
	// streams, and other routes need no series for it.
	streams atomic.Pointer[prometheus.Counter]
	limits  *prometheus.CounterVec
}

// Name is the route's label value.
func (r *Route) Name() string { return r.name }

// Observe records one answered request.
func (r *Route) Observe(code int, d time.Duration, outcome CacheOutcome) {
	r.codes.counter(code).Inc()
	r.duration.Observe(d.Seconds())
	if outcome >= numCacheOutcomes {
		outcome = CacheBypass
	}
	r.cache[outcome].Inc()
}

// ObserveStream records one answered stream (a WebSocket connection, an
// event stream) without its duration: a stream lasts as long as its
// subscriptions, and would make the route's latency meaningless.
func (r *Route) ObserveStream(code int, outcome CacheOutcome) {
	r.codes.counter(code).Inc()
	if outcome >= numCacheOutcomes {
		outcome = CacheBypass
	}
	r.cache[outcome].Inc()
}

// RateLimited records a request refused by the rate limit (its 429 is
// counted by Observe as well).
func (r *Route) RateLimited() { r.limited.Inc() }

// StreamsLimited records a stream refused because its client holds as
// many open as it may (its 429 is counted by Observe as well).
func (r *Route) StreamsLimited() {
	c := r.streams.Load()
	if c == nil {
		v := r.limits.WithLabelValues(r.name, "streams")
		c = &v
		r.streams.Store(c) // a racing store holds the same child
	}
	(*c).Inc()
}

// Operation is one GraphQL operation name's series.
type Operation struct {
	statuses
	duration prometheus.Observer
}

// Observe records one answered operation.
func (o *Operation) Observe(code int, d time.Duration) {
	o.counter(code).Inc()
	o.duration.Observe(d.Seconds())
}

// statuses resolves a counter per status code on first use, so that only
// codes that happen have series and later uses do not hash labels.
type statuses struct {
	name  string
	vec   *prometheus.CounterVec
	codes [500]atomic.Pointer[prometheus.Counter] // 100..599
	other atomic.Pointer[prometheus.Counter]
}

func (s *statuses) counter(code int) prometheus.Counter {
	slot := &s.other
	if code >= 100 && code < 600 {
		slot = &s.codes[code-100]
	} else {
		code = 0
	}
	if c := slot.Load(); c != nil {
		return *c
	}
	c := s.vec.WithLabelValues(s.name, strconv.Itoa(code))
	slot.Store(&c) // a racing store holds the same child
	return c
}
