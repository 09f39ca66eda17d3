package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"html"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
)

// The README's run command: serve --demo answers /v1/body with real posts,
// then shuts down cleanly when its context ends.
func TestServeDemo(t *testing.T) {
	cfg, err := parseServeConfig([]string{"--demo", "--port", "0", "--log-level", "warn"}, env(map[string]string{"CORS_ORIGINS": "https://app.example"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- serve(ctx, cfg, &logs, func(a string) { addr <- a }) }()

	var base string
	select {
	case a := <-addr:
		base = "http://" + strings.Replace(a, "[::]", "127.0.0.1", 1)
	case err := <-done:
		t.Fatalf("serve ended early: %v", err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(base + "/v1/body/tmefeed_news")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Content struct {
			Posts []struct {
				ID int `json:"id"`
			} `json:"posts"`
		} `json:"content"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, decode %v", resp.StatusCode, err)
	}
	if len(page.Content.Posts) == 0 {
		t.Error("demo page has no posts")
	}

	// The demo serves its pictures itself: the widget's images and a
	// /media redirect lead to pictures on loopback, none to Telegram.
	resp, err = client.Get(base + "/embed/posts?channels=tmefeed_news,kanal_novostei")
	if err != nil {
		t.Fatal(err)
	}
	posts, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srcs := regexp.MustCompile(`<img[^>]* src="([^"]+)"`).FindAllStringSubmatch(string(posts), -1)
	if len(srcs) < 10 {
		t.Fatalf("the demo widget shows %d images", len(srcs))
	}
	noFollow := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(base + "/media/tmefeed_news/33/0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	pics := []string{resp.Header.Get("Location")}
	if resp.StatusCode != http.StatusFound {
		t.Errorf("/media/tmefeed_news/33/0: %d", resp.StatusCode)
	}
	for _, m := range srcs {
		pics = append(pics, html.UnescapeString(m[1]))
	}
	// The snippet page suggests channels the demo has.
	resp, err = client.Get(base + "/embed/new")
	if err != nil {
		t.Fatal(err)
	}
	snippet, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`id="f-channels"[^>]* placeholder="([^"]*)"`).FindSubmatch(snippet)
	if m == nil {
		t.Fatal("the snippet page has no channels placeholder")
	}
	demoChannels := fixtures.NewOrigin(fixtures.OriginOptions{}).Channels()
	for _, ch := range strings.Split(string(m[1]), ", ") {
		if !slices.Contains(demoChannels, ch) {
			t.Errorf("the snippet page suggests %q, which the demo does not have (%v)", ch, demoChannels)
		}
	}
	for _, u := range pics {
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("picture %q is not served on loopback", u)
			continue
		}
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.DecodeConfig(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			t.Errorf("GET %s: %d, %v", u, resp.StatusCode, err)
		}
	}

	// CORS_ORIGINS reaches the REST routes, not only GraphQL.
	pre, _ := http.NewRequest(http.MethodOptions, base+"/v1/feed", nil)
	pre.Header.Set("Origin", "https://app.example")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type")
	if resp, err := client.Do(pre); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != http.StatusNoContent || got != "https://app.example" {
			t.Errorf("preflight: status %d, Allow-Origin %q", resp.StatusCode, got)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
}

func TestParseCommand(t *testing.T) {
	page := filepath.Join("..", "..", "fixtures", "pages", "s", "tmefeed_news.html")
	more := filepath.Join("..", "..", "fixtures", "pages", "more", "tmefeed_news", "before-32.json")
	preview := filepath.Join("..", "..", "fixtures", "pages", "preview", "tmefeed_news.html")
	embed := filepath.Join("..", "..", "fixtures", "pages", "embed", "tmefeed_news", "32.html")

	cases := []struct {
		args []string
		key  string // a top-level key the REST shape has
	}{
		{[]string{page}, "channel"},
		{[]string{"--kind", "body", page}, "content"},
		{[]string{more}, "posts"},
		{[]string{preview}, "channel"},
		{[]string{embed}, "footer"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append([]string{"parse"}, c.args...), nil, &out, &errOut, env(nil)); err != nil {
			t.Errorf("parse %v: %v %s", c.args, err, errOut.String())
			continue
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Errorf("parse %v: output is not JSON: %v", c.args, err)
			continue
		}
		if _, ok := v[c.key]; !ok {
			t.Errorf("parse %v: no %q in %s", c.args, c.key, truncate(out.String()))
		}
		if !bytes.Contains(out.Bytes(), []byte("\n  \"")) {
			t.Errorf("parse %v: output is not indented", c.args)
		}
	}

	// Standard input.
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"parse", "-"}, bytes.NewReader(b), &out, io.Discard, env(nil)); err != nil || !json.Valid(out.Bytes()) {
		t.Errorf("parse -: %v", err)
	}

	// Errors.
	for _, args := range [][]string{
		{"parse", "--kind", "feed", page},
		{"parse", filepath.Join(t.TempDir(), "missing.html")},
		{"parse"},
	} {
		if err := run(context.Background(), args, strings.NewReader(""), io.Discard, io.Discard, env(nil)); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if err := run(context.Background(), []string{"parse", "-"}, strings.NewReader("hello, world"), io.Discard, io.Discard, env(nil)); err == nil || !strings.Contains(err.Error(), "--kind") {
		t.Errorf("undetectable input: err %v, want a hint to pass --kind", err)
	}
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func TestUnknownCommand(t *testing.T) {
	var errOut bytes.Buffer
	if err := run(context.Background(), []string{"frobnicate"}, nil, io.Discard, &errOut, env(nil)); err == nil || !strings.Contains(errOut.String(), "usage") {
		t.Errorf("err %v, stderr %q", err, errOut.String())
	}
}

// runMain runs tmefeed with args and extra environment in a child process
// and returns its exit status and stderr.
func runMain(t *testing.T, args string, env ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"TMEFEED_TEST_RUN_MAIN=1", "TMEFEED_TEST_ARGS=" + args}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatal(err)
	return 0, ""
}

// A bad setting stops serve before it listens: exit status 1 and one line
// per bad value naming where it came from and what is wanted.
func TestServeExitsOnBadSettings(t *testing.T) {
	code, stderr := runMain(t, "serve --port 0 --compression-min-bytes -5",
		"MEMORY_CACHE_MAX_MB=-1", "CACHE_MODE=turbo", "TME_ORIGIN=not a url", "LOG_FORMAT=xml", "STREAMS_PER_CLIENT=-1")
	if code != 1 {
		t.Errorf("exit status %d, want 1; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		`--compression-min-bytes="-5": want a whole number of bytes`,
		`$MEMORY_CACHE_MAX_MB="-1": want a whole number of MiB`,
		`$CACHE_MODE="turbo": want off, normal or aggressive`,
		`$TME_ORIGIN="not a url": want an http(s) URL`,
		`$LOG_FORMAT="xml": want json, text or auto`,
		`$STREAMS_PER_CLIENT="-1": want a whole number of streams, 0 for no bound`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "listening") {
		t.Errorf("serve started despite bad settings:\n%s", stderr)
	}
}

// The image's HEALTHCHECK: exit 0 against a healthy server, non-zero with
// a reason against one that answers otherwise or not at all.
func TestHealthcheck(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	defer ok.Close()
	if code, stderr := runMain(t, "healthcheck --url "+ok.URL+"/healthz"); code != 0 {
		t.Errorf("healthy server: exit %d: %s", code, stderr)
	}
	if code, stderr := runMain(t, "healthcheck --url "+ok.URL+"/elsewhere"); code != 1 || !strings.Contains(stderr, "404") {
		t.Errorf("404: exit %d: %s", code, stderr)
	}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	defer hang.CloseClientConnections()
	if code, stderr := runMain(t, "healthcheck --timeout 200ms --url "+hang.URL+"/healthz"); code != 1 || !strings.Contains(stderr, "deadline") {
		t.Errorf("hanging server: exit %d: %s", code, stderr)
	}
	port := strings.TrimPrefix(ok.URL, "http://127.0.0.1:")
	if code, stderr := runMain(t, "healthcheck", "PORT="+port); code != 0 {
		t.Errorf("PORT=%s: exit %d: %s", port, code, stderr)
	}
}

// Every command answers -h with its usage and exit status 0, as the top
// usage promises.
func TestHelpForEveryCommand(t *testing.T) {
	for _, c := range []string{"serve", "fixtures", "parse", "bench", "healthcheck", "keys"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{c, "-h"}, strings.NewReader(""), &out, &errOut, env(nil))
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s -h: %v (exit status 2 or 1)", c, err)
		}
		if text := out.String() + errOut.String(); !strings.Contains(text, "usage: tmefeed "+c) || strings.Contains(text, "unknown") {
			t.Errorf("%s -h printed:\n%s", c, text)
		}
	}
}

