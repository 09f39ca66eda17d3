package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	tmeorigin "github.com/tmefeed/tmefeed/origin" // parseServeConfig's origin is where a value came from
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/widget"
)

// serveConfig is everything `tmefeed serve` is configured by. Each field
// comes from an environment variable, overridden by the flag of the same
// meaning.
type serveConfig struct {
	Port                 int           // PORT, --port
	Origin               string        // TME_ORIGIN, --origin
	FallbackOrigin       string        // TME_FALLBACK_ORIGIN, --fallback-origin
	OriginProxies        string        // ORIGIN_PROXIES, --origin-proxies; checked by origin.ParseEgresses
	CacheMode            string        // CACHE_MODE, --cache-mode
	Refresh              time.Duration // derived from CacheMode
	MemoryMaxMB          int           // MEMORY_CACHE_MAX_MB, --memory-cache-max-mb
	MemoryLimitMB        int           // MEMORY_LIMIT_MB, --memory-limit-mb; 0 = derived (see applyMemoryLimit)
	MemoryMaxTTL         time.Duration // MEMORY_CACHE_MAX_TTL, --memory-cache-max-ttl
	ValkeyURL            string        // VALKEY_URL, --valkey-url
	ValkeyTimeout        time.Duration // VALKEY_TIMEOUT, --valkey-timeout
	UpstreamTimeout      time.Duration // UPSTREAM_TIMEOUT, --upstream-timeout
	BreakerFailures      int           // UPSTREAM_BREAKER_FAILURES, --upstream-breaker-failures
	BreakerCoolDown      time.Duration // UPSTREAM_BREAKER_COOLDOWN, --upstream-breaker-cooldown
	RetryBudget          float64       // UPSTREAM_RETRY_BUDGET, --upstream-retry-budget
	NegativeTTL          time.Duration // NEGATIVE_CACHE_TTL, --negative-cache-ttl (0 = off)
	ShutdownTimeout      time.Duration // SHUTDOWN_TIMEOUT, --shutdown-timeout
	LogLevel             slog.Level    // LOG_LEVEL, --log-level
	LogFormat            string        // LOG_FORMAT, --log-format: json, text or auto
	RateLimitRPM         int           // RATE_LIMIT_RPM, --rate-limit-rpm (0 = off)
	TrustedProxies       string        // TRUSTED_PROXIES, --trusted-proxies (comma-separated; checked by parsePrefixes)
	Demo                 bool          // --demo
	CORSOrigins          string        // CORS_ORIGINS, --cors-origins (comma-separated)
	Introspection        bool          // GRAPHQL_INTROSPECTION, --graphql-introspection
	GraphQLTimeout       time.Duration // GRAPHQL_TIMEOUT, --graphql-timeout
	GraphQLMaxMB         int           // GRAPHQL_MAX_RESPONSE_MB, --graphql-max-response-mb
	GraphQLMaxExpensive  int           // GRAPHQL_MAX_EXPENSIVE, --graphql-max-expensive (0 = half the CPUs)
	FeedMaxChannels      int           // FEED_MAX_CHANNELS, --feed-max-channels
	HistoryMaxPages      int           // HISTORY_MAX_PAGES, --history-max-pages
	CursorKey            string        // CURSOR_KEY, --cursor-key ("" = feed.DefaultCursorKey)
	FrameAncestors       string        // EMBED_FRAME_ANCESTORS, --embed-frame-ancestors (space- or comma-separated)
	EmbedPoll            time.Duration // EMBED_POLL_INTERVAL, --embed-poll-interval
	PublicURL            string        // PUBLIC_URL, --public-url ("" = the request's Host, Telegram's media URLs)
	Updater              bool          // UPDATER, --updater (on | off)
	UpdaterConcurrency   int           // UPDATER_CONCURRENCY, --updater-concurrency
	UpdaterTop           int           // UPDATER_TOP, --updater-top
	Compression          bool          // COMPRESSION, --compression
	CompressionMinBytes  int           // COMPRESSION_MIN_BYTES, --compression-min-bytes
	SubsPerConnection    int           // SUBSCRIPTIONS_PER_CONNECTION, --subscriptions-per-connection
	SubsMax              int           // SUBSCRIPTIONS_MAX, --subscriptions-max
	StreamsPerClient     int           // STREAMS_PER_CLIENT, --streams-per-client (0 = no bound)
	MaxConnections       int           // MAX_CONNECTIONS, --max-connections (0 = no bound)
	ConnsPerClient       int           // CONNECTIONS_PER_CLIENT, --connections-per-client (0 = no bound)
	SubBuffer            int           // SUBSCRIPTION_BUFFER, --subscription-buffer
	LiveBacklog          int           // LIVE_BACKLOG, --live-backlog
	LiveBacklogAge       time.Duration // LIVE_BACKLOG_AGE, --live-backlog-age
	WSInitTimeout        time.Duration // WS_INIT_TIMEOUT, --ws-init-timeout
	StreamKeepAlive      time.Duration // STREAM_KEEPALIVE, --stream-keepalive
	APIKeysFile          string        // API_KEYS_FILE, --api-keys-file ("" = no keys: every route open)
	Anonymous            string        // ANONYMOUS, --anonymous: off, cached or on (with API_KEYS_FILE)
	MetricsAddr          string        // METRICS_ADDR, --metrics-addr ("" = /metrics on the public port)
	OriginRPM            int           // ORIGIN_RPM, --origin-rpm
	OriginBurst          int           // ORIGIN_BURST, --origin-burst (0 = ORIGIN_RPM/5)
	ClientOriginRPM      int           // CLIENT_ORIGIN_RPM, --client-origin-rpm (0 = no per-client share)
	ClientConcurrency    int           // CLIENT_CONCURRENCY, --client-concurrency (0 = half the CPUs, -1 = no bound)
	ClientCPUShare       float64       // CLIENT_CPU_SHARE, --client-cpu-share (0 = a sixty-fourth of the CPUs, -1 = no bound)
	SubChannelsPerClient int           // SUBSCRIBED_CHANNELS_PER_CLIENT, --subscribed-channels-per-client (0 = no cap)

	// mediaOrigin is set by serve, not read from a setting: an origin
	// that serves the pages' media besides Telegram (the demo's fixture
	// origin), which /media may redirect to and the widget may load
	// images from. Empty: none.
	mediaOrigin string
}

