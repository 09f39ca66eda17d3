// Command hitbench compares the throughput of a cached tmefeed answer with
// that of a bare net/http server returning the same bytes.
//
// It builds and starts `tmefeed serve --demo` on a loopback port, requests
// -path until its answer is a cache hit, then starts a bare net/http server
// (this program again, as a child process, so that both servers run alone
// in their own process) that answers every request with those bytes and
// the same Content-Type. The load generator then runs against tmefeed and
// the bare server in turn, -rounds times each, and the median of the
// per-round ratios tmefeed/bare is printed.
//
// The load generator is wrk (-conns connections, -threads threads) when it
// is on PATH, else a built-in client: -conns keep-alive connections, each
// sending one request after another. -client wrk or -client go forces one.
//
//	go run ./tools/hitbench                                  # /v1/body/tmefeed_news, 5 rounds of 5 s
//	go run ./tools/hitbench -path /v1/preview/kanal_novostei
//	go run ./tools/hitbench -graphql '{ feed(channels: ["tmefeed_news", "kanal_novostei", "emoji_party"], first: 20) { totalCount } }'
//	go run ./tools/hitbench -rounds 3 -duration 2s -client go
//	go run ./tools/hitbench -dashboard                       # /v1/body, and a dashboard query over POST and GET /graphql
//	go run ./tools/hitbench -yoga                            # the same, with the Yoga peer measured beside the GraphQL ones
//
// -dashboard measures several requests in one run, each against a bare
// server of its own answering its bytes, one after the other in every
// round, so that the machine's load weighs on all of them alike.
//
// -yoga (which implies -dashboard) also starts the peer in tools/yogapeer
// (`npm ci` there first): GraphQL Yoga with @envelop/response-cache
// serving tmefeed's schema, its feed resolver answering the feed tmefeed
// answered to the dashboard query. Its answer must be the same JSON as
// tmefeed's; each GraphQL request is then measured against it too, in
// the same rounds, as against the bare server.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tmefeed/tmefeed/internal/procbin"
)

// config is one run.
type config struct {
	Bin            string        // tmefeed binary; empty = build it
	Race           bool          // build it with -race
	Path           string        // request target measured, query included
	Rounds         int           // measured rounds per server
	Duration       time.Duration // length of one round
	Warmup         time.Duration // unmeasured load on each server before the rounds
	Conns          int           // concurrent connections
	Threads        int           // wrk threads
	Client         string        // "auto", "wrk" or "go"
	AcceptEncoding string        // Accept-Encoding sent with every request; empty = none
	LogLevel       string        // LOG_LEVEL of tmefeed
	CacheMode      string        // CACHE_MODE of tmefeed
	// Yoga, when set, is the directory of the Yoga peer (tools/yogapeer),
	// measured beside tmefeed for every GraphQL target.
	Yoga string
	// Targets, when set, are measured instead of Path, each against its
	// own bare server, interleaved in every round (-dashboard).
	Targets []target
	Log     io.Writer // progress
}

// target is one request measured.
type target struct {
	Name   string
	Method string // GET or POST
	Path   string // request target, query included
	Body   string // POST's JSON body
}

// The dashboard query of -dashboard: a feed of three channels with what a
// dashboard shows of each post, with variables.
const dashboardQuery = `query Dashboard($channels: [String!]!, $first: Int) {
  feed(channels: $channels, first: $first) {
    edges { cursor node { score channel { id username title }
      post { id messageId url date edited views text { plain html } media { kind url thumb duration available } } } }
    pageInfo { endCursor hasNextPage }
  }
}`

const dashboardVariables = `{"channels":["kanal_novostei","tmefeed_news","hadashot_today"],"first":20}`

