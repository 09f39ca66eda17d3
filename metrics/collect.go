package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FuncCollector reports one metric whose values a function reads at scrape
// time: the sizes and counters that stores keep anyway, so that nothing is
// added to the request path.
type FuncCollector struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	read func(emit func(value float64, labelValues ...string))
}

// NewFuncCollector returns a collector of the metric tmefeed_<subsystem>_<n>
// (subsystem may be empty). read calls emit once per series, with as many
// label values as labels.
func NewFuncCollector(subsystem, n, help string, typ prometheus.ValueType, labels []string, read func(emit func(value float64, labelValues ...string))) *FuncCollector {
	return &FuncCollector{desc: prometheus.NewDesc(name(subsystem, n), help, labels, nil), typ: typ, read: read}
}

// NewFuncCollectorNamed is NewFuncCollector with the full metric name.
func NewFuncCollectorNamed(fullName, help string, typ prometheus.ValueType, labels []string, read func(emit func(value float64, labelValues ...string))) *FuncCollector {
	return &FuncCollector{desc: prometheus.NewDesc(fullName, help, labels, nil), typ: typ, read: read}
}

func (c *FuncCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *FuncCollector) Collect(ch chan<- prometheus.Metric) {
	c.read(func(v float64, lv ...string) {
		m, err := prometheus.NewConstMetric(c.desc, c.typ, v, lv...)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.desc, err)
		}
		ch <- m
	})
}

// BreakerValue is a breaker state as a gauge value: 0 closed, 1 half-open,
// 2 open (-1 unknown).
func BreakerValue(state string) float64 {
	switch state {
	case "closed":
		return 0
	case "half-open":
		return 1
	case "open":
		return 2
	}
	return -1
}

// LiveStats is what the live updater and subscriptions report, read at
// scrape time by NewLiveCollector.
type LiveStats struct {
	UpdaterCycles    uint64        // update cycles completed since start
	UpdaterLag       time.Duration // how far past its refresh point the latest page was when the last cycle refreshed it
	UpdaterTracked   int           // channels the last cycle kept fresh (popular and watched)
	UpdaterRefreshes uint64        // page loads the updater made
	UpdaterErrors    uint64        // of which failed
	Subscriptions    int           // subscriptions open now
	EventsPublished  uint64        // change events this process found and sent
	EventsDelivered  uint64        // events handed to this process's subscribers
	SlowClosed       uint64        // subscriptions ended because their reader fell behind
}

// LiveCollector reports LiveStats. It is registered by whoever runs the
// updater: until then none of its series exist.
type LiveCollector struct {
	stats                                   func() LiveStats
	cycles, lag, tracked, refreshes, errors *prometheus.Desc
	subsOpen, published, delivered, slow    *prometheus.Desc
}

// NewLiveCollector returns a collector over stats.
func NewLiveCollector(stats func() LiveStats) *LiveCollector {
	return &LiveCollector{
		stats:     stats,
		cycles:    prometheus.NewDesc(name("updater", "cycles_total"), "Update cycles of the live updater completed.", nil, nil),
		lag:       prometheus.NewDesc(name("updater", "lag_seconds"), "How far the live updater is behind: how far past its refresh point the latest page was when the last cycle refreshed it.", nil, nil),
		tracked:   prometheus.NewDesc(name("updater", "tracked_channels"), "Channels the last update cycle kept fresh (the most read and those with a subscriber).", nil, nil),
		refreshes: prometheus.NewDesc(name("updater", "refreshes_total"), "Page loads the live updater made (fresh copies found included).", nil, nil),
		errors:    prometheus.NewDesc(name("updater", "errors_total"), "Page loads of the live updater that failed.", nil, nil),
		subsOpen:  prometheus.NewDesc(name("graphql", "subscriptions_open"), "GraphQL subscriptions open.", nil, nil),
		published: prometheus.NewDesc(name("live", "events_published_total"), "Change events (new, edited, removed posts) this process found and sent to every process.", nil, nil),
		delivered: prometheus.NewDesc(name("live", "events_delivered_total"), "Change events handed to this process's subscribers.", nil, nil),
		slow:      prometheus.NewDesc(name("live", "slow_subscribers_total"), "Subscriptions ended because their reader fell behind its buffer.", nil, nil),
	}
}

func (c *LiveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cycles, c.lag, c.tracked, c.refreshes, c.errors, c.subsOpen, c.published, c.delivered, c.slow} {
		ch <- d
	}
}

func (c *LiveCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.cycles, prometheus.CounterValue, float64(s.UpdaterCycles))
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.UpdaterLag.Seconds())
	ch <- prometheus.MustNewConstMetric(c.tracked, prometheus.GaugeValue, float64(s.UpdaterTracked))
	ch <- prometheus.MustNewConstMetric(c.refreshes, prometheus.CounterValue, float64(s.UpdaterRefreshes))
	ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(s.UpdaterErrors))
	ch <- prometheus.MustNewConstMetric(c.subsOpen, prometheus.GaugeValue, float64(s.Subscriptions))
	ch <- prometheus.MustNewConstMetric(c.published, prometheus.CounterValue, float64(s.EventsPublished))
	ch <- prometheus.MustNewConstMetric(c.delivered, prometheus.CounterValue, float64(s.EventsDelivered))
	ch <- prometheus.MustNewConstMetric(c.slow, prometheus.CounterValue, float64(s.SlowClosed))
}
