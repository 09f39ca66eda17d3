// Command budgetflood floods tmefeed as the origin-budget issue's attackers
// did and checks that Telegram still sees one polite client.
//
// It starts the fixture origin with a t.me-like latency, --procs `tmefeed
// serve` processes (sharing a redis-server when more than one) with
// ORIGIN_RPM=--rpm and TRUSTED_PROXIES set so that each simulated client
// has its own address (X-Forwarded-For), and then, for --duration, runs
// every attack at once, each from its own client address:
//
//   - body:     16 connections of GET /v1/body/<random name>
//   - feed:     POST /v1/feed with 100 random names
//   - previews: POST /v1/previews with 100 random names
//   - search:   GET /v1/search/<channel>?q=<random>
//   - history:  POST /v1/feed over deep channels with since (history walks)
//   - nodes:    GraphQL nodes with 199 forged post ids
//   - aliases:  GraphQL with 30 search aliases, random queries
//   - ws:       one WebSocket sending subscribe messages naming 100
//     random channels each
//
// --attacks runs some of them only (e.g. -attacks nodes,aliases,ws). One
// more is run only when named: cached, the history attack's request with
// one since, so that every answer after the first is a kept render (a
// cached answer is never refused for budget reasons): what a flood of the
// same answers costs the reader, beside what building them costs.
//
// Beside them a reader reads one warm channel in a loop (its latency
// before and during the flood is compared) and, halfway, a newcomer
// reads five channels nobody read before. After the flood the origin's
// traffic is watched for two refresh windows. It exits 1 when the origin
// got more than rpm×duration/1m + burst requests during the flood, the
// reader or the newcomer got an error, or an attacker's refusal came
// without Retry-After.
//
//	go run ./tools/budgetflood                # 1 process, 30 s, ORIGIN_RPM=600
//	go run ./tools/budgetflood -procs 2       # 2 processes over one redis-server
//	go run ./tools/budgetflood -attacks ws    # one attack alone
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
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

	"github.com/coder/websocket"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph/ids"
	"github.com/tmefeed/tmefeed/internal/procbin"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

type config struct {
	Bin      string
	Procs    int
	Duration time.Duration
	RPM      int
	Latency  time.Duration
	Attacks  []string      // the attacks run; nil = all, empty = none (the control)
	Warm     time.Duration // the reader reads its channel this long before the flood
	After    int           // refresh windows watched after the flood
	Log      io.Writer     // progress
	Out      io.Writer     // the report; nil = stdout
}

// tally counts one client's answers.
type tally struct {
	mu       sync.Mutex
	byStatus map[int]int
	noRetry  int // 429/503 without Retry-After
	other    []string
	sent     atomic.Int64 // messages sent, where answers are not one per message (WebSocket)
}

