package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tmefeed/tmefeed/access"
	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/metrics"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/tme"
	"github.com/tmefeed/tmefeed/widget"
)

// serve runs the API until ctx ends, then shuts down gracefully. ready, when
// set, is called with the listening address once requests are accepted.
func serve(ctx context.Context, cfg serveConfig, logOut io.Writer, ready func(addr string)) error {
	// Deferred first, so it runs last: lines logged while shutting down
	// are written before serve returns.
	logBuf := newLogBuffer(logOut)
	defer logBuf.Close()
	asJSON := jsonLogs(cfg.LogFormat, logOut)
	log := newLogger(cfg.LogLevel, asJSON, logBuf)

	originURL, fallbackURL := cfg.Origin, cfg.FallbackOrigin
	if cfg.Demo {
		demo, err := startDemoOrigin(log)
		if err != nil {
			return err
		}
		defer demo.Close()
		originURL, fallbackURL = demo.url, ""
		cfg.mediaOrigin = demo.url
		cfg.OriginProxies = "" // the built-in pages are read in process, never through a proxy
	}

	st, err := newStack(ctx, cfg, originURL, fallbackURL, log, newRequestLogger(logBuf, asJSON).Log)
	if err != nil {
		return err
	}
	defer st.Close()
	handler := st.handler

	ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv, lim, err := httpServer(cfg, st.budget, handler, ln, log)
	if err != nil {
		return err
	}
	// Subscriptions live on connections Shutdown does not wait for
	// (WebSocket) or would wait for until its deadline (event streams):
	// they are ended, with the reason, as shutting down begins.
	srv.RegisterOnShutdown(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := st.gql.Shutdown(ctx); err != nil {
			log.Warn("subscriptions did not end in time", "err", err)
		}
	})
	// Operations off the public port: /metrics and /debug/pprof on a
	// listener of their own, e.g. on loopback.
	if cfg.MetricsAddr != "" {
		ops, err := serveOps(cfg.MetricsAddr, st.metrics, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer ops.Close()
	}
	// SIGHUP reads the keys again: requests and connections go on, the
	// next request sees the new keys; a file that does not read keeps
	// the old ones.
	if st.keys != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					if err := st.keys.Reload(); err != nil {
						log.Error("API keys not reloaded; the previous ones stay", "err", err)
						continue
					}
					log.Info("API keys reloaded", "file", cfg.APIKeysFile, "consumers", st.keys.Current().Len())
				}
			}
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lim) }()
	log.Info("listening", "addr", ln.Addr().String(), "origin", originURL, "cache_mode", cfg.CacheMode, "demo", cfg.Demo)
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// httpServer is the API's http.Server over ln, with its bounds on
// connections and request headers (server.ConnLimits); serve it on the
// returned listener.
func httpServer(cfg serveConfig, budget memoryBudget, handler http.Handler, ln net.Listener, log *slog.Logger) (*http.Server, *server.Listener, error) {
	trusted, err := parsePrefixes(cfg.TrustedProxies)
	if err != nil {
		return nil, nil, fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}
	lim := server.NewListener(ln, server.ConnLimits{
		Max:            cfg.MaxConnections,
		PerClient:      cfg.ConnsPerClient,
		HeaderBytes:    budget.HeaderBytes,
		TrustedProxies: trusted,
		// Half the CPUs parse large header blocks; the rest stay for
		// everything else.
		LargeHeaderTurns: max(1, runtime.GOMAXPROCS(0)/2),
	})
	return &http.Server{
		Handler:           handler,
		MaxHeaderBytes:    server.MaxHeaderBytes,
		ConnState:         lim.ConnState,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Long enough for a slow origin with retries behind a cache miss.
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}, lim, nil
}

func newLogger(level slog.Level, asJSON bool, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDuration}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// readableDuration writes a duration as Go spells it ("15s", "250ms"),
// as the settings are given, where the JSON handler would write
// nanoseconds.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// demoOrigin is the fixture origin running in-process on a loopback port.
type demoOrigin struct {
	url  string
	srv  *http.Server
	stop chan struct{}
	done chan struct{}
}

func (d *demoOrigin) Close() {
	close(d.stop)
	<-d.done
	_ = d.srv.Close()
}

// The demo's live channel: a post is published there every demoEvery, and
// the one published demoKeep before removed, so that subscriptions in the
// playground see NEW and REMOVED events while the page stays small.
const (
	demoChannel = "just_launched"
	demoEvery   = 15 * time.Second
	demoKeep    = 3
)

