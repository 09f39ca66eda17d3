package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/server"
)

// newServeStack is the stack `tmefeed serve` runs, logging at info level
// (every request writes its line, here to io.Discard through the same
// batching buffer) over the fixture origin on loopback. CACHE_MODE is
// aggressive so that the answers stay fresh for the length of a benchmark.
func newServeStack(tb testing.TB) *stack {
	tb.Helper()
	env := map[string]string{"CACHE_MODE": "aggressive"}
	cfg, err := parseServeConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	o := &http.Server{Handler: fixtures.NewOrigin(fixtures.OriginOptions{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = o.Serve(ln) }()
	tb.Cleanup(func() { _ = o.Close() })
	logBuf := newLogBuffer(io.Discard)
	tb.Cleanup(func() { _ = logBuf.Close() })
	st, err := newStack(context.Background(), cfg, "http://"+ln.Addr().String(), "", newLogger(cfg.LogLevel, true, logBuf), newRequestLogger(logBuf, true).Log)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	return st
}

// BenchmarkServeBodyHit is a cached GET /v1/body through everything
// `tmefeed serve` puts on the path of a hit: the request context and id,
// the route's metrics, the request line, the updater's read hook, the hot
// store, ETag and coding selection. Only the socket is missing, which
// `make hitbench` adds.
func BenchmarkServeBodyHit(b *testing.B) {
	for _, ae := range []string{"", "gzip"} {
		name := "identity"
		if ae != "" {
			name = ae
		}
		b.Run(name, func(b *testing.B) {
			st := newServeStack(b)
			req := httptest.NewRequest(http.MethodGet, "/v1/body/tmefeed_news", nil)
			if ae != "" {
				req.Header.Set("Accept-Encoding", ae)
			}
			w := &discardWriter{h: http.Header{}}
			for range 2 { // the second is a hit
				clear(w.h)
				w.status, w.n = 0, 0
				st.handler.ServeHTTP(w, req)
			}
			if w.status != http.StatusOK {
				b.Fatalf("warm-up: status %d", w.status)
			}
			size := w.n
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				clear(w.h)
				w.status, w.n = 0, 0
				st.handler.ServeHTTP(w, req)
				if w.status != http.StatusOK || w.n != size {
					b.Fatalf("status %d, %d bytes", w.status, w.n)
				}
			}
		})
	}
}

// BenchmarkRequestLine is the request line of a cached hit, formatted and
// written (to io.Discard), by the request logger and by slog's own handler
// of the same format (the choice behind writing the line by hand).
func BenchmarkRequestLine(b *testing.B) {
	for _, asJSON := range []bool{true, false} {
		name := "text"
		if asJSON {
			name = "json"
		}
		line := server.RequestLine{Level: slog.LevelInfo, ID: "9f86d081-123456", Method: "GET", Route: "/v1/body/{channel}", Status: 200, Bytes: 31222, Duration: 41 * time.Microsecond, Cache: "hit"}
		b.Run(name, func(b *testing.B) {
			l := newRequestLogger(io.Discard, asJSON)
			b.ReportAllocs()
			for b.Loop() {
				line.Time = time.Now()
				l.Log(context.Background(), line)
			}
		})
		b.Run("slog-"+name, func(b *testing.B) {
			var h slog.Handler = slog.NewTextHandler(io.Discard, nil)
			if asJSON {
				h = slog.NewJSONHandler(io.Discard, nil)
			}
			b.ReportAllocs()
			for b.Loop() {
				line.Time = time.Now()
				rec := slog.NewRecord(line.Time, line.Level, "request", 0)
				rec.AddAttrs(line.Attrs()...)
				if err := h.Handle(context.Background(), rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
