// Command multiproc checks that tmefeed processes sharing one Valkey fetch
// each page from the origin once per refresh window, however many of them
// serve it.
//
// It starts a redis-server on a loopback port (or uses --valkey-url), the
// fixture origin with a t.me-like latency, and --procs `tmefeed serve`
// processes pointed at both; then --clients clients per process request a
// fixed mix of REST paths for --duration. It reports the origin's request
// count per page against the minimum (distinct pages × refresh windows) and
// exits 1 if any page was fetched more often, or any request failed.
//
//	go run ./tools/multiproc                       # 3 procs × 32 clients, 20 s, 150 ms origin
//	go run ./tools/multiproc -duration 5s -procs 2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/procbin"
	"github.com/tmefeed/tmefeed/internal/proxytest"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

// config is one run.
type config struct {
	Bin       string        // tmefeed binary; empty = build it
	Race      bool          // build with -race
	Procs     int           // tmefeed serve processes
	Clients   int           // concurrent clients per process
	Duration  time.Duration // how long clients send requests
	Latency   time.Duration // fixture origin delay per answer
	CacheMode string        // CACHE_MODE of the processes
	Synthetic int           // synthetic channels added to the mix
	ValkeyURL string        // empty = start a redis-server (or a cluster)
	// ValkeyDelay, with the redis-server the run starts, puts it behind a
	// proxy delaying every byte this long each way: a Valkey on another
	// machine.
	ValkeyDelay time.Duration
	Log         io.Writer // progress and process output on failure

	// ClusterNodes > 0 (and no ValkeyURL or Cluster) starts a Redis Cluster
	// of that many nodes instead of one server.
	ClusterNodes int
	// Cluster is a running cluster to use instead (tests start their own).
	Cluster *redistest.Cluster
	// KillAfter > 0 stops the cluster's second node this long into the
	// load, for good: the run then checks that no request failed, and
	// reports the origin requests the outage cost.
	KillAfter time.Duration
	// Late synthetic channels are first requested after the kill, so some
	// pages are cold while the cluster is down.
	Late int
	// Burst: before the load, every client of every process asks for one
	// cold page at the same moment; it must reach the origin once.
	Burst bool
}

// target is one request of the mix and the origin request it needs.
type target struct {
	path   string // REST path on tmefeed
	origin string // fixture origin path counted for it, query included
	late   bool   // requested only after the kill
}

// newest reports whether the target's page is a channel's newest page
// (/s/<channel>), the one the background updater keeps fresh.
func (t target) newest() bool {
	ch, ok := strings.CutPrefix(t.origin, "/s/")
	return ok && !strings.ContainsAny(ch, "/?")
}

// updaterLead is how long before a page's refresh point the updater
// fetches its next copy: its default, a quarter of the refresh point
// (live.UpdaterConfig.Lead).
func updaterLead(refresh time.Duration) time.Duration { return refresh / 4 }

// mix is the fixed request mix: every REST read endpoint over recorded
// pages, plus synthetic channel pages.
func mix(synthetic, late int) []target {
	recorded := []string{"emoji_party", "hadashot_today", "just_launched", "kanal_novostei", "retro_channel", "tmefeed_news"}
	var ts []target
	for _, ch := range recorded {
		ts = append(ts,
			target{path: "/v1/body/" + ch, origin: "/s/" + ch},
			target{path: "/v1/preview/" + ch, origin: "/" + ch},
		)
	}
	ts = append(ts,
		target{path: "/v1/body/tmefeed_news?position=14", origin: "/s/tmefeed_news/14"},
		target{path: "/v1/post/tmefeed_news/14", origin: "/s/tmefeed_news/14"}, // same page as the line above
		target{path: "/v1/more/tmefeed_news/before/32", origin: "/s/tmefeed_news?before=32"},
		target{path: "/v1/more/tmefeed_news/after/24", origin: "/s/tmefeed_news?after=24"},
		target{path: "/v1/more/retro_channel/before/4", origin: "/s/retro_channel?before=4"},
		target{path: "/v1/more/kanal_novostei/before/1196", origin: "/s/kanal_novostei?before=1196"},
	)
	for i := 1; i <= synthetic+late; i++ {
		ch := fmt.Sprintf("loadchan%03d", i)
		ts = append(ts, target{path: "/v1/body/" + ch, origin: "/s/" + ch, late: i > synthetic})
	}
	return ts
}

