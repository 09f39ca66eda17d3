package zstdenc

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/tmefeed/tmefeed/internal/memsize"
)

// answer is JSON of about n bytes, compressible like a feed answer.
func answer(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"channel":"chan%03d","text":"post number %d of a long feed","views":%d},`, i, i%100, i*7, i*13)
	}
	return b.Bytes()
}

// Compressing answers larger than one block on every state at once leaves
// the process holding a couple of MiB per state, not zstd's 16 MiB history
// per state at its default window.
func TestLargeAnswersKeepLittle(t *testing.T) {
	big := answer(4 << 20)
	enc := Shared()
	enc.EncodeAll([]byte("warm"), nil) // the states themselves, made at first use
	before := memsize.LiveHeap()
	var wg sync.WaitGroup
	for range MaxStates {
		wg.Go(func() { enc.EncodeAll(big, nil) })
	}
	wg.Wait()
	grew := int64(memsize.LiveHeap()) - int64(before)
	if limit := int64(MaxStates) * (5 << 19); grew > limit { // 2.5 MiB a state
		t.Errorf("the encoder holds %d MiB more after compressing %d MiB answers; want at most %d MiB", grew>>20, len(big)>>20, limit>>20)
	}
}

// What the shared encoder makes, any zstd decoder reads back.
func TestRoundTrip(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, n := range []int{0, 100, 40 << 10, 3 << 20} {
		in := answer(n)
		out, err := dec.DecodeAll(Shared().EncodeAll(in, nil), nil)
		if err != nil || !bytes.Equal(out, in) {
			t.Errorf("%d bytes: round trip gave %d bytes, %v", len(in), len(out), err)
		}
	}
}