// dashboardTargets are -dashboard's requests: REST's cached /v1/body, and
// the dashboard query over POST and over GET.
func dashboardTargets() []target {
	body := `{"query":` + strconv.Quote(dashboardQuery) + `,"operationName":"Dashboard","variables":` + dashboardVariables + `}`
	get := "/graphql?" + url.Values{"query": {dashboardQuery}, "operationName": {"Dashboard"}, "variables": {dashboardVariables}}.Encode()
	return []target{
		{Name: "REST GET /v1/body/tmefeed_news", Method: http.MethodGet, Path: "/v1/body/tmefeed_news"},
		{Name: "GraphQL POST /graphql (dashboard)", Method: http.MethodPost, Path: "/graphql", Body: body},
		{Name: "GraphQL GET /graphql (dashboard)", Method: http.MethodGet, Path: get},
	}
}

// parseArgs reads the command line; usage and errors go to out.
func parseArgs(args []string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("hitbench", flag.ContinueOnError)
	fs.SetOutput(out)
	var cfg config
	fs.StringVar(&cfg.Bin, "bin", "", "tmefeed binary (default: build ./cmd/tmefeed into a temporary directory)")
	fs.StringVar(&cfg.Path, "path", "/v1/body/tmefeed_news", "request target to measure, query included")
	gql := fs.String("graphql", "", "measure GET /graphql?query=<this document> instead of -path")
	dashboard := fs.Bool("dashboard", false, "measure REST's /v1/body/tmefeed_news and a 3-channel dashboard query over POST and GET /graphql, interleaved in every round, each against its own bare server")
	yoga := fs.Bool("yoga", false, "as -dashboard, with the Yoga peer (GraphQL Yoga and its response cache, in -yoga-dir) measured beside each GraphQL request")
	yogaDir := fs.String("yoga-dir", "tools/yogapeer", "the Yoga peer's directory, its node_modules installed (npm ci)")
	fs.IntVar(&cfg.Rounds, "rounds", 5, "measured rounds against each server, alternating")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of one round")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "unmeasured load on each server before the first round")
	fs.IntVar(&cfg.Conns, "conns", 64, "concurrent keep-alive connections")
	fs.IntVar(&cfg.Threads, "threads", 2, "wrk threads")
	fs.StringVar(&cfg.Client, "client", "auto", "load generator: wrk, go (built in), or auto (wrk when on PATH)")
	fs.StringVar(&cfg.AcceptEncoding, "accept-encoding", "", "Accept-Encoding header sent with every request, e.g. gzip; empty sends none")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "LOG_LEVEL of tmefeed (info, its default, logs every request)")
	fs.StringVar(&cfg.CacheMode, "cache-mode", "normal", "CACHE_MODE of tmefeed: normal or aggressive")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *gql != "" {
		cfg.Path = "/graphql?query=" + url.QueryEscape(*gql)
	}
	if *dashboard || *yoga {
		cfg.Targets = dashboardTargets()
	}
	if *yoga {
		cfg.Yoga = *yogaDir
	}
	var errs []error
	if !strings.HasPrefix(cfg.Path, "/") {
		errs = append(errs, fmt.Errorf("-path %q: want a path starting with /", cfg.Path))
	}
	if cfg.Rounds < 1 {
		errs = append(errs, errors.New("-rounds: want at least 1"))
	}
	if cfg.Duration <= 0 || cfg.Warmup < 0 {
		errs = append(errs, errors.New("-duration must be positive and -warmup not negative"))
	}
	if cfg.Conns < 1 || cfg.Threads < 1 || cfg.Threads > cfg.Conns {
		errs = append(errs, errors.New("-conns and -threads: want at least 1, and no more threads than connections"))
	}
	switch cfg.Client {
	case "auto", "wrk", "go":
	default:
		errs = append(errs, fmt.Errorf("-client %q: want auto, wrk or go", cfg.Client))
	}
	if cfg.CacheMode != "normal" && cfg.CacheMode != "aggressive" {
		errs = append(errs, fmt.Errorf("-cache-mode %q: want normal or aggressive", cfg.CacheMode))
	}
	if strings.ContainsAny(cfg.AcceptEncoding, "\r\n") {
		errs = append(errs, errors.New("-accept-encoding: one line only"))
	}
	return cfg, errors.Join(errs...)
}

