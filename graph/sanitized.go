package graph

import (
	"runtime"
	"sync"
	"weak"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/parser"
)

// Texts keeps each post text's Text.html, sanitized once, for as long as
// the parse it belongs to lives, for the fast path's writer. A feed
// rebuilt because one of its pages changed reuses the parses of the
// others (pages keeps them by content hash), and sanitizing their texts
// again was most of what writing a rebuilt 2,000-post feed cost. Keys are
// weak: an entry holds no parse alive and goes once its parse is
// collected, so what it keeps is bounded by the parses held: about the
// size of the HTML of the texts that feed answers have shown.
//
// A process needs one, shared by its handlers (HandlerConfig.Texts); the
// zero value is ready to use.
type Texts struct {
	m sync.Map // weak.Pointer[parser.Text] → string
}

// html is t.HTML(), from the kept copy when there is one.
func (s *Texts) html(t *model.Text) string {
	src := t.Parsed()
	k := weak.Make(src)
	if v, ok := s.m.Load(k); ok {
		return v.(string)
	}
	h := t.HTML()
	if _, loaded := s.m.LoadOrStore(k, h); !loaded {
		runtime.AddCleanup(src, s.forget, k)
	}
	return h
}

func (s *Texts) forget(k weak.Pointer[parser.Text]) { s.m.Delete(k) }

// len is the number of texts kept (tests).
func (s *Texts) len() int {
	n := 0
	s.m.Range(func(any, any) bool { n++; return true })
	return n
}
