package server

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// turnServer is a bare handler over a Listener with one large header turn.
func turnServer(t *testing.T) (*httptest.Server, *Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(ln, ConnLimits{LargeHeaderTurns: 1})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Listener = l
	srv.Config.MaxHeaderBytes = MaxHeaderBytes
	srv.Config.ConnState = l.ConnState
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, l
}

// send writes a GET with headerBytes of header lines and returns a channel
// that receives its status (0 on error).
func send(t *testing.T, addr string, headerBytes int) <-chan int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for b.Len() < headerBytes {
		b.WriteString("X-Pad: " + strings.Repeat("a", 1000) + "\r\n")
	}
	b.WriteString("\r\n")
	status := make(chan int, 1)
	go func() {
		if _, err := c.Write([]byte(b.String())); err != nil {
			status <- 0
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	return status
}

// TestLargeHeadersWaitForATurn: a request whose header block runs past
// largeHeaderBytes is parsed only with a large header turn, while a
// request of ordinary headers never waits for one — so a flood of
// megabyte header blocks queues parked behind the turns, not ahead of
// every small request in the scheduler.
func TestLargeHeadersWaitForATurn(t *testing.T) {
	srv, l := turnServer(t)
	addr := srv.Listener.Addr().String()

	l.turns <- struct{}{} // every turn taken
	large := send(t, addr, 40<<10)
	small := send(t, addr, 2<<10)
	select {
	case st := <-small:
		if st != http.StatusOK {
			t.Fatalf("small request: status %d", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a small request waited for a large header turn")
	}
	select {
	case st := <-large:
		t.Fatalf("a large header block was parsed with no turn free (status %d)", st)
	case <-time.After(200 * time.Millisecond):
	}
	<-l.turns // a turn comes free
	select {
	case st := <-large:
		if st != http.StatusOK {
			t.Fatalf("large request: status %d", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a large header block was not parsed once a turn came free")
	}
	if n := len(l.turns); n != 0 {
		t.Errorf("%d turns held after every request was answered", n)
	}
}

// countHeaders finds a header block's end wherever the reads split it:
// it counts exactly the bytes up to the blank line, "\r\n\r\n" or "\n\n"
// alike, as a byte-by-byte reading of the rule would.
func TestCountHeadersFindsTheBlocksEnd(t *testing.T) {
	// endOf is the rule read byte by byte: two line ends in a row, '\r'
	// between them aside, end the block.
	endOf := func(b string) int {
		lines := 0
		for i := range len(b) {
			switch b[i] {
			case '\n':
				if lines++; lines == 2 {
					return i + 1
				}
			case '\r':
			default:
				lines = 0
			}
		}
		return -1
	}
	blocks := []string{
		"GET /graphql?query=" + strings.Repeat("%7B+feed", 80) + " HTTP/1.1\r\nHost: a\r\nUser-Agent: b\r\n\r\nBODY\r\n\r\n",
		"POST /v1/feed HTTP/1.1\nHost: a\n\n{\"channels\":[]}\n\n",
		"GET / HTTP/1.1\r\nX: \r\r\n\r\r\n",
		"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\n\rX: 1\r\n\r\n",
	}
	for _, block := range blocks {
		want := endOf(block)
		for split := 1; split < len(block); split++ {
			lines, got := 0, -1
			if end := headerEnd([]byte(block[:split]), &lines); end >= 0 {
				got = end
			} else if end := headerEnd([]byte(block[split:]), &lines); end >= 0 {
				got = split + end
			}
			if got != want {
				t.Fatalf("%q split at %d: block ends at %d, want %d", block, split, got, want)
			}
		}
	}
}
