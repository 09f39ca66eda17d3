package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

func TestValkeyURLSeeds(t *testing.T) {
	for _, tc := range []struct {
		url      string
		addrs    []string
		password string
		tls      bool
	}{
		{"valkey://h1:6379/0", []string{"h1:6379"}, "", false},
		{"redis://h1:7000?addr=h2:7001&addr=h3:7002", []string{"h1:7000", "h2:7001", "h3:7002"}, "", false},
		{"redis://:pw@h1:7000,h2:7001, redis://h3:7002", []string{"h1:7000", "h2:7001", "h3:7002"}, "pw", false},
		{"h1:7000,h2", []string{"h1:7000", "h2:6379"}, "", false},
		{"rediss://:pw@h1:7000,rediss://h2:7001/0", []string{"h1:7000", "h2:7001"}, "pw", true},
		{"h1:7000,h1:7000,redis://h1:7000?addr=h1:7000", []string{"h1:7000"}, "", false},
		{"10.0.0.1:6379,[::1]:6380", []string{"10.0.0.1:6379", "[::1]:6380"}, "", false},
	} {
		opt, err := parseValkeyURL(tc.url)
		if err != nil {
			t.Errorf("%q: %v", tc.url, err)
			continue
		}
		if !slices.Equal(opt.InitAddress, tc.addrs) || opt.Password != tc.password || (opt.TLSConfig != nil) != tc.tls {
			t.Errorf("%q: addresses %v password %q TLS %v; want %v %q %v",
				tc.url, opt.InitAddress, opt.Password, opt.TLSConfig != nil, tc.addrs, tc.password, tc.tls)
		}
		if want := len(tc.addrs) > 1; opt.ShuffleInit != want {
			t.Errorf("%q: ShuffleInit %v, want %v", tc.url, opt.ShuffleInit, want)
		}
	}

	// Bad values fail at start with the cause, never the password.
	for _, tc := range []struct{ url, want string }{
		{"h1:7000,,h2:7001", "seed 2 of 3 is empty"},
		{"redis://h1:7000/2,h2:7001", "only database 0"},
		{"redis://h1:7000/2?addr=h2:7001", "only database 0"},
		{"redis://:secret1@h1:7000,redis://:secret2@h2:7001", "seed 2 of 2: differs from the first seed"},
		{"rediss://h1:7000,redis://h2:7001", "seed 2 of 2: differs from the first seed"},
		{"unix:///run/valkey.sock,h2:7001", "unix socket"},
		{"h1:7000,ftp://:secret1@h2", "seed 2 of 2: valkey: invalid URL scheme: ftp"},
		{"h1:7000,h2/0", `seed 2 of 2: "h2/0" is neither a URL nor host:port`},
		{"redis://h1:7000?addr=h2:700x", `address "h2:700x" is not host:port`},
		{"redis://h1:7000?addr=h2", `address "h2" is not host:port`},
		{"redis://h1:7000?addr=:7001", `address ":7001" is not host:port`},
	} {
		_, err := NewValkey(context.Background(), ValkeyConfig{URL: tc.url, Refresh: time.Second})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "VALKEY_URL") {
			t.Errorf("%q: err = %v, want one naming VALKEY_URL and %q", tc.url, err, tc.want)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error shows a password: %v", tc.url, err)
		}
	}
}

// clusterKeys returns n page keys of distinct channels and the node
// serving each; the keys cover every node.
func clusterKeys(t *testing.T, c *redistest.Cluster, prefix string, n int) ([]string, map[string]*redistest.Server) {
	t.Helper()
	owner := map[string]*redistest.Server{}
	var ks []string
	seen := map[*redistest.Server]bool{}
	for i := range n {
		k := keys.Page(fmt.Sprintf("%s%d", prefix, i), "body:0")
		s, err := c.NodeFor(testCtx(t), k)
		if err != nil {
			t.Fatal(err)
		}
		ks, owner[k], seen[s] = append(ks, k), s, true
	}
	if len(seen) != len(c.Nodes) {
		t.Fatalf("%d keys cover %d of %d nodes; pick more", n, len(seen), len(c.Nodes))
	}
	return ks, owner
}

