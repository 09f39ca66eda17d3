// Package bench measures tmefeed's performance figures as ratios against a
// baseline measured in the same run, alternating the two so that a noisy,
// shared machine shifts both alike. `tmefeed bench` prints them;
// docs/PERFORMANCE.md gives each with its command.
package bench

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Sample is the cost of one operation, averaged over a measured loop.
type Sample struct {
	N      int
	Wall   time.Duration // per operation
	CPU    time.Duration // process CPU (user + system) per operation
	Allocs float64       // heap allocations per operation
	Bytes  float64       // heap bytes allocated per operation
}

// Measure runs f once to warm up, then repeatedly for about d (at least
// min times), and returns the cost per call.
func Measure(d time.Duration, minN int, f func()) Sample {
	f()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cpu0 := processCPU()
	start := time.Now()
	n := 0
	for n < minN || time.Since(start) < d {
		f()
		n++
	}
	wall := time.Since(start)
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&m1)
	return Sample{
		N:      n,
		Wall:   wall / time.Duration(n),
		CPU:    cpu / time.Duration(n),
		Allocs: float64(m1.Mallocs-m0.Mallocs) / float64(n),
		Bytes:  float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n),
	}
}

// Alternate measures each of fs in turn, rounds times, and returns each
// one's samples, so that ratios can be taken round by round.
func Alternate(rounds int, d time.Duration, fs ...func()) [][]Sample {
	out := make([][]Sample, len(fs))
	for range rounds {
		for i, f := range fs {
			out[i] = append(out[i], Measure(d, 3, f))
		}
	}
	return out
}

// MedianRatio is the median over rounds of a's metric over b's.
func MedianRatio(a, b []Sample, metric func(Sample) float64) float64 {
	rs := make([]float64, 0, len(a))
	for i := range a {
		if d := metric(b[i]); d > 0 {
			rs = append(rs, metric(a[i])/d)
		}
	}
	return Median(rs)
}

// MedianSample is the sample of median wall time.
func MedianSample(s []Sample) Sample {
	c := slices.Clone(s)
	slices.SortFunc(c, func(a, b Sample) int { return int(a.Wall - b.Wall) })
	return c[len(c)/2]
}

// Median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := slices.Clone(xs)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

// Wall and CPU in microseconds, for ratios and tables.
func Wall(s Sample) float64 { return float64(s.Wall) / 1e3 }
func CPU(s Sample) float64  { return float64(s.CPU) / 1e3 }

// processCPU is this process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Table writes rows as a Markdown table, the first row its header.
func Table(w io.Writer, rows [][]string) {
	for i, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(r)))
		}
	}
}

// us formats microseconds.
func us(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
