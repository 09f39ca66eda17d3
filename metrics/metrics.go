// Package metrics is tmefeed's Prometheus instrumentation: one registry per
// process (never the client library's global one), the per-request series
// the HTTP face updates, the event counters the cache and origin hooks
// feed, and collectors that read the stores' own statistics at scrape time
// rather than on every request.
//
// Every name starts with tmefeed_. Labels are bounded: routes are the
// router's patterns, never raw paths; GraphQL operation names are capped
// (see HTTP.Operation); hosts are the configured origins.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric name.
const Namespace = "tmefeed"

// Registry is one process's metrics.
type Registry struct {
	reg    *prometheus.Registry
	HTTP   *HTTP
	Origin *Origin
}

// New returns a registry with the HTTP and origin series and the Go
// runtime and process collectors.
func New() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	r := &Registry{reg: reg, HTTP: newHTTP(), Origin: newOrigin()}
	r.HTTP.register(reg)
	r.Origin.register(reg)
	return r
}

// Register adds a collector, such as one made by NewFuncCollector or
// NewLiveCollector.
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Gatherer is the registry, for reading it in tests and tools.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		// A failing collector should not hide every other series.
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// name is a metric name in tmefeed's namespace.
func name(subsystem, n string) string {
	return prometheus.BuildFQName(Namespace, subsystem, n)
}
