package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
)

// A flood of pages read once — 7,000 pages around posts of 100 channels,
// at the default MEMORY_CACHE_MAX_MB, over twice what the tier holds — does
// not keep pages read repeatedly from being held: 100 other channels read
// twice right after cost Telegram 100 fetches, the second reads are all
// answered from cache. Without admission by the second read they cost
// 200. It runs with the memory suites, without the race detector (make
// test); TestOneOffsDoNotEvictRepeatedReads in package cache checks the
// tier itself under it too.
func TestMemoryOneOffPagesDoNotEvictRepeatedReads(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes the flood's 7,000 requests take many minutes; the figures are for the real build")
	}
	const flood, channels = 7000, 100
	o := fixtures.NewOrigin(fixtures.OriginOptions{Synthetic: 2 * channels})
	ts := httptest.NewServer(o)
	t.Cleanup(ts.Close)
	cfg, err := parseServeConfig([]string{"--port", "0", "--origin", ts.URL}, env(map[string]string{
		"UPDATER": "off", "LOG_LEVEL": "error",
		// One client floods on purpose: admission is measured here, not
		// the origin budget.
		"ORIGIN_RPM": "600000", "CLIENT_ORIGIN_RPM": "0",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, io.Discard, func(a string) { addr <- a }) }()
	t.Cleanup(func() { cancel(); <-done })
	var base string
	select {
	case a := <-addr:
		base = "http://" + strings.Replace(a, "[::]", "127.0.0.1", 1)
	case err := <-done:
		t.Fatalf("serve ended early: %v", err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) error {
		resp, err := client.Get(base + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
		}
		return nil
	}

	// The flood: each page around a post of another channel, read once.
	paths := make(chan string)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p := range paths {
				if err := get(p); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	start := time.Now()
	for i := range flood {
		select {
		case paths <- fmt.Sprintf("/v1/body/loadchan%03d?position=%d", channels+1+i%channels, 1+i):
		case err := <-errs:
			t.Fatal(err)
		}
	}
	close(paths)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d one-off pages in %v, %d origin requests", flood, time.Since(start).Round(time.Millisecond), o.Total())

	o.Reset()
	for round := 1; round <= 2; round++ {
		for i := 1; i <= channels; i++ {
			if err := get(fmt.Sprintf("/v1/body/loadchan%03d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := o.Total(), int64(channels); got != want {
			t.Errorf("after reading %d channels %d times: %d origin requests, want %d", channels, round, got, want)
		}
	}
}
