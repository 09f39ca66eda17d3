package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/redistest"
)

// TestThreeProcessesFetchEachPageOnce is the short form of the tool: three
// built `tmefeed serve` processes over one redis-server and the fixture
// origin, background updaters on, within one refresh window, so every
// page must reach the origin exactly once however many processes and
// clients ask for it.
func TestThreeProcessesFetchEachPageOnce(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log strings.Builder
	r, err := run(ctx, config{
		Race:      raceEnabled, // reuses the packages `go test -race` compiled
		Procs:     3,
		Clients:   8,
		Duration:  3 * time.Second,
		Latency:   150 * time.Millisecond,
		CacheMode: "normal",
		Synthetic: 5,
		ValkeyURL: srv.URL,
		Log:       &log,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Logf("\n%s", r)
	if r.Windows != 1 || r.KeptWindows != 1 {
		t.Fatalf("windows = %d (%d for the newest pages), want 1 for a 3s run in normal mode", r.Windows, r.KeptWindows)
	}
	if r.Requests < int64(r.Pages) {
		t.Fatalf("only %d requests for %d pages: the load did not run", r.Requests, r.Pages)
	}
	if !r.ok() {
		t.Errorf("origin requests %d, minimum %d, failures %v\n%s", r.OriginTotal, r.Minimum, r.Failures, log.String())
	}
}
