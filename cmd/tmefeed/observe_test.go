package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/redistest"
)

// liveServer is `tmefeed serve` on a loopback port over the fixture origin.
type liveServer struct {
	base   string
	origin *fixtures.Origin
	logs   *lockedBuffer
	client *http.Client
	stop   func() // shuts the server down and waits; logs are complete after it
}

func startLive(t *testing.T, vars map[string]string, args ...string) *liveServer {
	t.Helper()
	return startLiveWith(t, fixtures.OriginOptions{}, vars, args...)
}

// startLiveWith is startLive over a fixture origin built from opts.
func startLiveWith(t *testing.T, opts fixtures.OriginOptions, vars map[string]string, args ...string) *liveServer {
	t.Helper()
	o := fixtures.NewOrigin(opts)
	ts := httptest.NewServer(o)
	t.Cleanup(ts.Close)
	all := append([]string{"--port", "0", "--origin", ts.URL}, args...)
	cfg, err := parseServeConfig(all, env(vars), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() { done <- serve(ctx, cfg, logs, func(a string) { addr <- a }) }()
	s := &liveServer{origin: o, logs: logs, client: &http.Client{Timeout: 10 * time.Second}}
	select {
	case a := <-addr:
		s.base = "http://" + strings.Replace(a, "[::]", "127.0.0.1", 1)
	case err := <-done:
		cancel()
		t.Fatalf("serve ended early: %v", err)
	}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("shutdown: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("serve did not shut down")
			}
		})
	}
	t.Cleanup(s.stop)
	return s
}

// do sends a request and returns status, headers and body.
func (s *liveServer) do(t *testing.T, method, path, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// scrape reads /metrics in the text format.
func (s *liveServer) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	status, _, body := s.do(t, http.MethodGet, "/metrics", "")
	if status != http.StatusOK {
		t.Fatalf("/metrics: status %d", status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	return fams
}

// value is the sample of family name whose labels include want; -1 when
// there is none.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
	}
	return -1
}

