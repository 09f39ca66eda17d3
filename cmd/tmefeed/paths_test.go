package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tmefeed/tmefeed/fixtures"
)

// TestRequestPaths runs one of three request paths for a coverage
// profile (docs/ARCHITECTURE.md, "Three request paths, file by file").
// $TMEFEED_PATHS names the path and the phase: "rest:warm" builds the
// stack and warms what the REST hit needs, "rest:run" does the same and
// then the hit once; the code the path runs is what counts more in the
// second profile than in the first. (A test binary cannot clear its
// counters: runtime/coverage writes them only from built programs.) It
// runs only when asked, in a binary built with coverage over the module:
//
//	TMEFEED_PATHS=rest:run go test -cover -covermode=atomic -coverpkg=./... -coverprofile=rest.out -run TestRequestPaths ./cmd/tmefeed
//
// which `make paths` (tools/paths) does for each path and phase. The
// updater is off, so that nothing runs in the background; the live
// path's refresh is the updater's one call, made here.
func TestRequestPaths(t *testing.T) {
	which, phase, _ := strings.Cut(os.Getenv("TMEFEED_PATHS"), ":")
	if which == "" {
		t.Skip("TMEFEED_PATHS names no path (make paths)")
	}
	if testing.CoverMode() != "atomic" {
		t.Fatal("build with -cover -covermode=atomic -coverpkg=./... (make paths)")
	}
	if phase != "warm" && phase != "run" {
		t.Fatalf("TMEFEED_PATHS=%s: want <path>:warm or <path>:run", os.Getenv("TMEFEED_PATHS"))
	}
	vars := map[string]string{"CACHE_MODE": "normal", "UPDATER": "off", "LOG_LEVEL": "info"}
	cfg, err := parseServeConfig(nil, env(vars), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	o := fixtures.NewOrigin(fixtures.OriginOptions{})
	oln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	osrv := &http.Server{Handler: o, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = osrv.Serve(oln) }()
	t.Cleanup(func() { _ = osrv.Close() })

	logs := &lockedBuffer{}
	logBuf := newLogBuffer(logs)
	t.Cleanup(func() { _ = logBuf.Close() })
	log := newLogger(cfg.LogLevel, true, logBuf)
	st, err := newStack(ctx, cfg, "http://"+oln.Addr().String(), "", log, newRequestLogger(logBuf, true).Log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, lim, err := httpServer(cfg, st.budget, st.handler, ln, log)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lim) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()

	measure := func(path func()) {
		if phase == "run" {
			path()
		}
	}
	get := func(path string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}

	var requests int // each writes its line when it is over
	switch which {
	case "rest":
		// The page read until the hot store holds its answer.
		for range 3 {
			get("/v1/body/tmefeed_news")
		}
		measure(func() { get("/v1/body/tmefeed_news") })
		requests = 3
	case "graphql":
		measure(func() { coldFeed(t, base) })
		if phase == "run" {
			requests = 1
		}
	case "live":
		liveUpdate(t, ctx, st, o, base, cfg.Refresh, measure)
		requests = 3 // two reads and the WebSocket, closed
	default:
		t.Fatalf("TMEFEED_PATHS=%s: the paths are rest, graphql and live", which)
	}
	if phase == "run" && which == "rest" {
		requests++
	}
	// Both phases end alike: every request over, its line written, so
	// that no request's end lands in one profile and not the other.
	for strings.Count(logs.String(), `"msg":"request"`) < requests {
		if ctx.Err() != nil {
			t.Fatalf("%d request lines, want %d", strings.Count(logs.String(), `"msg":"request"`), requests)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// coldFeed asks for a feed of three channels nothing has read yet.
func coldFeed(t *testing.T, base string) {
	t.Helper()
	{
		body, _ := json.Marshal(map[string]any{"query": dashboardQuery, "operationName": "Dashboard", "variables": map[string]any{
			"channels": []string{"kanal_novostei", "emoji_party", "hadashot_today"}, "first": 10,
		}})
		resp, err := http.Post(base+"/graphql", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `"errors"`) || !strings.Contains(string(b), "hadashot_today") {
			t.Fatalf("cold feed: %s %s", resp.Status, b)
		}
	}
}

// liveUpdate opens a subscriber over graphql-transport-ws and publishes
// posts at the origin; its measured part is the second post's: the
// refresh that finds it and the frame on the socket.
func liveUpdate(t *testing.T, ctx context.Context, st *stack, o *fixtures.Origin, base string, refresh time.Duration, measure func(func())) {
	t.Helper()
	// Live update: a subscriber over graphql-transport-ws, a post
	// published at the origin, the refresh that finds it and the frame on
	// the socket.
	// The pages cached first: the subscription's look-up reads them, and
	// the posts published below are changes of them. The warm-up's post
	// goes to the other channel, whose copy the refresh then renews.
	channels := []string{"late_edition", "video_desk"}
	for _, ch := range channels {
		resp, err := http.Get(base + "/v1/body/" + ch)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	sub := `subscription { feedUpdates(channels: ["` + strings.Join(channels, `", "`) + `"]) { kind post { messageId } } }`
	for _, m := range []string{`{"type":"connection_init"}`, `{"type":"subscribe","id":"1","payload":{"query":` + string(must(json.Marshal(sub))) + `}}`} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), "connection_ack") {
		t.Fatalf("after connection_init: %s %v", b, err)
	}
	for st.live.Stats().Subscribers != 1 {
		if ctx.Err() != nil {
			t.Fatal("the subscription did not open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Once as warm-up: the subscription's look-up of its channels runs
	// after it registers, and is over when an event reaches it.
	update := func(channel, text string) {
		id := o.PublishPost(channel, text)
		// What live/updater.go's cycle asks for a due channel; a lead of
		// the whole window makes the copy due now.
		if _, err := st.pages.RefreshNewest(ctx, channel, refresh); err != nil {
			t.Fatal(err)
		}
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"next"`) {
				if !strings.Contains(string(b), `"NEW"`) || !strings.Contains(string(b), `"messageId":`+strconv.Itoa(id)) {
					t.Fatalf("frame %s", b)
				}
				return
			}
		}
	}
	update(channels[0], "published while warming up")
	measure(func() { update(channels[1], "published while measured") })
	if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
}