// round is what the servers did in one round.
type round struct {
	Tmefeed, Bare       float64 // requests/s
	TmefeedCPU, BareCPU float64 // the server process's CPU seconds per request; 0 = unknown
	// Yoga and YogaCPU are the Yoga peer's, when it was measured.
	Yoga, YogaCPU float64
}

// result is what a run measured.
type result struct {
	Client string // load generator used
	Name   string // the target's
	Method string
	Path   string
	Bytes  int         // body size of the answer
	Header http.Header // tmefeed's answer headers
	// YogaBytes is the size of the Yoga peer's answer; 0 when it was not
	// measured.
	YogaBytes int
	Rounds    []round
	Elapsed   time.Duration
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// median of xs; 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ratio is the median of the per-round ratios tmefeed/bare: each pair ran
// back to back, so the load of other processes on the machine, which
// drifts over a run, weighs about equally on both of its terms.
func (r result) Ratio() float64 {
	var rs []float64
	for _, x := range r.Rounds {
		if x.Bare > 0 {
			rs = append(rs, x.Tmefeed/x.Bare)
		}
	}
	return median(rs)
}

// CPURatio is the median of the per-round ratios of CPU time per request,
// bare/tmefeed: the throughput ratio the servers would reach if each had
// the CPU to itself, which other processes on the machine skew far less
// than the request rates. 0 when unknown.
func (r result) CPURatio() float64 {
	var rs []float64
	for _, x := range r.Rounds {
		if x.TmefeedCPU > 0 && x.BareCPU > 0 {
			rs = append(rs, x.BareCPU/x.TmefeedCPU)
		}
	}
	return median(rs)
}

// YogaRatios are the Yoga peer's figures against the bare server, as
// Ratio and CPURatio are tmefeed's: medians of the rounds' yoga/bare
// req/s and bare/yoga CPU per request. 0 when unknown.
func (r result) YogaRatios() (rate, cpu float64) {
	var rs, cs []float64
	for _, x := range r.Rounds {
		if x.Bare > 0 && x.Yoga > 0 {
			rs = append(rs, x.Yoga/x.Bare)
		}
		if x.YogaCPU > 0 && x.BareCPU > 0 {
			cs = append(cs, x.BareCPU/x.YogaCPU)
		}
	}
	return median(rs), median(cs)
}

// Medians are the median req/s of each server over the rounds.
func (r result) Medians() (tmefeed, bare float64) {
	var t, b []float64
	for _, x := range r.Rounds {
		t = append(t, x.Tmefeed)
		b = append(b, x.Bare)
	}
	return median(t), median(b)
}

func (r result) String() string {
	var b strings.Builder
	if r.Name != "" {
		fmt.Fprintf(&b, "target: %s\n", r.Name)
	}
	path := r.Path
	if len(path) > 120 {
		path = path[:120] + "…"
	}
	fmt.Fprintf(&b, "path:   %s %s (%d bytes, %s)\n", cmp.Or(r.Method, http.MethodGet), path, r.Bytes, r.Header.Get("Content-Type"))
	fmt.Fprintf(&b, "client: %s\n", r.Client)
	fmt.Fprintf(&b, "%6s  %10s  %10s  %6s    %12s  %12s  %6s\n", "round", "tmefeed/s", "bare/s", "ratio", "tmefeed µs", "bare µs", "ratio")
	for i, x := range r.Rounds {
		fmt.Fprintf(&b, "%6d  %10.0f  %10.0f  %6.3f    %12.2f  %12.2f  %6.3f\n", i+1,
			x.Tmefeed, x.Bare, div(x.Tmefeed, x.Bare), x.TmefeedCPU*1e6, x.BareCPU*1e6, div(x.BareCPU, x.TmefeedCPU))
	}
	t, bare := r.Medians()
	fmt.Fprintf(&b, "%6s  %10.0f  %10.0f  %6.3f    %12s  %12s  %6.3f\n", "median", t, bare, r.Ratio(), "", "", r.CPURatio())
	b.WriteString("req/s ratio = tmefeed/bare; µs = server CPU time per request, its ratio = bare/tmefeed;\n" +
		"both ratios are medians of the rounds' ratios\n")
	if r.YogaBytes > 0 {
		fmt.Fprintf(&b, "yoga peer: the same JSON in %d bytes\n", r.YogaBytes)
		fmt.Fprintf(&b, "%6s  %10s  %10s  %6s    %12s  %12s  %6s\n", "round", "yoga/s", "bare/s", "ratio", "yoga µs", "bare µs", "ratio")
		var ys []float64
		for i, x := range r.Rounds {
			ys = append(ys, x.Yoga)
			fmt.Fprintf(&b, "%6d  %10.0f  %10.0f  %6.3f    %12.2f  %12.2f  %6.3f\n", i+1,
				x.Yoga, x.Bare, div(x.Yoga, x.Bare), x.YogaCPU*1e6, x.BareCPU*1e6, div(x.BareCPU, x.YogaCPU))
		}
		rate, cpu := r.YogaRatios()
		fmt.Fprintf(&b, "%6s  %10.0f  %10.0f  %6.3f    %12s  %12s  %6.3f\n", "median", median(ys), bare, rate, "", "", cpu)
	}
	return b.String()
}

func main() {
	if os.Getenv(bareBodyEnv) != "" {
		if err := bareMain(); err != nil {
			fmt.Fprintln(os.Stderr, "hitbench bare server:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hitbench:", err)
		os.Exit(2)
	}
	cfg.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rs, err := runAll(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hitbench:", err)
		os.Exit(1)
	}
	for i, r := range rs {
		if i > 0 {
			fmt.Println()
		}
		fmt.Print(r)
	}
	if len(rs) > 1 {
		fmt.Println()
		fmt.Printf("%-36s  %10s  %10s  %9s  %9s\n", "target", "tmefeed/s", "bare/s", "req/s ratio", "CPU ratio")
		for _, r := range rs {
			t, b := r.Medians()
			fmt.Printf("%-36s  %10.0f  %10.0f  %9.3f  %9.3f\n", r.Name, t, b, r.Ratio(), r.CPURatio())
		}
		for _, r := range rs {
			if r.YogaBytes == 0 {
				continue
			}
			var ys []float64
			for _, x := range r.Rounds {
				ys = append(ys, x.Yoga)
			}
			_, b := r.Medians()
			rate, cpu := r.YogaRatios()
			fmt.Printf("%-36s  %10.0f  %10.0f  %9.3f  %9.3f\n", "Yoga peer: "+strings.TrimPrefix(r.Name, "GraphQL "), median(ys), b, rate, cpu)
		}
	}
}

// run performs one measurement of cfg.Path.
func run(ctx context.Context, cfg config) (result, error) {
	cfg.Targets = nil
	rs, err := runAll(ctx, cfg)
	if err != nil {
		return result{}, err
	}
	return rs[0], nil
}

// measured is a target with its bare server and what was measured.
type measured struct {
	target
	bare   *child
	body   []byte // the cached answer
	script string // wrk's script sending a POST
	res    result
	// yoga is the Yoga peer, for a GraphQL target when -yoga is on;
	// yogaBody its answer.
	yoga     *child
	yogaBody []byte
}

// runAll measures cfg.Targets (or cfg.Path when there are none), each
// against its own bare server, interleaving them in every round.
func runAll(ctx context.Context, cfg config) ([]result, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	targets := cfg.Targets
	if len(targets) == 0 {
		targets = []target{{Method: http.MethodGet, Path: cfg.Path}}
	}
	client := cfg.Client
	if client == "auto" {
		client = "go"
		if _, err := exec.LookPath("wrk"); err == nil {
			client = "wrk"
		}
	}
	dir, err := os.MkdirTemp("", "hitbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	bin := cfg.Bin
	if bin == "" {
		if bin, err = procbin.Build(ctx, dir, cfg.Race, cfg.Log); err != nil {
			return nil, err
		}
	}

	port, err := procbin.FreePort()
	if err != nil {
		return nil, err
	}
	tm, err := startChild(ctx, dir, "tmefeed", exec.Command(bin, "serve", "--demo"),
		"PORT="+strconv.Itoa(port), "LOG_LEVEL="+cfg.LogLevel, "CACHE_MODE="+cfg.CacheMode)
	if err != nil {
		return nil, err
	}
	defer tm.stop()
	tm.base = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitHealthy(ctx, tm, "/healthz"); err != nil {
		return nil, err
	}

	var (
		ms   []*measured
		yoga *child // the Yoga peer, started with the first GraphQL answer
	)
	for i, t := range targets {
		m := &measured{target: t}
		if t.Method == http.MethodPost && client == "wrk" {
			// wrk sends a POST from a script; the body is read from a file
			// so that no quoting of Lua's gets in its way.
			bodyFile := filepath.Join(dir, fmt.Sprintf("body%d.json", i))
			if err := os.WriteFile(bodyFile, []byte(t.Body), 0o600); err != nil {
				return nil, err
			}
			script := fmt.Sprintf("wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nlocal f = assert(io.open(%q, \"rb\"))\nwrk.body = f:read(\"*a\")\nf:close()\n", bodyFile)
			m.script = filepath.Join(dir, fmt.Sprintf("post%d.lua", i))
			if err := os.WriteFile(m.script, []byte(script), 0o600); err != nil {
				return nil, err
			}
		}
		body, header, err := warm(ctx, tm.base, t, cfg.AcceptEncoding)
		if err != nil {
			return nil, fmt.Errorf("tmefeed %s %s: %w", t.Method, t.Path, err)
		}
		fmt.Fprintf(cfg.Log, "tmefeed %s %.80s answers %d bytes, %s\n", t.Method, t.Path, len(body), header.Get("Content-Type"))
		bareDir := filepath.Join(dir, fmt.Sprintf("bare%d", i))
		if err := os.Mkdir(bareDir, 0o700); err != nil {
			return nil, err
		}
		if m.bare, err = startBare(ctx, bareDir, body, header); err != nil {
			return nil, err
		}
		defer m.bare.stop()
		if got, _, err := warm(ctx, m.bare.base, t, cfg.AcceptEncoding); err != nil || !bytes.Equal(got, body) {
			return nil, fmt.Errorf("bare server does not answer tmefeed's bytes (%d bytes, %v)", len(got), err)
		}
		m.body = body
		m.res = result{Client: client, Name: t.Name, Method: t.Method, Path: t.Path, Bytes: len(body), Header: header}
		if cfg.Yoga != "" && strings.HasPrefix(t.Path, "/graphql") {
			if yoga == nil {
				if yoga, err = startYoga(ctx, dir, cfg.Yoga, body); err != nil {
					return nil, err
				}
				defer yoga.stop()
			}
			got, _, err := warm(ctx, yoga.base, t, cfg.AcceptEncoding)
			if err != nil {
				return nil, fmt.Errorf("yoga peer %s %s: %w\n%s", t.Method, t.Path, err, yoga.tail())
			}
			if err := sameJSON(got, body); err != nil {
				return nil, fmt.Errorf("yoga peer %s %s: %w", t.Method, t.Path, err)
			}
			m.yoga, m.yogaBody, m.res.YogaBytes = yoga, got, len(got)
		}
		ms = append(ms, m)
	}

	load := func(c *child, m *measured, d time.Duration) (rate, cpuPerReq float64, err error) {
		cpu0, cpuErr := processCPU(c.cmd.Process.Pid)
		var n int64
		if client == "wrk" {
			rate, n, err = wrkLoad(ctx, c.base+m.Path, m.script, cfg.Conns, cfg.Threads, d, cfg.AcceptEncoding)
		} else {
			size := len(m.body)
			if c == m.yoga {
				size = len(m.yogaBody)
			}
			rate, n, err = goLoad(ctx, c.base, m.target, cfg.Conns, d, cfg.AcceptEncoding, size)
		}
		cpu1, cpuErr1 := processCPU(c.cmd.Process.Pid)
		if err == nil && cpuErr == nil && cpuErr1 == nil && n > 0 {
			cpuPerReq = (cpu1 - cpu0).Seconds() / float64(n)
		}
		return rate, cpuPerReq, err
	}
	desc := fmt.Sprintf("built-in Go client, %d keep-alive connections, %v per round", cfg.Conns, cfg.Duration)
	if client == "wrk" {
		desc = fmt.Sprintf("wrk, %d connections, %d threads, %v per round", cfg.Conns, cfg.Threads, cfg.Duration)
	}
	start := time.Now()
	if cfg.Warmup > 0 {
		for _, m := range ms {
			for _, c := range m.servers(tm) {
				if _, _, err := load(c, m, cfg.Warmup); err != nil {
					return nil, fmt.Errorf("warm-up of %s: %w", c.name, err)
				}
			}
		}
	}
	for i := range cfg.Rounds {
		for _, m := range ms {
			var x round
			if x.Tmefeed, x.TmefeedCPU, err = load(tm, m, cfg.Duration); err != nil {
				return nil, fmt.Errorf("round %d, tmefeed: %w\n%s", i+1, err, tm.tail())
			}
			if x.Bare, x.BareCPU, err = load(m.bare, m, cfg.Duration); err != nil {
				return nil, fmt.Errorf("round %d, bare: %w\n%s", i+1, err, m.bare.tail())
			}
			if m.yoga != nil {
				if x.Yoga, x.YogaCPU, err = load(m.yoga, m, cfg.Duration); err != nil {
					return nil, fmt.Errorf("round %d, yoga peer: %w\n%s", i+1, err, m.yoga.tail())
				}
			}
			fmt.Fprintf(cfg.Log, "round %d/%d %s: tmefeed %.0f/s, bare %.0f/s, yoga %.0f/s\n", i+1, cfg.Rounds, cmp.Or(m.Name, m.Path), x.Tmefeed, x.Bare, x.Yoga)
			m.res.Rounds = append(m.res.Rounds, x)
		}
	}
	elapsed := time.Since(start)
	out := make([]result, len(ms))
	for i, m := range ms {
		// A hit must still be a hit after the load: same bytes.
		if got, _, err := warm(ctx, tm.base, m.target, cfg.AcceptEncoding); err != nil || !bytes.Equal(got, m.body) {
			return nil, fmt.Errorf("tmefeed's answer to %s changed during the run (%d bytes, %v)", m.Path, len(got), err)
		}
		m.res.Client, m.res.Elapsed = desc, elapsed
		out[i] = m.res
	}
	return out, nil
}

// servers are the processes m is measured against: tmefeed, the bare
// server and the Yoga peer, if any.
func (m *measured) servers(tm *child) []*child {
	if m.yoga != nil {
		return []*child{tm, m.bare, m.yoga}
	}
	return []*child{tm, m.bare}
}

// startYoga starts the Yoga peer in dir (tools/yogapeer) answering the
// feed of answer, tmefeed's answer to the dashboard query, and waits for
// its /health.
func startYoga(ctx context.Context, tmp, dir string, answer []byte) (*child, error) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "graphql-yoga")); err != nil {
		return nil, fmt.Errorf("the Yoga peer in %s is not installed (run npm ci there): %w", dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("the Yoga peer needs Node.js: %w", err)
	}
	answerFile := filepath.Join(tmp, "yoga-answer.json")
	if err := os.WriteFile(answerFile, answer, 0o600); err != nil {
		return nil, err
	}
	port, err := procbin.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, "server.mjs")
	cmd.Dir = dir
	c, err := startChild(ctx, tmp, "yoga", cmd, "YOGAPEER_ANSWER="+answerFile, "PORT="+strconv.Itoa(port), "NODE_ENV=production")
	if err != nil {
		return nil, err
	}
	c.base = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitHealthy(ctx, c, "/health"); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// sameJSON reports whether a and b hold the same JSON value, numbers
// compared as numbers (Go and JavaScript write some floats differently).
func sameJSON(a, b []byte) error {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return fmt.Errorf("not JSON: %w: %.300s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return fmt.Errorf("not JSON: %w: %.300s", err, b)
	}
	if !reflect.DeepEqual(va, vb) {
		return fmt.Errorf("answers differ:\n%.300s\n%.300s", a, b)
	}
	return nil
}

// warm sends t to the server at base until two answers in a row are 200
// with the same body, so that the second came from the cache, and returns
// it.
func warm(ctx context.Context, base string, t target, acceptEncoding string) ([]byte, http.Header, error) {
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer c.CloseIdleConnections()
	var prev []byte
	for range 10 {
		var send io.Reader
		if t.Body != "" {
			send = strings.NewReader(t.Body)
		}
		req, err := http.NewRequestWithContext(ctx, cmp.Or(t.Method, http.MethodGet), base+t.Path, send)
		if err != nil {
			return nil, nil, err
		}
		if t.Body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
		}
		if prev != nil && bytes.Equal(prev, body) {
			return body, resp.Header, nil
		}
		prev = body
	}
	return nil, nil, errors.New("the answer differs on every request: not a cached answer")
}

