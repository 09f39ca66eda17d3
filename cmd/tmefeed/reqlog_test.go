package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/server"
)

// The hand-written request line is the line slog's own handler writes for
// the same record, in both formats, whatever the strings hold.
func TestRequestLoggerMatchesSlog(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_009_000, time.FixedZone("", 3*3600))
	lines := []server.RequestLine{
		{Time: at, Level: slog.LevelInfo, ID: "a1b2-1", Method: "GET", Route: "/v1/body/{channel}", Status: 200, Bytes: 31222, Duration: 123456 * time.Nanosecond, Cache: "hit"},
		{Time: at.Add(time.Millisecond), Level: slog.LevelWarn, ID: "x", Method: "POST", Route: "/graphql", Status: 429, Bytes: 0, Duration: 3 * time.Second, Cache: "bypass", Operation: "anonymous"},
		{Time: at, Level: slog.LevelError, ID: "id", Method: "GET", Route: "unmatched", Status: 502, Bytes: 10, Duration: 0, Cache: "miss", Operation: "Feed",
			Err: "GET http://o/s/x: status 500 \"quoted\" \\ <tag> & \n\t\x01 é \u2028 \xff", Path: "/v1/x?a=b c", Remote: "[::1]:5000"},
	}
	for _, asJSON := range []bool{true, false} {
		for _, line := range lines {
			var want bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
			if asJSON {
				h = slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
			}
			rec := slog.NewRecord(line.Time, line.Level, "request", 0)
			rec.AddAttrs(line.Attrs()...)
			if err := h.Handle(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			newRequestLogger(&got, asJSON).Log(context.Background(), line)
			if got.String() != want.String() {
				t.Errorf("json=%v:\n got %s\nwant %s", asJSON, got.String(), want.String())
			}
		}
	}
}

// One JSON line per request with route, status, duration, cache outcome
// and request id; at info level no query, body or client address.
func TestRequestLogLines(t *testing.T) {
	s := startLive(t, map[string]string{"LOG_FORMAT": "json"})
	_, hdr, _ := s.do(t, http.MethodGet, "/v1/body/tmefeed_news?position=33&secret=q1", "", "X-Request-Id", "trace-42.a_b")
	if hdr.Get("X-Request-Id") != "trace-42.a_b" {
		t.Errorf("X-Request-Id echoed as %q", hdr.Get("X-Request-Id"))
	}
	_, hdr, _ = s.do(t, http.MethodGet, "/v1/body/tmefeed_news?position=33", "", "X-Request-Id", "not sane <script>")
	generated := hdr.Get("X-Request-Id")
	if generated == "" || strings.Contains(generated, "script") {
		t.Errorf("an insane X-Request-Id became %q", generated)
	}
	s.do(t, http.MethodPost, "/v1/previews", `{"channels":["secretbody"]}`)
	s.do(t, http.MethodPost, "/graphql", `{"query":"query Named { channel(username: \"secretgql\") { title } }"}`)
	s.stop()

	var reqs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		if m["msg"] != "request" {
			continue
		}
		reqs = append(reqs, m)
		for _, secret := range []string{"secret", "127.0.0.1", "position="} {
			if strings.Contains(l, secret) {
				t.Errorf("info line holds %q: %s", secret, l)
			}
		}
		for _, k := range []string{"time", "level", "id", "method", "route", "status", "bytes", "dur", "cache"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line without %q: %s", k, l)
			}
		}
	}
	if len(reqs) != 4 {
		t.Fatalf("%d request lines, want 4:\n%s", len(reqs), s.logs.String())
	}
	want := []struct{ id, route, cache, op string }{
		{"trace-42.a_b", "/v1/body/{channel}", "miss", ""},
		{generated, "/v1/body/{channel}", "hit", ""},
		{"", "/v1/previews", "bypass", ""},
		{"", "/graphql", "bypass", "Named"},
	}
	for i, w := range want {
		m := reqs[i]
		if w.id != "" && m["id"] != w.id || m["route"] != w.route || m["cache"] != w.cache || m["status"] != float64(200) {
			t.Errorf("line %d: %v, want id %q route %q cache %q status 200", i, m, w.id, w.route, w.cache)
		}
		if op, _ := m["op"].(string); op != w.op {
			t.Errorf("line %d: op %q, want %q", i, op, w.op)
		}
	}
}

