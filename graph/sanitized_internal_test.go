package graph

import (
	"runtime"
	"testing"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/parser"
)

func textOf(html string) *model.Text {
	return model.PostOf(&parser.Post{ID: 1, Channel: "tmefeed_news", Content: parser.PostContent{Text: &parser.Text{HTML: html}}}).Text()
}

// A text is sanitized once per parse: the same parser.Text gives the kept
// copy (even were its HTML to change, which a parse's never does), another
// parse of the same markup is sanitized for itself.
func TestTextsKeptPerParse(t *testing.T) {
	var s Texts
	tx := textOf(`<b>bold</b><script>alert(1)</script> <a href="?q=%23tag">#tag</a>`)
	want := tx.HTML()
	if got := s.html(tx); got != want {
		t.Fatalf("html = %q, want %q", got, want)
	}
	tx.Parsed().HTML = "<i>changed</i>"
	if got := s.html(tx); got != want {
		t.Errorf("the second read sanitized again: %q", got)
	}
	other := textOf("<i>changed</i>")
	if got := s.html(other); got != other.HTML() {
		t.Errorf("another parse got %q", got)
	}
	if s.len() != 2 {
		t.Errorf("%d texts kept, want 2", s.len())
	}
	runtime.KeepAlive(tx)
	runtime.KeepAlive(other)
}

// An entry goes once its parse is collected: the cache holds no parse
// alive, and a sweep, which enough new entries bring, drops what it kept
// for parses that are gone.
func TestTextsForgetsCollectedParses(t *testing.T) {
	var s Texts
	for range 100 {
		s.html(textOf("<b>x</b>"))
	}
	live := make([]*model.Text, minSweep)
	for i := range live {
		live[i] = textOf("<i>y</i>")
	}
	if s.len() != 100 {
		t.Fatalf("%d kept, want 100", s.len())
	}
	runtime.GC()
	runtime.GC()
	for _, tx := range live { // the last one brings a sweep
		s.html(tx)
	}
	if n := s.len(); n != len(live) {
		t.Errorf("%d texts kept, want the %d whose parses live", n, len(live))
	}
	runtime.KeepAlive(live)
}

// A Texts no longer used is collected with what it holds, though the
// parses it kept texts for live on.
func TestTextsCollectedBeforeTheirParses(t *testing.T) {
	tx := textOf("<b>x</b>")
	gone := make(chan struct{})
	func() {
		s := &Texts{}
		s.html(tx)
		runtime.AddCleanup(s, func(ch chan struct{}) { close(ch) }, gone)
	}()
	for i := 0; i < 1000; i++ {
		runtime.GC()
		select {
		case <-gone:
			runtime.KeepAlive(tx)
			return
		default:
			runtime.Gosched()
		}
	}
	t.Error("a Texts no longer used is kept alive by a parse it kept a text for")
}