// Defaults of the origin budget (docs/RUNNING.md's settings table says why).
const (
	defaultOriginRPM       = 600
	defaultClientOriginRPM = 60
	// defaultSubChannels is SUBSCRIBED_CHANNELS_PER_CLIENT's default: a
	// few dashboards of a full feed (FEED_MAX_CHANNELS) each.
	defaultSubChannels = 500
)

// defaultStreamsPerClient is STREAMS_PER_CLIENT's default (docs/RUNNING.md's
// settings table says why this number).
const defaultStreamsPerClient = 256

// setting is one row of the settings table: the env var, its flag and default.
type setting struct {
	env, flag, def, usage string
}

var serveSettings = []setting{
	{"PORT", "port", "8080", "TCP port to listen on"},
	{"TME_ORIGIN", "origin", "https://t.me", "base URL pages are fetched from"},
	{"TME_FALLBACK_ORIGIN", "fallback-origin", "", "second origin tried when the first keeps failing, e.g. https://telegram.me"},
	{"ORIGIN_PROXIES", "origin-proxies", "", "comma-separated egresses to the origin: http://, https:// (CONNECT) or socks5:// proxy URLs, and direct for the server's own address; empty = direct only"},
	{"CACHE_MODE", "cache-mode", "normal", "off | normal (refresh after 10s) | aggressive (after 120s)"},
	{"MEMORY_CACHE_MAX_MB", "memory-cache-max-mb", "64", "MiB of every in-process store together (pages, parsed pages, feeds, GraphQL), counted in heap bytes"},
	{"MEMORY_LIMIT_MB", "memory-limit-mb", "", "Go runtime soft memory limit in MiB; empty = GOMEMLIMIT if set, else 4×MEMORY_CACHE_MAX_MB+64"},
	{"MEMORY_CACHE_MAX_TTL", "memory-cache-max-ttl", "0", "longest an in-process copy is kept; 0 = tier default (embedded: max(30×refresh, 10m), served stale while Telegram fails)"},
	{"VALKEY_URL", "valkey-url", "", "Valkey/Redis URL for a shared cache; a Valkey Cluster by its seeds: redis://a:6379?addr=b:6379 or a,b,c comma list; empty = embedded cache only"},
	{"VALKEY_TIMEOUT", "valkey-timeout", "250ms", "deadline of one Valkey call; failures open a breaker and the process serves from its own memory"},
	{"UPSTREAM_TIMEOUT", "upstream-timeout", "10s", "deadline of one request to the origin, body included"},
	{"UPSTREAM_BREAKER_FAILURES", "upstream-breaker-failures", "5", "consecutive failed requests to an origin host that open its circuit breaker"},
	{"UPSTREAM_BREAKER_COOLDOWN", "upstream-breaker-cooldown", "10s", "how long an open breaker sends nothing to its host before letting probes through"},
	{"UPSTREAM_RETRY_BUDGET", "upstream-retry-budget", "0.2", "retries allowed as a fraction of recent requests to the origin, 0..1"},
	{"NEGATIVE_CACHE_TTL", "negative-cache-ttl", "5s", "how long a page that failed to load is answered with that failure instead of asking again; 0 = off"},
	{"SHUTDOWN_TIMEOUT", "shutdown-timeout", "15s", "how long in-flight requests may finish after SIGINT/SIGTERM"},
	{"LOG_LEVEL", "log-level", "info", "debug | info | warn | error"},
	{"LOG_FORMAT", "log-format", "auto", "json | text | auto (text when stderr is a terminal, else json)"},
	{"RATE_LIMIT_RPM", "rate-limit-rpm", "0", "requests per minute one client may make to /v1, /graphql, /media and the widget's /embed and /embed/posts (not its assets or /embed/new), each subscribe message on an open WebSocket counting as one, answered 429 with Retry-After beyond; 0 = no limit"},
	{"ORIGIN_RPM", "origin-rpm", strconv.Itoa(defaultOriginRPM), "requests a minute sent to Telegram from one egress address (this server's own, shared by every process with VALKEY_URL), whatever asks for them; beyond it stale copies are served longer, the updater slows down and a page no tier holds is 503 origin_budget_exhausted with Retry-After"},
	{"ORIGIN_BURST", "origin-burst", "0", "requests to Telegram that may go at once within ORIGIN_RPM; 0 = ORIGIN_RPM/5"},
	{"CLIENT_ORIGIN_RPM", "client-origin-rpm", strconv.Itoa(defaultClientOriginRPM), "requests to Telegram one client (as RATE_LIMIT_RPM counts clients) may cause a minute, after a burst of 120 (one cold feed of 100 channels); beyond it a page no tier holds is 429 rate_limited with Retry-After, cached answers are served as ever; 0 = no per-client share"},
	{"CLIENT_CONCURRENCY", "client-concurrency", "0", "requests that build answers from many pages (feeds and feed documents with their history walks, previews, the widget, GraphQL beyond its kept answers) one client (as RATE_LIMIT_RPM counts clients) has working at once; the next wait their turn, and a request that has run 250ms stops counting (it waits on Telegram); over 1024 waiting is 429 rate_limited; 0 = half the CPUs, at least one; -1 = no bound"},
	{"CLIENT_CPU_SHARE", "client-cpu-share", "0", "part of the server's CPUs one client's requests of that kind (and its subscriptions' starts, each looking up the channels it names) may keep working on average, counted as the time each works (up to 50ms: a longer one is waiting on Telegram), with a burst of 500ms of work; beyond, its next requests wait, and are refused with 429 rate_limited when the wait would pass 1s; 0 = a sixty-fourth; -1 = no bound"},
	{"TRUSTED_PROXIES", "trusted-proxies", "", "comma-separated CIDRs (or addresses) of proxies whose X-Forwarded-For / X-Real-IP name the client for the per-client limits (RATE_LIMIT_RPM, STREAMS_PER_CLIENT, CLIENT_ORIGIN_RPM); empty = the peer address is the client"},
	{"CORS_ORIGINS", "cors-origins", "", "comma-separated origins browsers may call the API from (* = any); empty = no CORS headers"},
	{"GRAPHQL_INTROSPECTION", "graphql-introspection", "true", "answer GraphQL schema introspection (the playground and code generators use it)"},
	{"GRAPHQL_TIMEOUT", "graphql-timeout", "10s", "deadline of one GraphQL operation, from parsing to the last byte"},
	{"GRAPHQL_MAX_RESPONSE_MB", "graphql-max-response-mb", "32", "largest GraphQL answer in MiB; a larger one is replaced by a COMPLEXITY_LIMIT_EXCEEDED error"},
	{"GRAPHQL_MAX_EXPENSIVE", "graphql-max-expensive", "0", "CPU-bound GraphQL work (new or large documents, introspection) run at once; 0 = half the CPUs"},
	{"FEED_MAX_CHANNELS", "feed-max-channels", "100", "most channels one feed may merge"},
	{"HISTORY_MAX_PAGES", "history-max-pages", "10", "most t.me pages read per channel to reach older posts (Channel.posts first up to 200, feeds with since), 1..100"},
	{"CURSOR_KEY", "cursor-key", "", "secret feed cursors are sealed with; the same on every process serving the same clients; empty = a built-in key"},
	{"EMBED_FRAME_ANCESTORS", "embed-frame-ancestors", "*", "pages allowed to embed the /embed widget, as CSP frame-ancestors sources separated by spaces or commas, e.g. 'self' https://dash.example.com"},
	{"EMBED_POLL_INTERVAL", "embed-poll-interval", "15s", "how often an open /embed widget asks whether its feed changed when its live update stream cannot be had (4 times less often while it is open)"},
	{"PUBLIC_URL", "public-url", "", "URL clients reach the service at, e.g. https://tmefeed.example; feed-reader documents link themselves and media (/media/…) through it; empty = the request's Host and Telegram's media URLs"},
	{"UPDATER", "updater", "on", "on | off: refresh popular and subscribed channels' pages in the background, shortly before their refresh point"},
	{"UPDATER_CONCURRENCY", "updater-concurrency", "16", "most origin fetches the background updater runs at once"},
	{"UPDATER_TOP", "updater-top", "200", "most popular channels the updater keeps fresh (channels with a subscriber come on top)"},
	{"COMPRESSION", "compression", "on", "on | off: compress answers with zstd or gzip as Accept-Encoding asks"},
	{"COMPRESSION_MIN_BYTES", "compression-min-bytes", "1024", "smallest answer compressed, in bytes"},
	{"DEMO", "demo", "false", "serve the built-in fixture pages instead of TME_ORIGIN (no network needed)"},
	{"SUBSCRIPTIONS_PER_CONNECTION", "subscriptions-per-connection", "16", "most GraphQL subscriptions open at once on one WebSocket connection"},
	{"SUBSCRIPTIONS_MAX", "subscriptions-max", "10000", "most GraphQL subscriptions (and WebSocket connections) open at once in the process"},
	{"STREAMS_PER_CLIENT", "streams-per-client", strconv.Itoa(defaultStreamsPerClient), "most streams (WebSocket connections and event streams at /graphql together) one client (an IPv4 address or IPv6 /64, see TRUSTED_PROXIES) holds open at once, answered 429 with Retry-After beyond; at most SUBSCRIPTIONS_MAX (the default is lowered to it); 0 = no bound"},
	{"MAX_CONNECTIONS", "max-connections", "20000", "most TCP connections the API keeps open at once (WebSocket and event streams included); one more is answered 503 with Retry-After and closed; 0 = no bound"},
	{"CONNECTIONS_PER_CLIENT", "connections-per-client", "1024", "most TCP connections one peer address (an IPv6 /64 as one; TRUSTED_PROXIES not counted) keeps open at once, answered 429 with Retry-After and closed beyond; at least STREAMS_PER_CLIENT; 0 = no bound"},
	{"SUBSCRIBED_CHANNELS_PER_CLIENT", "subscribed-channels-per-client", strconv.Itoa(defaultSubChannels), "most distinct channels one client (as STREAMS_PER_CLIENT counts clients) keeps subscribed at once over all its streams, each refreshed by the updater once a window on the origin budget; a subscription beyond is refused with RATE_LIMITED; 0 = no cap"},
	{"SUBSCRIPTION_BUFFER", "subscription-buffer", "64", "events a subscriber may leave unread before its subscription ends with SLOW_SUBSCRIBER"},
	{"LIVE_BACKLOG", "live-backlog", "10000", "most change events kept for subscribers that reconnect to resume from (Last-Event-ID, feedUpdates' after), shared through Valkey when set"},
	{"LIVE_BACKLOG_AGE", "live-backlog-age", "5m", "how long change events are kept for subscribers to resume from; a subscriber away longer is told it missed some"},
	{"WS_INIT_TIMEOUT", "ws-init-timeout", "10s", "how long a new WebSocket connection has to send connection_init"},
	{"STREAM_KEEPALIVE", "stream-keepalive", "15s", "interval of keep-alive pings on WebSocket connections and event streams; a WebSocket client answering none within two is dropped"},
	{"API_KEYS_FILE", "api-keys-file", "", "file of API keys (one consumer a line: name, sha256:<key hash>, optional rpm= origin_rpm= streams=; `tmefeed keys add NAME` writes one), reloaded on SIGHUP; the routes that read pages and feeds then need a key; empty = every route open"},
	{"ANONYMOUS", "anonymous", "off", "with API_KEYS_FILE, what requests without a key may do: off (401) | cached (single pages from the cache only, never fetched) | on (everything, counted by address)"},
	{"METRICS_ADDR", "metrics-addr", "", "address of a listener of its own for /metrics and /debug/pprof, e.g. 127.0.0.1:9090; the public port then answers 404 there; empty = /metrics on the public port"},
}