// publish runs the demo channel's posts until stop.
func (d *demoOrigin) publish(o *fixtures.Origin, log *slog.Logger) {
	defer close(d.done)
	tick := time.NewTicker(demoEvery)
	defer tick.Stop()
	var ids []int
	for {
		select {
		case <-d.stop:
			return
		case now := <-tick.C:
			ids = append(ids, o.PublishPost(demoChannel, "Demo post published at "+now.UTC().Format(time.TimeOnly)+" UTC. Subscriptions watching @"+demoChannel+" receive it."))
			if len(ids) > demoKeep {
				o.RemovePost(demoChannel, ids[0])
				ids = ids[1:]
			}
			log.Debug("demo post published", "channel", demoChannel, "id", ids[len(ids)-1])
		}
	}
}

// startDemoOrigin serves the built-in fixture pages on 127.0.0.1 and logs
// the channels they hold, so the API works with no network. The pages'
// pictures, video previews and avatars are served by the same origin
// (fixtures.OriginOptions.MediaBase), so they show with no network too.
func startDemoOrigin(log *slog.Logger) (*demoOrigin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo origin: %w", err)
	}
	base := "http://" + ln.Addr().String()
	o := fixtures.NewOrigin(fixtures.OriginOptions{MediaBase: base})
	srv := &http.Server{
		Handler:           o,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() { _ = srv.Serve(ln) }()
	d := &demoOrigin{url: base, srv: srv, stop: make(chan struct{}), done: make(chan struct{})}
	go d.publish(o, log)
	log.Info("demo mode: serving built-in fixture pages, no requests go to Telegram",
		"origin", d.url,
		"channels", strings.Join(o.Channels(), ","),
		"live_channel", demoChannel, "new_post_every", demoEvery,
		"previews", strings.Join(previewNames(fixtures.Pages()), ","))
	return d, nil
}

// exampleChannels are the channels the widget's snippet page suggests:
// in demo mode two of the demo's own, the ones the README's examples
// name; else the widget's default.
func exampleChannels(demo bool) []string {
	if demo {
		return []string{"tmefeed_news", "kanal_novostei"}
	}
	return nil
}

// previewNames lists the names with a recorded preview page.
func previewNames(pagesFS fs.FS) []string {
	files, _ := fs.Glob(pagesFS, "preview/*.html")
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, strings.TrimSuffix(path.Base(f), ".html"))
	}
	return out
}

// stack is the service behind the listener: cache, origin client, page,
// feed and GraphQL services and the HTTP handler, sized by one budget.
type stack struct {
	handler   http.Handler
	budget    memoryBudget
	pageCache cache.Cache  // page bytes and rendered answers
	limiter   gcra.Limiter // the origin budget's
	origin    *origin.Client
	metrics   *metrics.Registry
	pages     *pages.Service
	feeds     *feed.Service
	graph     *graph.Stores
	gql       *graph.Handler
	live      *live.Hub    // live updates: the background updater and subscriptions
	keys      *access.Keys // API_KEYS_FILE's, reloaded on SIGHUP; nil without
}

