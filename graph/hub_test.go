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
func newHub(t testing.TB, ps *pages.Service, refresh time.Duration, buffer int) *live.Hub {
	t.Helper()
	h, err := live.New(live.Config{Pages: ps, Refresh: refresh, Buffer: buffer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// newLiveEnv is an env that serves subscriptions, and its hub. buffer is
// the events a subscriber may leave unread (0: the hub's default).
func newLiveEnv(t *testing.T, o envOptions, buffer ...int) (*env, *live.Hub) {
	t.Helper()
	var hub *live.Hub
	o.live = func(t testing.TB, ps *pages.Service, refresh time.Duration) graph.LiveHub {
		hub = newHub(t, ps, refresh, append(buffer, 0)[0])
		return hub
	}
	return newEnv(t, o), hub
}