func (t *tally) add(status int, retryAfter string, body []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byStatus[status]++
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && retryAfter == "" {
		t.noRetry++
	}
	if status != http.StatusOK && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable && status != http.StatusNotFound && len(t.other) < 3 {
		t.other = append(t.other, fmt.Sprintf("%d %.160s", status, body))
	}
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	if n := t.sent.Load(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d subscribe messages sent, refused:", n))
	}
	for _, s := range slices.Sorted(func(yield func(int) bool) {
		for s := range t.byStatus {
			if !yield(s) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%d×%d", t.byStatus[s], s))
	}
	return strings.Join(parts, " ")
}

func main() {
	if readerMain() {
		return
	}
	var cfg config
	flag.StringVar(&cfg.Bin, "bin", "", "tmefeed binary (default: build ./cmd/tmefeed)")
	flag.IntVar(&cfg.Procs, "procs", 1, "tmefeed processes; more than one share a redis-server")
	flag.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long the attacks run")
	flag.IntVar(&cfg.RPM, "rpm", 600, "ORIGIN_RPM of the processes")
	flag.DurationVar(&cfg.Latency, "latency", 150*time.Millisecond, "fixture origin latency")
	flag.DurationVar(&cfg.Warm, "warm", 12*time.Second, "how long the reader reads its channel before the flood (over a refresh window makes it popular)")
	flag.IntVar(&cfg.After, "after", 2, "refresh windows watched after the flood")
	attacks := flag.String("attacks", strings.Join(allAttacks, ","), "comma-separated attacks to run: "+strings.Join(allAttacks, ", ")+"; also cached (the history attack with one since: kept answers), run only when named; none runs the reader and the newcomer alone, the control for the reader's p99 ratio")
	flag.Parse()
	if *attacks == "none" {
		cfg.Attacks = []string{} // the control: no attacker
	} else {
		for a := range strings.SplitSeq(*attacks, ",") {
			if !slices.Contains(allAttacks, a) && a != cachedAttack {
				fmt.Fprintf(os.Stderr, "budgetflood: -attacks: unknown attack %q; want some of %s, %s\n", a, strings.Join(allAttacks, ", "), cachedAttack)
				os.Exit(2)
			}
			cfg.Attacks = append(cfg.Attacks, a)
		}
	}
	cfg.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "budgetflood:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// allAttacks are the attacks run by default, in the report's order.
var allAttacks = []string{"body", "feed", "previews", "search", "history", "nodes", "aliases", "ws"}

// cachedAttack is run only when named (see the package comment).
const cachedAttack = "cached"

func run(ctx context.Context, cfg config) (bool, error) {
	if cfg.Attacks == nil {
		cfg.Attacks = allAttacks
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	out := cfg.Out
	if out == nil {
		out = os.Stdout
	}
	dir, err := os.MkdirTemp("", "budgetflood-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	bin := cfg.Bin
	if bin == "" {
		if bin, err = procbin.Build(ctx, dir, false, cfg.Log); err != nil {
			return false, err
		}
	}
	o := fixtures.NewOrigin(fixtures.OriginOptions{Latency: cfg.Latency})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return false, err
	}
	originSrv := &http.Server{Handler: o, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = originSrv.Serve(ln) }()
	defer originSrv.Close()

	env := map[string]string{
		"TME_ORIGIN":      "http://" + ln.Addr().String(),
		"ORIGIN_RPM":      strconv.Itoa(cfg.RPM),
		"TRUSTED_PROXIES": "127.0.0.1/32",
		"LOG_LEVEL":       "error",
	}
	if cfg.Procs > 1 {
		srv, err := redistest.Launch()
		if err != nil {
			return false, err
		}
		defer srv.Close()
		env["VALKEY_URL"] = srv.URL
	}
	var bases []string
	for i := range cfg.Procs {
		p, err := startProc(ctx, bin, dir, i, env)
		if err != nil {
			return false, err
		}
		defer p.stop()
		bases = append(bases, p.base)
	}
	burst := cfg.RPM / 5
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var rr atomic.Uint64
	do := func(ctx context.Context, addr, method, path, body string) (int, string, []byte, time.Duration) {
		base := bases[rr.Add(1)%uint64(len(bases))]
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
		req.Header.Set("X-Forwarded-For", addr)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", []byte(err.Error()), time.Since(start)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), b, time.Since(start)
	}

	// The reader's channel is warm, and read over a window or more
	// before the flood, as a popular channel is.
	const warm = "tmefeed_news"
	readerAddr := "10.1.0.1"
	// Warm: read over a window or more, by the reader's own process.
	stopWarm, err := readers(bases, "/v1/body/"+warm, readerAddr)
	if err != nil {
		return false, err
	}
	select {
	case <-time.After(cfg.Warm):
	case <-ctx.Done():
	}
	warmed, err := stopWarm()
	if err != nil {
		return false, err
	}
	if len(warmed.Errs) > 0 || len(warmed.Lat) == 0 {
		return false, fmt.Errorf("warming %s: %d reads, %q", warm, len(warmed.Lat), warmed.Errs)
	}
	baseline := warmed.Lat[len(warmed.Lat)/2:] // the warm half
	fmt.Fprintf(cfg.Log, "flooding for %v…\n", cfg.Duration)

	// The origin's count and the bound's duration cover one window, from
	// before the first attack to the last answer: the reader's process
	// starts while the attacks already run.
	before, floodStart := o.Total(), time.Now()
	fctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	attacks := map[string]*tally{}
	var wg sync.WaitGroup
	attack := func(name, addr string, conns int, next func() (method, path, body string)) {
		if !slices.Contains(cfg.Attacks, name) {
			return
		}
		t := &tally{byStatus: map[int]int{}}
		attacks[name] = t
		for range conns {
			wg.Go(func() {
				for fctx.Err() == nil {
					m, p, b := next()
					status, ra, body, _ := do(fctx, addr, m, p, b)
					if fctx.Err() != nil {
						return
					}
					t.add(status, ra, body)
				}
			})
		}
	}
	names := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q", randomName())
		}
		return b.String()
	}
	attack("body", "10.0.0.1", 16, func() (string, string, string) { return http.MethodGet, "/v1/body/" + randomName(), "" })
	attack("feed", "10.0.0.2", 4, func() (string, string, string) {
		return http.MethodPost, "/v1/feed", `{"channels":[` + names(100) + `]}`
	})
	attack("previews", "10.0.0.3", 4, func() (string, string, string) {
		return http.MethodPost, "/v1/previews", `{"channels":[` + names(100) + `]}`
	})
	attack("search", "10.0.0.4", 8, func() (string, string, string) {
		return http.MethodGet, "/v1/search/" + warm + "?q=" + randomName(), ""
	})
	attack("history", "10.0.0.5", 4, func() (string, string, string) {
		since := time.Date(2015+rand.IntN(10), time.Month(1+rand.IntN(12)), 1+rand.IntN(28), 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
		return http.MethodPost, "/v1/feed", `{"channels":["kanal_novostei","hadashot_today","tmefeed_news"],"since":"` + since + `"}`
	})
	attack(cachedAttack, "10.0.0.9", 4, func() (string, string, string) {
		return http.MethodPost, "/v1/feed", `{"channels":["kanal_novostei","hadashot_today","tmefeed_news"],"since":"2016-05-02T00:00:00Z"}`
	})

	attack("nodes", "10.0.0.6", 4, func() (string, string, string) {
		forged := make([]string, 199)
		for i := range forged {
			forged[i] = strconv.Quote(ids.Post(randomName(), 1+rand.IntN(100000)))
		}
		q, _ := json.Marshal(map[string]string{"query": "{ nodes(ids: [" + strings.Join(forged, ",") + "]) { id } }"})
		return http.MethodPost, "/graphql", string(q)
	})
	attack("aliases", "10.0.0.7", 4, func() (string, string, string) {
		var b strings.Builder
		b.WriteString(`{ channel(username: "` + warm + `") {`)
		for i := range 30 {
			fmt.Fprintf(&b, " s%d: search(query: %q) { edges { cursor } }", i, randomName())
		}
		b.WriteString(" } }")
		q, _ := json.Marshal(map[string]string{"query": b.String()})
		return http.MethodPost, "/graphql", string(q)
	})
	if slices.Contains(cfg.Attacks, "ws") {
		t := &tally{byStatus: map[int]int{}}
		attacks["ws"] = t
		wg.Go(func() { floodWebSocket(fctx, bases[0], "10.0.0.8", t) })
	}

	// The reader goes on reading its channel, from its own process.
	stopReader, err := readers(bases, "/v1/body/"+warm, readerAddr)
	if err != nil {
		cancel()
		wg.Wait()
		return false, err
	}
	// Halfway, a newcomer reads five channels nobody has read.
	cold := []string{"emoji_party", "hadashot_today", "just_launched", "kanal_novostei", "retro_channel"}
	var coldOK int
	var coldErrs []string
	var coldTook time.Duration
	wg.Go(func() {
		select {
		case <-time.After(cfg.Duration / 2):
		case <-fctx.Done():
			return
		}
		for _, ch := range cold {
			// Each read has its own deadline, past the server's bounded
			// wait for the budget (about two seconds) and the fetch, rather
			// than the flood's end: five cold reads one after the other may
			// each wait for a token, on a loaded machine past that end.
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			status, _, b, d := do(rctx, "10.2.0.1", http.MethodGet, "/v1/body/"+ch, "")
			rcancel()
			coldTook = max(coldTook, d)
			if status == http.StatusOK {
				coldOK++
			} else {
				coldErrs = append(coldErrs, fmt.Sprintf("%s: %d %.160s", ch, status, b))
			}
		}
	})
	wg.Wait()
	// The reader reads for the whole flood in every run, the control's
	// too, so that its p99 counts as many reads as an attack's: a shorter
	// run has fewer of the rare slow reads, and a lower p99.
	<-fctx.Done()
	read, err := stopReader()
	if err != nil {
		return false, err
	}
	// Counted together: loads the flood started may still reach the
	// origin after its last answer (cache loads outlive their callers).
	floodTook, flood := time.Since(floodStart), o.Total()-before
	during, readerErrs := read.Lat, read.Errs

	// After the flood: two refresh windows (CACHE_MODE=normal: 10 s) of
	// the updater's own traffic, the reader still reading.
	afterCounts := make([]int64, cfg.After)
	for w := range afterCounts {
		start := o.Total()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			do(ctx, readerAddr, http.MethodGet, "/v1/body/"+warm, "")
		}
		afterCounts[w] = o.Total() - start
	}

	most := budgetBound(cfg.RPM, burst, floodTook)
	p99b, p99d := p99(baseline), p99(during)
	ok := true
	fmt.Fprintf(out, "processes: %d (shared budget: %v), ORIGIN_RPM=%d, burst %d, origin latency %v\n", cfg.Procs, cfg.Procs > 1, cfg.RPM, burst, cfg.Latency)
	fmt.Fprintf(out, "flood: %v, attacks %s at once, each from its own client (a GraphQL or WebSocket refusal counts under its status: RATE_LIMITED as 429, one that waits for the budget as 503)\n", floodTook.Round(time.Millisecond), cmp.Or(strings.Join(cfg.Attacks, ", "), "none"))
	for _, name := range cfg.Attacks {
		t := attacks[name]
		fmt.Fprintf(out, "  %-9s %s", name, t)
		if t.noRetry > 0 {
			fmt.Fprintf(out, "   <-- %d refusals without Retry-After", t.noRetry)
			ok = false
		}
		if len(t.other) > 0 {
			fmt.Fprintf(out, "   other answers: %q", t.other)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "origin requests during the flood: %d (at most %d = %d/min × %v + burst %d)\n", flood, most, cfg.RPM, floodTook.Round(time.Second), burst)
	if flood > most {
		ok = false
		fmt.Fprintln(out, "  <-- over the budget")
	}
	for i, base := range bases {
		if n := scrape(ctx, client, base, "tmefeed_origin_budget_local_decisions_total"); n != "" && n != "0" {
			fmt.Fprintf(out, "  process %d decided %s requests on its own bucket: Valkey did not answer in time (VALKEY_TIMEOUT)\n", i, n)
		}
	}
	fmt.Fprintf(out, "warm reader: %d reads during the flood, %d errors; p99 %v before, %v during (ratio %.2f)\n", len(during), len(readerErrs), p99b, p99d, float64(p99d)/float64(p99b))
	fmt.Fprintf(out, "  before: %s; during: %s\n", percentiles(baseline), percentiles(during))
	if len(readerErrs) > 0 {
		ok = false
		fmt.Fprintf(out, "  <-- %q\n", readerErrs)
	}
	fmt.Fprintf(out, "newcomer: %d of %d cold channels answered (slowest %v)\n", coldOK, len(cold), coldTook.Round(time.Millisecond))
	if coldOK != len(cold) {
		ok = false
		fmt.Fprintf(out, "  <-- %q\n", coldErrs)
	}
	fmt.Fprintf(out, "after the flood: origin requests per refresh window: %v\n", afterCounts)
	if ok {
		fmt.Fprintln(out, "PASS")
	} else {
		fmt.Fprintln(out, "FAIL")
	}
	return ok, nil
}

// floodWebSocket opens one graphql-transport-ws connection as client addr
// and sends subscribe messages naming 100 random channels each, as fast
// as it may, until ctx ends; each answer is tallied: an error message by
// its code (RATE_LIMITED as 429, a refusal with the budget's
// retryAfter noted), a closed connection by its close code.
func floodWebSocket(ctx context.Context, base, addr string, t *tally) {
	for ctx.Err() == nil {
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql", &websocket.DialOptions{
			Subprotocols: []string{"graphql-transport-ws"},
			HTTPHeader:   http.Header{"X-Forwarded-For": {addr}},
		})
		if err != nil {
			if ctx.Err() == nil {
				t.add(0, "", []byte(err.Error()))
				time.Sleep(time.Second)
			}
			continue
		}
		c.SetReadLimit(1 << 20)
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`))
		go func() {
			for i := 1; ctx.Err() == nil; i++ {
				names := make([]string, 100)
				for j := range names {
					names[j] = strconv.Quote(randomName())
				}
				msg, _ := json.Marshal(map[string]any{"id": strconv.Itoa(i), "type": "subscribe", "payload": map[string]string{
					"query": "subscription { feedUpdates(channels: [" + strings.Join(names, ",") + "]) { kind } }",
				}})
				if c.Write(ctx, websocket.MessageText, msg) != nil {
					return
				}
				t.sent.Add(1)
				// Each subscription ends at its refusal, or is completed
				// here so that the connection does not hold them all.
				_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":"`+strconv.Itoa(i)+`","type":"complete"}`))
				time.Sleep(10 * time.Millisecond)
			}
		}()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				if ctx.Err() == nil {
					t.add(int(websocket.CloseStatus(err)), "", []byte(err.Error()))
				}
				break
			}
			var m struct {
				Type    string
				Payload []struct {
					Message    string
					Extensions map[string]any
				}
			}
			if json.Unmarshal(b, &m) != nil || m.Type != "error" || len(m.Payload) == 0 {
				continue
			}
			code, _ := m.Payload[0].Extensions["code"].(string)
			ra := ""
			if v, ok := m.Payload[0].Extensions["retryAfter"]; ok {
				ra = fmt.Sprint(v)
			}
			switch code {
			case "RATE_LIMITED":
				status := http.StatusTooManyRequests
				if strings.Contains(m.Payload[0].Message, "budget") {
					status = http.StatusServiceUnavailable
				}
				if ra == "" && (strings.Contains(m.Payload[0].Message, "SUBSCRIBED_CHANNELS_PER_CLIENT") || strings.Contains(m.Payload[0].Message, "subscriptions open")) {
					ra = "-" // a cap (per client, per connection), not a wait: ending a subscription frees its place
				}
				t.add(status, ra, b)
			case "NOT_FOUND":
				t.add(http.StatusNotFound, "", b)
			default:
				t.add(http.StatusOK, "", b)
			}
		}
		c.CloseNow()
	}
}