// Durations are logged as they are written in the settings ("15s"), in
// JSON as in text, not as nanoseconds.
func TestLogsWriteDurationsReadably(t *testing.T) {
	for _, asJSON := range []bool{true, false} {
		var b bytes.Buffer
		newLogger(slog.LevelInfo, asJSON, &b).Info("demo", "new_post_every", 15*time.Second, "timeout", 250*time.Millisecond)
		if !strings.Contains(b.String(), "15s") || !strings.Contains(b.String(), "250ms") || strings.Contains(b.String(), "15000000000") {
			t.Errorf("json=%v: %s", asJSON, b.String())
		}
	}
}

// A bad VALKEY_URL is refused with the other settings, once, before the
// demo origin or anything else starts.
func TestServeRefusesBadValkeyURLFirst(t *testing.T) {
	code, stderr := runMain(t, "serve --demo --port 0", "VALKEY_URL=foo://bar")
	if code != 1 {
		t.Errorf("exit status %d, want 1; stderr:\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "VALKEY_URL"); n != 1 || !strings.Contains(stderr, `$VALKEY_URL="foo://bar": `) {
		t.Errorf("VALKEY_URL named %d times, want once as the setting's source:\n%s", n, stderr)
	}
	if strings.Contains(stderr, "demo mode") || strings.Contains(stderr, "listening") {
		t.Errorf("serve started something before refusing its settings:\n%s", stderr)
	}
}