// parseServeConfig builds the serve configuration from the environment
// (through getenv) and the command-line args; a flag given on the command
// line overrides its environment variable.
func parseServeConfig(args []string, getenv func(string) string, usage io.Writer) (serveConfig, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(usage)
	vals := make(map[string]*string, len(serveSettings))
	for _, s := range serveSettings {
		def := s.def
		if v, ok := lookup(getenv, s.env); ok {
			def = v
		}
		if s.env == "DEMO" {
			// A boolean flag, so that a bare --demo means true.
			v := def
			vals[s.env] = &v
			fs.BoolFunc(s.flag, s.usage+" ($"+s.env+")", func(b string) error { v = b; return nil })
			continue
		}
		vals[s.env] = fs.String(s.flag, def, s.usage+" ($"+s.env+")")
	}
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: tmefeed serve [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return serveConfig{}, err
	}
	if fs.NArg() > 0 {
		return serveConfig{}, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	// Name the variable or flag a bad value came from.
	origin := map[string]string{}
	for _, s := range serveSettings {
		origin[s.env] = "$" + s.env
	}
	fs.Visit(func(f *flag.Flag) {
		for _, s := range serveSettings {
			if s.flag == f.Name {
				origin[s.env] = "--" + s.flag
			}
		}
	})

	var cfg serveConfig
	var errs []error
	bad := func(env string, err error) {
		errs = append(errs, fmt.Errorf("%s=%q: %w", origin[env], *vals[env], err))
	}
	var err error
	if cfg.Port, err = strconv.Atoi(*vals["PORT"]); err != nil || cfg.Port < 0 || cfg.Port > 65535 {
		bad("PORT", errors.New("want a port number 0..65535"))
	}
	cfg.Origin = strings.TrimRight(*vals["TME_ORIGIN"], "/")
	if err := checkURL(cfg.Origin, true); err != nil {
		bad("TME_ORIGIN", err)
	}
	cfg.FallbackOrigin = strings.TrimRight(*vals["TME_FALLBACK_ORIGIN"], "/")
	if err := checkURL(cfg.FallbackOrigin, false); err != nil {
		bad("TME_FALLBACK_ORIGIN", err)
	}
	cfg.OriginProxies = strings.TrimSpace(*vals["ORIGIN_PROXIES"])
	if _, err := tmeorigin.ParseEgresses(cfg.OriginProxies); err != nil {
		// Not bad(): the value may hold a proxy's password, which the
		// error leaves out.
		errs = append(errs, fmt.Errorf("%s: %w", origin["ORIGIN_PROXIES"], err))
	}
	cfg.CacheMode = *vals["CACHE_MODE"]
	if cfg.Refresh, err = cache.RefreshFor(cfg.CacheMode); err != nil {
		bad("CACHE_MODE", errors.New("want off, normal or aggressive"))
	}
	if cfg.MemoryMaxMB, err = strconv.Atoi(*vals["MEMORY_CACHE_MAX_MB"]); err != nil || cfg.MemoryMaxMB < 1 {
		bad("MEMORY_CACHE_MAX_MB", errors.New("want a whole number of MiB, at least 1"))
	}
	if v := *vals["MEMORY_LIMIT_MB"]; v != "" {
		if cfg.MemoryLimitMB, err = strconv.Atoi(v); err != nil || cfg.MemoryLimitMB < 1 {
			bad("MEMORY_LIMIT_MB", errors.New("want a whole number of MiB, at least 1, or empty for the default"))
		}
	}
	cfg.MemoryMaxTTL = duration(*vals["MEMORY_CACHE_MAX_TTL"], func(err error) { bad("MEMORY_CACHE_MAX_TTL", err) }, true)
	if cfg.MemoryMaxTTL > 0 && cfg.MemoryMaxTTL < cfg.Refresh && *vals["VALKEY_URL"] == "" {
		bad("MEMORY_CACHE_MAX_TTL", fmt.Errorf("shorter than the %s refresh point of CACHE_MODE=%s", cfg.Refresh, cfg.CacheMode))
	}
	cfg.ValkeyURL = *vals["VALKEY_URL"]
	if cfg.ValkeyURL != "" {
		if err := cache.CheckValkeyURL(cfg.ValkeyURL); err != nil {
			bad("VALKEY_URL", err)
		}
	}
	cfg.ValkeyTimeout = duration(*vals["VALKEY_TIMEOUT"], func(err error) { bad("VALKEY_TIMEOUT", err) }, false)
	cfg.UpstreamTimeout = duration(*vals["UPSTREAM_TIMEOUT"], func(err error) { bad("UPSTREAM_TIMEOUT", err) }, false)
	if cfg.BreakerFailures, err = strconv.Atoi(*vals["UPSTREAM_BREAKER_FAILURES"]); err != nil || cfg.BreakerFailures < 1 {
		bad("UPSTREAM_BREAKER_FAILURES", errors.New("want a whole number, at least 1"))
	}
	cfg.BreakerCoolDown = duration(*vals["UPSTREAM_BREAKER_COOLDOWN"], func(err error) { bad("UPSTREAM_BREAKER_COOLDOWN", err) }, false)
	if cfg.RetryBudget, err = strconv.ParseFloat(*vals["UPSTREAM_RETRY_BUDGET"], 64); err != nil || !(cfg.RetryBudget >= 0 && cfg.RetryBudget <= 1) {
		bad("UPSTREAM_RETRY_BUDGET", errors.New("want a fraction from 0 to 1, e.g. 0.2"))
	}
	cfg.NegativeTTL = duration(*vals["NEGATIVE_CACHE_TTL"], func(err error) { bad("NEGATIVE_CACHE_TTL", err) }, true)
	cfg.ShutdownTimeout = duration(*vals["SHUTDOWN_TIMEOUT"], func(err error) { bad("SHUTDOWN_TIMEOUT", err) }, false)
	if err := cfg.LogLevel.UnmarshalText([]byte(*vals["LOG_LEVEL"])); err != nil {
		bad("LOG_LEVEL", errors.New("want debug, info, warn or error"))
	}
	cfg.LogFormat = *vals["LOG_FORMAT"]
	if cfg.LogFormat != "text" && cfg.LogFormat != "json" && cfg.LogFormat != "auto" {
		bad("LOG_FORMAT", errors.New("want json, text or auto"))
	}
	if cfg.RateLimitRPM, err = strconv.Atoi(*vals["RATE_LIMIT_RPM"]); err != nil || cfg.RateLimitRPM < 0 {
		bad("RATE_LIMIT_RPM", errors.New("want a whole number of requests per minute, 0 for no limit"))
	}
	if cfg.OriginRPM, err = strconv.Atoi(*vals["ORIGIN_RPM"]); err != nil || cfg.OriginRPM < 1 || cfg.OriginRPM > 600_000 {
		bad("ORIGIN_RPM", errors.New("want a whole number of requests a minute from 1 to 600000: Telegram's answers are never unbounded"))
	}
	if cfg.OriginBurst, err = strconv.Atoi(*vals["ORIGIN_BURST"]); err != nil || cfg.OriginBurst < 0 {
		bad("ORIGIN_BURST", errors.New("want a whole number of requests, 0 for ORIGIN_RPM/5"))
	} else if cfg.OriginRPM > 0 && cfg.OriginBurst > cfg.OriginRPM {
		bad("ORIGIN_BURST", fmt.Errorf("more than ORIGIN_RPM (%d): a burst larger than a minute's budget would let a minute exceed it twice over", cfg.OriginRPM))
	}
	if cfg.ClientOriginRPM, err = strconv.Atoi(*vals["CLIENT_ORIGIN_RPM"]); err != nil || cfg.ClientOriginRPM < 0 {
		bad("CLIENT_ORIGIN_RPM", errors.New("want a whole number of requests a minute, 0 for no per-client share"))
	}
	cfg.TrustedProxies = *vals["TRUSTED_PROXIES"]
	if _, err := parsePrefixes(cfg.TrustedProxies); err != nil {
		bad("TRUSTED_PROXIES", err)
	}
	cfg.CORSOrigins = *vals["CORS_ORIGINS"]
	if err := checkOrigins(splitList(cfg.CORSOrigins)); err != nil {
		bad("CORS_ORIGINS", err)
	}
	if cfg.Introspection, err = strconv.ParseBool(*vals["GRAPHQL_INTROSPECTION"]); err != nil {
		bad("GRAPHQL_INTROSPECTION", errors.New("want true or false"))
	}
	cfg.GraphQLTimeout = duration(*vals["GRAPHQL_TIMEOUT"], func(err error) { bad("GRAPHQL_TIMEOUT", err) }, false)
	if cfg.GraphQLMaxMB, err = strconv.Atoi(*vals["GRAPHQL_MAX_RESPONSE_MB"]); err != nil || cfg.GraphQLMaxMB < 1 || cfg.GraphQLMaxMB > 1024 {
		bad("GRAPHQL_MAX_RESPONSE_MB", errors.New("want a whole number of MiB from 1 to 1024"))
	}
	if cfg.ClientConcurrency, err = strconv.Atoi(*vals["CLIENT_CONCURRENCY"]); err != nil || cfg.ClientConcurrency < -1 {
		bad("CLIENT_CONCURRENCY", errors.New("want a whole number of requests, 0 for half the CPUs, -1 for no bound"))
	}
	if cfg.ClientCPUShare, err = strconv.ParseFloat(*vals["CLIENT_CPU_SHARE"], 64); err != nil || !(cfg.ClientCPUShare == -1 || cfg.ClientCPUShare >= 0 && cfg.ClientCPUShare <= 1) {
		bad("CLIENT_CPU_SHARE", errors.New("want a part of the CPUs from 0 to 1 (0.25 is a quarter), 0 for a sixty-fourth, -1 for no bound"))
	}
	if cfg.GraphQLMaxExpensive, err = strconv.Atoi(*vals["GRAPHQL_MAX_EXPENSIVE"]); err != nil || cfg.GraphQLMaxExpensive < 0 {
		bad("GRAPHQL_MAX_EXPENSIVE", errors.New("want a whole number, 0 for half the CPUs"))
	}
	if cfg.FeedMaxChannels, err = strconv.Atoi(*vals["FEED_MAX_CHANNELS"]); err != nil || cfg.FeedMaxChannels < 1 || cfg.FeedMaxChannels > 1000 {
		bad("FEED_MAX_CHANNELS", errors.New("want a whole number from 1 to 1000"))
	}
	if cfg.HistoryMaxPages, err = strconv.Atoi(*vals["HISTORY_MAX_PAGES"]); err != nil || cfg.HistoryMaxPages < 1 || cfg.HistoryMaxPages > 100 {
		bad("HISTORY_MAX_PAGES", errors.New("want a whole number from 1 to 100"))
	}
	cfg.CursorKey = *vals["CURSOR_KEY"] // any string: it is stretched into keys
	cfg.FrameAncestors = *vals["EMBED_FRAME_ANCESTORS"]
	if err := widget.CheckFrameAncestors(frameAncestors(cfg.FrameAncestors)); err != nil {
		bad("EMBED_FRAME_ANCESTORS", err)
	}
	cfg.EmbedPoll = duration(*vals["EMBED_POLL_INTERVAL"], func(err error) { bad("EMBED_POLL_INTERVAL", err) }, false)
	if cfg.EmbedPoll > 0 && cfg.EmbedPoll < 500*time.Millisecond {
		bad("EMBED_POLL_INTERVAL", errors.New("want at least 500ms"))
	}
	cfg.PublicURL = strings.TrimRight(*vals["PUBLIC_URL"], "/")
	if err := checkPublicURL(cfg.PublicURL); err != nil {
		bad("PUBLIC_URL", err)
	}
	switch *vals["UPDATER"] {
	case "on":
		cfg.Updater = true
	case "off":
	default:
		bad("UPDATER", errors.New("want on or off"))
	}
	if cfg.UpdaterConcurrency, err = strconv.Atoi(*vals["UPDATER_CONCURRENCY"]); err != nil || cfg.UpdaterConcurrency < 1 || cfg.UpdaterConcurrency > 1024 {
		bad("UPDATER_CONCURRENCY", errors.New("want a whole number from 1 to 1024"))
	}
	if cfg.UpdaterTop, err = strconv.Atoi(*vals["UPDATER_TOP"]); err != nil || cfg.UpdaterTop < 1 || cfg.UpdaterTop > 100000 {
		bad("UPDATER_TOP", errors.New("want a whole number from 1 to 100000"))
	}
	switch *vals["COMPRESSION"] {
	case "on":
		cfg.Compression = true
	case "off":
	default:
		bad("COMPRESSION", errors.New("want on or off"))
	}
	if cfg.CompressionMinBytes, err = strconv.Atoi(*vals["COMPRESSION_MIN_BYTES"]); err != nil || cfg.CompressionMinBytes < 1 || cfg.CompressionMinBytes > 1<<30 {
		bad("COMPRESSION_MIN_BYTES", errors.New("want a whole number of bytes, at least 1"))
	}
	if cfg.Demo, err = strconv.ParseBool(*vals["DEMO"]); err != nil {
		bad("DEMO", errors.New("want true or false"))
	}
	positive := func(env string, max int) int {
		n, err := strconv.Atoi(*vals[env])
		if err != nil || n < 1 || n > max {
			bad(env, fmt.Errorf("want a whole number from 1 to %d", max))
		}
		return n
	}
	cfg.SubsPerConnection = positive("SUBSCRIPTIONS_PER_CONNECTION", 1000)
	cfg.SubsMax = positive("SUBSCRIPTIONS_MAX", 1_000_000)
	cfg.SubBuffer = positive("SUBSCRIPTION_BUFFER", 100_000)
	cfg.LiveBacklog = positive("LIVE_BACKLOG", 1_000_000)
	cfg.LiveBacklogAge = duration(*vals["LIVE_BACKLOG_AGE"], func(err error) { bad("LIVE_BACKLOG_AGE", err) }, false)
	if cfg.LiveBacklogAge > 0 && cfg.LiveBacklogAge < time.Second {
		bad("LIVE_BACKLOG_AGE", errors.New("want at least 1s"))
	}
	if cfg.StreamsPerClient, err = strconv.Atoi(*vals["STREAMS_PER_CLIENT"]); err != nil || cfg.StreamsPerClient < 0 {
		bad("STREAMS_PER_CLIENT", errors.New("want a whole number of streams, 0 for no bound"))
	} else if cfg.SubsMax > 0 && cfg.StreamsPerClient > cfg.SubsMax {
		if _, set := lookup(getenv, "STREAMS_PER_CLIENT"); set || origin["STREAMS_PER_CLIENT"] != "$STREAMS_PER_CLIENT" {
			// A bound above the process's own bounds nothing: most
			// likely a per-process number given for a per-client one.
			bad("STREAMS_PER_CLIENT", fmt.Errorf("more than SUBSCRIPTIONS_MAX (%d), the most the process holds, so it would bound nothing; want at most %d, or 0 for no bound", cfg.SubsMax, cfg.SubsMax))
		} else {
			cfg.StreamsPerClient = cfg.SubsMax
		}
	}
	if cfg.MaxConnections, err = strconv.Atoi(*vals["MAX_CONNECTIONS"]); err != nil || cfg.MaxConnections < 0 {
		bad("MAX_CONNECTIONS", errors.New("want a whole number of connections, 0 for no bound"))
	}
	if cfg.ConnsPerClient, err = strconv.Atoi(*vals["CONNECTIONS_PER_CLIENT"]); err != nil || cfg.ConnsPerClient < 0 {
		bad("CONNECTIONS_PER_CLIENT", errors.New("want a whole number of connections, 0 for no bound"))
	} else if cfg.ConnsPerClient > 0 && cfg.StreamsPerClient > cfg.ConnsPerClient {
		// Each stream holds a connection: the streams allowed would be
		// refused as connections first, without the streams' 429.
		bad("CONNECTIONS_PER_CLIENT", fmt.Errorf("fewer than STREAMS_PER_CLIENT (%d), each of which holds a connection; want at least %d, or 0 for no bound", cfg.StreamsPerClient, cfg.StreamsPerClient))
	}
	if cfg.SubChannelsPerClient, err = strconv.Atoi(*vals["SUBSCRIBED_CHANNELS_PER_CLIENT"]); err != nil || cfg.SubChannelsPerClient < 0 {
		bad("SUBSCRIBED_CHANNELS_PER_CLIENT", errors.New("want a whole number of channels, 0 for no cap"))
	}
	cfg.WSInitTimeout = duration(*vals["WS_INIT_TIMEOUT"], func(err error) { bad("WS_INIT_TIMEOUT", err) }, false)
	if cfg.WSInitTimeout > 0 && cfg.WSInitTimeout < time.Second {
		bad("WS_INIT_TIMEOUT", errors.New("want at least 1s: a client needs a round trip after the upgrade"))
	}
	cfg.StreamKeepAlive = duration(*vals["STREAM_KEEPALIVE"], func(err error) { bad("STREAM_KEEPALIVE", err) }, false)
	if cfg.StreamKeepAlive > 0 && cfg.StreamKeepAlive < time.Second {
		// Every open stream pings at this interval: below a second it
		// floods clients and spins the CPU for nothing.
		bad("STREAM_KEEPALIVE", errors.New("want at least 1s"))
	}
	cfg.APIKeysFile = *vals["API_KEYS_FILE"]
	if cfg.APIKeysFile != "" {
		if _, err := os.Stat(cfg.APIKeysFile); err != nil {
			bad("API_KEYS_FILE", errors.New("cannot read it; create it with `tmefeed keys add NAME | tail -1 >> FILE`"))
		}
	}
	cfg.Anonymous = *vals["ANONYMOUS"]
	if _, err := server.ParseAnonymous(cfg.Anonymous); err != nil {
		bad("ANONYMOUS", err)
	} else if cfg.Anonymous != "off" && cfg.APIKeysFile == "" {
		bad("ANONYMOUS", errors.New("means something only with API_KEYS_FILE set: without keys every request is anonymous"))
	}
	cfg.MetricsAddr = *vals["METRICS_ADDR"]
	if cfg.MetricsAddr != "" {
		if _, port, err := net.SplitHostPort(cfg.MetricsAddr); err != nil || port == "" {
			bad("METRICS_ADDR", errors.New("want host:port, e.g. 127.0.0.1:9090 (or :9090 for every interface)"))
		}
	}
	if len(errs) > 0 {
		return serveConfig{}, errors.Join(errs...)
	}
	return cfg, nil
}

// frameAncestors splits EMBED_FRAME_ANCESTORS: CSP separates sources by
// spaces, a list setting by commas; both are taken.
func frameAncestors(s string) []string {
	return strings.Fields(strings.ReplaceAll(s, ",", " "))
}

// parsePrefixes reads a comma-separated list of CIDRs; a bare address is
// its own /32 or /128.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range splitList(s) {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR such as 10.0.0.0/8 nor an IP address", v)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// lookup returns the variable's value and whether it is set non-empty.
func lookup(getenv func(string) string, name string) (string, bool) {
	v := strings.TrimSpace(getenv(name))
	return v, v != ""
}

// duration parses a Go duration; zeroOK allows "0".
func duration(s string, bad func(error), zeroOK bool) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || (d == 0 && !zeroOK) {
		bad(errors.New("want a positive duration such as 500ms, 10s or 2m"))
		return 0
	}
	return d
}