// Three "processes", each given the cluster in another form of VALKEY_URL,
// share it as they would one server: concurrent cold Gets of a key load it
// once in all of them, whichever node serves it; the lease scripts and the
// write that clears a failure run on that node; persisted queries go
// through the same client.
func TestValkeyClusterOneLoadPerKey(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	mod := func(cfg *ValkeyConfig) {
		cfg.Failures = testFailures{}
		cfg.Timeout = slowMachineTimeout
	}
	var instances []*Valkey
	for _, url := range []string{
		c.URL,                        // redis://first?addr=second&addr=third
		strings.Join(c.Seeds(), ","), // host:port,host:port,host:port
		c.Nodes[len(c.Nodes)-1].URL,  // one node: valkey-go finds the others
	} {
		v, _ := newTestValkeyAt(t, url, mod)
		instances = append(instances, v)
	}
	ctx := testCtx(t)
	ks, owner := clusterKeys(t, c, "cl", 12)

	loaders := map[string]*vkLoader{}
	for _, k := range ks {
		l := newVKLoader("value of " + k)
		l.gate = make(chan struct{}) // every Get arrives while the key is cold
		loaders[k] = l
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ks)*len(instances)*4)
	for _, k := range ks {
		for _, v := range instances {
			for range 4 {
				wg.Go(func() {
					e, err := v.Get(ctx, k, loaders[k].load, GetOptions{})
					if err == nil && string(e.Value) != "value of "+k {
						err = fmt.Errorf("%s = %q", k, e.Value)
					}
					if err != nil {
						errs <- err
					}
				})
			}
		}
	}
	eventually(t, "every key's load to start", func() bool {
		for _, l := range loaders {
			if l.calls.Load() == 0 {
				return false
			}
		}
		return true
	})
	for _, l := range loaders {
		close(l.gate)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, k := range ks {
		if got := loaders[k].calls.Load(); got != 1 {
			t.Errorf("%s: %d loads across 3 processes × 4 callers, want 1", k, got)
		}
		srv := owner[k]
		if e, ok := storedValue(t, srv, k); !ok || string(e.Value) != "value of "+k {
			t.Errorf("%s: not on its node %s (present %v, %q)", k, srv.Addr, ok, e.Value)
		}
		if _, err := srv.Do(ctx, "GET", keys.Lease(k)); !errors.Is(err, redistest.ErrNil) {
			t.Errorf("%s: lease still held after the load (err %v): the release script did not run on its node", k, err)
		}
	}

	// Persisted queries, which carry no tag, spread over the nodes and are
	// read by every process.
	for i := range 6 {
		k := keys.APQ(fmt.Sprintf("%064x", i))
		if err := instances[i%3].KV().Set(ctx, k, []byte("query "+k), time.Minute); err != nil {
			t.Fatalf("KV set %s: %v", k, err)
		}
		if b, ok, err := instances[(i+1)%3].KV().Get(ctx, k); err != nil || !ok || string(b) != "query "+k {
			t.Errorf("KV get %s from another process = %q, %v, %v", k, b, ok, err)
		}
	}
}

// A lease outlives its TTL while its holder is loading: the extend script
// runs on the lease's node, so a process arriving after the TTL still
// waits instead of loading a second time.
func TestValkeyClusterLeaseExtended(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	const ttl = 600 * time.Millisecond
	mod := func(cfg *ValkeyConfig) { cfg.LeaseTTL = ttl }
	a, _ := newTestValkeyAt(t, c.URL, mod)
	b, evB := newTestValkeyAt(t, c.URL, mod)
	ctx := testCtx(t)
	const key = "tme:v1:page:{slowchannel}:body:0"
	srv, err := c.NodeFor(ctx, key)
	if err != nil {
		t.Fatal(err)
	}

	l := newVKLoader("slow page")
	l.gate = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := a.Get(ctx, key, l.load, GetOptions{})
		done <- err
	}()
	var token string
	eventually(t, "a to take the lease", func() bool {
		token, err = srv.Do(ctx, "GET", keys.Lease(key))
		return err == nil
	})
	time.Sleep(3 * ttl) // the lease would have expired twice over unextended
	if got, err := srv.Do(ctx, "GET", keys.Lease(key)); err != nil || got != token {
		t.Fatalf("after 3 × the lease TTL: lease = %q, %v; want a's token still there", got, err)
	}
	got := make(chan error, 1)
	go func() {
		e, err := b.Get(ctx, key, newVKLoader("b loaded it").load, GetOptions{})
		if err == nil && string(e.Value) != "slow page" {
			err = fmt.Errorf("b got %q, want a's value", e.Value)
		}
		got <- err
	}()
	eventually(t, "b to lose the bid", func() bool { return evB.lease(LeaseLost) == 1 })
	close(l.gate)
	if err := <-done; err != nil {
		t.Fatalf("a: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("b: %v", err)
	}
	if evB.lease(LeaseWon) != 0 {
		t.Error("b won a lease a was holding")
	}
}

