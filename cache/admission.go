package cache

import (
	"container/list"
	"sync"
)

// trialShare is the part of the embedded tier's bytes that holds entries
// read once (see trial): a quarter, room for the pages of a burst of first
// reads — a cold 100-channel feed is about 2.5 MB of compressed pages and
// answers — while most of the tier keeps the pages read repeatedly.
const trialShare = 4

// trialOverhead is the heap a trial entry costs beyond its encoded bytes
// and its key: the list element, the entry struct and the map slot.
// Measured by TestEntryOverhead (live-heap growth, amd64, Go 1.26):
// 153 B/entry over 20 000 entries.
const trialOverhead = 152

// trial holds the entries of keys read once, oldest first, within a bound
// of bytes. A key's first load is stored here rather than in the main
// store; its second read moves it there (Memory.admit). So a flood of
// pages read once — random names, searches, a history scan — churns only
// this queue and never evicts the pages readers come back to.
//
// Why not leave admission to otter's W-TinyLFU alone: it judges a
// newcomer by the frequency its sketch counted, and a page read for the
// first time has the same count as every one-off page already held, so
// after a flood it is refused in favour of them (ties go to the entry
// held) before it can be read a second time — 100 channels read twice
// cost about 190 fetches. Here newcomers compete only with each other, by
// age, and earn their place in the main store by being read again; the
// main store's W-TinyLFU then ranks pages read repeatedly among
// themselves.
//
// Only the miss path touches it: a hit in the main store never does.
type trial struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	items map[string]*list.Element // of *trialEntry
	order list.List                // oldest at the front
}

type trialEntry struct {
	key string
	b   []byte
}

func newTrial(maxBytes int64) *trial {
	return &trial{max: maxBytes, items: map[string]*list.Element{}}
}

func trialWeight(key string, b []byte) int64 {
	return int64(len(key) + len(b) + trialOverhead)
}

// add stores b for key, replacing an older copy, and drops the oldest
// entries beyond the bound. An entry larger than the bound is not kept.
func (t *trial) add(key string, b []byte) {
	w := trialWeight(key, b)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(key)
	if w > t.max {
		return
	}
	t.items[key] = t.order.PushBack(&trialEntry{key: key, b: b})
	t.bytes += w
	for t.bytes > t.max {
		t.removeLocked(t.order.Front().Value.(*trialEntry).key)
	}
}

// take removes key's entry and returns its bytes.
func (t *trial) take(key string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.items[key]
	if !ok {
		return nil, false
	}
	b := el.Value.(*trialEntry).b
	t.removeLocked(key)
	return b, true
}

// peek returns key's bytes, leaving the entry in place.
func (t *trial) peek(key string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.items[key]; ok {
		return el.Value.(*trialEntry).b, true
	}
	return nil, false
}

func (t *trial) removeLocked(key string) {
	el, ok := t.items[key]
	if !ok {
		return
	}
	e := t.order.Remove(el).(*trialEntry)
	delete(t.items, key)
	t.bytes -= trialWeight(e.key, e.b)
}

// size returns the accounted bytes and the number of entries held.
func (t *trial) size() (int64, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes, len(t.items)
}

func (t *trial) clear() {
	t.mu.Lock()
	clear(t.items)
	t.order.Init()
	t.bytes = 0
	t.mu.Unlock()
}
