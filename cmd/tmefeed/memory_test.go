package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
)

// The memory test runs the service in a child process — this test binary,
// started again with memoryChildEnv set — so that the fixture origin, the
// load generator and the test framework stay out of the figures. The child
// serves the real stack beside one extra route reporting its memory.
const (
	memoryChildEnv = "TMEFEED_MEMORY_CHILD_ORIGIN"
	memoryRoute    = "/_memory" // child only
	// memoryProfileEnv, set to a directory, makes the child write a heap
	// profile there at each report (heap-1.pprof after the warm-up, 2
	// after the pages, 3 after the feeds), for finding where memory goes.
	memoryProfileEnv = "TMEFEED_MEMORY_PROFILE"
)

func TestMain(m *testing.M) {
	if originURL := os.Getenv(memoryChildEnv); originURL != "" {
		if err := memoryChild(originURL); err != nil {
			fmt.Fprintln(os.Stderr, "memory child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if file := os.Getenv(bareServerEnv); file != "" {
		if err := bareServerChild(file); err != nil {
			fmt.Fprintln(os.Stderr, "bare server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if target := os.Getenv(warmReaderEnv); target != "" {
		if err := warmReaderChild(target); err != nil {
			fmt.Fprintln(os.Stderr, "warm reader:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The command itself, for tests of the process (exit status, stderr).
	if os.Getenv("TMEFEED_TEST_RUN_MAIN") == "1" {
		os.Args = append([]string{"tmefeed"}, strings.Fields(os.Getenv("TMEFEED_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// memoryReport is what the child's memory route answers.
type memoryReport struct {
	Usage     memoryUsage
	Budget    int64
	HeapAlloc uint64 // live heap after two forced collections
	Limit     int64  // the runtime's soft memory limit
	VmHWM     int64  // peak RSS, bytes
	VmRSS     int64
	HeapSys   uint64 // heap memory obtained from the OS
	NumGC     uint32
	RssAnon   int64
	RssFile   int64
	OtherSys  uint64
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// memoryChild runs the stack as `tmefeed serve` would, configured from the
// environment, on a loopback port it prints to stdout; it ends when stdin
// closes.
func memoryChild(originURL string) error {
	if os.Getenv(memoryProfileEnv) != "" {
		runtime.MemProfileRate = 16 << 10 // finer than the default 512 KiB, for small stores
	}
	getenv := func(k string) string {
		if k == "TME_ORIGIN" {
			return originURL
		}
		return os.Getenv(k)
	}
	cfg, err := parseServeConfig(nil, getenv, os.Stderr)
	if err != nil {
		return err
	}
	applyMemoryLimit(cfg, getenv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := newLogger(cfg.LogLevel, false, os.Stderr)
	st, err := newStack(ctx, cfg, cfg.Origin, "", log, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	mux := http.NewServeMux()
	mux.Handle("/", st.handler)
	reports := 0 // the memory route is called one request at a time
	mux.HandleFunc(memoryRoute, func(w http.ResponseWriter, _ *http.Request) {
		r := memoryReport{Usage: st.memory(), Budget: st.budget.Total, Limit: debugLimit()}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.HeapAlloc = ms.HeapAlloc
		r.VmHWM, r.VmRSS = procStatus("VmHWM"), procStatus("VmRSS")
		r.HeapSys, r.NumGC = ms.HeapSys-ms.HeapReleased, ms.NumGC
		r.RssAnon, r.RssFile, r.OtherSys = procStatus("RssAnon"), procStatus("RssFile"), ms.Sys-ms.HeapSys
		if dir := os.Getenv(memoryProfileEnv); dir != "" {
			reports++
			if err := writeHeapProfile(filepath.Join(dir, fmt.Sprintf("heap-%d.pprof", reports))); err != nil {
				fmt.Fprintln(os.Stderr, "memory child:", err)
			}
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The API's own server: its bounds on connections and headers are
	// part of what is measured.
	srv, lim, err := httpServer(cfg, st.budget, mux, ln, log)
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(lim) }()
	fmt.Printf("ADDR %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	return srv.Close()
}

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return -1
}

// The load of TestMemoryBudget, and the peak RSS it must stay under at
// MEMORY_CACHE_MAX_MB=16: the Go memory limit derived from that budget
// (4×16+64 MiB) plus 16 MiB of the executable's own mapped pages, which
// RSS counts and the Go limit does not (about 22 MiB file-backed).
// README "Memory" states both.
const (
	memBudgetMB  = 16
	memPages     = 3000 // distinct channel pages (999 channels × positions)
	memFeeds     = 40   // distinct 100-channel feeds
	memFeedWidth = 100
	memRSSBound  = 144 << 20
)

// TestMemoryBudget drives the service at MEMORY_CACHE_MAX_MB=16 through
// thousands of distinct pages and dozens of distinct 100-channel feeds,
// then checks that the stores' accounted bytes stay within the budget and
// within 10% of how much the live heap grew, and that peak RSS stays under
// memRSSBound.
func TestMemoryBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector multiplies memory and time; the figures are for the real build")
	}
	if testing.Short() {
		t.Skip("a minute of load")
	}
	fo := fixtures.NewOrigin(fixtures.OriginOptions{Synthetic: 999})
	originSrv := httptest.NewServer(fo)
	defer originSrv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		memoryChildEnv+"="+originSrv.URL,
		"MEMORY_CACHE_MAX_MB="+strconv.Itoa(memBudgetMB),
		"MEMORY_LIMIT_MB=", "GOMEMLIMIT=", // the default derived from the budget
		"CACHE_MODE=aggressive", // nothing is refreshed during the run
		"LOG_LEVEL=warn",
		// The load is thousands of cold pages from one client as fast as
		// they come: memory is measured, not the origin budget or the
		// client's share of the cores.
		"ORIGIN_RPM=600000", "CLIENT_ORIGIN_RPM=0", "CLIENT_CPU_SHARE=-1",
	)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("child did not start: %q, %v\n%s", line, err, stderr.String())
	}
	l := &loader{t: t, base: "http://" + addr, client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}

	// Warm up what is built once, outside the stores: codec state per
	// CPU, connections, the GraphQL schema. Channels 990.. are used only here.
	l.run(16, 32, func(i int) { l.body(990+i%9, i/9) })
	l.run(2, 2, func(i int) { l.feed(-1, i%2 == 0) })
	before := l.report()

	start := time.Now()
	// Each page is read twice, a hundred pages apart: the page tier
	// admits a page to its main store on its second read (one-off pages
	// wait in its trial queue), and the main store is what is measured.
	l.run(16, 2*memPages, func(i int) {
		j := i/200*100 + i%100
		l.body(j%990, j/990)
	})
	pagesOnly := l.report()
	l.run(4, memFeeds, func(i int) { l.feed(i, i%2 == 0) })
	took := time.Since(start)
	after := l.report()
	if t.Failed() {
		t.Fatalf("requests failed\n%s", stderr.String())
	}

	acc := float64(after.Usage.Total() - before.Usage.Total())
	growth := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	u := after.Usage
	t.Logf("%d pages + %d feeds of %d channels in %s; accounted at the end: %d B of %d B (pages %d, hot %d, parses %d, builds %d, rendered %d, graphql %d); Go memory limit %d MiB",
		memPages, memFeeds, memFeedWidth, took.Round(time.Millisecond), u.Total(), after.Budget, u.Pages, u.Hot, u.Parses, u.Builds, u.Rendered, u.GraphQL, after.Limit>>20)
	for _, r := range []struct {
		at string
		r  memoryReport
	}{{"warm-up", before}, {"pages", pagesOnly}, {"feeds", after}} {
		t.Logf("after the %s: live heap %.1f MiB, heap from the OS %.1f MiB, RSS %d MiB (anon %d file %d; peak %d), runtime other %d MiB, %d collections",
			r.at, float64(r.r.HeapAlloc)/(1<<20), float64(r.r.HeapSys)/(1<<20), r.r.VmRSS>>20, r.r.RssAnon>>20, r.r.RssFile>>20, r.r.VmHWM>>20, r.r.OtherSys>>20, r.r.NumGC)
	}
	load := fmt.Sprintf("MEMORY_CACHE_MAX_MB=%d, %d pages + %d feeds of %d channels", memBudgetMB, memPages, memFeeds, memFeedWidth)
	t.Logf("FIGURE: memory | peak RSS, MEMORY_CACHE_MAX_MB=%d, %d pages | %d MiB", memBudgetMB, memPages, pagesOnly.VmHWM>>20)
	t.Logf("FIGURE: memory | peak RSS, %s | %d MiB", load, after.VmHWM>>20)
	t.Logf("FIGURE: memory | accounted bytes vs live-heap growth, %s | %.1f MiB vs %.1f MiB (%+.1f%%)", load, acc/(1<<20), growth/(1<<20), 100*(acc-growth)/growth)
	t.Logf("FIGURE: memory | accounted bytes at the end vs budget, %s | %.1f MiB of %d MiB", load, float64(u.Total())/(1<<20), memBudgetMB)

	if u.Total() > after.Budget {
		t.Errorf("accounted %d B, over the %d B budget", u.Total(), after.Budget)
	}
	if u.Pages < after.Budget/4 || u.Parses == 0 {
		t.Errorf("the load did not fill the stores: %+v", u)
	}
	if math.Abs(acc-growth) > 0.1*growth {
		t.Errorf("accounted growth %.0f B, live heap grew %.0f B: more than 10%% apart", acc, growth)
	}
	if after.VmHWM <= 0 || after.VmHWM > memRSSBound {
		t.Errorf("peak RSS %d MiB, bound %d MiB", after.VmHWM>>20, memRSSBound>>20)
	}
}

// loader sends the test's requests to the child.
type loader struct {
	t      *testing.T
	base   string
	client *http.Client
}

// run calls do(0..n-1) on conc goroutines.
func (l *loader) run(conc, n int, do func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range conc {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func (l *loader) do(req *http.Request) {
	resp, err := l.client.Do(req)
	if err != nil {
		l.t.Errorf("%s: %v", req.URL.Path, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(`"errors"`)) {
		l.t.Errorf("%s: status %d: %.200s", req.URL.Path, resp.StatusCode, b)
	}
}

// body asks for synthetic channel ch (0-based) around position pos (0 =
// newest): each (ch, pos) is a distinct page to the cache.
func (l *loader) body(ch, pos int) {
	path := fmt.Sprintf("/v1/body/loadchan%03d", ch%999+1)
	if pos > 0 {
		path += "?position=" + strconv.Itoa(pos)
	}
	req, _ := http.NewRequest(http.MethodGet, l.base+path, nil)
	l.do(req)
}

// feed asks for the k-th distinct 100-channel feed, through GraphQL (a
// page of 100 posts, which the rendered-feed store can keep) or REST (the
// whole feed).
func (l *loader) feed(k int, graphQL bool) {
	chans := make([]string, memFeedWidth)
	if k < 0 { // the warm-up's small feed, of channels the load does not use
		chans = []string{"loadchan991", "loadchan992", "loadchan993"}
	}
	for j := range chans {
		if k < 0 {
			break
		}
		// Feed k takes every 7th channel from offset 13k: distinct sets
		// that overlap, as real feeds do.
		chans[j] = fmt.Sprintf("loadchan%03d", (13*k+7*j)%999+1)
	}
	var body []byte
	path := "/v1/feed"
	if graphQL {
		path = "/graphql"
		body, _ = json.Marshal(map[string]any{
			"query":     `query($c: [String!]!) { feed(channels: $c, first: 100) { totalCount edges { cursor node { score channel { username } post { id date text { plain } } } } } }`,
			"variables": map[string]any{"c": chans},
		})
	} else {
		body, _ = json.Marshal(map[string]any{"channels": chans})
	}
	req, _ := http.NewRequest(http.MethodPost, l.base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	l.do(req)
}

func (l *loader) report() memoryReport {
	l.t.Helper()
	resp, err := l.client.Get(l.base + memoryRoute)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r memoryReport
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		l.t.Fatal(err)
	}
	return r
}

// lockedBuffer collects the child's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
