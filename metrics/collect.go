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
	UpdaterCycles uint64        // update cycles completed since start
	UpdaterLag    time.Duration // how far the oldest watched page is behind its refresh point
	Subscriptions int           // subscriptions open now
}

// LiveCollector reports LiveStats. It is registered by whoever runs the
// updater: until then none of its series exist.
type LiveCollector struct {
	stats                 func() LiveStats
	cycles, lag, subsOpen *prometheus.Desc
}

// NewLiveCollector returns a collector over stats.
func NewLiveCollector(stats func() LiveStats) *LiveCollector {
	return &LiveCollector{
		stats:    stats,
		cycles:   prometheus.NewDesc(name("updater", "cycles_total"), "Update cycles of the live updater completed.", nil, nil),
		lag:      prometheus.NewDesc(name("updater", "lag_seconds"), "How far the live updater is behind: the oldest watched page's age past its refresh point.", nil, nil),
		subsOpen: prometheus.NewDesc(name("graphql", "subscriptions_open"), "GraphQL subscriptions open.", nil, nil),
	}
}

func (c *LiveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cycles
	ch <- c.lag
	ch <- c.subsOpen
}

func (c *LiveCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.cycles, prometheus.CounterValue, float64(s.UpdaterCycles))
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.UpdaterLag.Seconds())
	ch <- prometheus.MustNewConstMetric(c.subsOpen, prometheus.GaugeValue, float64(s.Subscriptions))
}
