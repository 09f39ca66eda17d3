package redistest

import (
	"context"
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
