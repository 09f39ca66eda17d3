package cache

import (
	"fmt"
	"testing"
)

// The trial queue keeps the newest entries within its bound, drops the
// oldest first, replaces a key's older copy and keeps no entry larger than
// the bound.
func TestTrialQueue(t *testing.T) {
	val := make([]byte, 1000)
	w := trialWeight("k0", val)
	q := newTrial(3 * w)
	for i := range 5 {
		q.add(fmt.Sprintf("k%d", i), val)
	}
	if b, n := q.size(); n != 3 || b != 3*w {
		t.Fatalf("size %d B, %d entries; want %d B, 3", b, n, 3*w)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := q.peek(fmt.Sprintf("k%d", i)); ok != want {
			t.Errorf("k%d held: %v, want %v (the oldest go first)", i, ok, want)
		}
	}
	q.add("k2", val[:10]) // a newer, smaller copy of k2
	if b, n := q.size(); n != 3 || b != 2*w+trialWeight("k2", val[:10]) {
		t.Errorf("after replacing k2: %d B, %d entries", b, n)
	}
	if b, ok := q.take("k3"); !ok || len(b) != 1000 {
		t.Fatalf("take k3: %d bytes, %v", len(b), ok)
	}
	if _, ok := q.take("k3"); ok {
		t.Error("k3 taken twice")
	}
	q.add("huge", make([]byte, 4*w))
	if _, ok := q.peek("huge"); ok {
		t.Error("an entry larger than the bound was kept")
	}
	if _, n := q.size(); n != 2 {
		t.Errorf("%d entries after an oversized add, want the 2 held before", n)
	}
	q.clear()
	if b, n := q.size(); b != 0 || n != 0 {
		t.Errorf("after clear: %d B, %d entries", b, n)
	}
}
