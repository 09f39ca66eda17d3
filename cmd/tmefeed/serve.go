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
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/server"
)

// serve runs the API until ctx ends, then shuts down gracefully. ready, when
// set, is called with the listening address once requests are accepted.
func serve(ctx context.Context, cfg serveConfig, logOut io.Writer, ready func(addr string)) error {
	log := newLogger(cfg, logOut)

	originURL, fallbackURL := cfg.Origin, cfg.FallbackOrigin
	if cfg.Demo {
		demo, err := startDemoOrigin(log)
		if err != nil {
			return err
		}
		defer demo.Close()
		originURL, fallbackURL = demo.url, ""
	}

	store, err := newCache(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()

	ocfg := origin.Config{
		BaseURL:         originURL,
		FallbackURL:     fallbackURL,
		RequestTimeout:  cfg.UpstreamTimeout,
		BreakerFailures: cfg.BreakerFailures,
		BreakerCoolDown: cfg.BreakerCoolDown,
		RetryBudget:     cfg.RetryBudget,
	}
	if cfg.RetryBudget == 0 {
		ocfg.MaxRetries = -1 // a budget of nothing: no retries (origin.Config reads 0 as the default)
	}
	client, err := origin.New(ocfg)
	if err != nil {
		return fmt.Errorf("origin: %w", err)
	}
	svc := pages.New(pages.Config{Cache: store, Origin: client, Refresh: cfg.Refresh})
	gql, err := newGraphQL(cfg, svc, store, log)
	if err != nil {
		return err
	}
	handler := server.New(server.Config{
		Pages:      svc,
		Refresh:    cfg.Refresh,
		Logger:     log,
		GraphQL:    gql.handler,
		Playground: gql.playground,
		Feed:       gql.feeds,
		// One CORS policy for REST and GraphQL alike.
		CORSOrigins: splitList(cfg.CORSOrigins),
	})

	ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Long enough for a slow origin with retries behind a cache miss.
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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

func newLogger(cfg serveConfig, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// demoOrigin is the fixture origin running in-process on a loopback port.
type demoOrigin struct {
	url string
	srv *http.Server
}

func (d *demoOrigin) Close() { _ = d.srv.Close() }

// startDemoOrigin serves the built-in fixture pages on 127.0.0.1 and logs
// the channels they hold, so the API works with no network.
func startDemoOrigin(log *slog.Logger) (*demoOrigin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo origin: %w", err)
	}
	o := fixtures.NewOrigin(fixtures.OriginOptions{})
	srv := &http.Server{
		Handler:           o,
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() { _ = srv.Serve(ln) }()
	d := &demoOrigin{url: "http://" + ln.Addr().String(), srv: srv}
	log.Info("demo mode: serving built-in fixture pages, no requests go to Telegram",
		"origin", d.url,
		"channels", strings.Join(o.Channels(), ","),
		"previews", strings.Join(previewNames(fixtures.Pages()), ","))
	return d, nil
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