// scrape reads one unlabelled series from base's /metrics ("" if absent).
func scrape(ctx context.Context, c *http.Client, base, name string) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	resp, err := c.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// budgetBound is the most origin requests a budget of rpm with burst
// allows over d.
func budgetBound(rpm, burst int, d time.Duration) int64 {
	return int64(float64(rpm)*d.Minutes()) + int64(burst)
}

func p99(ds []time.Duration) time.Duration { return quantile(ds, 0.99) }

// quantile is the q-quantile of ds, to 10µs.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))].Round(10 * time.Microsecond)
}

// percentiles shows where ds's tail begins: whether a changed p99 is a
// shifted distribution or a few slow reads.
func percentiles(ds []time.Duration) string {
	return fmt.Sprintf("p50 %v, p90 %v, p99 %v, max %v", quantile(ds, 0.5), quantile(ds, 0.9), quantile(ds, 0.99), quantile(ds, 1))
}

// randomName is a valid channel name nobody has: the fixture origin
// answers it as t.me does an unknown name.
func randomName() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 12)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return "x" + string(b)
}

type proc struct {
	base   string
	cmd    *exec.Cmd
	out    *os.File
	exited chan struct{}
}

func startProc(ctx context.Context, bin, dir string, n int, env map[string]string) (*proc, error) {
	port, err := procbin.FreePort()
	if err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, fmt.Sprintf("serve-%d.log", n)))
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
	p := &proc{base: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/healthz", nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(out.Name())
			return nil, fmt.Errorf("tmefeed serve %d exited at start: %s", n, b)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("tmefeed serve not healthy within 30s")
		}
	}
}

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
