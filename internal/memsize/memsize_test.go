package memsize

import (
	"runtime"
	"strings"
	"testing"
)

func TestAlloc(t *testing.T) {
	for _, c := range []struct {
		n    int
		want int64
	}{{0, 0}, {1, 8}, {8, 8}, {9, 16}, {33, 48}, {1025, 1152}, {32768, 32768}, {32769, 40960}} {
		if got := Alloc(c.n); got != c.want {
			t.Errorf("Alloc(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

type node struct {
	Name  string
	Tags  []string
	Child *node
	Nums  []int
	N     int
}

func TestDeep(t *testing.T) {
	n := &node{Name: strings.Repeat("x", 20), Tags: []string{"ab", strings.Repeat("y", 100)}, Child: &node{N: 1}, Nums: make([]int, 3, 5)}
	// node: 16+24+8+24+8 = 80, twice; name 20 → 24; tags header 2×16 → 32;
	// "ab" 2 (tiny); 100 → 112; nums 5×8 → 48.
	want := int64(80 + 24 + 32 + 2 + 112 + 80 + 48)
	if got := Deep(n); got != want {
		t.Errorf("Deep = %d, want %d", got, want)
	}
	if Deep(nil) != 0 || Deep((*node)(nil)) != 0 {
		t.Error("nil is not empty")
	}
}

// TestDeepMatchesHeap: the estimate of many small trees against the heap
// they take.
func TestDeepMatchesHeap(t *testing.T) {
	const n = 20_000
	make1 := func(i int) *node {
		return &node{Name: strings.Repeat("n", 10+i%50), Tags: []string{strings.Repeat("t", i%70)}, Child: &node{Nums: make([]int, i%9)}}
	}
	var est int64
	for i := range n {
		est += Deep(make1(i))
	}
	keep := make([]*node, n)
	before := LiveHeap()
	for i := range keep {
		keep[i] = make1(i)
	}
	after := LiveHeap()
	runtime.KeepAlive(keep)
	growth := float64(after) - float64(before) - float64(Alloc(n*8)) // minus keep itself
	t.Logf("estimate %d B, heap %.0f B (%+.1f%%)", est, growth, 100*(float64(est)-growth)/growth)
	if d := float64(est) - growth; d > 0.05*growth || d < -0.05*growth {
		t.Errorf("estimate %d B, heap grew %.0f B: more than 5%% apart", est, growth)
	}
}
