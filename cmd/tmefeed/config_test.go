package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestServeConfigDefaults(t *testing.T) {
	cfg, err := parseServeConfig(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := serveConfig{
		Port: 8080, Origin: "https://t.me", CacheMode: "normal", Refresh: 10 * time.Second,
		MemoryMaxMB: 64, UpstreamTimeout: 10 * time.Second, ShutdownTimeout: 15 * time.Second,
		LogLevel: slog.LevelInfo, LogFormat: "auto",
		ValkeyTimeout: 250 * time.Millisecond, Introspection: true, FeedMaxChannels: 100, HistoryMaxPages: 10,
		Updater: true, UpdaterConcurrency: 16, UpdaterTop: 200,
		BreakerFailures: 5, BreakerCoolDown: 10 * time.Second, RetryBudget: 0.2, NegativeTTL: 5 * time.Second,
		GraphQLTimeout: 10 * time.Second, GraphQLMaxMB: 32,
		FrameAncestors: "*", EmbedPoll: 15 * time.Second,
		Compression: true, CompressionMinBytes: 1024,
		SubsPerConnection: 16, SubsMax: 10_000, SubBuffer: 64, StreamsPerClient: 256,
		LiveBacklog: 10_000, LiveBacklogAge: 5 * time.Minute,
		MaxConnections: 20_000, ConnsPerClient: 1024,
		WSInitTimeout: 10 * time.Second, StreamKeepAlive: 15 * time.Second,
		Anonymous: "off",
		OriginRPM: 600, ClientOriginRPM: 60, SubChannelsPerClient: 500,
	}
	if cfg != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestServeConfigEnvThenFlags(t *testing.T) {
	e := env(map[string]string{
		"PORT":                  "9000",
		"TME_ORIGIN":            "http://127.0.0.1:8081/",
		"TME_FALLBACK_ORIGIN":   "https://telegram.me",
		"CACHE_MODE":            "aggressive",
		"MEMORY_CACHE_MAX_MB":   "16",
		"MEMORY_CACHE_MAX_TTL":  "1h",
		"UPSTREAM_TIMEOUT":      "3s",
		"LOG_LEVEL":             "debug",
		"LOG_FORMAT":            "json",
		"GRAPHQL_TIMEOUT":       "2s",
		"GRAPHQL_MAX_EXPENSIVE": "3",
	})
	cfg, err := parseServeConfig(nil, e, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 9000 || cfg.Origin != "http://127.0.0.1:8081" || cfg.FallbackOrigin != "https://telegram.me" ||
		cfg.Refresh != 120*time.Second || cfg.MemoryMaxMB != 16 || cfg.MemoryMaxTTL != time.Hour ||
		cfg.UpstreamTimeout != 3*time.Second || cfg.LogLevel != slog.LevelDebug || cfg.LogFormat != "json" ||
		cfg.GraphQLTimeout != 2*time.Second || cfg.GraphQLMaxExpensive != 3 {
		t.Errorf("from env: %+v", cfg)
	}

	cfg, err = parseServeConfig([]string{"--port", "0", "--cache-mode=off", "--memory-cache-max-ttl=0", "--demo", "--log-level", "warn"}, e, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port != 0 || cfg.CacheMode != "off" || cfg.Refresh != 0 || !cfg.Demo || cfg.LogLevel != slog.LevelWarn || cfg.MemoryMaxMB != 16 {
		t.Errorf("flags over env: %+v", cfg)
	}
}

func TestServeConfigErrorsNameTheirSource(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{nil, map[string]string{"CACHE_MODE": "fast"}, []string{"$CACHE_MODE", "fast"}},
		{[]string{"--cache-mode", "fast"}, nil, []string{"--cache-mode"}},
		{nil, map[string]string{"PORT": "http"}, []string{"$PORT"}},
		{[]string{"--port", "70000"}, nil, []string{"--port"}},
		{nil, map[string]string{"TME_ORIGIN": "t.me"}, []string{"$TME_ORIGIN"}},
		{nil, map[string]string{"UPSTREAM_TIMEOUT": "0"}, []string{"$UPSTREAM_TIMEOUT"}},
		{nil, map[string]string{"MEMORY_CACHE_MAX_MB": "0"}, []string{"$MEMORY_CACHE_MAX_MB"}},
		{nil, map[string]string{"MEMORY_CACHE_MAX_TTL": "5s", "CACHE_MODE": "aggressive"}, []string{"$MEMORY_CACHE_MAX_TTL", "refresh"}},
		{nil, map[string]string{"LOG_LEVEL": "loud", "LOG_FORMAT": "xml"}, []string{"$LOG_LEVEL", "$LOG_FORMAT"}},
		{nil, map[string]string{"UPSTREAM_RETRY_BUDGET": "1.5"}, []string{"$UPSTREAM_RETRY_BUDGET"}},
		{[]string{"--upstream-breaker-failures", "0"}, nil, []string{"--upstream-breaker-failures"}},
		{nil, map[string]string{"UPSTREAM_BREAKER_COOLDOWN": "0"}, []string{"$UPSTREAM_BREAKER_COOLDOWN"}},
		{nil, map[string]string{"NEGATIVE_CACHE_TTL": "-1s"}, []string{"$NEGATIVE_CACHE_TTL"}},
		{nil, map[string]string{"GRAPHQL_TIMEOUT": "0"}, []string{"$GRAPHQL_TIMEOUT"}},
		{[]string{"--graphql-max-response-mb", "0"}, nil, []string{"--graphql-max-response-mb"}},
		{nil, map[string]string{"GRAPHQL_MAX_EXPENSIVE": "-1"}, []string{"$GRAPHQL_MAX_EXPENSIVE"}},
		{nil, map[string]string{"RATE_LIMIT_RPM": "-1", "TRUSTED_PROXIES": "10.0.0.0/8, 10.0.0.0/33"}, []string{"$RATE_LIMIT_RPM", "$TRUSTED_PROXIES", "10.0.0.0/33"}},
		{[]string{"--rate-limit-rpm", "many", "--trusted-proxies", "proxy.local"}, nil, []string{"--rate-limit-rpm", "--trusted-proxies", "proxy.local"}},
		{[]string{"extra"}, nil, []string{"extra"}},
		{nil, map[string]string{"PORT": "-1"}, []string{"$PORT"}},
		{nil, map[string]string{"MEMORY_CACHE_MAX_MB": "-64"}, []string{"$MEMORY_CACHE_MAX_MB"}},
		{nil, map[string]string{"MEMORY_LIMIT_MB": "1.5"}, []string{"$MEMORY_LIMIT_MB"}},
		{nil, map[string]string{"TME_FALLBACK_ORIGIN": "ftp://telegram.me"}, []string{"$TME_FALLBACK_ORIGIN"}},
		{nil, map[string]string{"ORIGIN_PROXIES": "socks5://u:secret@10.0.0.2:1080,ftp://10.0.0.3:21"}, []string{"$ORIGIN_PROXIES", "ftp://10.0.0.3:21", "want an http://"}},
		{[]string{"--origin-proxies", "http://u:secret@10.0.0.2:3128,http://10.0.0.2:3128"}, nil, []string{"--origin-proxies", "10.0.0.2:3128 is listed twice"}},
		{nil, map[string]string{"VALKEY_TIMEOUT": "250"}, []string{"$VALKEY_TIMEOUT", "duration"}},
		{nil, map[string]string{"FEED_MAX_CHANNELS": "1e3"}, []string{"$FEED_MAX_CHANNELS"}},
		{nil, map[string]string{"GRAPHQL_INTROSPECTION": "yes please"}, []string{"$GRAPHQL_INTROSPECTION"}},
		{nil, map[string]string{"COMPRESSION": "brotli"}, []string{"$COMPRESSION", "on or off"}},
		{[]string{"--compression-min-bytes", "-1"}, nil, []string{"--compression-min-bytes"}},
		{nil, map[string]string{"COMPRESSION_MIN_BYTES": "1k"}, []string{"$COMPRESSION_MIN_BYTES"}},
		{nil, map[string]string{"DEMO": "maybe"}, []string{"$DEMO"}},
		// A bare host never matches the Origin browsers send: CORS would silently stay off.
		{nil, map[string]string{"CORS_ORIGINS": "https://ok.example, dash.example.com"}, []string{"$CORS_ORIGINS", `"dash.example.com" is not an origin`}},
		{[]string{"--cors-origins", "https://app.example/path"}, nil, []string{"--cors-origins", "not an origin"}},
		{nil, map[string]string{"CORS_ORIGINS": "https://*.*.example"}, []string{"$CORS_ORIGINS"}},
		// Each open stream pings at this interval: 1ms floods its client.
		{nil, map[string]string{"STREAM_KEEPALIVE": "1ms"}, []string{"$STREAM_KEEPALIVE", "at least 1s"}},
		{[]string{"--ws-init-timeout", "10ms"}, nil, []string{"--ws-init-timeout", "at least 1s"}},
		{nil, map[string]string{"STREAMS_PER_CLIENT": "-1"}, []string{"$STREAMS_PER_CLIENT", "0 for no bound"}},
		{[]string{"--streams-per-client", "lots"}, nil, []string{"--streams-per-client", "whole number"}},
		// Above the process's own bound it would bound nothing: most likely
		// a per-process number.
		{nil, map[string]string{"STREAMS_PER_CLIENT": "20000"}, []string{"$STREAMS_PER_CLIENT", "more than SUBSCRIPTIONS_MAX (10000)"}},
		{[]string{"--subscriptions-max", "100", "--streams-per-client", "101"}, nil, []string{"--streams-per-client", "at most 100"}},
		{nil, map[string]string{"API_KEYS_FILE": "/nonexistent/keys"}, []string{"$API_KEYS_FILE", "keys add"}},
		{nil, map[string]string{"ANONYMOUS": "cached"}, []string{"$ANONYMOUS", "only with API_KEYS_FILE"}},
		{[]string{"--anonymous", "sometimes"}, nil, []string{"--anonymous", "off, cached or on"}},
		{nil, map[string]string{"METRICS_ADDR": "9090"}, []string{"$METRICS_ADDR", "host:port"}},
	}
	for _, c := range cases {
		_, err := parseServeConfig(c.args, env(c.env), io.Discard)
		if err == nil {
			t.Errorf("%v %v: no error", c.args, c.env)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v %v: error %q does not mention %q", c.args, c.env, err, w)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%v %v: error %q shows a password", c.args, c.env, err)
		}
	}
}

// The settings table (docs/RUNNING.md) lists every setting with its flag
// and default.
func TestDocsListEverySetting(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "RUNNING.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, s := range serveSettings {
		def := "`" + s.def + "`"
		if s.def == "" {
			def = "*(none)*"
		}
		row := "| `" + s.env + "` | `--" + s.flag + "` | " + def + " |"
		if !strings.Contains(readme, row) {
			t.Errorf("docs/RUNNING.md has no settings row starting %q", row)
		}
	}
}

// Origins as CORS_ORIGINS takes them: any, exact, or with one wildcard.
func TestServeConfigCORSOrigins(t *testing.T) {
	for _, v := range []string{"*", "https://dash.example.com", "http://localhost:3000, https://*.example.com", "http://[::1]:8080"} {
		if _, err := parseServeConfig(nil, env(map[string]string{"CORS_ORIGINS": v}), io.Discard); err != nil {
			t.Errorf("CORS_ORIGINS=%q: %v", v, err)
		}
	}
}

func TestServeConfigCompressionAndDemo(t *testing.T) {
	cfg, err := parseServeConfig(nil, env(map[string]string{"COMPRESSION": "off", "COMPRESSION_MIN_BYTES": "4096", "DEMO": "true"}), io.Discard)
	if err != nil || cfg.Compression || cfg.CompressionMinBytes != 4096 || !cfg.Demo {
		t.Errorf("from env: %+v, %v", cfg, err)
	}
	cfg, err = parseServeConfig([]string{"--compression=on", "--demo=false"}, env(map[string]string{"COMPRESSION": "off", "DEMO": "1"}), io.Discard)
	if err != nil || !cfg.Compression || cfg.Demo {
		t.Errorf("flags over env: %+v, %v", cfg, err)
	}
}

// .env.example lists every setting with its default, uncommented only
// where a value is needed to run (none are).
func TestEnvExampleListsEverySetting(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, s := range serveSettings {
		want := "# " + s.env + "=" + s.def
		if !slices.Contains(lines, want) {
			t.Errorf(".env.example has no line %q", want)
		}
	}
}

// STREAMS_PER_CLIENT: 0 turns the bound off; the default is lowered to
// a smaller SUBSCRIPTIONS_MAX rather than refused; a value set is taken
// as given, up to SUBSCRIPTIONS_MAX.
func TestServeConfigStreamsPerClient(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want int
	}{
		{nil, map[string]string{"STREAMS_PER_CLIENT": "0"}, 0},
		{nil, map[string]string{"SUBSCRIPTIONS_MAX": "100"}, 100},
		{[]string{"--subscriptions-max", "50"}, nil, 50},
		{nil, map[string]string{"STREAMS_PER_CLIENT": "100", "SUBSCRIPTIONS_MAX": "100"}, 100},
		{[]string{"--streams-per-client", "8"}, map[string]string{"STREAMS_PER_CLIENT": "9000"}, 8},
	} {
		cfg, err := parseServeConfig(c.args, env(c.env), io.Discard)
		if err != nil || cfg.StreamsPerClient != c.want {
			t.Errorf("%v %v: STREAMS_PER_CLIENT %d, %v; want %d", c.args, c.env, cfg.StreamsPerClient, err, c.want)
		}
	}
}