// report is what a run measured.
type report struct {
	Requests     int64            // answered by tmefeed
	Failures     map[string]int64 // "status path" → count
	Elapsed      time.Duration
	P50, P99     time.Duration
	Pages        int              // distinct origin pages in the mix
	Newest       int              // of those, channels' newest pages, kept fresh by the updater
	Windows      int              // refresh windows in the run
	KeptWindows  int              // refresh windows the updater serves for the newest pages: it fetches each window's copy ahead of it, so the window after the run counts when it starts within the lead of the run's end
	Minimum      int64            // one fetch per page per window: (Pages − Newest) × Windows + Newest × KeptWindows
	OriginTotal  int64            // requests the origin received
	PerPage      map[string]int64 // origin requests per page
	Expected     map[string]int64 // the minimum per page
	ValkeyGets   int64            // GETs the Valkey server answered (-1 unknown)
	ValkeyWrites int64            // SETs the Valkey server answered (-1 unknown)
	Valkey       string           // what the processes shared: "redis-server" or "3-node cluster"

	KilledAt time.Duration // when a cluster node was stopped; 0 = never
	Late     int           // pages first requested after the kill

	BurstRequests int64 // simultaneous requests for the burst page (0 = no burst)
	BurstFetches  int64 // origin requests they caused
	BurstFailures int64
}

// ok says whether the run met the minimum with no failed request. After
// a lost cluster node, processes load on their own: then no request may
// fail and every page must have been fetched, but the count may exceed
// the minimum.
func (r report) ok() bool {
	if len(r.Failures) > 0 || r.BurstFailures > 0 || (r.BurstRequests > 0 && r.BurstFetches != 1) {
		return false
	}
	if r.KilledAt > 0 {
		for _, n := range r.PerPage {
			if n < 1 {
				return false
			}
		}
		return true
	}
	if r.OriginTotal != r.Minimum {
		return false
	}
	for p, n := range r.PerPage {
		if n != r.Expected[p] {
			return false
		}
	}
	return true
}

func (r report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests answered: %d in %v (%.0f/s), latency p50 %v p99 %v\n",
		r.Requests, r.Elapsed.Round(time.Millisecond), float64(r.Requests)/r.Elapsed.Seconds(), r.P50, r.P99)
	if r.BurstRequests > 0 {
		fmt.Fprintf(&b, "cold burst:        %d simultaneous requests for one page, %d failed, %d origin request(s)\n",
			r.BurstRequests, r.BurstFailures, r.BurstFetches)
	}
	if r.KilledAt > 0 {
		fmt.Fprintf(&b, "cluster node lost: at %v, for the rest of the run; %d pages first requested after\n", r.KilledAt.Round(time.Millisecond), r.Late)
	}
	fmt.Fprintf(&b, "failed requests:   %d\n", sum(r.Failures))
	for k, n := range r.Failures {
		fmt.Fprintf(&b, "  %5d × %s\n", n, k)
	}
	fmt.Fprintf(&b, "origin requests:   %d; minimum = one per page per refresh window = %d other pages × %d windows + %d newest pages × %d windows = %d\n",
		r.OriginTotal, r.Pages-r.Newest, r.Windows, r.Newest, r.KeptWindows, r.Minimum)
	if r.KeptWindows != r.Windows {
		fmt.Fprintf(&b, "                   (the updater fetched the newest pages' copies for the window after the run ahead of it)\n")
	}
	pages := slices.Sorted(mapKeys(r.PerPage))
	for _, p := range pages {
		mark := ""
		if r.PerPage[p] != r.Expected[p] && r.KilledAt == 0 {
			mark = "   <-- expected " + strconv.FormatInt(r.Expected[p], 10)
		}
		fmt.Fprintf(&b, "  %3d  %s%s\n", r.PerPage[p], p, mark)
	}
	if r.ValkeyGets >= 0 {
		fmt.Fprintf(&b, "valkey (%s): %d GET, %d SET (the rest of the reads were client-side cache hits)\n", r.Valkey, r.ValkeyGets, r.ValkeyWrites)
	}
	switch {
	case r.ok() && r.KilledAt > 0:
		fmt.Fprintf(&b, "PASS: no failed request across the node loss; %d origin requests, %d without the outage\n", r.OriginTotal, r.Minimum)
	case r.ok():
		b.WriteString("PASS: origin requests equal the minimum\n")
	default:
		b.WriteString("FAIL\n")
	}
	return b.String()
}

