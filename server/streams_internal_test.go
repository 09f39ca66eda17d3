package server

import (
	"strconv"
	"testing"
)

// The bookkeeping holds only clients with a stream open: however many
// clients came and went, nothing of them is kept once their streams end.
func TestStreamLimitForgetsClientsAtZero(t *testing.T) {
	l := newStreamLimit(2)
	for i := range 1000 {
		key := "198.51." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
		first := l.acquire(key, l.max)
		second := l.acquire(key, l.max)
		if !first || !second {
			t.Fatalf("%s: refused within its bound", key)
		}
		if l.acquire(key, l.max) {
			t.Fatalf("%s: a third stream admitted", key)
		}
	}
	if len(l.open) != 1000 {
		t.Fatalf("%d clients counted, want 1000", len(l.open))
	}
	for i := range 1000 {
		key := "198.51." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
		l.release(key)
		if i%2 == 0 {
			l.release(key)
		}
	}
	if len(l.open) != 500 {
		t.Errorf("%d clients kept, want the 500 with a stream still open", len(l.open))
	}
	for i := 1; i < 1000; i += 2 {
		l.release("198.51." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256))
	}
	if len(l.open) != 0 {
		t.Errorf("%d clients kept after every stream ended", len(l.open))
	}
}
