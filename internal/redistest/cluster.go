package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cliBinaries are the command-line clients tried, in order, to join a
// cluster (Debian ships redis-cli in redis-tools, a dependency of
// redis-server).
var cliBinaries = []string{"redis-cli", "valkey-cli"}

// ClusterNodeTimeout is the cluster-node-timeout of the nodes a Cluster
// starts: how long a silent node takes to be marked failed by the others.
// Short, so that a test sees the whole cluster react to a lost node within
// seconds; the nodes are all on loopback, where 1 s of silence is a crash.
const ClusterNodeTimeout = time.Second

// Cluster is a Redis Cluster of servers on loopback ports, every slot
// served by one primary and no replicas (redis-cli --cluster create
// --cluster-replicas 0). Losing a node therefore loses its slots until it
// comes back, and with the default cluster-require-full-coverage the whole
// cluster answers CLUSTERDOWN once the others have marked it failed.
type Cluster struct {
	Nodes []*Server
	// URL names every node as a seed in valkey-go's form:
	// redis://first?addr=second&addr=third.
	URL string

	dir    string
	ownDir bool
}

// CLIBinary returns the path of the first command-line client found on PATH.
func CLIBinary() (string, error) {
	for _, b := range cliBinaries {
		if p, err := exec.LookPath(b); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s binary on PATH (Debian: apt-get install redis-tools)", strings.Join(cliBinaries, " or "))
}

// StartCluster runs a fresh cluster of n nodes (at least 3, the fewest
// redis-cli accepts) for the test and stops it at cleanup.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	bin := need(tb, Binary)
	cli := need(tb, CLIBinary)
	c, err := launchCluster(bin, cli, tb.TempDir(), n)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// LaunchCluster runs a fresh cluster of n nodes outside a test (e.g. for a
// load tool). Close stops it and removes its directories.
func LaunchCluster(n int) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	cli, err := CLIBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-cluster-")
	if err != nil {
		return nil, err
	}
	c, err := launchCluster(bin, cli, dir, n)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.ownDir = true
	return c, nil
}

func launchCluster(bin, cli, dir string, n int) (c *Cluster, err error) {
	if n < 3 {
		return nil, fmt.Errorf("a cluster needs at least 3 nodes, not %d", n)
	}
	c = &Cluster{dir: dir}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for i := range n {
		d := filepath.Join(dir, "node-"+strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
		s, err := launchNode(bin, d)
		if err != nil {
			return nil, fmt.Errorf("cluster node %d: %w", i, err)
		}
		c.Nodes = append(c.Nodes, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --cluster create: %w: %s", cli, err, out)
	}
	if err := c.WaitState(ctx, "ok"); err != nil {
		return nil, err
	}
	c.URL = "redis://" + c.Nodes[0].Addr
	for i, s := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		c.URL += sep + "addr=" + s.Addr
	}
	return c, nil
}

// launchNode starts one cluster-enabled server in dir. Its cluster bus gets
// a port of its own (cluster-port) rather than the default port+10000,
// which for a high ephemeral port would not exist.
func launchNode(bin, dir string) (*Server, error) {
	var err error
	for range 3 { // a free port can be taken between probing and binding
		port, perr := freePort()
		if perr != nil {
			return nil, perr
		}
		bus, perr := freePort()
		if perr != nil {
			return nil, perr
		}
		if bus == port {
			continue
		}
		s := &Server{bin: bin, dir: dir, extra: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", // in dir
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-node-timeout", strconv.FormatInt(ClusterNodeTimeout.Milliseconds(), 10),
		}}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.URL = "redis://" + s.Addr
		if err = s.start(); err == nil {
			return s, nil
		}
		// A failed start may have left a nodes.conf naming the lost ports.
		os.Remove(filepath.Join(dir, "nodes.conf"))
	}
	return nil, err
}

// Seeds returns every node's host:port.
func (c *Cluster) Seeds() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr
	}
	return addrs
}

// Stop ends every node. Safe to call twice.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// Close stops the cluster and, for one made by LaunchCluster, removes its
// directories.
func (c *Cluster) Close() {
	c.Stop()
	if c.ownDir {
		os.RemoveAll(c.dir)
	}
}

// WaitState waits until every running node reports cluster_state:want
// ("ok" or "fail") in CLUSTER INFO.
func (c *Cluster) WaitState(ctx context.Context, want string) error {
	var last string
	for {
		all := true
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			info, err := s.Do(ctx, "CLUSTER", "INFO")
			if err != nil {
				last = err.Error()
				all = false
				break
			}
			if !strings.Contains(info, "cluster_state:"+want) {
				last = s.Addr + ": " + firstLine(info)
				all = false
				break
			}
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster not in state %q: %w (last: %s)", want, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// Slot returns the hash slot of key as the cluster computes it (CLUSTER
// KEYSLOT), asked of the first running node.
func (c *Cluster) Slot(ctx context.Context, key string) (int, error) {
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		r, err := s.Do(ctx, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(r)
	}
	return 0, errors.New("redistest: no cluster node running")
}

// NodeFor returns the node serving key's slot, from that node's own view
// (the "myself" line of CLUSTER NODES). Only running nodes are asked.
func (c *Cluster) NodeFor(ctx context.Context, key string) (*Server, error) {
	slot, err := c.Slot(ctx, key)
	if err != nil {
		return nil, err
	}
	for _, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		nodes, err := s.Do(ctx, "CLUSTER", "NODES")
		if err != nil {
			return nil, err
		}
		for line := range strings.SplitSeq(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 8 || !strings.Contains(f[2], "myself") {
				continue
			}
			for _, r := range f[8:] {
				lo, hi, ok := strings.Cut(r, "-")
				if !ok {
					hi = lo
				}
				a, err1 := strconv.Atoi(lo)
				b, err2 := strconv.Atoi(hi)
				if err1 == nil && err2 == nil && a <= slot && slot <= b {
					return s, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("redistest: no running node serves slot %d", slot)
}
