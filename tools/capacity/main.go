// Command capacity sizes a deployment on paper: how many requests a minute
// Telegram sees from tmefeed for a number of channels, a refresh window,
// readers whose attention follows Zipf's law and a number of processes,
// how fresh the pages readers get are, and how many egress addresses
// (ORIGIN_PROXIES) that takes at a given ORIGIN_RPM per address.
//
// It simulates what the cache and the updater do, channel by channel, with
// reads arriving at random (Poisson) at each channel's share of the total:
//
//   - The updater keeps the -top most read channels fresh: one fetch per
//     window each, and every read of them is fresh.
//   - Any other channel is fetched when a read finds no copy (a miss: the
//     reader waits for the fetch) or a copy past its refresh point (served
//     stale while one fetch refreshes it; past the hard TTL the copy is
//     gone and the read is a miss).
//   - With Valkey, every process shares one copy per page and one lease,
//     so the processes count as one. Without it each process keeps its own
//     copies and runs its own updater; reads are spread over the processes
//     evenly, as a round-robin load balancer does.
//
// The cache is assumed to hold every page read (size Valkey or
// MEMORY_CACHE_MAX_MB for it). The run is seeded, so the same flags give
// the same table.
//
//	go run ./tools/capacity                                 # the table of docs/OPERATIONS.md
//	go run ./tools/capacity -write docs/OPERATIONS.md       # rewrite it there (make capacity)
//	go run ./tools/capacity -channels 50000 -windows 30s -origin-rpm 1200
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/internal/docsection"
)

const (
	beginMarker = "<!-- capacity:begin -->"
	endMarker   = "<!-- capacity:end -->"
)

// params is one simulated deployment.
type params struct {
	Channels  int
	Window    time.Duration // the refresh window (CACHE_MODE)
	Processes int
	Valkey    bool    // processes share one cache
	Reads     float64 // reads a minute per channel, on average over all channels
	Zipf      float64 // exponent of the readers' popularity
	Top       int     // UPDATER_TOP
	OriginRPM int     // the budget of one egress address
	Warmup    time.Duration
	Measure   time.Duration
	Seed      uint64
}

// result is what one simulation found.
type result struct {
	ReadsPerMin   float64
	OriginPerMin  float64 // every fetch: the updater's and the readers'
	UpdaterPerMin float64
	Fresh         float64 // share of reads answered with a copy younger than the window
	Missed        float64 // share of reads that waited for a fetch
	StaleP99      time.Duration
	Egresses      int // addresses needed at OriginRPM
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	channels := fs.String("channels", "1000,10000,100000", "numbers of channels, comma-separated")
	windows := fs.String("windows", "10s,120s", "refresh windows, comma-separated (CACHE_MODE normal = 10s, aggressive = 120s)")
	processes := fs.Int("processes", 3, "tmefeed processes")
	reads := fs.Float64("reads", 1, "reads a minute per channel, on average")
	zipf := fs.Float64("zipf", 1, "Zipf exponent of the channels' popularity (1: the k-th most read channel gets 1/k of the first's reads)")
	top := fs.Int("top", 200, "UPDATER_TOP: the most read channels the updater keeps fresh")
	originRPM := fs.Int("origin-rpm", 600, "ORIGIN_RPM: requests a minute one egress address may send")
	seed := fs.Uint64("seed", 1, "random seed")
	write := fs.String("write", "", "replace the table between the capacity markers of this Markdown file instead of printing it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	ns, err := parseList(*channels, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("-channels: %q is not a positive whole number", s)
		}
		return n, nil
	})
	if err != nil {
		return err
	}
	ws, err := parseList(*windows, func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second {
			return 0, fmt.Errorf("-windows: %q is not a duration of at least 1s", s)
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	switch {
	case *processes < 1:
		return errors.New("-processes: want at least 1")
	case *reads <= 0 || math.IsInf(*reads, 0) || math.IsNaN(*reads):
		return errors.New("-reads: want a positive number")
	case *zipf < 0 || *zipf > 5:
		return errors.New("-zipf: want 0..5")
	case *top < 0:
		return errors.New("-top: want 0 or more")
	case *originRPM < 1:
		return errors.New("-origin-rpm: want at least 1")
	}
	base := params{Processes: *processes, Reads: *reads, Zipf: *zipf, Top: *top, OriginRPM: *originRPM,
		Measure: 15 * time.Minute, Seed: *seed}
	var shown []string // the flags that change the table, for its caption
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "write" {
			shown = append(shown, "-"+f.Name+" "+f.Value.String())
		}
	})
	table := render(base, ns, ws, strings.Join(shown, " "))
	if *write == "" {
		_, err := io.WriteString(out, table)
		return err
	}
	doc, err := os.ReadFile(*write)
	if err != nil {
		return err
	}
	updated, err := replaceSection(string(doc), table)
	if err != nil {
		return fmt.Errorf("%s: %w", *write, err)
	}
	return os.WriteFile(*write, []byte(updated), 0o644)
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for item := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// render simulates every combination and writes the Markdown table: for
// each number of channels and window, the processes sharing Valkey and the
// same processes without it.
func render(base params, channels []int, windows []time.Duration, flags string) string {
	var b strings.Builder
	cmd := "go run ./tools/capacity"
	if flags != "" {
		cmd += " " + flags
	}
	fmt.Fprintf(&b, "`%s` — %d processes; readers make %g reads a minute per channel on average, spread over the channels by Zipf's law (exponent %g); UPDATER_TOP %d; ORIGIN_RPM %d per address:\n\n",
		cmd, base.Processes, base.Reads, base.Zipf, base.Top, base.OriginRPM)
	b.WriteString("| channels | refresh window | cache | reads/min | origin requests/min | of which the updater | reads fresh | reads waiting for a fetch | stale reads' age, p99 | egress addresses |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range channels {
		for _, w := range windows {
			for _, valkey := range []bool{true, false} {
				p := base
				p.Channels, p.Window, p.Valkey = n, w, valkey
				// Long enough that every copy a reader could find is
				// there: the hard TTL.
				p.Warmup = max(15*time.Minute, hardTTL(w))
				r := simulate(p)
				cache := "Valkey, shared"
				if !valkey {
					cache = "embedded, per process"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.1f %% | %.1f %% | %s | %d |\n",
					thousands(n), w, cache, thousands(int(math.Round(r.ReadsPerMin))), thousands(int(math.Round(r.OriginPerMin))),
					thousands(int(math.Round(r.UpdaterPerMin))), 100*r.Fresh, 100*r.Missed, r.StaleP99.Round(time.Second), r.Egresses)
			}
		}
	}
	return b.String()
}

