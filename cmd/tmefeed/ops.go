package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/tmefeed/tmefeed/metrics"
)

// opsServer serves what operators read and the public must not:
// /metrics and /debug/pprof (METRICS_ADDR).
type opsServer struct {
	srv  *http.Server
	done chan struct{}
	Addr string
}

// serveOps listens on addr and serves reg's /metrics and the runtime's
// profiles until Close.
func serveOps(addr string, reg *metrics.Registry, log *slog.Logger) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_ADDR: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg.Handler())
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	o := &opsServer{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			// A CPU profile or trace runs for ?seconds= (30 by default).
			WriteTimeout: 2 * time.Minute,
			IdleTimeout:  2 * time.Minute,
			ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		done: make(chan struct{}),
		Addr: ln.Addr().String(),
	}
	go func() {
		defer close(o.done)
		if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener", "err", err)
		}
	}()
	log.Info("operations listening", "addr", o.Addr, "paths", "/metrics /debug/pprof/")
	return o, nil
}

// Close stops the listener at once: nothing served there needs a
// graceful end.
func (o *opsServer) Close() {
	_ = o.srv.Close()
	<-o.done
}
