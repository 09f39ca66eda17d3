package server

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MaxHeaderBytes is http.Server.MaxHeaderBytes for the API: the largest
// legitimate request line and headers, which is a GraphQL GET whose URL
// is at the 64 KiB the router allows (a longer one is answered 414), with
// 16 KiB of headers beside it. net/http's default, 1 MiB, let each
// connection pin a megabyte of header lines until ReadHeaderTimeout.
const MaxHeaderBytes = maxURLBytes + 16<<10

// maxURLBytes is the longest request URL served (the GraphQL transport
// answers a longer GET 414).
const maxURLBytes = 64 << 10

// ConnLimits bounds the connections the API's listener keeps open and the
// bytes of request headers they are reading.
type ConnLimits struct {
	// Max is the most connections open at once (0: no bound);
	// PerClient the most of one client, the peer address (an IPv6 /64 as
	// one), not counting peers in TrustedProxies, behind which many
	// clients share an address (0: no bound). A connection over either is
	// answered 503 or 429 with Retry-After and closed.
	Max, PerClient int
	// HeaderBytes bounds the bytes of request headers read and not yet
	// complete, over every connection (0: no bound): a connection that
	// would go past it is answered 503 and closed. Header lines are held in
	// memory until the header block ends, so without it 1,000 connections
	// sending header lines slowly hold MaxHeaderBytes each.
	HeaderBytes    int64
	TrustedProxies []netip.Prefix
	// LargeHeaderTurns bounds the connections parsing a large header
	// block at once (0: no bound). A request's header block of a few
	// kilobytes arrives in one read and never waits; past
	// largeHeaderBytes, each further chunk is parsed only with a turn, and
	// a connection waiting for one is parked, not runnable. A thousand
	// connections each sending a megabyte of header lines would otherwise
	// all be runnable at once, and every small request's goroutine would
	// queue behind them in the Go scheduler (half a second and more).
	LargeHeaderTurns int
}

// largeHeaderBytes is where a header block starts to need a turn: far
// above what browsers and feed readers send, below a long GraphQL GET.
const largeHeaderBytes = 16 << 10

// ConnStats are a listener's counts, for metrics and tests.
type ConnStats struct {
	Open        int64 // connections open
	HeaderBytes int64 // bytes of unfinished request headers held
	Refused     int64 // connections refused: too many open, or over HeaderBytes
}

// Listener is a net.Listener that enforces ConnLimits. Use its ConnState
// as http.Server.ConnState, so that it knows when a connection starts
// reading a new request's headers.
type Listener struct {
	net.Listener
	lim ConnLimits

	open        atomic.Int64
	headerBytes atomic.Int64
	refused     atomic.Int64

	mu      sync.Mutex
	clients map[netip.Prefix]int // open connections per client with one open

	turns chan struct{} // LargeHeaderTurns; nil: no bound
}

// NewListener wraps ln with the limits.
func NewListener(ln net.Listener, lim ConnLimits) *Listener {
	l := &Listener{Listener: ln, lim: lim, clients: map[netip.Prefix]int{}}
	if lim.LargeHeaderTurns > 0 {
		l.turns = make(chan struct{}, lim.LargeHeaderTurns)
	}
	return l
}

// Stats returns the current counts.
func (l *Listener) Stats() ConnStats {
	return ConnStats{Open: l.open.Load(), HeaderBytes: l.headerBytes.Load(), Refused: l.refused.Load()}
}

// refuseTimeout bounds writing a refusal to a client that does not read.
const refuseTimeout = time.Second

// Accept returns the next connection within the limits; those over them
// are answered (in the background, so a client that does not read cannot
// hold the accept loop) and closed.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, counted := l.clientKey(c)
		if l.lim.Max > 0 && l.open.Load() >= int64(l.lim.Max) {
			l.refuse(c, http.StatusServiceUnavailable, CodeUnavailable, "the server has as many connections open as it serves (MAX_CONNECTIONS); retry in a moment")
			continue
		}
		if counted && !l.addClient(key) {
			l.refuse(c, http.StatusTooManyRequests, CodeRateLimited, "this client has as many connections open as one client may (CONNECTIONS_PER_CLIENT); close some or reuse them")
			continue
		}
		l.open.Add(1)
		cc := &limitedConn{Conn: c, l: l, key: key, counted: counted}
		cc.reading.Store(true) // a new connection starts with a request's headers
		return cc, nil
	}
}

// clientKey is the client a connection counts for, and whether it counts
// at all (a per-client bound, a peer that is not a trusted proxy).
func (l *Listener) clientKey(c net.Conn) (netip.Prefix, bool) {
	if l.lim.PerClient <= 0 {
		return netip.Prefix{}, false
	}
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Prefix{}, false
	}
	a := ap.Addr().Unmap()
	if trustedProxy(l.lim.TrustedProxies, a) {
		return netip.Prefix{}, false
	}
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p, true
}

func (l *Listener) addClient(key netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients[key] >= l.lim.PerClient {
		return false
	}
	l.clients[key]++
	return true
}

func (l *Listener) dropClient(key netip.Prefix) {
	l.mu.Lock()
	if n := l.clients[key] - 1; n > 0 {
		l.clients[key] = n
	} else {
		delete(l.clients, key)
	}
	l.mu.Unlock()
}

