package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/redistest"
)

// Three `tmefeed serve` processes over a 3-node Redis Cluster, whose
// VALKEY_URL names all three seeds: first every client of every process
// asks for one cold page at the same moment, then the usual mix runs for
// one refresh window. The page keys spread over all three nodes, and still
// every page reaches the origin exactly once.
func TestThreeProcessesOverClusterFetchEachPageOnce(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log strings.Builder
	r, err := run(ctx, config{
		Race:      raceEnabled,
		Procs:     3,
		Clients:   8,
		Duration:  3 * time.Second,
		Latency:   150 * time.Millisecond,
		CacheMode: "normal",
		Synthetic: 12,
		Cluster:   c,
		Burst:     true,
		Log:       &log,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Logf("\n%s", r)
	if r.BurstRequests != 24 || r.BurstFetches != 1 || r.BurstFailures != 0 {
		t.Errorf("cold burst: %d requests, %d failed, %d origin fetches; want 24, 0, 1", r.BurstRequests, r.BurstFailures, r.BurstFetches)
	}
	if r.Windows != 1 || r.Requests < int64(r.Pages) {
		t.Fatalf("windows %d, %d requests for %d pages: the load did not run as meant", r.Windows, r.Requests, r.Pages)
	}
	if !r.ok() {
		t.Errorf("origin requests %d, minimum %d, failures %v\n%s", r.OriginTotal, r.Minimum, r.Failures, log.String())
	}
}

// The same processes lose a node of the cluster 3 s into a 12 s run (its
// slots unserved, then the whole cluster refusing with CLUSTERDOWN), so
// the refresh at 10 s and pages first asked after the loss meet a broken
// cluster. No request may fail: the processes serve from their embedded
// tier and fetch on their own.
func TestFaultClusterNodeLostAcrossProcesses(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log strings.Builder
	r, err := run(ctx, config{
		Race:      raceEnabled,
		Procs:     3,
		Clients:   8,
		Duration:  12 * time.Second,
		Latency:   150 * time.Millisecond,
		CacheMode: "normal",
		Synthetic: 12,
		Late:      12,
		Cluster:   c,
		KillAfter: 3 * time.Second,
		Log:       &log,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Logf("\n%s", r)
	if r.KilledAt == 0 {
		t.Fatal("no node was stopped during the run")
	}
	if c.Nodes[1].Running() {
		t.Fatal("the lost node is running")
	}
	if r.Windows != 2 {
		t.Fatalf("windows = %d, want 2: the refresh must fall after the loss", r.Windows)
	}
	t.Logf("FIGURE: valkey | cluster node lost, 3 processes: failed requests of %d | %d", r.Requests, sum(r.Failures))
	t.Logf("FIGURE: valkey | cluster node lost, 3 processes: origin requests (minimum without the loss) | %d (%d)", r.OriginTotal, r.Minimum)
	if !r.ok() {
		t.Errorf("failures %v; pages never fetched: %v\n%s", r.Failures, unfetched(r), log.String())
	}
}

func unfetched(r report) []string {
	var out []string
	for p, n := range r.PerPage {
		if n == 0 {
			out = append(out, p)
		}
	}
	return out
}