// child is a server process this program started.
type child struct {
	name   string
	base   string
	cmd    *exec.Cmd
	out    *os.File
	exited chan struct{}
}

func startChild(ctx context.Context, dir, name string, cmd *exec.Cmd, env ...string) (*child, error) {
	out, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stop ends the process gracefully, or kills it after 10 s.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.out.Close()
}

// tail is the end of the process's output.
func (c *child) tail() string {
	f, err := os.Open(c.out.Name())
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4000
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return "--- end of " + c.name + "'s output:\n" + string(b)
}

// waitHealthy waits for c's health check at path to answer 200.
func waitHealthy(ctx context.Context, c *child, path string) error {
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := hc.Get(c.base + path); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited at start:\n%s", c.name, c.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy within 30s:\n%s", c.name, c.tail())
		}
	}
}

// The bare server is this program run again with these variables set.
const (
	bareBodyEnv     = "HITBENCH_BARE_BODY"     // file holding the answer body
	bareTypeEnv     = "HITBENCH_BARE_TYPE"     // its Content-Type
	bareEncodingEnv = "HITBENCH_BARE_ENCODING" // its Content-Encoding, if any
)

// startBare starts the bare server answering body, with header's
// Content-Type (and Content-Encoding), and waits for its address.
func startBare(ctx context.Context, dir string, body []byte, header http.Header) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	bodyFile := filepath.Join(dir, "body")
	if err := os.WriteFile(bodyFile, body, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	addrFile := filepath.Join(dir, "bare.addr")
	c, err := startChild(ctx, dir, "bare", cmd,
		bareBodyEnv+"="+bodyFile,
		bareTypeEnv+"="+header.Get("Content-Type"),
		bareEncodingEnv+"="+header.Get("Content-Encoding"),
		"HITBENCH_BARE_ADDR_FILE="+addrFile)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			c.base = "http://" + strings.TrimSpace(string(b))
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("bare server exited at start:\n%s", c.tail())
		case <-ctx.Done():
			c.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, errors.New("bare server did not start within 30s")
		}
	}
}

