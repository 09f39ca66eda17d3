package graph_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

// newValkeyKV connects one replica's Valkey client to srv and returns it
// as the persisted-query store.
func newValkeyKV(t *testing.T, srv *redistest.Server) graph.KV {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := cache.NewValkey(ctx, cache.ValkeyConfig{URL: srv.URL, Refresh: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v.KV()
}

func commandStats(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	s, err := srv.CommandStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// commandsSince is what srv ran since before, connection setup left out.
func commandsSince(t *testing.T, srv *redistest.Server, before map[string]int64) map[string]int64 {
	t.Helper()
	d, err := srv.CommandsSince(context.Background(), before)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