// simulate runs one deployment: each channel's reads over Warmup+Measure,
// counting what falls in Measure.
func simulate(p params) result {
	rng := rand.New(rand.NewPCG(p.Seed, uint64(p.Channels)<<20^uint64(p.Window/time.Second)))
	caches := 1 // independent copies of each page
	if !p.Valkey {
		caches = p.Processes
	}
	weights := make([]float64, p.Channels)
	var sum float64
	for k := range weights {
		weights[k] = math.Pow(float64(k+1), -p.Zipf)
		sum += weights[k]
	}
	total := p.Reads * float64(p.Channels) // reads a minute
	end := (p.Warmup + p.Measure).Seconds()
	from := p.Warmup.Seconds()
	win, hard := p.Window.Seconds(), hardTTL(p.Window).Seconds()

	var (
		reads, fresh, missed, fetches float64
		staleAges                     []float64
	)
	last := make([]float64, caches) // each copy's fetch time; -Inf: none yet
	for k, w := range weights {
		perCopy := total * w / sum / 60 / float64(caches) // reads a second reaching one copy
		if k < p.Top {
			// Refreshed by the updater once per window, read fresh. Each
			// copy has its own updater.
			r := perCopy * float64(caches) * p.Measure.Seconds()
			reads += r
			fresh += r
			continue
		}
		for c := range last {
			last[c] = math.Inf(-1)
		}
		for c := range caches {
			for t := rng.ExpFloat64() / perCopy; t < end; t += rng.ExpFloat64() / perCopy {
				age := t - last[c]
				counted := t >= from
				switch {
				case age < win:
					if counted {
						fresh++
					}
				case age < hard:
					last[c] = t // served stale, refreshed by one fetch
					if counted {
						fetches++
						staleAges = append(staleAges, age)
					}
				default:
					last[c] = t // nothing held: the reader waits for the fetch
					if counted {
						fetches++
						missed++
						fresh++ // what it gets is new
					}
				}
				if counted {
					reads++
				}
			}
		}
	}
	minutes := p.Measure.Minutes()
	updater := float64(min(p.Top, p.Channels)*caches) * 60 / win
	res := result{
		ReadsPerMin:   reads / minutes,
		UpdaterPerMin: updater,
		OriginPerMin:  fetches/minutes + updater,
		Fresh:         fresh / max(reads, 1),
		Missed:        missed / max(reads, 1),
	}
	if len(staleAges) > 0 {
		sort.Float64s(staleAges)
		res.StaleP99 = time.Duration(staleAges[(len(staleAges)*99)/100] * float64(time.Second))
	}
	res.Egresses = int(math.Ceil(res.OriginPerMin / float64(p.OriginRPM)))
	return res
}

// hardTTL is cache.DefaultHardTTL: how long a copy is kept past its
// refresh point, to be served stale.
func hardTTL(window time.Duration) time.Duration { return max(30*window, 10*time.Minute) }

// thousands writes n with commas: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// replaceSection puts table between the markers of doc, keeping the rest.
func replaceSection(doc, table string) (string, error) {
	return docsection.Replace(doc, beginMarker, endMarker, table)
}
