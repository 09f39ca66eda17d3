package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/bench"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/internal/memsize"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/tme"
)

const benchUsage = `usage: tmefeed bench <what> [flags]   (loopback only; ratios against a baseline of the same run)

  parse        per channel page: parse µs, MB/s, allocations, beside a bare tokenizer pass and html.Parse
  audit        per endpoint, cached and cold: wall and CPU time, allocations; --stages splits a cold body
  memory       peak RSS, live heap, accounted vs measured bytes over many distinct channels

Run "tmefeed bench <what> -h" for its flags.
`

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return errUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, benchUsage)
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("bench "+args[0], flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: tmefeed bench %s [flags]\n", args[0])
		fs.PrintDefaults()
	}
	fs.SetOutput(stderr)
	switch args[0] {
	case "parse":
		var cfg bench.ParseConfig
		fs.StringVar(&cfg.RealDir, "real", "", "also measure the s_*.html pages of this directory, e.g. ../shared/realpages")
		fs.IntVar(&cfg.Rounds, "rounds", 5, "alternating rounds per page")
		fs.DurationVar(&cfg.Duration, "duration", 100*time.Millisecond, "length of one measurement")
		if err := parseBenchFlags(fs, args[1:]); err != nil {
			return err
		}
		return bench.Parse(stdout, cfg)
	case "audit":
		stages := fs.Bool("stages", false, "split a cold /v1/body request into cache read, decompression, parse, ranking, serialization and compression")
		cold := fs.Int("cold", 300, "cold requests per endpoint (distinct channels, at most 999)")
		d := fs.Duration("duration", 300*time.Millisecond, "length of one cached measurement")
		rounds := fs.Int("rounds", 5, "alternating rounds against the bare baseline")
		if err := parseBenchFlags(fs, args[1:]); err != nil {
			return err
		}
		if *cold < 1 || *cold > 999 {
			return errors.New("bench audit: --cold wants 1..999")
		}
		return benchAudit(ctx, stdout, getenv, *cold, *rounds, *d, *stages)
	case "memory":
		channels := fs.Int("channels", 999, "distinct channels requested (at most 999)")
		mb := fs.Int("memory-cache-max-mb", 64, "MEMORY_CACHE_MAX_MB of the measured stack")
		if err := parseBenchFlags(fs, args[1:]); err != nil {
			return err
		}
		if *channels < 1 || *channels > 999 || *mb < 1 {
			return errors.New("bench memory: --channels wants 1..999 and --memory-cache-max-mb at least 1")
		}
		return benchMemory(ctx, stdout, getenv, *channels, *mb)
	}
	fmt.Fprintf(stderr, "tmefeed bench: unknown %q\n\n%s", args[0], benchUsage)
	return errUsage
}

func parseBenchFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// benchStack is the serve stack over a fixture origin with synthetic
// channels on a loopback port, configured as `tmefeed serve` would be by
// default (or by the environment), logging only errors.
type benchStack struct {
	*stack
	origin    *http.Server
	originURL string
}

