package live

import (
	"testing"

	"github.com/tmefeed/tmefeed/pages"
)

// Changed pages wait to be compared with the copies they replace, which
// they hold: the wait is bounded in bytes, not only in count, and what
// does not fit is dropped and counted rather than held.
func TestChangeQueueIsBoundedInBytes(t *testing.T) {
	h := &Hub{diff: make(chan pages.Change, 256)} // nothing compares: the queue only fills
	prev := make([]byte, 1<<20)
	for range 10 {
		h.NewestChanged(pages.Change{Channel: "tmefeed_news", Prev: prev})
	}
	st := h.Stats()
	if len(h.diff) != 4 || st.QueuedBytes != 4<<20 || st.Dropped != 6 {
		t.Fatalf("%d queued (%d bytes), %d dropped; want 4 (4 MiB) and 6", len(h.diff), st.QueuedBytes, st.Dropped)
	}
	<-h.diff // one compared...
	h.queued.Add(-int64(len(prev)))
	h.NewestChanged(pages.Change{Channel: "tmefeed_news", Prev: prev}) // ...makes room for one
	if len(h.diff) != 4 || h.Stats().Dropped != 6 {
		t.Fatalf("after room was made: %d queued, %d dropped", len(h.diff), h.Stats().Dropped)
	}
}