// At debug level the line adds the request target and the peer, in the
// text format when asked for.
func TestRequestLogDebugText(t *testing.T) {
	s := startLive(t, map[string]string{"LOG_FORMAT": "text", "LOG_LEVEL": "debug"})
	s.do(t, http.MethodGet, "/v1/preview/tmefeed_news?x=1", "")
	s.stop()
	var line string
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, "msg=request") {
			line = l
		}
	}
	for _, want := range []string{"route=/v1/preview/{channel}", "status=200", "cache=miss", `path="/v1/preview/tmefeed_news?x=1"`, "remote=127.0.0.1:"} {
		if !strings.Contains(line, want) {
			t.Errorf("debug line without %q: %s", want, line)
		}
	}
}

// What a user searched for stays out of the log at info level, also when
// the search fails: the origin's error names the page searched, not the
// text (t.me's answer for a name that is no channel, and no answer at all).
func TestRequestLogKeepsSearchTextOut(t *testing.T) {
	const secret = "topsecretwords"
	for _, origin := range []string{"", "http://127.0.0.1:1"} {
		var args []string
		if origin != "" {
			args = []string{"--origin", origin, "--upstream-retry-budget", "0"}
		}
		s := startLive(t, map[string]string{"LOG_FORMAT": "json"}, args...)
		status, _, _ := s.do(t, http.MethodGet, "/v1/search/nobody_here_404?q="+secret, "")
		if status < 400 {
			t.Errorf("origin %q: search of no channel: status %d", origin, status)
		}
		s.stop()
		errs := 0
		for _, l := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
			if strings.Contains(l, secret) {
				t.Errorf("origin %q: a log line holds the search text: %s", origin, l)
			}
			if strings.Contains(l, `"route":"/v1/search/{channel}"`) && strings.Contains(l, `"err":`) {
				errs++
			}
		}
		if errs != 1 {
			t.Errorf("origin %q: %d search request lines with an err, want 1:\n%s", origin, errs, s.logs.String())
		}
	}
}

// One logger formats the dates of a second once and reuses them: lines in
// the same second, the next second, another zone, with and without
// fractions, all read as slog's own handlers write them.
func TestRequestLoggerTimesMatchSlog(t *testing.T) {
	base := time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)
	times := []time.Time{
		base,
		base.Add(120 * time.Nanosecond),
		base.Add(999_999_999 * time.Nanosecond),
		base.Add(500 * time.Millisecond),
		base.Add(time.Second), // the next year
		base.Add(time.Second + 7*time.Millisecond).In(time.FixedZone("", -(9*3600 + 30*60))),
		base.Add(time.Second + 8*time.Millisecond), // back to UTC within the same second
		base.Add(2*time.Second + 10*time.Microsecond).In(time.Local),
	}
	for _, asJSON := range []bool{true, false} {
		var got bytes.Buffer
		l := newRequestLogger(&got, asJSON)
		for _, at := range times {
			line := server.RequestLine{Time: at, Level: slog.LevelInfo, ID: "a-1", Method: "GET", Route: "/v1/body/{channel}", Status: 200, Cache: "hit"}
			var want bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&want, nil)
			if asJSON {
				h = slog.NewJSONHandler(&want, nil)
			}
			rec := slog.NewRecord(line.Time, line.Level, "request", 0)
			rec.AddAttrs(line.Attrs()...)
			if err := h.Handle(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			got.Reset()
			l.Log(context.Background(), line)
			if got.String() != want.String() {
				t.Errorf("json=%v, %v:\n got %s\nwant %s", asJSON, at, got.String(), want.String())
			}
		}
	}
}
