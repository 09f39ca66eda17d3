package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/tmefeed/tmefeed/internal/redistest"
)

// CoalescingConfig is one `tmefeed bench coalescing` run.
type CoalescingConfig struct {
	Bin         string        // tmefeed binary for the processes ("" = tools/multiproc builds one)
	ValkeyDelay time.Duration // one-way delay added between the processes and Valkey
	Duration    time.Duration // per run
	Procs       int
	Log         io.Writer
}

// Coalescing runs tools/multiproc (tmefeed processes over one Valkey and
// the fixture origin, clients hammering a mix of pages) twice: with Valkey
// on loopback (the baseline) and behind a proxy adding ValkeyDelay each
// way, a Valkey on another machine. Each run reports origin fetches
// against the minimum (one per page per refresh window); the two must be
// equal. It needs the source tree (go run ./tools/multiproc).
func Coalescing(ctx context.Context, w io.Writer, cfg CoalescingConfig) error {
	if _, err := os.Stat("tools/multiproc/main.go"); err != nil {
		return fmt.Errorf("bench coalescing: run from the repository root (needs tools/multiproc): %w", err)
	}
	for _, delay := range []time.Duration{0, cfg.ValkeyDelay} {
		srv, err := redistest.Launch()
		if err != nil {
			return fmt.Errorf("bench coalescing: %w", err)
		}
		url := srv.URL
		var proxy *DelayProxy
		if delay > 0 {
			if proxy, err = NewDelayProxy(srv.Addr, delay); err != nil {
				srv.Close()
				return fmt.Errorf("bench coalescing: %w", err)
			}
			url = "redis://" + proxy.Addr() + "/0"
		}
		fmt.Fprintf(w, "\n## Valkey delay %v each way\n\n", delay)
		args := []string{"run", "./tools/multiproc", "-valkey-url", url, "-duration", cfg.Duration.String(), "-procs", fmt.Sprint(cfg.Procs)}
		if cfg.Bin != "" {
			args = append(args, "-bin", cfg.Bin)
		}
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Stdout, cmd.Stderr = w, cfg.Log
		err = cmd.Run()
		if proxy != nil {
			proxy.Close()
		}
		srv.Close()
		if err != nil {
			return fmt.Errorf("bench coalescing: multiproc with Valkey delay %v: %w", delay, err)
		}
	}
	return nil
}