func main() {
	var cfg config
	flag.StringVar(&cfg.Bin, "bin", "", "tmefeed binary (default: build ./cmd/tmefeed into a temporary directory)")
	flag.BoolVar(&cfg.Race, "race", false, "build the binary with the race detector")
	flag.IntVar(&cfg.Procs, "procs", 3, "tmefeed serve processes")
	flag.IntVar(&cfg.Clients, "clients", 32, "concurrent clients per process")
	flag.DurationVar(&cfg.Duration, "duration", 20*time.Second, "how long the clients send requests")
	flag.DurationVar(&cfg.Latency, "latency", 150*time.Millisecond, "fixture origin latency")
	flag.StringVar(&cfg.CacheMode, "cache-mode", "normal", "CACHE_MODE of the processes: normal or aggressive")
	flag.IntVar(&cfg.Synthetic, "synthetic", 20, "synthetic channels added to the request mix")
	flag.StringVar(&cfg.ValkeyURL, "valkey-url", "", "use this Valkey instead of starting a redis-server (it should be empty)")
	flag.DurationVar(&cfg.ValkeyDelay, "valkey-delay", 0, "put the redis-server the run starts behind a loopback proxy delaying every byte this long each way, as a Valkey on another machine (e.g. 2ms)")
	flag.IntVar(&cfg.ClusterNodes, "cluster", 0, "start a Redis Cluster of this many nodes (at least 3) instead of one redis-server")
	flag.DurationVar(&cfg.KillAfter, "kill-node-after", 0, "with -cluster: stop one node this long into the load")
	flag.IntVar(&cfg.Late, "late", 0, "with -kill-node-after: synthetic channels first requested after the node is lost")
	flag.BoolVar(&cfg.Burst, "burst", false, "first, every client asks for one cold page at the same moment")
	flag.Parse()
	cfg.Log = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "multiproc:", err)
		os.Exit(1)
	}
	fmt.Print(r)
	if !r.ok() {
		os.Exit(1)
	}
}

