package redistest

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestServerLifecycle(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if got, err := s.Do(ctx, "SET", "k", "v"); err != nil || got != "OK" {
		t.Fatalf("SET = %q, %v", got, err)
	}
	if got, err := s.Do(ctx, "GET", "k"); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
	if n, err := s.CommandCalls(ctx, "get"); err != nil || n != 1 {
		t.Fatalf("CommandCalls(get) = %d, %v; want 1", n, err)
	}

	s.Stop()
	if s.Running() {
		t.Fatal("Running after Stop")
	}
	if _, err := s.Do(ctx, "PING"); err == nil {
		t.Fatal("PING succeeded against a stopped server")
	}

	s.Restart(t)
	if _, err := s.Do(ctx, "GET", "k"); err != ErrNil {
		t.Fatalf("GET after restart: err = %v; want ErrNil (restart starts empty)", err)
	}
}

func TestCommandsSince(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before, err := s.CommandStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"SET", "k", "v"}, {"GET", "k"}, {"GET", "k"}, {"CLIENT", "SETNAME", "x"}} {
		if _, err := s.Do(ctx, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.CommandsSince(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["set"] != 1 || got["get"] != 2 {
		t.Errorf("CommandsSince = %v, want set 1 and get 2 (setup and INFO left out)", got)
	}
}

func TestClusterLifecycle(t *testing.T) {
	c := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Keys spread over the nodes; each node answers only for its own slots.
	owners := map[string]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		owner, err := c.NodeFor(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		owners[owner.Addr] = true
		if got, err := owner.Do(ctx, "SET", k, "v"); err != nil || got != "OK" {
			t.Fatalf("SET %s on its owner = %q, %v", k, got, err)
		}
		for _, s := range c.Nodes {
			if s == owner {
				continue
			}
			if _, err := s.Do(ctx, "GET", k); err == nil || !strings.Contains(err.Error(), "MOVED") {
				t.Fatalf("GET %s on a node not owning it: err = %v, want MOVED", k, err)
			}
		}
	}
	if len(owners) < 2 {
		t.Errorf("8 keys landed on %d node(s); the slots are not spread", len(owners))
	}
	if !strings.HasPrefix(c.URL, "redis://"+c.Nodes[0].Addr+"?addr=") || strings.Count(c.URL, "addr=") != 2 {
		t.Errorf("URL = %q, want every node as a seed", c.URL)
	}

	// A lost node fails the cluster (full coverage); back, it rejoins.
	c.Nodes[1].Stop()
	if err := c.WaitState(ctx, "fail"); err != nil {
		t.Fatal(err)
	}
	c.Nodes[1].Restart(t)
	if err := c.WaitState(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
}