func newBenchStack(ctx context.Context, getenv func(string) string, memoryMB int) (*benchStack, error) {
	cfg, err := parseServeConfig([]string{"--log-level", "error"}, getenv, io.Discard)
	if err != nil {
		return nil, err
	}
	if memoryMB > 0 {
		cfg.MemoryMaxMB = memoryMB
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := &http.Server{Handler: fixtures.NewOrigin(fixtures.OriginOptions{Synthetic: 999}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = o.Serve(ln) }()
	log := slog.New(slog.DiscardHandler)
	st, err := newStack(ctx, cfg, "http://"+ln.Addr().String(), "", log, nil)
	if err != nil {
		_ = o.Close()
		return nil, err
	}
	return &benchStack{stack: st, origin: o, originURL: "http://" + ln.Addr().String()}, nil
}

func (b *benchStack) Close() {
	if b.stack != nil {
		b.stack.Close()
	}
	_ = b.origin.Close()
}

// discardWriter keeps the status and headers of an answer, not its bytes.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// endpoint is one request of the audit; %s in target or body is the channel.
type endpoint struct {
	name, method, target, body, acceptEncoding string
}

func (e endpoint) request(channel string) *http.Request {
	var body io.Reader
	if e.body != "" {
		body = strings.NewReader(strings.ReplaceAll(e.body, "%s", channel))
	}
	r := httptest.NewRequest(e.method, strings.ReplaceAll(e.target, "%s", channel), body)
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if e.acceptEncoding != "" {
		r.Header.Set("Accept-Encoding", e.acceptEncoding)
	}
	return r
}

// dashboardQuery is a dashboard's feed of three channels with everything
// it shows of each post, as `make hitbench`'s GraphQL rows send it.
const dashboardQuery = `query Dashboard($channels: [String!]!, $first: Int) {
  feed(channels: $channels, first: $first) {
    edges { cursor node { score channel { id username title }
      post { id messageId url date edited views text { plain html } media { kind url thumb duration available } } } }
    pageInfo { endCursor hasNextPage }
  }
}`

func benchAudit(ctx context.Context, w io.Writer, getenv func(string) string, cold, rounds int, d time.Duration, stages bool) error {
	st, err := newBenchStack(ctx, getenv, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	// The channel goes in after escaping, so its mark must survive it.
	feedQuery := strings.ReplaceAll(url.QueryEscape(`{ feed(channels: ["tmefeed_news", "kanal_novostei", "CHANNELMARK"], first: 20) { edges { node { post { id text { plain } } } } } }`), "CHANNELMARK", "%s")
	endpoints := []endpoint{
		{"GET /v1/body", "GET", "/v1/body/%s", "", ""},
		{"GET /v1/body, gzip", "GET", "/v1/body/%s", "", "gzip"},
		{"GET /v1/body, zstd", "GET", "/v1/body/%s", "", "zstd"},
		{"GET /v1/preview", "GET", "/v1/preview/%s", "", ""},
		{"GET /v1/more", "GET", "/v1/more/%s/before/32", "", ""},
		{"POST /v1/feed (3 channels)", "POST", "/v1/feed", `{"channels": ["tmefeed_news", "kanal_novostei", "%s"], "limit": 20}`, ""},
		{"GET /graphql feed (3 channels)", "GET", "/graphql?query=" + feedQuery, "", ""},
		{"POST /graphql dashboard (3 channels)", "POST", "/graphql", `{"query": ` + strconv.Quote(dashboardQuery) + `, "variables": {"channels": ["tmefeed_news", "kanal_novostei", "%s"], "first": 20}}`, ""},
	}
	rows := [][]string{{"endpoint", "cached µs", "cached CPU µs", "cached allocs", "bare CPU µs", "cached / bare (CPU)", "cold µs", "cold CPU µs", "cold allocs", "cold / cached (CPU)"}}
	next := 1 // synthetic channels not yet requested
	for _, ep := range endpoints {
		// Cached: one channel, warmed; against a bare handler writing the
		// same bytes and headers.
		dw := &discardWriter{h: http.Header{}}
		serve := func(h http.Handler, ch string) {
			clear(dw.h)
			dw.status, dw.n = 0, 0
			h.ServeHTTP(dw, ep.request(ch))
		}
		serve(st.handler, "tmefeed_news")
		if dw.status != http.StatusOK {
			return fmt.Errorf("bench audit: %s: status %d", ep.name, dw.status)
		}
		rec := httptest.NewRecorder()
		st.handler.ServeHTTP(rec, ep.request("tmefeed_news"))
		bare := bareHandler(rec.Body.Bytes(), rec.Header())
		s := bench.Alternate(rounds, d,
			func() { serve(st.handler, "tmefeed_news") },
			func() { serve(bare, "tmefeed_news") })
		c, b := bench.MedianSample(s[0]), bench.MedianSample(s[1])
		ratio := bench.MedianRatio(s[0], s[1], bench.CPU)

		// Cold: a channel never asked before, each time.
		if next+cold > 1000 {
			next = 1
		}
		i := next
		cs := bench.Measure(0, cold-1, func() {
			serve(st.handler, fmt.Sprintf("loadchan%03d", i))
			i++
		})
		next = i
		rows = append(rows, []string{ep.name, us(bench.Wall(c)), us(bench.CPU(c)), fmt.Sprintf("%.0f", c.Allocs), us(bench.CPU(b)),
			fmt.Sprintf("%.2f", 1/ratio), us(bench.Wall(cs)), us(bench.CPU(cs)), fmt.Sprintf("%.0f", cs.Allocs), fmt.Sprintf("%.1f", bench.CPU(cs)/bench.CPU(c))})
	}
	fmt.Fprintf(w, "In process, no network: the handler of `tmefeed serve` (defaults) over the fixture origin on loopback.\n"+
		"Bare = a handler writing the same bytes and headers; both sides count building the request (about 10 allocations). \"cached / bare\" is the median over %d alternating rounds of bare CPU / cached CPU (1.00 = as cheap as bare).\n\n", rounds)
	bench.Table(w, rows)
	if stages {
		return auditStages(w, st, d)
	}
	return nil
}

// bareHandler answers every request with body and header.
func bareHandler(body []byte, header http.Header) http.Handler {
	header = header.Clone()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range header {
			h[k] = v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}

// auditStages splits the work behind GET /v1/body: what a hit costs and
// what each step of a miss costs, on the largest channel fixture.
func auditStages(w io.Writer, st *benchStack, d time.Duration) error {
	var page []byte
	for _, ch := range []string{"tmefeed_news", "kanal_novostei", "emoji_party", "hadashot_today", "just_launched"} {
		b, err := fs.ReadFile(fixtures.Pages(), "s/"+ch+".html")
		if err == nil && len(b) > len(page) {
			page = b
		}
	}
	if page == nil {
		return errors.New("bench audit: no channel fixture")
	}
	codec, err := cache.NewCodec()
	if err != nil {
		return err
	}
	stored, err := codec.Encode(cache.Entry{Value: page, FetchedAt: time.Now()})
	if err != nil {
		return err
	}
	parsed, err := parser.ParseBody(page)
	if err != nil {
		return err
	}
	answer, err := server.EncodeJSON(server.BodyView(parsed), false)
	if err != nil {
		return err
	}
	enc, err := httpcache.New(httpcache.Config{})
	if err != nil {
		return err
	}
	req := tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news"}
	render := func(res pages.Result) ([]byte, error) { return server.EncodeJSON(server.BodyView(res.Page), false) }
	if _, _, err := st.pages.RenderedRep(context.Background(), "shape2:body:0", req, render); err != nil {
		return err
	}
	rep := enc.NewRep(answer, true)
	now := time.Now()
	type stage struct {
		name string
		f    func()
	}
	stages := []stage{
		{"cache read (hot store hit, HTTP form kept)", func() {
			_, _, _ = st.pages.RenderedRep(context.Background(), "shape2:body:0", req, render)
		}},
		{"decompression (zstd, page from the cache tier)", func() { _, _ = codec.Decode(stored) }},
		{"parse", func() { _, _ = parser.ParseBody(page) }},
		{"ranking (every post of the page)", func() {
			for i := range parsed.Content.Posts {
				_ = feed.Rank(&parsed.Content.Posts[i], 1000, now)
			}
		}},
		{"serialization (REST JSON)", func() { _, _ = server.EncodeJSON(server.BodyView(parsed), false) }},
		{"ETag (xxh3 of the answer)", func() { _ = httpcache.ETag(answer) }},
		{"gzip of the answer (per hit when not kept)", func() { _ = enc.Compress(httpcache.Gzip, answer) }},
		{"zstd of the answer (per hit when not kept)", func() { _ = enc.Compress(httpcache.Zstd, answer) }},
		{"kept compressed form (select)", func() { _, _, _, _ = enc.Select(rep, "gzip") }},
	}
	fmt.Fprintf(w, "\nStages of GET /v1/body on a %d KB page (%d KB answer, %d KB compressed in the cache tier):\n\n", len(page)>>10, len(answer)>>10, len(stored)>>10)
	rows := [][]string{{"stage", "µs", "CPU µs", "allocs", "KB allocated"}}
	for _, s := range stages {
		m := bench.Measure(d, 3, s.f)
		rows = append(rows, []string{s.name, us(bench.Wall(m)), us(bench.CPU(m)), fmt.Sprintf("%.0f", m.Allocs), fmt.Sprintf("%.1f", m.Bytes/1024)})
	}
	bench.Table(w, rows)
	return nil
}

func us(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// benchMemory requests the body and preview of many distinct channels and
// compares what the stores account for with what the heap grew by, and
// both with the budget.
func benchMemory(ctx context.Context, w io.Writer, getenv func(string) string, channels, mb int) error {
	st, err := newBenchStack(ctx, getenv, mb)
	if err != nil {
		return err
	}
	defer st.Close()
	load := func(s *stack) error {
		dw := &discardWriter{h: http.Header{}}
		for i := 1; i <= channels; i++ {
			for _, target := range []string{"/v1/body/loadchan%03d", "/v1/preview/loadchan%03d"} {
				clear(dw.h)
				dw.status = 0
				s.handler.ServeHTTP(dw, httptest.NewRequest(http.MethodGet, fmt.Sprintf(target, i), nil))
				if dw.status != http.StatusOK {
					return fmt.Errorf("bench memory: %s: status %d", fmt.Sprintf(target, i), dw.status)
				}
			}
		}
		return nil
	}
	// The fixture origin keeps each synthetic page it derives; a first
	// pass through a throwaway stack makes it derive them all, so that
	// the measured growth is the stack's alone.
	if err := load(st.stack); err != nil {
		return err
	}
	st.stack.Close()
	st.stack = nil // so that the measured base holds none of it
	cfg, err := parseServeConfig([]string{"--log-level", "error"}, getenv, io.Discard)
	if err != nil {
		return err
	}
	cfg.MemoryMaxMB = mb
	base := memsize.LiveHeap()
	if st.stack, err = newStack(ctx, cfg, st.originURL, "", slog.New(slog.DiscardHandler), nil); err != nil {
		return err
	}
	if err := load(st.stack); err != nil {
		return err
	}
	u := st.memory()
	heap := memsize.LiveHeap()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	grown := int64(heap) - int64(base)
	budget := int64(mb) << 20
	fmt.Fprintf(w, "%d distinct channels (body + preview each), MEMORY_CACHE_MAX_MB=%d, in process:\n\n", channels, mb)
	rows := [][]string{
		{"figure", "MiB", "ratio"},
		{"budget (MEMORY_CACHE_MAX_MB)", mib(budget), "1.00"},
		{"accounted by the stores", mib(u.Total()), fmt.Sprintf("%.2f of budget", float64(u.Total())/float64(budget))},
		{"live heap grown since start (measured)", mib(grown), fmt.Sprintf("%.2f of budget; accounted / measured %.2f", float64(grown)/float64(budget), float64(u.Total())/float64(grown))},
		{"live heap", mib(int64(heap)), ""},
		{"heap from the OS (HeapSys)", mib(int64(ms.HeapSys)), ""},
		{"peak RSS (VmHWM)", mib(procStatusBytes("VmHWM")), fmt.Sprintf("%.2f of budget", float64(procStatusBytes("VmHWM"))/float64(budget))},
	}
	bench.Table(w, rows)
	fmt.Fprintf(w, "\nsplit: pages %s, hot %s, parses %s, builds %s, rendered %s, graphql %s MiB\n",
		mib(u.Pages), mib(u.Hot), mib(u.Parses), mib(u.Builds), mib(u.Rendered), mib(u.GraphQL))
	return nil
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) }

// procStatusBytes reads a "kB" field of /proc/self/status (0 if absent).
func procStatusBytes(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n << 10
		}
	}
	return 0
}