// newStack builds the service over the origin at originURL. requestLog,
// when set, writes the request lines (see server.Config.RequestLog).
func newStack(ctx context.Context, cfg serveConfig, originURL, fallbackURL string, log *slog.Logger, requestLog func(context.Context, server.RequestLine)) (*stack, error) {
	st := &stack{budget: splitBudget(int64(cfg.MemoryMaxMB)<<20, cfg.FeedMaxChannels), metrics: metrics.New()}
	var hooks cache.ValkeyHooks
	if cfg.ValkeyURL != "" {
		m, err := st.metrics.NewCache()
		if err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		hooks = valkeyHooks(m)
	}
	trusted, err := parsePrefixes(cfg.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}
	pageCache, err := newCache(ctx, cfg, st.budget.Pages, log, hooks)
	if err != nil {
		return nil, err
	}
	st.pageCache = pageCache
	enc, err := httpcache.New(httpcache.Config{Off: !cfg.Compression, MinBytes: cfg.CompressionMinBytes})
	if err != nil {
		st.Close()
		return nil, err
	}
	egresses, err := origin.ParseEgresses(cfg.OriginProxies)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("ORIGIN_PROXIES: %w", err)
	}
	// API keys, when a file is given; the one check the HTTP routes and
	// the WebSocket connections share, and the consumers' own shares of
	// the origin budget.
	if cfg.APIKeysFile != "" {
		if st.keys, err = access.Open(cfg.APIKeysFile); err != nil {
			st.Close()
			return nil, err
		}
		log.Info("API keys on", "file", cfg.APIKeysFile, "consumers", st.keys.Current().Len(), "anonymous", cfg.Anonymous)
	}
	anonymous, _ := server.ParseAnonymous(cfg.Anonymous) // checked by parseServeConfig
	acc := server.NewAccess(st.keys, anonymous, trusted)
	var clientLimit func(string) int
	if acc != nil {
		clientLimit = acc.OriginRPM
	}
	st.limiter = newLimiter(pageCache)
	ocfg := origin.Config{
		BaseURL:         originURL,
		FallbackURL:     fallbackURL,
		Egresses:        egresses,
		RequestTimeout:  cfg.UpstreamTimeout,
		BreakerFailures: cfg.BreakerFailures,
		BreakerCoolDown: cfg.BreakerCoolDown,
		RetryBudget:     cfg.RetryBudget,
		Observe:         st.metrics.Origin.Attempt,
		Budget: &origin.Budget{
			Limiter:     st.limiter,
			RPM:         cfg.OriginRPM,
			Burst:       cfg.OriginBurst,
			ClientRPM:   cfg.ClientOriginRPM,
			ClientLimit: clientLimit,
			Observe: func(egress string, class tme.Class, outcome string, wait time.Duration) {
				st.metrics.Origin.Budget(egress, class.String(), outcome, wait)
			},
		},
	}
	if cfg.RetryBudget == 0 {
		ocfg.MaxRetries = -1 // a budget of nothing: no retries (origin.Config reads 0 as the default)
	}
	client, err := origin.New(ocfg)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("origin: %w", err)
	}
	st.origin = client
	st.pages = pages.New(pages.Config{
		Cache:       pageCache,
		Origin:      client,
		Refresh:     cfg.Refresh,
		HotBytes:    st.budget.Hot,
		ParsedBytes: st.budget.Parsed,
		Represent:   server.Represent(enc),
		// Feeds with since and long post windows walk this deep.
		HistoryMaxPages: cfg.HistoryMaxPages,
		MediaOrigins:    cfg.mediaOrigins(),
	})
	// Live updates: with Valkey, events found by the process that fetched
	// a changed page are recorded in a stream that every process reads and
	// its subscribers resume from; alone, in memory.
	var events live.Log
	if v, ok := pageCache.(*cache.Valkey); ok {
		events = v.Stream(keys.LiveLog(), cfg.LiveBacklog, cfg.LiveBacklogAge)
	}
	st.live, err = live.New(live.Config{
		Pages:       st.pages,
		Log:         events,
		Backlog:     live.MemoryLogConfig{MaxLen: cfg.LiveBacklog, MaxAge: cfg.LiveBacklogAge},
		MaxChannels: cfg.FeedMaxChannels,
		Buffer:      cfg.SubBuffer,
		Refresh:     cfg.Refresh,
		Updater: live.UpdaterConfig{
			Off:         !cfg.Updater,
			Concurrency: cfg.UpdaterConcurrency,
			Top:         cfg.UpdaterTop,
		},
		Logger: log,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	// Persisted queries are shared through Valkey; without it the GraphQL
	// stores' own bounded map is all there is (a second in-process copy
	// would only take memory).
	var apq graph.KV
	if v, ok := pageCache.(*cache.Valkey); ok {
		apq = v.KV()
	}
	// One budget per client for the HTTP routes and the subscribe
	// messages of its WebSocket connections. With keys, consumers' own
	// rpm= count even when RATE_LIMIT_RPM is 0.
	rateLimit := server.NewRateLimit(server.RateLimitConfig{RPM: cfg.RateLimitRPM, Trusted: trusted, Consumers: acc != nil})
	// One bound on the channel look-ups of every fan-out (subscriptions
	// starting, previews), counted in the memory budget.
	fanOut := pages.NewGate(st.budget.FanOutPages)
	// One share of the cores per client, for its requests and its
	// subscriptions' starts alike.
	share := server.NewShare(server.ShareConfig{PerClient: cfg.ClientConcurrency, CPU: cfg.ClientCPUShare})
	gql, err := newGraphQL(cfg, st.budget, st.pages, fanOut, st.live, apq, rateLimit, share, acc, server.ClientKey(trusted), enc, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	st.feeds, st.graph, st.gql = gql.feeds, gql.stores, gql.handler
	st.live.TellFeeds(gql.feeds)
	// Open widgets subscribe to their channels' updates when something
	// sends them: the background updater, which needs a refresh point.
	subscribe := ""
	if cfg.Updater && cfg.Refresh > 0 {
		subscribe = "/graphql"
	}
	var mint func(*http.Request, []string) (string, error)
	if acc != nil {
		mint = acc.MintWidgetKey
	}
	embed, err := widget.New(widget.Config{
		MintKey:        mint,
		Client:         server.ClientKey(trusted),
		Feed:           gql.feeds,
		FrameAncestors: frameAncestors(cfg.FrameAncestors),
		PollInterval:   cfg.EmbedPoll,
		Subscribe:      subscribe,
		PublicURL:      cfg.PublicURL,
		ImageOrigins:   cfg.mediaOrigins(),
		// The demo suggests channels it has.
		ExampleChannels: exampleChannels(cfg.Demo),
		Encoder:         enc,
		Logger:          log,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := st.registerCollectors(st.metrics); err != nil {
		st.Close()
		return nil, fmt.Errorf("metrics: %w", err)
	}
	st.handler = server.New(server.Config{
		Pages:      st.pages,
		Refresh:    cfg.Refresh,
		Logger:     log,
		GraphQL:    gql.handler,
		Playground: gql.playground,
		Feed:       gql.feeds,
		Widget:     embed,
		PublicURL:  cfg.PublicURL,
		Media:      st.pages,
		FanOut:     fanOut,
		// One CORS policy for REST and GraphQL alike.
		CORSOrigins:      splitList(cfg.CORSOrigins),
		Metrics:          st.metrics,
		RequestLog:       requestLog,
		Ready:            st.readyChecks(),
		RateLimit:        rateLimit,
		TrustedProxies:   trusted,
		StreamsPerClient: cfg.StreamsPerClient,
		Share:            server.ShareConfig{PerClient: -1}, // Shares, or none
		Shares:           share,
		Encoder:          enc,
		Access:           acc,
		MetricsElsewhere: cfg.MetricsAddr != "",
	})
	log.Info("memory", "budget_mb", cfg.MemoryMaxMB, "split", st.budget, "go_memory_limit_mb", debug.SetMemoryLimit(-1)>>20)
	return st, nil
}

// Close releases the cache, the stores' background goroutines and the
// origin client's idle connections.
func (st *stack) Close() {
	if st.live != nil {
		st.live.Close() // first: its updater reads through the cache
	}
	if st.feeds != nil {
		st.feeds.Close()
	}
	if st.graph != nil {
		st.graph.Close()
	}
	if st.pageCache != nil {
		_ = st.pageCache.Close()
	}
	if st.origin != nil {
		_ = st.origin.Close() // last: the cache's loads fetch through it; drops kept connections to proxies
	}
}

// memoryUsage is what each in-process store holds, in accounted bytes.
type memoryUsage struct {
	Pages    int64 // compressed pages and answers (Valkey: client-side cache + fallback)
	Hot      int64
	Parses   int64 // parsed pages, each once, whether the parsed-page cache or a feed build holds it
	Builds   int64 // kept feed builds without their parsed pages
	Rendered int64
	GraphQL  int64
	Live     int64 // the updater's popularity counts
}

func (u memoryUsage) Total() int64 {
	return u.Pages + u.Hot + u.Parses + u.Builds + u.Rendered + u.GraphQL + u.Live
}

// memory returns the accounted bytes, after finishing pending evictions.
func (st *stack) memory() memoryUsage {
	st.pages.CleanUp()
	st.feeds.CleanUp()
	st.graph.CleanUp()
	ps, fs := st.pages.Stats(), st.feeds.Stats()
	u := memoryUsage{
		Hot:      int64(ps.HotBytes),
		Parses:   ps.HeldBytes,
		Builds:   fs.KeptOwnBytes,
		Rendered: int64(fs.RenderedBytes),
		GraphQL:  st.graph.Bytes(),
		Live:     liveBytes(st.live.Stats()),
	}
	switch c := st.pageCache.(type) {
	case *cache.Memory:
		u.Pages = int64(c.Stats().Bytes)
	case *cache.Valkey:
		u.Pages = c.LocalBytes()
	}
	return u
}

// liveBytes is what the live hub holds: the updater's popularity counts
// and the changed pages waiting to be compared.
func liveBytes(s live.Stats) int64 { return s.Updater.Bytes + s.QueuedBytes }
