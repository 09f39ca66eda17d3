package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/tmefeed/tmefeed/fixtures"
)

// maxSynthetic is the most synthetic channels the fixture origin makes.
const maxSynthetic = 999

// runFixtures implements `tmefeed fixtures`: the fixture origin on its own
// port, e.g. as the origin of a load test (TME_ORIGIN=http://127.0.0.1:8081).
func runFixtures(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fixtures", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", ":8081", "address to listen on")
	latency := fs.Duration("latency", 0, "delay before every answer, e.g. 150ms, to mimic t.me")
	synthetic := fs.Int("synthetic", 0, fmt.Sprintf("also serve N synthetic channels loadchan001..loadchanNNN (at most %d)", maxSynthetic))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tmefeed fixtures [--addr :8081] [--latency 150ms] [--synthetic N]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	if *synthetic < 0 || *synthetic > maxSynthetic {
		return fmt.Errorf("fixtures: --synthetic %d: want 0..%d", *synthetic, maxSynthetic)
	}
	if *latency < 0 {
		return fmt.Errorf("fixtures: --latency %s: want a duration of 0 or more", *latency)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	o := fixtures.NewOrigin(fixtures.OriginOptions{Latency: *latency, Synthetic: *synthetic})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("fixtures: %w", err)
	}
	log.Info("fixture origin listening", "addr", ln.Addr().String(), "latency", *latency,
		"channels", summarize(o.Channels()))
	return fixtures.Serve(ctx, ln, o)
}

// summarize lists names, eliding the middle of a long synthetic run.
func summarize(names []string) string {
	const show = 12
	if len(names) <= show {
		return strings.Join(names, ",")
	}
	return strings.Join(names[:show-2], ",") + fmt.Sprintf(",… (%d more) …,", len(names)-show+1) + names[len(names)-1]
}