// run performs one measurement; an error means the run itself broke.
func run(ctx context.Context, cfg config) (report, error) {
	refresh, err := cache.RefreshFor(cfg.CacheMode)
	if err != nil || refresh == 0 {
		return report{}, fmt.Errorf("cache mode %q: want normal or aggressive", cfg.CacheMode)
	}
	if cfg.Procs < 1 || cfg.Clients < 1 || cfg.Duration <= 0 {
		return report{}, errors.New("procs, clients and duration must be positive")
	}
	if cfg.ValkeyDelay > 0 && (cfg.Cluster != nil || cfg.ClusterNodes > 0 || cfg.ValkeyURL != "") {
		return report{}, errors.New("-valkey-delay applies to the redis-server the run starts, not to a cluster or -valkey-url")
	}
	if cfg.KillAfter > 0 && cfg.Cluster == nil && (cfg.ClusterNodes < 3 || cfg.ValkeyURL != "") {
		return report{}, errors.New("a node can be killed only in a cluster the run starts (-cluster 3 or more)")
	}
	if cfg.Synthetic+cfg.Late+1 > 999 {
		return report{}, errors.New("at most 998 synthetic and late channels together")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "multiproc-")
	if err != nil {
		return report{}, err
	}
	defer os.RemoveAll(dir)

	bin := cfg.Bin
	if bin == "" {
		if bin, err = procbin.Build(ctx, dir, cfg.Race, cfg.Log); err != nil {
			return report{}, err
		}
	}

	// nodes are the servers whose command counts are reported.
	var nodes []*redistest.Server
	valkeyURL, cluster, shared := cfg.ValkeyURL, cfg.Cluster, "redis-server"
	switch {
	case cluster != nil:
		valkeyURL = cluster.URL
	case valkeyURL != "":
		shared = "Valkey at " + valkeyURL
	case cfg.ClusterNodes > 0:
		if cluster, err = redistest.LaunchCluster(cfg.ClusterNodes); err != nil {
			return report{}, err
		}
		defer cluster.Close()
		valkeyURL = cluster.URL
	default:
		srv, err := redistest.Launch()
		if err != nil {
			return report{}, err
		}
		defer srv.Close()
		valkeyURL, nodes = srv.URL, []*redistest.Server{srv}
		if cfg.ValkeyDelay > 0 {
			proxy, err := proxytest.NewDelayProxy(srv.Addr, cfg.ValkeyDelay)
			if err != nil {
				return report{}, err
			}
			defer proxy.Close()
			valkeyURL = "redis://" + proxy.Addr() + "/0"
			shared = fmt.Sprintf("redis-server behind %v each way", cfg.ValkeyDelay)
		}
	}
	if cluster != nil {
		nodes, shared = cluster.Nodes, fmt.Sprintf("%d-node cluster", len(cluster.Nodes))
	}

	burstChannel := fmt.Sprintf("loadchan%03d", cfg.Synthetic+cfg.Late+1)
	o := fixtures.NewOrigin(fixtures.OriginOptions{Latency: cfg.Latency, Synthetic: cfg.Synthetic + cfg.Late + 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return report{}, err
	}
	originSrv := &http.Server{Handler: o, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = originSrv.Serve(ln) }()
	defer originSrv.Close()
	originURL := "http://" + ln.Addr().String()

	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for i := range cfg.Procs {
		p, err := startProc(ctx, bin, dir, i, map[string]string{
			"TME_ORIGIN": originURL,
			"VALKEY_URL": valkeyURL,
			"CACHE_MODE": cfg.CacheMode,
			"LOG_LEVEL":  "warn",
			// The updater is on (the default): it fetches the newest
			// pages ahead of their refresh points, once per window across
			// the processes, through the same lease as the clients.
		})
		if err != nil {
			return report{}, err
		}
		procs = append(procs, p)
	}
	fmt.Fprintf(cfg.Log, "%d tmefeed processes over %s (%s), origin %s with %v latency; %d clients each for %v\n",
		cfg.Procs, shared, valkeyURL, originURL, cfg.Latency, cfg.Clients, cfg.Duration)

	getsBefore, setsBefore := calls(ctx, nodes, "get"), calls(ctx, nodes, "set")

	var burst report
	if cfg.Burst {
		burst = coldBurst(ctx, procs, cfg.Clients, "/v1/body/"+burstChannel)
		burst.BurstFetches = o.Requests("/s/" + burstChannel)
	}

	targets := mix(cfg.Synthetic, cfg.Late)
	var lateOpen atomic.Bool
	lateOpen.Store(cfg.KillAfter <= 0)
	var killedAt atomic.Int64 // time.Duration
	if cfg.KillAfter > 0 {
		lost := cluster.Nodes[1%len(cluster.Nodes)]
		start := time.Now()
		killer := time.AfterFunc(cfg.KillAfter, func() {
			lost.Stop()
			at := time.Since(start)
			killedAt.Store(int64(at))
			lateOpen.Store(true)
			fmt.Fprintf(cfg.Log, "stopped cluster node %s at %v\n", lost.Addr, at.Round(time.Millisecond))
		})
		defer killer.Stop()
	}
	r := load(ctx, procs, cfg.Clients, cfg.Duration, targets, &lateOpen)
	if err := ctx.Err(); err != nil {
		return report{}, err
	}
	r.Valkey, r.KilledAt, r.Late = shared, time.Duration(killedAt.Load()), cfg.Late
	r.BurstRequests, r.BurstFailures, r.BurstFetches = burst.BurstRequests, burst.BurstFailures, burst.BurstFetches
	// Let background refreshes started by the last requests finish.
	time.Sleep(cfg.Latency + 500*time.Millisecond)

	r.Windows = int(math.Ceil(float64(cfg.Duration) / float64(refresh)))
	r.KeptWindows = int(math.Ceil(float64(cfg.Duration+updaterLead(refresh)) / float64(refresh)))
	r.PerPage, r.Expected = map[string]int64{}, map[string]int64{}
	for _, t := range targets {
		if _, seen := r.PerPage[t.origin]; seen {
			continue
		}
		r.PerPage[t.origin] = o.Requests(t.origin)
		r.Expected[t.origin] = int64(r.Windows)
		if t.newest() {
			r.Newest++
			r.Expected[t.origin] = int64(r.KeptWindows)
		}
		r.Minimum += r.Expected[t.origin]
	}
	r.Pages = len(r.PerPage)
	r.OriginTotal = o.Total()
	if cfg.Burst {
		// The burst page is read again after the burst, so the updater
		// keeps it fresh too: it is counted on its own.
		r.OriginTotal -= o.Requests("/s/" + burstChannel)
	}
	r.ValkeyGets, r.ValkeyWrites = -1, -1
	if r.KilledAt == 0 && getsBefore >= 0 && setsBefore >= 0 {
		if gets, sets := calls(ctx, nodes, "get"), calls(ctx, nodes, "set"); gets >= 0 && sets >= 0 {
			r.ValkeyGets, r.ValkeyWrites = gets-getsBefore, sets-setsBefore
		}
	}
	if !r.ok() {
		for _, p := range procs {
			fmt.Fprintf(cfg.Log, "--- output of process %d:\n%s\n", p.n, p.tail())
		}
	}
	return r, nil
}

// calls sums a command's calls over the nodes; -1 when unknown.
func calls(ctx context.Context, nodes []*redistest.Server, command string) int64 {
	if len(nodes) == 0 {
		return -1
	}
	var n int64
	for _, s := range nodes {
		c, err := s.CommandCalls(ctx, command)
		if err != nil {
			return -1
		}
		n += c
	}
	return n
}

// coldBurst sends one request for path from every client of every process
// at the same moment, while the page is cold everywhere.
func coldBurst(ctx context.Context, procs []*proc, clients int, path string) report {
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer httpc.CloseIdleConnections()
	var (
		r     report
		fails atomic.Int64
		wg    sync.WaitGroup
		ready sync.WaitGroup
	)
	gate := make(chan struct{})
	for _, p := range procs {
		for range clients {
			r.BurstRequests++
			ready.Add(1)
			wg.Go(func() {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
				if err != nil {
					fails.Add(1)
					ready.Done()
					return
				}
				ready.Done()
				<-gate
				if status, err := do(httpc, req); err != nil || status != http.StatusOK {
					fails.Add(1)
				}
			})
		}
	}
	ready.Wait()
	close(gate)
	wg.Wait()
	r.BurstFailures = fails.Load()
	return r
}

// load drives every process with its clients for d. Late targets are
// skipped until lateOpen is set.
func load(ctx context.Context, procs []*proc, clients int, d time.Duration, targets []target, lateOpen *atomic.Bool) report {
	httpc := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: clients,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	defer httpc.CloseIdleConnections()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  = map[string]int64{}
		wg        sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for pi, p := range procs {
		for c := range clients {
			wg.Go(func() {
				var lat []time.Duration
				fails := map[string]int64{}
				// Each client walks the mix from its own offset, so all
				// pages are in demand at every moment.
				i := (c*7 + pi*13) % len(targets)
				for time.Now().Before(deadline) && ctx.Err() == nil {
					t := targets[i]
					i = (i + 1) % len(targets)
					if t.late && !lateOpen.Load() {
						continue
					}
					t0 := time.Now()
					status, err := get(ctx, httpc, p.base+t.path)
					lat = append(lat, time.Since(t0))
					if err != nil {
						fails["error "+t.path+": "+err.Error()]++
					} else if status != http.StatusOK {
						fails[strconv.Itoa(status)+" "+t.path]++
					}
				}
				mu.Lock()
				latencies = append(latencies, lat...)
				for k, n := range fails {
					failures[k] += n
				}
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	r := report{Elapsed: time.Since(start), Requests: int64(len(latencies)), Failures: failures}
	if len(failures) == 0 {
		r.Failures = nil
	}
	slices.Sort(latencies)
	if n := len(latencies); n > 0 {
		r.P50 = latencies[n/2]
		r.P99 = latencies[n*99/100]
	}
	return r
}

func get(ctx context.Context, c *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	return do(c, req)
}

func do(c *http.Client, req *http.Request) (int, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// proc is one `tmefeed serve` process.
type proc struct {
	n, port int
	base    string
	cmd     *exec.Cmd
	out     *os.File
	exited  chan struct{}
}

func startProc(ctx context.Context, bin, dir string, n int, env map[string]string) (*proc, error) {
	port, err := procbin.FreePort()
	if err != nil {
		return nil, err
	}
	return startProcOn(ctx, bin, dir, n, port, env)
}

// startProcOn starts process n listening on port (a process restarted
// takes its predecessor's).
func startProcOn(ctx context.Context, bin, dir string, n, port int, env map[string]string) (*proc, error) {
	out, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("serve-%d.log", n)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start tmefeed: %w", err)
	}
	p := &proc{n: n, port: port, base: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()

	deadline := time.Now().Add(30 * time.Second)
	c := &http.Client{Timeout: time.Second}
	for {
		if status, err := get(ctx, c, p.base+"/healthz"); err == nil && status == http.StatusOK {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("tmefeed serve %d exited at start:\n%s", n, p.tail())
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("tmefeed serve %d not healthy within 30s:\n%s", n, p.tail())
		}
	}
}

// stop ends the process gracefully, or kills it after 10 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.out.Close()
}

// tail is the end of the process's output.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.out.Name())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
