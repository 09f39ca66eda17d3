package defaults

import (
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	for _, tt := range []struct{ in, want time.Duration }{{0, 5}, {-1, 5}, {3, 3}} {
		v := tt.in
		Set(&v, 5)
		if v != tt.want {
			t.Errorf("Set(%d, 5) = %d, want %d", tt.in, v, tt.want)
		}
	}
	n := 0
	Set(&n, 7)
	if n != 7 {
		t.Errorf("Set(int 0, 7) = %d", n)
	}
}
