package cache

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/redistest"
)

// A ValkeyStream records what any instance appends, in order, under ids
// that order it; every instance reads it after any id it holds, waits for
// news, and says which ids it holds.
func TestValkeyStream(t *testing.T) {
	srv := redistest.Start(t)
	slow := func(c *ValkeyConfig) { c.Timeout = slowMachineTimeout }
	a, _ := newTestValkey(t, srv, slow)
	b, _ := newTestValkey(t, srv, slow)
	ctx := testCtx(t)
	sa, sb := a.Stream("test:log", 100, time.Minute), b.Stream("test:log", 100, time.Minute)

	first, last, ok, err := sa.Bounds(ctx)
	if err != nil || ok || first != "" || last != "0-0" {
		t.Fatalf("bounds of no stream: %q %q %v %v", first, last, ok, err)
	}
	ids, err := sa.Append(ctx, [][]byte{[]byte("one"), {0, 1, 2}})
	if err != nil || len(ids) != 2 {
		t.Fatalf("append: %v %v", ids, err)
	}
	more, err := sb.Append(ctx, [][]byte{[]byte("three")})
	if err != nil || len(more) != 1 {
		t.Fatalf("append: %v %v", more, err)
	}
	ids = append(ids, more...)

	got, msgs, err := sb.Range(ctx, "0-0", 10)
	if err != nil || !slices.Equal(got, ids) || string(msgs[0]) != "one" || string(msgs[1]) != "\x00\x01\x02" || string(msgs[2]) != "three" {
		t.Fatalf("range: %v %q %v, want %v", got, msgs, err, ids)
	}
	if got, _, err := sb.Range(ctx, ids[0], 1); err != nil || !slices.Equal(got, ids[1:2]) {
		t.Fatalf("range after %s: %v %v", ids[0], got, err)
	}
	first, last, ok, err = sb.Bounds(ctx)
	if err != nil || !ok || first != ids[0] || last != ids[2] {
		t.Fatalf("bounds: %q %q %v %v, want %s %s", first, last, ok, err, ids[0], ids[2])
	}

	// A read after the last waits for the next append.
	done := make(chan []string, 1)
	go func() {
		got, _, err := sa.Read(ctx, ids[2], 10, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	// (the read may start after the append: it returns the entry either way)
	four, err := sb.Append(ctx, [][]byte{[]byte("four")})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-done; !slices.Equal(got, four) {
		t.Fatalf("read: %v, want %v", got, four)
	}
	if got, _, err := sa.Read(ctx, four[0], 10, 50*time.Millisecond); err != nil || got != nil {
		t.Fatalf("read with nothing new: %v %v", got, err)
	}

	// Bounded by count: the oldest go (whole nodes at a time).
	small := a.Stream("test:small", 1, time.Minute)
	for i := range 300 {
		if _, err := small.Append(ctx, [][]byte{[]byte(strings.Repeat("x", i%7))}); err != nil {
			t.Fatal(err)
		}
	}
	all, _, err := small.Range(ctx, "0-0", 1000)
	if err != nil || len(all) >= 300 || len(all) == 0 {
		t.Fatalf("a stream bounded to 1 entry holds %d of 300 (%v)", len(all), err)
	}
}