// bareMain is the bare server: every request gets the same bytes, with
// only the headers any handler serving a byte slice would set.
func bareMain() error {
	body, err := os.ReadFile(os.Getenv(bareBodyEnv))
	if err != nil {
		return err
	}
	ctype, cenc := os.Getenv(bareTypeEnv), os.Getenv(bareEncodingEnv)
	length := strconv.Itoa(len(body))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Type", ctype)
		if cenc != "" {
			hd.Set("Content-Encoding", cenc)
		}
		// As tmefeed does: without it net/http would chunk a large body.
		hd.Set("Content-Length", length)
		_, _ = w.Write(body)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// Written in full, then renamed, so the parent never reads half an address.
	addrFile := os.Getenv("HITBENCH_BARE_ADDR_FILE")
	if err := os.WriteFile(addrFile+".tmp", []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		return err
	}
	srv := &http.Server{Handler: h}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

var (
	wrkRate   = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkTotal  = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkNon2xx = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+(\d+)`)
	wrkSocket = regexp.MustCompile(`(?m)^\s*Socket errors:\s+connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads wrk's report: requests/s and requests done, or an error
// if any request failed.
func parseWrk(out string) (rate float64, requests int64, err error) {
	m := wrkRate.FindStringSubmatch(out)
	t := wrkTotal.FindStringSubmatch(out)
	if m == nil || t == nil {
		return 0, 0, fmt.Errorf("no Requests/sec or request count in wrk's output:\n%s", out)
	}
	if rate, err = strconv.ParseFloat(m[1], 64); err != nil {
		return 0, 0, err
	}
	if requests, err = strconv.ParseInt(t[1], 10, 64); err != nil {
		return 0, 0, err
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil && m[1] != "0" {
		return 0, 0, fmt.Errorf("%s answers were not 2xx or 3xx:\n%s", m[1], out)
	}
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		for _, n := range m[1:] {
			if n != "0" {
				return 0, 0, fmt.Errorf("socket errors:\n%s", out)
			}
		}
	}
	return rate, requests, nil
}

func wrkLoad(ctx context.Context, url, script string, conns, threads int, d time.Duration, acceptEncoding string) (float64, int64, error) {
	// wrk takes whole seconds.
	secs := int((d + time.Second/2) / time.Second)
	if secs < 1 {
		secs = 1
	}
	args := []string{"-c", strconv.Itoa(conns), "-t", strconv.Itoa(threads), "-d", strconv.Itoa(secs) + "s", "--timeout", "10s"}
	if acceptEncoding != "" {
		args = append(args, "-H", "Accept-Encoding: "+acceptEncoding)
	}
	if script != "" {
		args = append(args, "-s", script)
	}
	out, err := exec.CommandContext(ctx, "wrk", append(args, url)...).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	return parseWrk(string(out))
}

// goLoad keeps conns connections busy for d, each sending the next request
// as soon as the answer is read, and returns the answers per second. Raw
// connections rather than http.Client keep the client's own cost low, as
// wrk does. Every answer must be 200 with size bytes of body.
func goLoad(ctx context.Context, base string, t target, conns int, d time.Duration, acceptEncoding string, size int) (float64, int64, error) {
	u, err := url.Parse(base)
	if err != nil {
		return 0, 0, err
	}
	req := cmp.Or(t.Method, http.MethodGet) + " " + t.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: hitbench\r\n"
	if acceptEncoding != "" {
		req += "Accept-Encoding: " + acceptEncoding + "\r\n"
	}
	if t.Body != "" {
		req += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(t.Body)) + "\r\n"
	}
	reqBytes := []byte(req + "\r\n" + t.Body)

	var (
		done     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	start := time.Now()
	deadline := start.Add(d)
	for range conns {
		wg.Go(func() {
			conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
			if err != nil {
				fail(err)
				return
			}
			defer conn.Close()
			// Unblocks a read still waiting when the round is over.
			_ = conn.SetDeadline(deadline.Add(10 * time.Second))
			br := bufio.NewReaderSize(conn, 64<<10)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if _, err := conn.Write(reqBytes); err != nil {
					fail(err)
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					fail(err)
					return
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					fail(err)
					return
				}
				if resp.StatusCode != http.StatusOK || n != int64(size) {
					fail(fmt.Errorf("status %d with %d bytes, want 200 with %d", resp.StatusCode, n, size))
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return float64(done.Load()) / elapsed.Seconds(), done.Load(), nil
}

// processCPU is the user and system CPU time pid has used, all threads
// together, from /proc (Linux only).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime, fields 14 and 15 of /proc/PID/stat,
// in clock ticks of 1/100 s (USER_HZ, fixed at 100 for user space). The
// fields are counted after the command name, which may hold spaces and
// parentheses.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}
