package graph

import (
	"sync"
	"sync/atomic"
	"weak"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/parser"
)

// Texts keeps each post text's Text.html, sanitized once, for as long as
// the parse it belongs to lives, for the fast path's writer. A feed
// rebuilt because one of its pages changed reuses the parses of the
// others (pages keeps them by content hash), and sanitizing their texts
// again was most of what writing a rebuilt 2,000-post feed cost. Keys are
// weak: an entry holds no parse alive, and entries whose parse was
// collected are dropped as new ones come (a sweep once the entries added
// since the last one outnumber those it left), so what it keeps is
// bounded by the parses held: about the size of the HTML of the texts
// that feed answers have shown, twice at most.
//
// A process needs one, shared by its handlers (HandlerConfig.Texts); the
// zero value is ready to use.
type Texts struct {
	m        sync.Map // weak.Pointer[parser.Text] → string
	added    atomic.Int64
	left     atomic.Int64 // entries the last sweep left
	sweeping sync.Mutex
}

// minSweep is the fewest entries added between two sweeps.
const minSweep = 4096

// html is t.HTML(), from the kept copy when there is one.
func (s *Texts) html(t *model.Text) string {
	k := weak.Make(t.Parsed())
	if v, ok := s.m.Load(k); ok {
		return v.(string)
	}
	h := t.HTML()
	if _, loaded := s.m.LoadOrStore(k, h); !loaded {
		if n := s.added.Add(1); n >= max(minSweep, s.left.Load()) {
			s.sweep()
		}
	}
	return h
}

// sweep drops the entries whose parse is gone; one sweep at a time, and
// none while one runs.
func (s *Texts) sweep() {
	if !s.sweeping.TryLock() {
		return
	}
	defer s.sweeping.Unlock()
	s.added.Store(0)
	var left int64
	s.m.Range(func(k, _ any) bool {
		if k.(weak.Pointer[parser.Text]).Value() == nil {
			s.m.Delete(k)
		} else {
			left++
		}
		return true
	})
	s.left.Store(left)
}

// len is the number of texts kept (tests).
func (s *Texts) len() int {
	n := 0
	s.m.Range(func(any, any) bool { n++; return true })
	return n
}