// Losing a node of the cluster (its slots gone, then the whole cluster
// refusing with CLUSTERDOWN) costs no request: the processes serve from
// their embedded tier and load on their own; once the node is back and
// the breaker closes, they share through the cluster again.
func TestFaultValkeyClusterNodeLost(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	clk := newVKClock()
	mod := func(cfg *ValkeyConfig) {
		cfg.BreakerCoolDown = 200 * time.Millisecond
		// The clock stands still: however slowly a loaded machine gets
		// through the rounds, no copy passes its refresh point and
		// reloads.
		cfg.Now = clk.Now
		// Long enough that the live nodes answer a loaded machine in
		// time, whose late answers would otherwise fail over to the
		// embedded tier beside a load through the cluster; short enough
		// that the calls to the lost node, which fail at their deadline,
		// keep a round short.
		cfg.Timeout = time.Second
	}
	a, evA := newTestValkeyAt(t, c.URL, mod)
	b, _ := newTestValkeyAt(t, strings.Join(c.Seeds(), ","), mod)
	ctx := testCtx(t)
	warm, _ := clusterKeys(t, c, "warm", 9)
	for _, k := range warm {
		if _, err := a.Get(ctx, k, newVKLoader("value of "+k).load, GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	lost := c.Nodes[1]
	lost.Stop()
	const rounds, concurrent = 4, 5
	ks := slices.Clone(warm)
	for i := range 9 { // cold, over every node
		ks = append(ks, keys.Page(fmt.Sprintf("outage%d", i), "body:0"))
	}
	loaders := map[string]*vkLoader{}
	for _, k := range ks {
		loaders[k] = newVKLoader("value of " + k)
	}
	failed, total := 0, 0
	loadsBefore := map[int]map[string]int64{} // by round: each key's loads so far
	for round := range rounds {
		loadsBefore[round] = map[string]int64{}
		for k, l := range loaders {
			loadsBefore[round][k] = l.calls.Load()
		}
		if round == 2 {
			// The other nodes have marked the lost one failed: every slot
			// now answers CLUSTERDOWN.
			if err := c.WaitState(ctx, "fail"); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(ks)*2*concurrent)
		for _, k := range ks {
			for _, v := range []*Valkey{a, b} {
				for range concurrent {
					total++
					wg.Go(func() {
						e, err := v.Get(ctx, k, loaders[k].load, GetOptions{})
						if err == nil && string(e.Value) != "value of "+k {
							err = fmt.Errorf("%s = %q", k, e.Value)
						}
						if err != nil {
							errs <- err
						}
					})
				}
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			failed++
			t.Errorf("round %d with a node lost: %v", round, err)
		}
	}
	maxLoads := int64(0)
	for k, l := range loaders {
		n := l.calls.Load()
		maxLoads = max(maxLoads, n)
		// From round 2 every slot answers CLUSTERDOWN and both processes
		// serve from their embedded tiers: each loads a key there at most
		// once, and the last round loads nothing. (Before, while the
		// breakers open and close on the lost node's failures, a key may
		// also have been loaded through the cluster by either process, so
		// those rounds bound nothing exact.)
		if d := n - loadsBefore[2][k]; d > 2 {
			t.Errorf("%s was loaded %d times by 2 processes with the cluster down; the embedded tier does not hold it", k, d)
		}
		if d := n - loadsBefore[rounds-1][k]; d != 0 {
			t.Errorf("%s was loaded %d times in the last round; the embedded tiers do not hold it", k, d)
		}
	}
	t.Logf("FIGURE: valkey | cluster node lost: failed requests of %d (%d keys x %d rounds x 2 processes x %d concurrent) | %d", total, len(ks), rounds, concurrent, failed)
	t.Logf("FIGURE: valkey | cluster node lost: most origin loads of one key, 2 processes, %d rounds | %d", rounds, maxLoads)
	if got := a.BreakerState(); got != "open" && !strings.Contains(evA.transitions(), "closed->open") {
		t.Errorf("a's breaker %q and never opened with the cluster down", got)
	}

	lost.Restart(t)
	if err := c.WaitState(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	n := 0
	eventually(t, "the processes to share through the cluster again", func() bool {
		n++
		k := keys.Page(fmt.Sprintf("back%d", n), "body:0")
		la, lb := newVKLoader("back"), newVKLoader("back")
		_, errA := a.Get(ctx, k, la.load, GetOptions{})
		_, errB := b.Get(ctx, k, lb.load, GetOptions{})
		if errA != nil || errB != nil {
			t.Errorf("Get while recovering: %v, %v", errA, errB)
		}
		return a.BreakerState() == "closed" && b.BreakerState() == "closed" && la.calls.Load()+lb.calls.Load() == 1
	})
}

// Several seeds that are plain servers, not a cluster: the process says so
// and serves from its own memory rather than failing requests.
func TestValkeySeedsNotACluster(t *testing.T) {
	s1, s2 := redistest.Start(t), redistest.Start(t)
	var logged strings.Builder
	var mu sync.Mutex
	v, _ := newTestValkeyAt(t, s1.Addr+","+s2.Addr, func(cfg *ValkeyConfig) {
		cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
	})
	e, err := v.Get(testCtx(t), keys.Page("plain", "body:0"), newVKLoader("served").load, GetOptions{})
	if err != nil || string(e.Value) != "served" {
		t.Fatalf("Get = %q, %v; want the loaded value", e.Value, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "names 2 seeds, which must be nodes of one Valkey Cluster") {
		t.Errorf("log does not say the seeds are no cluster:\n%s", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
