package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the flush timer's goroutine.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogBufferFlushesSoonAndOnClose(t *testing.T) {
	out := &syncBuffer{}
	l := newLogBuffer(out)
	_, _ = l.Write([]byte("one\n"))
	_, _ = l.Write([]byte("two\n"))
	if got := out.String(); got != "" {
		t.Fatalf("written at once: %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "one\ntwo\n" {
		if time.Now().After(deadline) {
			t.Fatalf("not flushed after %v: %q", logFlushDelay, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, _ = l.Write([]byte("three\n"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "one\ntwo\nthree\n" {
		t.Fatalf("after Close: %q", got)
	}
	_, _ = l.Write([]byte("four\n"))
	if got := out.String(); !strings.HasSuffix(got, "four\n") {
		t.Fatalf("after Close, a line is not written through: %q", got)
	}
}

func TestLogBufferKeepsLinesWhole(t *testing.T) {
	out := &syncBuffer{}
	l := newLogBuffer(out)
	line := strings.Repeat("x", 1000) + "\n"
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				_, _ = l.Write([]byte(fmt.Sprintf("%d %03d %s", g, i, line)))
			}
		}()
	}
	wg.Wait()
	_ = l.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, ln := range lines {
		if len(ln) != 1006 || !strings.HasSuffix(ln, line[:len(line)-1]) {
			t.Fatalf("line broken: %.40q... (%d bytes)", ln, len(ln))
		}
	}
	if out.writes >= 800/2 {
		t.Errorf("%d writes for 800 lines", out.writes)
	}
}