// A scripted run moves the series an operator watches: a cold then cached
// REST answer, a named GraphQL operation, an origin failure and a 429.
func TestMetricsAfterScriptedRun(t *testing.T) {
	const rpm = 30
	s := startLive(t, map[string]string{
		"RATE_LIMIT_RPM":  strconv.Itoa(rpm),
		"TRUSTED_PROXIES": "127.0.0.1/32",
		"LOG_LEVEL":       "warn",
	})
	s.origin.SetFault("/s/retro_channel", fixtures.Fault{Status: http.StatusInternalServerError})
	before := s.scrape(t)
	if v := value(before, "tmefeed_http_requests_total", "route", "/v1/body/{channel}", "code", "200"); v != -1 {
		t.Fatalf("requests counted before any was made: %v", v)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "tmefeed_store_bytes", "tmefeed_breaker_state"} {
		if before[name] == nil {
			t.Errorf("%s missing", name)
		}
	}

	body := "/v1/body/tmefeed_news"
	for i := range 3 { // cold, then cached twice
		if status, _, _ := s.do(t, http.MethodGet, body, ""); status != http.StatusOK {
			t.Fatalf("GET %s #%d: status %d", body, i, status)
		}
	}
	status, _, out := s.do(t, http.MethodPost, "/graphql", `{"query":"query ChannelTitle { channel(username: \"tmefeed_news\") { title } }"}`)
	if status != http.StatusOK || !strings.Contains(out, "Tmefeed News") {
		t.Fatalf("GraphQL: status %d: %s", status, out)
	}
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/retro_channel", ""); status < 500 {
		t.Fatalf("a failing origin answered %d", status)
	}
	// A noisy client behind the trusted proxy: its own budget, then 429.
	var limited http.Header
	for i := range rpm + 1 {
		status, hdr, out := s.do(t, http.MethodGet, body, "", "X-Forwarded-For", "203.0.113.7")
		if i < rpm && status != http.StatusOK {
			t.Fatalf("request %d within the limit: status %d", i, status)
		}
		if i == rpm {
			if status != http.StatusTooManyRequests || !strings.Contains(out, `"rate_limited"`) {
				t.Fatalf("request over the limit: status %d: %s", status, out)
			}
			limited = hdr
		}
	}
	if ra, err := strconv.Atoi(limited.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After %q, want 1..60 seconds", limited.Get("Retry-After"))
	}
	// Probes and scrapes are not limited, even for the limited client.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if status, _, _ := s.do(t, http.MethodGet, p, "", "X-Forwarded-For", "203.0.113.7"); status != http.StatusOK {
			t.Errorf("%s for a limited client: status %d", p, status)
		}
	}

	after := s.scrape(t)
	route := "/v1/body/{channel}"
	checks := []struct {
		what string
		got  float64
		want func(float64) bool
	}{
		{"200s on the body route", value(after, "tmefeed_http_requests_total", "route", route, "code", "200"), func(v float64) bool { return v == 3+rpm }},
		{"the 429", value(after, "tmefeed_http_requests_total", "route", route, "code", "429"), func(v float64) bool { return v == 1 }},
		{"rate-limited counter", value(after, "tmefeed_http_rate_limited_total", "route", route), func(v float64) bool { return v == 1 }},
		{"the origin failure's answer", value(after, "tmefeed_http_requests_total", "route", route, "code", "502"), func(v float64) bool { return v == 1 }},
		{"one cold answer", value(after, "tmefeed_http_cache_total", "route", route, "outcome", "miss"), func(v float64) bool { return v == 1 }},
		{"cached answers", value(after, "tmefeed_http_cache_total", "route", route, "outcome", "hit"), func(v float64) bool { return v == 2+rpm }},
		{"latency observations", value(after, "tmefeed_http_request_duration_seconds", "route", route), func(v float64) bool { return v == 3+rpm+2 }},
		{"the GraphQL operation", value(after, "tmefeed_graphql_operations_total", "operation", "ChannelTitle", "code", "200"), func(v float64) bool { return v == 1 }},
		{"the GraphQL route", value(after, "tmefeed_http_requests_total", "route", "/graphql", "code", "200"), func(v float64) bool { return v == 1 }},
		{"origin successes", value(after, "tmefeed_origin_requests_total", "egress", "direct", "outcome", "ok"), func(v float64) bool { return v >= 1 }},
		{"origin failures", value(after, "tmefeed_origin_requests_total", "egress", "direct", "outcome", "server_error"), func(v float64) bool { return v >= 1 }},
		{"origin latency", value(after, "tmefeed_origin_request_duration_seconds", "outcome", "ok"), func(v float64) bool { return v >= 1 }},
		{"cache misses", value(after, "tmefeed_cache_misses_total"), func(v float64) bool { return v >= 2 }},
		{"hot store bytes", value(after, "tmefeed_store_bytes", "store", "hot"), func(v float64) bool { return v > 0 }},
		{"page bytes", value(after, "tmefeed_store_bytes", "store", "pages"), func(v float64) bool { return v > 0 }},
		// The scrape itself is in flight; an earlier request's handler may
		// still be returning after its client read the whole answer.
		{"in flight: the scrape itself", value(after, "tmefeed_http_requests_in_flight"), func(v float64) bool { return v >= 1 && v <= 2 }},
		{"origin breaker closed", value(after, "tmefeed_breaker_state", "breaker", "origin", "egress", "direct"), func(v float64) bool { return v == 0 }},
		{"origin last answer", value(after, "tmefeed_origin_last_answer_timestamp_seconds", "egress", "direct"), func(v float64) bool { return v > float64(time.Now().Add(-time.Minute).Unix()) }},
	}
	for _, c := range checks {
		if !c.want(c.got) {
			t.Errorf("%s: got %v", c.what, c.got)
		}
	}
	// Bounded labels: routes are patterns, never the channel in the path.
	for name, f := range after {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "tmefeed_news") || strings.Contains(l.GetValue(), "retro_channel") {
					t.Errorf("%s has a raw path in label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TRUSTED_PROXIES decides whose X-Forwarded-For names the client: without
// it every request from the proxy shares one budget, however the header
// varies; with it each forwarded client has its own.
func TestRateLimitTrustedProxyOnlyWhenConfigured(t *testing.T) {
	const rpm = 3
	path := "/v1/preview/tmefeed_news"
	for _, tc := range []struct {
		trusted     string
		wantLimited bool // the 4th request, from a fresh forwarded address
	}{
		{"", true},
		{"10.0.0.0/8, 127.0.0.1", false},
	} {
		s := startLive(t, map[string]string{"RATE_LIMIT_RPM": strconv.Itoa(rpm), "TRUSTED_PROXIES": tc.trusted, "LOG_LEVEL": "warn"})
		for i := range rpm {
			if status, _, _ := s.do(t, http.MethodGet, path, "", "X-Forwarded-For", "198.51.100."+strconv.Itoa(i+1)); status != http.StatusOK {
				t.Fatalf("trusted %q: request %d: status %d", tc.trusted, i, status)
			}
		}
		status, hdr, out := s.do(t, http.MethodGet, path, "", "X-Forwarded-For", "198.51.100.99, 127.0.0.1")
		if got := status == http.StatusTooManyRequests; got != tc.wantLimited {
			t.Errorf("trusted %q: 4th request from a new forwarded address: status %d, want limited=%v", tc.trusted, status, tc.wantLimited)
		}
		if tc.wantLimited {
			if hdr.Get("Retry-After") == "" || !strings.Contains(out, `"code":"rate_limited"`) || hdr.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Errorf("429: Retry-After %q, Content-Type %q, body %s", hdr.Get("Retry-After"), hdr.Get("Content-Type"), out)
			}
			// A spoofed header from an untrusted peer does not escape the limit at /graphql either,
			// and the refusal takes GraphQL's error shape there.
			status, hdr, out := s.do(t, http.MethodPost, "/graphql", `{"query":"{ channel(username: \"tmefeed_news\") { title } }"}`, "X-Real-IP", "192.0.2.1")
			var gql struct {
				Errors []struct {
					Message    string            `json:"message"`
					Extensions map[string]string `json:"extensions"`
				} `json:"errors"`
			}
			if err := json.Unmarshal([]byte(out), &gql); err != nil || status != http.StatusTooManyRequests || len(gql.Errors) != 1 ||
				gql.Errors[0].Extensions["code"] != "RATE_LIMITED" || hdr.Get("Retry-After") == "" {
				t.Errorf("/graphql over the limit: status %d, Retry-After %q: %s", status, hdr.Get("Retry-After"), out)
			}
		}
		s.stop()
	}
}

// /readyz is 200 while Valkey answers, still 200 but "degraded" once it is
// stopped (the embedded tier serves), and 503 when the origin's breaker is
// open with no recent answer.
func TestReadyz(t *testing.T) {
	rs := redistest.Start(t)
	s := startLive(t, map[string]string{
		"VALKEY_URL":                rs.URL,
		"VALKEY_TIMEOUT":            "200ms",
		"UPSTREAM_BREAKER_FAILURES": "1",
		"UPSTREAM_RETRY_BUDGET":     "0",
		"NEGATIVE_CACHE_TTL":        "0",
		"LOG_LEVEL":                 "warn",
	})
	type result struct {
		Status string `json:"status"`
		Checks map[string]struct {
			Status string         `json:"status"`
			Detail string         `json:"detail"`
			Data   map[string]any `json:"data"`
		} `json:"checks"`
	}
	ready := func() (int, result) {
		status, _, out := s.do(t, http.MethodGet, "/readyz", "")
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("/readyz body: %v: %s", err, out)
		}
		return status, r
	}

	if status, r := ready(); status != http.StatusOK || r.Status != "ready" || r.Checks["cache"].Status != "ok" || r.Checks["cache"].Data["tier"] != "valkey" || r.Checks["origin"].Status != "ok" {
		t.Fatalf("with Valkey up: %d %+v", status, r)
	}
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/tmefeed_news", ""); status != http.StatusOK {
		t.Fatalf("body with Valkey up: %d", status)
	}
	// The Valkey tier's hooks feed the cache series.
	m := s.scrape(t)
	if v := value(m, "tmefeed_cache_lease_total", "outcome", "won"); v < 1 {
		t.Errorf("leases won: %v, want the cold load's", v)
	}
	if v := value(m, "tmefeed_cache_misses_total"); v < 1 {
		t.Errorf("cache misses: %v", v)
	}
	if v := value(m, "tmefeed_breaker_state", "breaker", "valkey"); v != 0 {
		t.Errorf("valkey breaker state %v, want 0 (closed)", v)
	}

	rs.Stop()
	status, r := ready()
	if status != http.StatusOK || r.Status != "degraded" || r.Checks["cache"].Status != "degraded" || !strings.Contains(r.Checks["cache"].Detail, "embedded") {
		t.Errorf("with Valkey down: %d %+v", status, r)
	}
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/kanal_novostei", ""); status != http.StatusOK {
		t.Errorf("a cold page with Valkey down: %d, want it served through the embedded tier", status)
	}

	// The origin fails and its breaker opens after one failure.
	s.origin.SetFault("/", fixtures.Fault{Status: http.StatusServiceUnavailable})
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/emoji_party", ""); status < 500 {
		t.Fatalf("failing origin answered %d", status)
	}
	status, r = ready()
	if r.Checks["origin"].Status == "ok" {
		t.Errorf("origin with its breaker open: %+v", r.Checks["origin"])
	}
	// The fixture origin answered before it failed, so it is degraded
	// (recently reachable), not down.
	if status != http.StatusOK || r.Checks["origin"].Status != "degraded" {
		t.Errorf("origin breaker open after a recent answer: %d %+v", status, r)
	}
}

