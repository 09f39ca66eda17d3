package main

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/metrics"
	"github.com/tmefeed/tmefeed/server"
)

// jsonLogs reports whether logs are written as JSON: LOG_FORMAT=json, or
// auto (the default) with out not a terminal.
func jsonLogs(format string, out io.Writer) bool {
	switch format {
	case "json":
		return true
	case "text":
		return false
	}
	f, ok := out.(*os.File)
	if !ok {
		return true
	}
	fi, err := f.Stat()
	return err != nil || fi.Mode()&os.ModeCharDevice == 0
}

// valkeyHooks feeds the Valkey tier's events to the cache metrics.
func valkeyHooks(m *metrics.Cache) cache.ValkeyHooks {
	return cache.ValkeyHooks{
		Hit:           func(t cache.Tier) { m.Hit(string(t)) },
		Stale:         func(t cache.Tier) { m.Stale(string(t)) },
		Miss:          m.Miss,
		Lease:         func(o cache.LeaseOutcome) { m.Lease(string(o)) },
		BreakerChange: m.BreakerChange,
		Load:          m.Load,
	}
}

// registerCollectors adds the series read from the stack's own statistics
// at scrape time: bytes per store, the embedded tier's counters, breaker
// states and the origin's last answer.
func (st *stack) registerCollectors(reg *metrics.Registry) error {
	cols := []prometheus.Collector{
		metrics.NewFuncCollector("store", "bytes", "Bytes held per in-process store, as accounted against MEMORY_CACHE_MAX_MB (pages: cached page bytes and answers, compressed; hot: uncompressed answers; parses: parsed pages; builds: kept feed builds without their pages; rendered: rendered feed answers; graphql: persisted queries and parsed documents).",
			prometheus.GaugeValue, []string{"store"}, func(emit func(float64, ...string)) {
				ps, fs := st.pages.Stats(), st.feeds.Stats()
				var pagesBytes int64
				switch c := st.pageCache.(type) {
				case *cache.Memory:
					pagesBytes = int64(c.Stats().Bytes)
				case *cache.Valkey:
					pagesBytes = c.LocalBytes()
				}
				emit(float64(pagesBytes), "pages")
				emit(float64(ps.HotBytes), "hot")
				emit(float64(ps.HeldBytes), "parses")
				emit(float64(fs.KeptOwnBytes), "builds")
				emit(float64(fs.RenderedBytes), "rendered")
				emit(float64(st.graph.Bytes()), "graphql")
			}),
		metrics.NewFuncCollector("", "breaker_state", "Circuit breaker state: 0 closed, 1 half-open, 2 open; breaker=valkey (the shared cache) or origin (per egress and host).",
			prometheus.GaugeValue, []string{"breaker", "egress", "host"}, func(emit func(float64, ...string)) {
				if v, ok := st.pageCache.(*cache.Valkey); ok {
					emit(metrics.BreakerValue(v.BreakerState()), "valkey", "", "")
				}
				for _, h := range st.origin.Health() {
					emit(metrics.BreakerValue(h.Breaker), "origin", h.Egress, h.Host)
				}
			}),
		metrics.NewFuncCollector("origin_budget", "tokens", "Tokens left in the origin budget's bucket of each egress at its last decision (shared by every process with VALKEY_URL); ORIGIN_BURST when full.",
			prometheus.GaugeValue, []string{"egress"}, func(emit func(float64, ...string)) {
				for _, b := range st.origin.Budget() {
					emit(float64(b.Tokens), b.Egress)
				}
			}),
		metrics.NewFuncCollector("origin_budget", "local_decisions_total", "Origin budget decisions this process made on its own bucket because Valkey could not answer (VALKEY_URL set): meanwhile the budget is per process.",
			prometheus.CounterValue, nil, func(emit func(float64, ...string)) {
				if v, ok := st.limiter.(*gcra.Valkey); ok {
					emit(float64(v.FellBack()))
				}
			}),
		metrics.NewFuncCollector("origin_budget", "requests_per_minute", "The origin budget of each egress (ORIGIN_RPM).",
			prometheus.GaugeValue, []string{"egress"}, func(emit func(float64, ...string)) {
				for _, b := range st.origin.Budget() {
					emit(float64(b.RPM), b.Egress)
				}
			}),
		metrics.NewFuncCollector("origin", "last_answer_timestamp_seconds", "Unix time of the origin host's last answer through the egress (a page or a definitive not-found); 0 before the first.",
			prometheus.GaugeValue, []string{"egress", "host"}, func(emit func(float64, ...string)) {
				for _, h := range st.origin.Health() {
					var ts float64
					if !h.Answer.IsZero() {
						ts = float64(h.Answer.UnixNano()) / 1e9
					}
					emit(ts, h.Egress, h.Host)
				}
			}),
	}
	if st.live != nil {
		cols = append(cols, metrics.NewLiveCollector(func() metrics.LiveStats {
			s := st.live.Stats()
			return metrics.LiveStats{
				UpdaterCycles:    s.Updater.Cycles,
				UpdaterLag:       s.Updater.Lag,
				UpdaterTracked:   s.Updater.Tracked,
				UpdaterRefreshes: s.Updater.Refreshes,
				UpdaterErrors:    s.Updater.Errors,
				Subscriptions:    s.Subscribers,
				EventsPublished:  s.Published,
				EventsDelivered:  s.Delivered,
				SlowClosed:       s.SlowClosed,
			}
		}))
	}
	if mem, ok := st.pageCache.(*cache.Memory); ok {
		// The embedded-only tier counts for itself; read at scrape time
		// under the names the Valkey tier's hooks feed.
		cols = append(cols,
			metrics.NewFuncCollectorNamed(metrics.CacheHitsName, metrics.CacheHitsHelp, prometheus.CounterValue, []string{"tier"}, func(emit func(float64, ...string)) {
				s := mem.Stats()
				emit(float64(s.Hits+s.StaleServed), "embedded")
			}),
			metrics.NewFuncCollectorNamed(metrics.CacheStaleName, metrics.CacheStaleHelp, prometheus.CounterValue, []string{"tier"}, func(emit func(float64, ...string)) {
				emit(float64(mem.Stats().StaleServed), "embedded")
			}),
			metrics.NewFuncCollectorNamed(metrics.CacheMissesName, metrics.CacheMissesHelp, prometheus.CounterValue, nil, func(emit func(float64, ...string)) {
				emit(float64(mem.Stats().Misses))
			}),
		)
	}
	for _, c := range cols {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// originStale is how long without an answer from any origin host, while
// its breakers are open, before /readyz reports the origin down. (While a
// breaker is closed the origin is taken as reachable: a quiet process
// simply has not asked it anything.)
const originStale = time.Minute

// readyChecks are /readyz's checks.
//
// cache: ok when Valkey answers PING (or when there is no Valkey: the
// embedded tier is always usable); degraded when it does not, since every
// process then serves from its own memory — pulling all replicas out of a
// load balancer because their shared Valkey is down would turn a slower
// service into none.
//
// origin: down when every origin host's circuit breaker is open and none
// answered for originStale (the process can only serve what it has
// cached); degraded while some breaker is open; ok otherwise. A breaker
// opens after UPSTREAM_BREAKER_FAILURES consecutive failures, so this is
// typically one replica blocked or cut off from t.me while others, with
// other addresses or routes, still reach it.
func (st *stack) readyChecks() []server.ReadyCheck {
	return []server.ReadyCheck{
		{Name: "cache", Check: st.cacheReady},
		{Name: "origin", Check: st.originReady},
		{Name: "origin_budget", Check: st.budgetReady},
	}
}

// budgetSpentLately is how recent an empty bucket must be for /readyz to
// call the origin budget spent.
const budgetSpentLately = 10 * time.Second

// budgetReady reports the origin budget of each egress: degraded while a
// bucket was found empty lately (pages no tier holds are refused, stale
// copies served longer), never down: cached answers are served as ever.
func (st *stack) budgetReady(context.Context) server.CheckResult {
	type egress struct {
		Egress      string            `json:"egress"`
		RPM         int               `json:"rpm"`
		Burst       int               `json:"burst"`
		Tokens      int               `json:"tokens"`
		Decided     *time.Time        `json:"decided,omitempty"`
		Refused     map[string]uint64 `json:"refused"`
		ClientRPM   int               `json:"client_rpm,omitempty"`
		ClientBurst int               `json:"client_burst,omitempty"`
	}
	var list []egress
	var spent []string
	for _, b := range st.origin.Budget() {
		e := egress{Egress: b.Egress, RPM: b.RPM, Burst: b.Burst, Tokens: b.Tokens, Refused: b.Refused, ClientRPM: b.ClientRPM, ClientBurst: b.ClientBurst}
		if !b.Decided.IsZero() {
			t := b.Decided.UTC()
			e.Decided = &t
			if b.Tokens == 0 && time.Since(t) < budgetSpentLately {
				spent = append(spent, b.Egress)
			}
		}
		list = append(list, e)
	}
	res := server.CheckResult{Status: server.ReadyOK, Data: map[string]any{"egresses": list}}
	if len(spent) > 0 {
		res.Status = server.ReadyDegraded
		res.Detail = "the origin budget (ORIGIN_RPM) of " + strings.Join(spent, ", ") + " is spent: stale copies are served longer, the updater slows down, pages no tier holds are refused with Retry-After"
	}
	return res
}

func (st *stack) cacheReady(ctx context.Context) server.CheckResult {
	v, ok := st.pageCache.(*cache.Valkey)
	if !ok {
		return server.CheckResult{Status: server.ReadyOK, Data: map[string]any{"tier": "embedded"}}
	}
	err := v.Ping(ctx)
	data := map[string]any{"tier": "valkey", "breaker": v.BreakerState()}
	if err != nil {
		return server.CheckResult{
			Status: server.ReadyDegraded,
			Detail: "valkey unreachable; serving from this process's embedded tier: " + err.Error(),
			Data:   data,
		}
	}
	return server.CheckResult{Status: server.ReadyOK, Data: data}
}

func (st *stack) originReady(context.Context) server.CheckResult {
	hosts := st.origin.Health()
	type hostData struct {
		Egress     string     `json:"egress"`
		Host       string     `json:"host"`
		Breaker    string     `json:"breaker"`
		LastAnswer *time.Time `json:"last_answer,omitempty"`
	}
	var (
		list    []hostData
		open    int
		lastAny time.Time
	)
	for _, h := range hosts {
		d := hostData{Egress: h.Egress, Host: h.Host, Breaker: h.Breaker}
		if !h.Answer.IsZero() {
			t := h.Answer.UTC()
			d.LastAnswer = &t
			if t.After(lastAny) {
				lastAny = t
			}
		}
		if h.Breaker == "open" {
			open++
		}
		list = append(list, d)
	}
	res := server.CheckResult{Status: server.ReadyOK, Data: map[string]any{"hosts": list}}
	switch {
	case open == len(hosts) && time.Since(lastAny) > originStale:
		res.Status = server.ReadyDown
		res.Detail = "every origin host's circuit breaker is open and none answered in the last " + originStale.String() + "; only cached pages can be served"
	case open == len(hosts):
		res.Status = server.ReadyDegraded
		res.Detail = "every origin host's circuit breaker is open, after an answer less than " + originStale.String() + " ago"
	case open > 0:
		res.Status = server.ReadyDegraded
		res.Detail = "an origin host's circuit breaker is open; requests go to the other hosts or egresses"
	}
	return res
}