// refuse writes an error answer in the API's JSON shape on a connection
// whose request has not been read, then closes it.
func (l *Listener) refuse(c net.Conn, status int, code, msg string) {
	l.refused.Add(1)
	go func() {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refuseTimeout))
		_, _ = c.Write(refusal(status, code, msg))
	}()
}

// refusal is a whole HTTP/1.1 answer that closes the connection.
func refusal(status int, code, msg string) []byte {
	body, _ := json.Marshal(ErrorBody{Error: ErrorInfo{Code: code, Message: msg}})
	b := []byte("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
		"Content-Type: application/json\r\nCache-Control: no-store\r\nRetry-After: 1\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	return append(b, body...)
}

// ConnState is the http.Server.ConnState hook: a connection going idle
// (its answer written) reads the next request's headers from its next
// byte on; a closed or hijacked one gives back what it held.
func (l *Listener) ConnState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch s {
	case http.StateIdle:
		lc.startHeaders()
	case http.StateHijacked:
		// A WebSocket: its headers were read; it stays open, and counted,
		// until it is closed.
		lc.dropHeaders()
	case http.StateClosed:
		lc.dropHeaders()
		lc.release()
	}
}

// limitedConn counts the bytes of the request headers it reads, from the
// first byte of a request to the blank line that ends its header block.
type limitedConn struct {
	net.Conn
	l       *Listener
	key     netip.Prefix
	counted bool

	// reading is set while the connection reads a header block; held is
	// the bytes of it read so far, lines the newlines in a row (a '\r'
	// between them aside) seen at its end. Only the goroutine serving the
	// connection touches lines (it reads requests and changes their state).
	reading  atomic.Bool
	held     atomic.Int64
	lines    int
	released atomic.Bool
	// turn is set while the connection holds a large header turn: from
	// the read that returned its chunk to the next read, which is when
	// net/http has parsed it. Only the serving goroutine takes one; a
	// close from elsewhere gives it back.
	turn atomic.Bool
}

func (c *limitedConn) Read(p []byte) (int, error) {
	c.dropTurn()
	n, err := c.Conn.Read(p)
	if n > 0 && c.reading.Load() {
		if !c.countHeaders(p[:n]) {
			c.l.refused.Add(1)
			_ = c.Conn.SetWriteDeadline(time.Now().Add(refuseTimeout))
			_, _ = c.Conn.Write(refusal(http.StatusServiceUnavailable, CodeUnavailable, "the server is reading as many request headers as its memory allows; retry in a moment"))
			c.dropHeaders()
			_ = c.Close()
			return 0, net.ErrClosed
		}
		if c.reading.Load() && c.held.Load() > largeHeaderBytes && !c.takeTurn() {
			return 0, net.ErrClosed
		}
	}
	return n, err
}

// takeTurn waits for a large header turn, unless the connection closes
// or its header timeout passes first (net/http's deadline does not reach
// a goroutine parked here, so the wait has its own bound).
func (c *limitedConn) takeTurn() bool {
	if c.l.turns == nil {
		return true
	}
	timer := time.NewTimer(largeHeaderWait)
	defer timer.Stop()
	select {
	case c.l.turns <- struct{}{}:
		c.turn.Store(true)
		return true
	case <-timer.C:
		_ = c.Close()
		return false
	}
}

// largeHeaderWait bounds a wait for a large header turn: each turn is
// one chunk's parse, so a long wait means a flood, whose connections may
// as well go.
const largeHeaderWait = 10 * time.Second

// dropTurn gives back the large header turn, if held.
func (c *limitedConn) dropTurn() {
	if c.turn.Swap(false) {
		<-c.l.turns
	}
}

// countHeaders adds the header bytes of b to the count, up to the end of
// the header block if b holds it, and reports whether the total stays
// within HeaderBytes.
func (c *limitedConn) countHeaders(b []byte) bool {
	end := headerEnd(b, &c.lines)
	n := int64(len(b))
	if end >= 0 {
		n = int64(end)
	}
	total := c.l.headerBytes.Add(n)
	c.held.Add(n)
	if end >= 0 {
		c.dropHeaders() // complete: net/http parses it now
		c.lines = 0
		return true
	}
	return c.l.lim.HeaderBytes <= 0 || total <= c.l.lim.HeaderBytes
}

// headerEnd returns the length of b's part up to the end of a header
// block, or -1 when b does not end it. *lines counts the line ends in a
// row ('\r' aside) at the end of what was read before; the second ends the
// block. Between line ends only '\n' matters, so the scan jumps from one
// to the next: a GET's query string is hundreds of bytes.
func headerEnd(b []byte, lines *int) int {
	for i := 0; i < len(b); i++ {
		if *lines == 0 {
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				return -1
			}
			i += j
			*lines = 1
			continue
		}
		switch b[i] {
		case '\n':
			*lines = 2
			return i + 1
		case '\r':
		default:
			*lines = 0
		}
	}
	return -1
}

// startHeaders marks the connection as about to read a request's headers.
func (c *limitedConn) startHeaders() {
	c.lines = 0
	c.reading.Store(true)
}

// dropHeaders gives back the header bytes counted, and the turn.
func (c *limitedConn) dropHeaders() {
	c.dropTurn()
	c.reading.Store(false)
	if n := c.held.Swap(0); n != 0 {
		c.l.headerBytes.Add(-n)
	}
}

// release gives back the connection's place, once.
func (c *limitedConn) release() {
	if c.released.Swap(true) {
		return
	}
	c.l.open.Add(-1)
	if c.counted {
		c.l.dropClient(c.key)
	}
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