// An origin that never answered and whose breaker is open makes the
// process not ready.
func TestReadyzOriginDown(t *testing.T) {
	s := startLive(t, map[string]string{"UPSTREAM_BREAKER_FAILURES": "1", "UPSTREAM_RETRY_BUDGET": "0", "LOG_LEVEL": "warn"})
	s.origin.SetFault("/", fixtures.Fault{Status: http.StatusBadGateway})
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/tmefeed_news", ""); status < 500 {
		t.Fatalf("failing origin answered %d", status)
	}
	status, _, out := s.do(t, http.MethodGet, "/readyz", "")
	if status != http.StatusServiceUnavailable || !strings.Contains(out, `"not_ready"`) || !strings.Contains(out, `"down"`) {
		t.Errorf("origin down: %d %s", status, out)
	}
	if !strings.Contains(out, `"egress":"direct"`) {
		t.Errorf("the origin check does not name the egress: %s", out)
	}
	if status, _, _ := s.do(t, http.MethodGet, "/healthz", ""); status != http.StatusOK {
		t.Errorf("/healthz while not ready: %d (liveness must not follow readiness)", status)
	}
}

// The live series follow the updater and the subscriptions: an open
// subscription is counted while its stream is open, the updater's cycles
// advance and keep the subscribed channel among the tracked ones, and a
// post published at the origin is found and delivered once.
func TestMetricsLiveSeries(t *testing.T) {
	s := startLive(t, map[string]string{"LOG_LEVEL": "warn"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doc := `{"query":"subscription { feedUpdates(channels: [\"tmefeed_news\"]) { kind post { id } } }"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/graphql", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(req) // a stream: no client timeout, ctx ends it
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("subscription over SSE: status %d", resp.StatusCode)
	}
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data:") && strings.Contains(line, "NEW") {
				events <- line
			}
		}
		close(events)
	}()

	// A reader's copy of the page is the baseline the next refresh is
	// compared with.
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/tmefeed_news", ""); status != http.StatusOK {
		t.Fatalf("/v1/body: status %d", status)
	}
	// Poll the scrape until the updater has run with the subscription in
	// place; the test's own deadline bounds the wait.
	var fams map[string]*dto.MetricFamily
	for {
		fams = s.scrape(t)
		if value(fams, "tmefeed_graphql_subscriptions_open") == 1 &&
			value(fams, "tmefeed_updater_cycles_total") >= 1 &&
			value(fams, "tmefeed_updater_tracked_channels") >= 1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v := value(fams, "tmefeed_live_events_published_total"); v != 0 {
		t.Fatalf("events published before any post was: %v", v)
	}

	s.origin.PublishPost("tmefeed_news", "a post for the metrics test")
	if _, ok := <-events; !ok {
		t.Fatal("the stream ended before the new post arrived")
	}
	// The hub counts a delivery just after handing the event over.
	for fams = s.scrape(t); value(fams, "tmefeed_live_events_delivered_total") < 1; fams = s.scrape(t) {
		time.Sleep(20 * time.Millisecond)
	}
	if v := value(fams, "tmefeed_live_events_published_total"); v != 1 {
		t.Errorf("events published: %v, want 1", v)
	}
	if v := value(fams, "tmefeed_live_events_delivered_total"); v != 1 {
		t.Errorf("events delivered: %v, want 1", v)
	}
	if v := value(fams, "tmefeed_updater_refreshes_total"); v < 1 {
		t.Errorf("updater refreshes: %v, want at least 1", v)
	}

	cancel() // the client goes away
	for value(s.scrape(t), "tmefeed_graphql_subscriptions_open") != 0 {
		time.Sleep(50 * time.Millisecond)

	}
}

// An IPv6 client is limited by its /64, not by each address: a host may
// use any address of its /64, so counting addresses apart would let one
// client make as many requests as it likes. Another /64 has its own budget.
func TestRateLimitIPv6ByPrefix(t *testing.T) {
	const rpm = 3
	path := "/v1/preview/tmefeed_news"
	s := startLive(t, map[string]string{"RATE_LIMIT_RPM": strconv.Itoa(rpm), "TRUSTED_PROXIES": "127.0.0.1, ::1", "LOG_LEVEL": "warn"})
	for i := range rpm {
		if status, _, _ := s.do(t, http.MethodGet, path, "", "X-Forwarded-For", "2001:db8:1:2::"+strconv.Itoa(i+1)); status != http.StatusOK {
			t.Fatalf("request %d: status %d", i, status)
		}
	}
	if status, hdr, _ := s.do(t, http.MethodGet, path, "", "X-Forwarded-For", "2001:db8:1:2:ffff:1:2:3"); status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("4th request from another address of the same /64: status %d, Retry-After %q", status, hdr.Get("Retry-After"))
	}
	if status, _, _ := s.do(t, http.MethodGet, path, "", "X-Forwarded-For", "2001:db8:1:3::1"); status != http.StatusOK {
		t.Errorf("a request from another /64: status %d", status)
	}
}

// A subscription's stream is counted among /graphql's requests but kept
// out of its latency histogram: it lasts as long as its client stays, and
// would make the route's latency meaningless.
func TestMetricsStreamsOutOfLatency(t *testing.T) {
	s := startLive(t, nil)
	s.do(t, http.MethodPost, "/graphql", `{"query":"{ channel(username: \"tmefeed_news\") { title } }"}`)
	before := s.scrape(t)
	latency := value(before, "tmefeed_http_request_duration_seconds", "route", "/graphql")
	answered := value(before, "tmefeed_http_requests_total", "route", "/graphql", "code", "200")
	if latency != 1 || answered != 1 {
		t.Fatalf("after one query: latency count %v, requests %v", latency, answered)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/graphql",
		strings.NewReader(`{"query":"subscription { feedUpdates(channels: [\"tmefeed_news\"]) { kind } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for ctx.Err() == nil && value(s.scrape(t), "tmefeed_http_requests_total", "route", "/graphql", "code", "200") < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	after := s.scrape(t)
	if n := value(after, "tmefeed_http_requests_total", "route", "/graphql", "code", "200"); n != 2 {
		t.Fatalf("the stream is not counted: %v requests", n)
	}
	if n := value(after, "tmefeed_http_request_duration_seconds", "route", "/graphql"); n != 1 {
		t.Errorf("latency count %v after a stream, want 1 (the query only)", n)
	}
}

// The origin budget is seen where operators look: a reader refused for
// it gets 503 origin_budget_exhausted with Retry-After, /readyz shows the
// budget spent (degraded, still ready: cached answers are served), and
// /metrics counts the decisions by class and outcome and shows the
// bucket's tokens.
func TestOriginBudgetInReadyzAndMetrics(t *testing.T) {
	// A token every 10 s, two at once: the third cold page cannot wait
	// for its token (2 s at most) and is refused.
	s := startLive(t, map[string]string{"ORIGIN_RPM": "6", "ORIGIN_BURST": "2", "CLIENT_ORIGIN_RPM": "0", "UPDATER": "off", "LOG_LEVEL": "error"})
	chs := s.origin.Channels()
	for _, ch := range chs[:2] {
		if status, _, out := s.do(t, http.MethodGet, "/v1/body/"+ch, ""); status != http.StatusOK {
			t.Fatalf("%s within the burst: %d %s", ch, status, out)
		}
	}
	status, h, out := s.do(t, http.MethodGet, "/v1/body/"+chs[2], "")
	retry, _ := strconv.Atoi(h.Get("Retry-After"))
	if status != http.StatusServiceUnavailable || !strings.Contains(out, `"origin_budget_exhausted"`) || retry < 1 || retry > 10 {
		t.Fatalf("past the burst: %d, Retry-After %q, %s", status, h.Get("Retry-After"), out)
	}
	// What is held is still served.
	if status, _, _ := s.do(t, http.MethodGet, "/v1/body/"+chs[0], ""); status != http.StatusOK {
		t.Errorf("a cached page with the budget spent: %d", status)
	}
	status, _, out = s.do(t, http.MethodGet, "/readyz", "")
	var r struct {
		Status string
		Checks map[string]struct {
			Status string
			Data   struct {
				Egresses []struct {
					Egress  string
					RPM     int
					Burst   int
					Tokens  int
					Refused map[string]int
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("/readyz: %v: %s", err, out)
	}
	b := r.Checks["origin_budget"]
	if status != http.StatusOK || r.Status != "degraded" || b.Status != "degraded" || len(b.Data.Egresses) != 1 {
		t.Fatalf("/readyz with the budget spent: %d %s", status, out)
	}
	if e := b.Data.Egresses[0]; e.Egress != "direct" || e.RPM != 6 || e.Burst != 2 || e.Tokens != 0 || e.Refused["reader"] != 1 {
		t.Errorf("/readyz budget %+v", e)
	}
	_, _, m := s.do(t, http.MethodGet, "/metrics", "")
	for _, want := range []string{
		`tmefeed_origin_budget_decisions_total{class="reader",egress="direct",outcome="admitted"} 2`,
		`tmefeed_origin_budget_decisions_total{class="reader",egress="direct",outcome="refused"} 1`,
		`tmefeed_origin_budget_tokens{egress="direct"} 0`,
		`tmefeed_origin_budget_requests_per_minute{egress="direct"} 6`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