func TestServeConfigCursorKey(t *testing.T) {
	cfg, err := parseServeConfig(nil, env(map[string]string{"CURSOR_KEY": "from the environment"}), io.Discard)
	if err != nil || cfg.CursorKey != "from the environment" {
		t.Errorf("CURSOR_KEY: %q, %v", cfg.CursorKey, err)
	}
	cfg, err = parseServeConfig([]string{"--cursor-key", "from a flag"}, env(map[string]string{"CURSOR_KEY": "from the environment"}), io.Discard)
	if err != nil || cfg.CursorKey != "from a flag" {
		t.Errorf("--cursor-key: %q, %v", cfg.CursorKey, err)
	}
}

func TestServeConfigPublicURL(t *testing.T) {
	cfg, err := parseServeConfig(nil, env(map[string]string{"PUBLIC_URL": "https://tmefeed.example/feeds/"}), io.Discard)
	if err != nil || cfg.PublicURL != "https://tmefeed.example/feeds" {
		t.Errorf("PUBLIC_URL: %q, %v", cfg.PublicURL, err)
	}
	cfg, err = parseServeConfig([]string{"--public-url", "http://localhost:8080"}, env(map[string]string{"PUBLIC_URL": "https://tmefeed.example"}), io.Discard)
	if err != nil || cfg.PublicURL != "http://localhost:8080" {
		t.Errorf("--public-url: %q, %v", cfg.PublicURL, err)
	}
	for _, bad := range []string{"tmefeed.example", "ftp://tmefeed.example", "https://tmefeed.example/?a=1", "https://u:p@tmefeed.example", "https://tmefeed.example/#x"} {
		if _, err := parseServeConfig(nil, env(map[string]string{"PUBLIC_URL": bad}), io.Discard); err == nil || !strings.Contains(err.Error(), "$PUBLIC_URL") {
			t.Errorf("PUBLIC_URL=%q: want an error naming $PUBLIC_URL, got %v", bad, err)
		}
	}
}