// checkPublicURL accepts "" or an absolute http(s) URL that links can be
// appended to: no query, fragment or credentials.
func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("want an http(s) URL without query or fragment, such as https://tmefeed.example")
	}
	return nil
}

// checkOrigins accepts CORS_ORIGINS' entries: "*", or a browser origin,
// scheme://host[:port] without path, with at most one "*" standing for
// part of the host (https://*.example.com). A bare host would never match
// the Origin header browsers send, so CORS would silently stay off.
func checkOrigins(origins []string) error {
	for _, o := range origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(strings.Replace(o, "*", "wildcard", 1))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil ||
			strings.Count(o, "*") > 1 {
			return fmt.Errorf("%q is not an origin; want * or scheme://host[:port] such as https://dash.example.com or https://*.example.com", o)
		}
	}
	return nil
}

// checkURL accepts an absolute http(s) URL, or "" when not required.
func checkURL(s string, required bool) error {
	if s == "" {
		if required {
			return errors.New("want an http(s) URL")
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an http(s) URL such as https://t.me")
	}
	return nil
}

// mediaOrigins lists mediaOrigin, if any.
func (c serveConfig) mediaOrigins() []string {
	if c.mediaOrigin == "" {
		return nil
	}
	return []string{c.mediaOrigin}
}
