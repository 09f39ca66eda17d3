package main

import (
	"context"
	"io"
	"math"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the bare server the tool starts by
// running its own executable again.
func TestMain(m *testing.M) {
	if os.Getenv(bareBodyEnv) != "" {
		if err := bareMain(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseArgsDefaults(t *testing.T) {
	cfg, err := parseArgs(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != "/v1/body/tmefeed_news" || cfg.Conns != 64 || cfg.Threads != 2 || cfg.Rounds != 5 ||
		cfg.Duration != 5*time.Second || cfg.Client != "auto" || cfg.AcceptEncoding != "" {
		t.Errorf("defaults: %+v", cfg)
	}
}

func TestParseArgsGraphQLBecomesAGetPath(t *testing.T) {
	doc := `{ feed(channels: ["a", "b"], first: 5) { totalCount } }`
	cfg, err := parseArgs([]string{"-graphql", doc, "-rounds", "3", "-duration", "2s", "-client", "go", "-accept-encoding", "gzip"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	path, query, ok := strings.Cut(cfg.Path, "?")
	if !ok || path != "/graphql" {
		t.Fatalf("path %q", cfg.Path)
	}
	q, err := url.ParseQuery(query)
	if err != nil || q.Get("query") != doc {
		t.Errorf("query %q decodes to %q (%v)", query, q.Get("query"), err)
	}
	if cfg.Rounds != 3 || cfg.Duration != 2*time.Second || cfg.Client != "go" || cfg.AcceptEncoding != "gzip" {
		t.Errorf("flags not applied: %+v", cfg)
	}
}

func TestParseArgsRefusesBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"-rounds", "0"},
		{"-duration", "0s"},
		{"-conns", "1", "-threads", "2"},
		{"-client", "ab"},
		{"-path", "v1/body/x"},
		{"-cache-mode", "off"},
		{"-accept-encoding", "gzip\r\nX: y"},
		{"extra"},
	} {
		if _, err := parseArgs(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

func TestRatiosAreMediansOfRoundRatios(t *testing.T) {
	r := result{Rounds: []round{
		{Tmefeed: 80, Bare: 100, TmefeedCPU: 20e-6, BareCPU: 10e-6}, // 0.8, 0.5
		{Tmefeed: 30, Bare: 100, TmefeedCPU: 10e-6, BareCPU: 9e-6},  // 0.3, 0.9
		{Tmefeed: 90, Bare: 60, TmefeedCPU: 25e-6, BareCPU: 20e-6},  // 1.5, 0.8
	}}
	if got := r.Ratio(); math.Abs(got-0.8) > 1e-9 {
		t.Errorf("Ratio = %v, want 0.8", got)
	}
	if got := r.CPURatio(); math.Abs(got-0.8) > 1e-9 {
		t.Errorf("CPURatio = %v, want 0.8", got)
	}
	tm, bare := r.Medians()
	if tm != 80 || bare != 100 {
		t.Errorf("Medians = %v, %v, want 80, 100", tm, bare)
	}
	// An even count averages the middle two; an unknown CPU time is left out.
	r.Rounds = append(r.Rounds, round{Tmefeed: 100, Bare: 100})
	if got := r.Ratio(); math.Abs(got-0.9) > 1e-9 {
		t.Errorf("Ratio of 4 rounds = %v, want 0.9", got)
	}
	if got := r.CPURatio(); math.Abs(got-0.8) > 1e-9 {
		t.Errorf("CPURatio with an unknown round = %v, want 0.8", got)
	}
	if got := (result{}).Ratio(); got != 0 {
		t.Errorf("Ratio of no rounds = %v", got)
	}
}

const wrkOK = `Running 5s test @ http://127.0.0.1:1234/v1/body/tmefeed_news
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.95ms    2.01ms  38.11ms   80.00%
    Req/Sec    11.20k     1.10k   13.90k    70.00%
  111534 requests in 5.00s, 3.26GB read
Requests/sec:  22306.80
Transfer/sec:    667.01MB
`

func TestParseWrk(t *testing.T) {
	rate, n, err := parseWrk(wrkOK)
	if err != nil || rate != 22306.80 || n != 111534 {
		t.Errorf("got %v, %v, %v", rate, n, err)
	}
	non2xx := strings.Replace(wrkOK, "Requests/sec", "  Non-2xx or 3xx responses: 12\nRequests/sec", 1)
	if _, _, err := parseWrk(non2xx); err == nil {
		t.Error("non-2xx answers not reported")
	}
	sock := strings.Replace(wrkOK, "Requests/sec", "  Socket errors: connect 0, read 3, write 0, timeout 0\nRequests/sec", 1)
	if _, _, err := parseWrk(sock); err == nil {
		t.Error("socket errors not reported")
	}
	clean := strings.Replace(wrkOK, "Requests/sec", "  Socket errors: connect 0, read 0, write 0, timeout 0\nRequests/sec", 1)
	if _, _, err := parseWrk(clean); err != nil {
		t.Errorf("zero socket errors refused: %v", err)
	}
	if _, _, err := parseWrk("unable to connect to 127.0.0.1:1 Connection refused"); err == nil {
		t.Error("output without a rate accepted")
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (a (b) c) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 37 0 0 20 0 5 0 100 0 0"
	got, err := parseStatCPU(stat)
	if err != nil || got != 2870*time.Millisecond {
		t.Errorf("got %v, %v, want 2.87s", got, err)
	}
	if _, err := parseStatCPU("4242 (x) S 1 2"); err == nil {
		t.Error("short stat accepted")
	}
}

// TestRunMeasuresBothServers is the tool end to end, briefly: the built
// tmefeed in demo mode and the bare server, one short round each with the
// built-in client, which checks every answer's status and size.
func TestRunMeasuresBothServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log strings.Builder
	r, err := run(ctx, config{
		Race:      raceEnabled, // reuses the packages `go test -race` compiled
		Path:      "/v1/body/tmefeed_news",
		Rounds:    1,
		Duration:  300 * time.Millisecond,
		Conns:     4,
		Threads:   1,
		Client:    "go",
		LogLevel:  "warn",
		CacheMode: "normal",
		Log:       &log,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Logf("\n%s", r)
	if len(r.Rounds) != 1 || r.Rounds[0].Tmefeed <= 0 || r.Rounds[0].Bare <= 0 || r.Ratio() <= 0 {
		t.Errorf("rounds %+v", r.Rounds)
	}
	if r.Bytes < 1000 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("answer: %d bytes, %q", r.Bytes, r.Header.Get("Content-Type"))
	}
	if !strings.Contains(r.Client, "built-in") {
		t.Errorf("client %q, want the built-in one", r.Client)
	}
}

func TestParseArgsYogaMeasuresTheDashboard(t *testing.T) {
	cfg, err := parseArgs([]string{"-yoga", "-yoga-dir", "/x/yogapeer"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Yoga != "/x/yogapeer" || len(cfg.Targets) != 3 {
		t.Errorf("yoga %q, %d targets", cfg.Yoga, len(cfg.Targets))
	}
	if cfg, _ := parseArgs([]string{"-dashboard"}, io.Discard); cfg.Yoga != "" {
		t.Errorf("-dashboard alone starts the peer in %q", cfg.Yoga)
	}
}

func TestYogaRatiosAreMediansOfRoundRatios(t *testing.T) {
	r := result{YogaBytes: 10, Rounds: []round{
		{Bare: 100, BareCPU: 10e-6, Yoga: 10, YogaCPU: 100e-6}, // 0.1, 0.1
		{Bare: 100, BareCPU: 10e-6, Yoga: 30, YogaCPU: 20e-6},  // 0.3, 0.5
		{Bare: 50, BareCPU: 10e-6, Yoga: 10, YogaCPU: 40e-6},   // 0.2, 0.25
	}}
	rate, cpu := r.YogaRatios()
	if math.Abs(rate-0.2) > 1e-9 || math.Abs(cpu-0.25) > 1e-9 {
		t.Errorf("YogaRatios = %v, %v, want 0.2, 0.25", rate, cpu)
	}
	if !strings.Contains(r.String(), "yoga/s") {
		t.Errorf("the report leaves the peer out:\n%s", r)
	}
	if strings.Contains((result{}).String(), "yoga") {
		t.Error("a run without the peer reports it")
	}
}

// The peer's answer is compared with tmefeed's as JSON values: the same
// numbers written another way are the same, anything else is not.
func TestSameJSON(t *testing.T) {
	if err := sameJSON([]byte(`{"a":[1e-5,2.50,"x"]}`), []byte(`{"a":[0.00001,2.5,"x"]}`)); err != nil {
		t.Error(err)
	}
	for _, b := range []string{`{"a":[0.00001,2.5,"y"]}`, `{"a":[0.00001,2.5]}`, `{"a":[0.00001,2.5,"x"],"b":null}`, `not json`} {
		if sameJSON([]byte(`{"a":[1e-5,2.50,"x"]}`), []byte(b)) == nil {
			t.Errorf("%s taken for the same", b)
		}
	}
}
