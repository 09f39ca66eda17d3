package graph_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/pages"
)

// newHub is the live hub of a test process, over its page service.
func newHub(t testing.TB, ps *pages.Service, refresh time.Duration) graph.LiveHub {
	t.Helper()
	h, err := live.New(live.Config{Pages: ps, Refresh: refresh, Buffer: hubBuffer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// hubBuffer is the events a test subscriber may leave unread.
const hubBuffer = 8
