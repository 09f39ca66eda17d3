package cache

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/valkey-io/valkey-go"
)

// l1Overhead is the heap one client-side cache entry costs beyond its key,
// command and reply bytes: the l1Entry, its list element, two map slots, the
// inner map of its key, the done channel, and size-class rounding.
// TestValkeyLocalMemoryBounded measures heap growth against the accounted
// total; re-measure there when changing l1Entry.
const l1Overhead = int64(unsafe.Sizeof(l1Entry{})) + int64(unsafe.Sizeof(list.Element{})) +
	int64(unsafe.Sizeof(valkey.ValkeyMessage{})) + 96 /* chan */ + 2*64 /* map slots */ + 208 /* inner map */

// l1Budget bounds valkey-go's client-side cache across all connections.
// valkey-go keeps one store per connection (invalidations arrive per
// connection); its default store is bounded per connection only, 128 MiB
// each, so the total would grow with the connection count. Each store here
// holds at most max / (live stores), counted in real bytes, which keeps the
// sum within max and gives an exact figure for the bytes-held metric.
type l1Budget struct {
	max      int64
	expected int64 // connections per node the client is configured for
	bytes    atomic.Int64
	stores   atomic.Int64
	open     sync.Map // *l1Store → struct{}: the stores of live connections, for forget
}

func newL1Budget(maxBytes int64, conns int) *l1Budget {
	return &l1Budget{max: maxBytes, expected: int64(conns)}
}

// perStore is the share of one connection's store.
func (b *l1Budget) perStore() int64 {
	return b.max / max(b.stores.Load(), b.expected, 1)
}

// newStore is a valkey.NewCacheStoreFn.
func (b *l1Budget) newStore(valkey.CacheStoreOption) valkey.CacheStore {
	b.stores.Add(1)
	s := &l1Store{budget: b, keys: make(map[string]map[string]*l1Entry)}
	b.open.Store(s, struct{}{})
	return s
}

// forget drops key's ready replies from every connection's store: this
// process wrote the key, and the server's invalidation of the copies it
// read before may arrive after the write's reply, on another connection.
// A read still in flight keeps its place; the server invalidates what it
// returns if it was read before the write.
func (b *l1Budget) forget(key string) {
	b.open.Range(func(s, _ any) bool {
		s.(*l1Store).drop(key)
		return true
	})
}

// l1Entry is one cached reply, or a reply in flight (pending) that
// concurrent callers wait for.
type l1Entry struct {
	key, cmd string
	val      valkey.ValkeyMessage
	err      error
	expireAt int64 // Unix ms: the smaller of the caller's TTL and the server's
	size     int64
	pending  bool
	done     chan struct{}
	elem     *list.Element // position in the LRU list once not pending
}

// Wait implements valkey.CacheEntry.
func (e *l1Entry) Wait(ctx context.Context) (valkey.ValkeyMessage, error) {
	select {
	case <-ctx.Done():
		return valkey.ValkeyMessage{}, ctx.Err()
	case <-e.done:
		return e.val, e.err
	}
}

// l1Store is one connection's client-side cache: an LRU list of replies
// bounded in bytes, following the valkey.CacheStore contract.
type l1Store struct {
	budget *l1Budget

	mu     sync.Mutex
	keys   map[string]map[string]*l1Entry
	lru    list.List // ready entries, least recently used first
	size   int64
	closed bool
}

var _ valkey.CacheStore = (*l1Store)(nil)

// Flight implements valkey.CacheStore.
func (s *l1Store) Flight(key, cmd string, ttl time.Duration, now time.Time) (valkey.ValkeyMessage, valkey.CacheEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return valkey.ValkeyMessage{}, nil
	}
	cmds := s.keys[key]
	if e := cmds[cmd]; e != nil {
		if e.pending {
			return valkey.ValkeyMessage{}, e
		}
		if now.UnixMilli() < e.expireAt {
			s.lru.MoveToBack(e.elem)
			return e.val, nil
		}
		s.removeLocked(e)
		cmds = s.keys[key]
	}
	if cmds == nil {
		cmds = make(map[string]*l1Entry, 1)
		s.keys[key] = cmds
	}
	cmds[cmd] = &l1Entry{key: key, cmd: cmd, pending: true, done: make(chan struct{}), expireAt: now.Add(ttl).UnixMilli()}
	return valkey.ValkeyMessage{}, nil
}

// Update implements valkey.CacheStore.
func (s *l1Store) Update(key, cmd string, val valkey.ValkeyMessage) (pxat int64) {
	s.mu.Lock()
	e := s.keys[key][cmd]
	if e == nil || !e.pending {
		s.mu.Unlock()
		return 0
	}
	// The server's expiry only ever shortens the caller's TTL.
	pxat = val.CachePXAT()
	if pxat <= 0 || e.expireAt < pxat {
		pxat = e.expireAt
	}
	e.val, e.expireAt, e.pending = val, pxat, false
	e.size = l1Overhead + int64(len(key)+len(cmd)+val.CacheSize())
	e.elem = s.lru.PushBack(e)
	s.size += e.size
	s.budget.bytes.Add(e.size)
	limit := s.budget.perStore()
	for s.size > limit {
		front := s.lru.Front()
		if front == nil {
			break
		}
		s.removeLocked(front.Value.(*l1Entry))
	}
	s.mu.Unlock()
	close(e.done)
	return pxat
}

// Cancel implements valkey.CacheStore.
func (s *l1Store) Cancel(key, cmd string, err error) {
	s.mu.Lock()
	e := s.keys[key][cmd]
	if e == nil || !e.pending {
		s.mu.Unlock()
		return
	}
	e.err = err
	s.unlinkLocked(e)
	s.mu.Unlock()
	close(e.done)
}

// Delete implements valkey.CacheStore: invalidation from the server. Pending
// entries stay; their reply, read after the invalidation on the same
// connection, is already current.
func (s *l1Store) Delete(keys []valkey.ValkeyMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if keys == nil {
		for e := s.lru.Front(); e != nil; {
			next := e.Next()
			s.removeLocked(e.Value.(*l1Entry))
			e = next
		}
		return
	}
	for _, k := range keys {
		key, err := k.ToString()
		if err != nil {
			continue
		}
		for _, e := range s.keys[key] {
			if !e.pending {
				s.removeLocked(e)
			}
		}
	}
}

// drop removes key's ready replies.
func (s *l1Store) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.keys[key] {
		if !e.pending {
			s.removeLocked(e)
		}
	}
}

// Close implements valkey.CacheStore: the connection is gone, and with it
// the server's promise to invalidate.
func (s *l1Store) Close(err error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	var pending []*l1Entry
	for _, cmds := range s.keys {
		for _, e := range cmds {
			if e.pending {
				e.err = err
				pending = append(pending, e)
			}
		}
	}
	s.budget.bytes.Add(-s.size)
	s.budget.stores.Add(-1)
	s.budget.open.Delete(s)
	s.keys, s.size = nil, 0
	s.lru.Init()
	s.mu.Unlock()
	for _, e := range pending {
		close(e.done)
	}
}

// removeLocked drops a ready entry and its bytes.
func (s *l1Store) removeLocked(e *l1Entry) {
	s.lru.Remove(e.elem)
	s.size -= e.size
	s.budget.bytes.Add(-e.size)
	s.unlinkLocked(e)
}

func (s *l1Store) unlinkLocked(e *l1Entry) {
	cmds := s.keys[e.key]
	if cmds[e.cmd] == e {
		delete(cmds, e.cmd)
		if len(cmds) == 0 {
			delete(s.keys, e.key)
		}
	}
}
