package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The WebSocket subprotocols served: graphql-transport-ws (the graphql-ws
// package, Apollo Client 3.5+, urql) and the older graphql-ws of
// subscriptions-transport-ws.
const (
	protoTransportWS = "graphql-transport-ws"
	protoLegacyWS    = "graphql-ws"
)

// wsTransport serves subscriptions over WebSocket with gqlgen's transport.
// Before upgrading it answers, as GraphQL errors with a code, what the
// upgrade cannot serve: a malformed handshake, no subprotocol it speaks, an
// origin the CORS setting does not allow, too many connections.
type wsTransport struct {
	ws transport.Websocket // keep-alive, read limit
	// initTimeout is how long a connection has to send connection_init
	// (see wsConn.awaitInit); gqlgen's own InitTimeout is left at zero.
	initTimeout time.Duration
	streams     *streams
	gate        *gate
	// origins are the browser origins allowed besides the server's own
	// (CORS_ORIGINS); anyOrigin allows every one.
	origins      []string
	anyOrigin    bool
	writeTimeout time.Duration
	allow        func(*http.Request) (bool, time.Duration) // HandlerConfig.AllowSubscribe
	init         func(*http.Request, map[string]any) error // HandlerConfig.InitWebSocket
	scope        func(*http.Request) func(string) bool     // HandlerConfig.Scope
	client       func(*http.Request) string                // names the connection's client (runner.clientOf)
	work         WorkFunc                                  // HandlerConfig.Work
}

var _ graphql.Transport = wsTransport{}

// closeForbidden is graphql-transport-ws's close code for a connection
// the server refuses at connection_init.
const closeForbidden = 4403

// Supports takes requests that offer an upgrade to WebSocket. Other
// upgrade offers (h2c, which curl --http2 sends with every GET) are
// ignored, as RFC 9110 lets a server do, and the request is served as
// it is.
func (t wsTransport) Supports(r *http.Request) bool {
	return headerHas(r.Header, "Upgrade", "websocket")
}

func (t wsTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	a := &answer{w: w, r: r}
	if msg := badHandshake(r); msg != "" {
		a.refuse(http.StatusBadRequest, CodeBadRequest, msg)
		return
	}
	if !offers(r, protoTransportWS) && !offers(r, protoLegacyWS) {
		a.refuse(http.StatusBadRequest, CodeBadRequest, "the WebSocket upgrade offers no subprotocol served here: offer "+protoTransportWS+" in Sec-WebSocket-Protocol, as the graphql-ws package, Apollo and urql do")
		return
	}
	if !t.anyOrigin && !originAllowed(r, t.origins) {
		a.refuse(http.StatusForbidden, CodeBadRequest, "WebSocket connections from origin "+clip(r.Header.Get("Origin"))+" are not allowed (CORS_ORIGINS)")
		return
	}
	if !t.streams.openConn() {
		w.Header().Set("Retry-After", "1")
		a.refuse(http.StatusServiceUnavailable, CodeRateLimited, "the server has as many WebSocket connections open as it serves; retry in a moment")
		return
	}
	defer t.streams.closeConn()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	acc := &wsAccept{streams: t.streams, writeTimeout: t.writeTimeout, initTimeout: t.initTimeout, anyOrigin: t.anyOrigin, origins: t.origins, allow: t.allow}
	ws := t.ws
	ws.Implementation = acc
	se := &streamExec{GraphExecutor: exec, streams: t.streams, gate: t.gate, conn: new(atomic.Int64), client: t.client(r), work: t.work}
	if t.init != nil || t.scope != nil {
		ws.InitFunc = func(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			if t.init != nil {
				if err := t.init(r, p); err != nil {
					// gqlgen reads the close code and reason from ctx.
					code, reason := closeForbidden, "Forbidden: "
					var cc interface{ CloseCode() int }
					if errors.As(err, &cc) {
						code, reason = cc.CloseCode(), ""
					}
					ctx = transport.WithWebsocketCloseCode(ctx, code)
					return transport.AppendCloseReason(ctx, reason+clip(err.Error())), nil, err
				}
				// The key, when it comes here, settles the client the
				// connection's streams and subscribed channels count by.
				se.client = t.client(r)
			}
			if t.scope != nil {
				// Read before the first subscribe: gqlgen reads those
				// only after this returns.
				se.scope = t.scope(r)
			}
			return ctx, nil, nil
		}
	}
	ws.Do(w, r.WithContext(ctx), se)
	// gqlgen leaves the connection open when its read loop fails.
	acc.close()
}

// badHandshake says what is wrong with a WebSocket opening handshake
// (RFC 6455 4.2.1), or "".
func badHandshake(r *http.Request) string {
	switch {
	case r.Method != http.MethodGet:
		return "a WebSocket upgrade is a GET request"
	case !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket"):
		return "only WebSocket upgrades are served: send Connection: Upgrade and Upgrade: websocket"
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		return "the WebSocket upgrade needs Sec-WebSocket-Version: 13"
	case r.Header.Get("Sec-WebSocket-Key") == "":
		return "the WebSocket upgrade needs a Sec-WebSocket-Key"
	}
	return ""
}

// headerHas reports whether a comma-separated header lists token.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

func offers(r *http.Request, proto string) bool {
	return headerHas(r.Header, "Sec-WebSocket-Protocol", proto)
}

// originAllowed applies the CORS setting to a WebSocket upgrade, which
// browsers send cross-origin without asking: the page's own origin (the
// host it connects to) and clients that send no Origin (not browsers) are
// allowed, other origins when CORS_ORIGINS lists them. It matches as
// github.com/coder/websocket's OriginPatterns do, which check again.
func originAllowed(r *http.Request, origins []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	full := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, o := range origins {
		target := strings.ToLower(u.Host)
		if strings.Contains(o, "://") {
			target = full
		}
		if ok, err := path.Match(strings.ToLower(o), target); err == nil && ok {
			return true
		}
	}
	return false
}

// wsAccept upgrades one connection for gqlgen's transport with
// github.com/coder/websocket, as gqlgen's own adapter does, but with a
// deadline on every write (a client that stops reading cannot hold a
// subscription forever) and the connection known to shutdown.
type wsAccept struct {
	streams      *streams
	writeTimeout time.Duration
	initTimeout  time.Duration
	anyOrigin    bool
	origins      []string
	allow        func(*http.Request) (bool, time.Duration)
	conn         *wsConn
}

func (a *wsAccept) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	for k, vs := range opts.ResponseHeader {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	// The transport-ws protocol first, whichever order the client offers.
	protos := []string{protoTransportWS}
	for _, p := range opts.Subprotocols {
		if !slices.Contains(protos, p) {
			protos = append(protos, p)
		}
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:       protos,
		OriginPatterns:     a.origins,
		InsecureSkipVerify: a.anyOrigin,
	})
	if err != nil {
		return nil, err
	}
	a.conn = &wsConn{conn: c, writeTimeout: a.writeTimeout, streams: a.streams, allow: a.allow, upgrade: r}
	if !a.streams.register(a.conn) {
		_ = a.conn.WriteClose(closeGoingAway, "the server is shutting down")
	}
	a.conn.awaitInit(a.initTimeout)
	return a.conn, nil
}

// close closes the connection if it is still open and forgets it.
func (a *wsAccept) close() {
	if a.conn != nil {
		a.streams.unregister(a.conn)
		_ = a.conn.Close()
	}
}

// wsConn is one upgraded connection, as gqlgen's transport uses it.
type wsConn struct {
	conn         *websocket.Conn
	writeTimeout time.Duration
	streams      *streams
	allow        func(*http.Request) (bool, time.Duration) // nil: subscribes are not counted
	upgrade      *http.Request                             // what allow is asked with

	mu        sync.Mutex
	deadline  *time.Timer
	initWait  *time.Timer   // until connection_init arrives (awaitInit); nil after
	closing   chan struct{} // closed when the close handshake is over; nil before it starts
	closeOnce sync.Once
	ops       map[string]struct{} // graphql-transport-ws operation ids in use (see trackIn)
}

var (
	_ transport.WebsocketConn          = (*wsConn)(nil)
	_ transport.WebsocketReadLimiter   = (*wsConn)(nil)
	_ transport.WebsocketReadDeadliner = (*wsConn)(nil)
)

func (c *wsConn) NextReader() (int, io.Reader, error) {
	for {
		typ, data, err := c.conn.Read(context.Background())
		if err != nil {
			switch websocket.CloseStatus(err) {
			case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd, websocket.StatusGoingAway:
				return 0, nil, transport.ErrWebsocketClosed
			}
			return 0, nil, err
		}
		c.noteInit(data)
		switch c.trackIn(data) {
		case inClose:
			return 0, nil, transport.ErrWebsocketClosed
		case inAnswered:
			continue // gqlgen never sees it
		}
		if c.allow != nil && c.refused(data) {
			continue // answered here; gqlgen never sees it
		}
		return int(typ), bytes.NewReader(data), nil
	}
}

// wsError is the error message of both subprotocols, type last (see
// trackOut).
type wsError struct {
	ID      string        `json:"id"`
	Payload gqlerror.List `json:"payload"`
	Type    string        `json:"type"`
}

// refused asks allow whether a subscribe may be served; one that may not
// is answered with an error message for its id, which forgets the id
// (trackOut), and the connection goes on.
func (c *wsConn) refused(data []byte) bool {
	var m opMessage
	if json.Unmarshal(data, &m) != nil || (m.Type != "subscribe" && m.Type != "start") {
		return false
	}
	ok, wait := c.allow(c.upgrade)
	if ok {
		return false
	}
	secs := retrySeconds(wait)
	err := gqlerror.Errorf("too many requests from this client (each subscribe counts as one); retry in %ds", secs)
	err.Extensions = map[string]any{"code": CodeRateLimited, "retryAfter": secs}
	_ = c.WriteJSON(wsError{ID: m.ID, Payload: gqlerror.List{err}, Type: "error"})
	return true
}

// closeSubscriberExists is graphql-transport-ws's close code for a
// subscribe whose id is in use; closeInitTimeout the one for a connection
// that sent no connection_init in time.
const (
	closeSubscriberExists = 4409
	closeInitTimeout      = 4408
	closeProtocolError    = 1002 // RFC 6455
)

// awaitInit closes the connection unless a connection_init arrives within
// d (0: no limit). graphql-transport-ws closes it with 4408, which its
// clients take as a reason to retry; gqlgen's own InitTimeout would close
// with 1002, which they take as fatal. The older graphql-ws has no code of
// its own for it and keeps 1002.
func (c *wsConn) awaitInit(d time.Duration) {
	if d <= 0 {
		return
	}
	code := closeInitTimeout
	if c.conn.Subprotocol() != protoTransportWS {
		code = closeProtocolError
	}
	c.mu.Lock()
	c.initWait = time.AfterFunc(d, func() {
		c.mu.Lock()
		waiting := c.initWait != nil
		c.initWait = nil
		c.mu.Unlock()
		if waiting {
			_ = c.WriteClose(code, "Connection initialisation timeout")
		}
	})
	c.mu.Unlock()
}

// noteInit stops awaitInit's timer at the first connection_init; the
// message itself is gqlgen's to answer.
func (c *wsConn) noteInit(data []byte) {
	c.mu.Lock()
	waiting := c.initWait != nil
	c.mu.Unlock()
	if !waiting {
		return
	}
	var m opMessage
	if json.Unmarshal(data, &m) != nil || m.Type != "connection_init" {
		return
	}
	c.stopInitWait()
}

func (c *wsConn) stopInitWait() {
	c.mu.Lock()
	if c.initWait != nil {
		c.initWait.Stop()
		c.initWait = nil
	}
	c.mu.Unlock()
}

// opMessage is the part of a graphql-transport-ws message ids are tracked by.
type opMessage struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// What trackIn makes of a message.
const (
	inPass     = iota // gqlgen reads it
	inAnswered        // answered: gqlgen must not see it
	inClose           // the connection is closing
)

// trackIn notes the operation ids a graphql-transport-ws client starts
// and completes. A subscribe with an id still in use closes the connection
// with 4409, as the protocol says: gqlgen would run both, sending the
// events of each under one id, and lose the first one's cancel, so that
// no complete could end it. A subscribe beyond the connection's
// SUBSCRIPTIONS_PER_CONNECTION is answered with an error message for its
// id.
func (c *wsConn) trackIn(data []byte) int {
	if c.conn.Subprotocol() != protoTransportWS {
		return inPass
	}
	var m opMessage
	if json.Unmarshal(data, &m) != nil || m.ID == "" {
		return inPass // gqlgen answers what it cannot read
	}
	used, over := false, false
	c.mu.Lock()
	switch m.Type {
	case "subscribe":
		_, used = c.ops[m.ID]
		// Counted here, in the order the client sent them: gqlgen starts
		// each subscription on a goroutine of its own, so the one its
		// admission found over the limit was any of those sent together.
		over = !used && c.streams != nil && len(c.ops) >= c.streams.perConn
		if !used && !over {
			if c.ops == nil {
				c.ops = map[string]struct{}{}
			}
			c.ops[m.ID] = struct{}{}
		}
	case "complete":
		delete(c.ops, m.ID)
	}
	c.mu.Unlock()
	if used {
		_ = c.WriteClose(closeSubscriberExists, "Subscriber for "+clip(m.ID)+" already exists")
		return inClose
	}
	if over {
		_ = c.WriteJSON(wsError{ID: m.ID, Payload: gqlerror.List{c.streams.perConnError()}, Type: "error"})
		return inAnswered
	}
	return inPass
}

// trackOut forgets an operation the server ended (complete or error), so
// that its id may be used again. gqlgen writes the type last.
func (c *wsConn) trackOut(b []byte) {
	if !bytes.HasSuffix(b, []byte(`"type":"complete"}`)) && !bytes.HasSuffix(b, []byte(`"type":"error"}`)) {
		return
	}
	var m opMessage
	if json.Unmarshal(b, &m) != nil {
		return
	}
	c.mu.Lock()
	delete(c.ops, m.ID)
	c.mu.Unlock()
}

func (c *wsConn) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.mu.Lock()
	closing := c.closing != nil
	c.mu.Unlock()
	if closing {
		// Nothing follows the close frame: in particular no complete
		// for the subscriptions a restart ends.
		return net.ErrClosed
	}
	c.trackOut(b)
	ctx, cancel := context.WithTimeout(context.Background(), c.writeTimeout)
	defer cancel()
	// A write that runs out of time closes the connection.
	return c.conn.Write(ctx, websocket.MessageText, b)
}

// WriteClose starts the close handshake in the background: it waits up to
// 5 s for the client's answer, and the transport must not wait with it.
func (c *wsConn) WriteClose(code int, msg string) error {
	c.stopDeadline()
	c.stopInitWait()
	c.closeOnce.Do(func() {
		done := make(chan struct{})
		c.mu.Lock()
		c.closing = done
		c.mu.Unlock()
		go func() {
			defer close(done)
			_ = c.conn.Close(websocket.StatusCode(code), msg)
		}()
	})
	return nil
}

// Close drops the connection unless a close handshake is under way,
// which closes it when it ends.
func (c *wsConn) Close() error {
	c.stopDeadline()
	c.stopInitWait()
	c.mu.Lock()
	handshake := c.closing != nil
	c.mu.Unlock()
	if handshake {
		return nil
	}
	_ = c.conn.CloseNow() // an error says it was closed already
	return nil
}

func (c *wsConn) Subprotocol() string { return c.conn.Subprotocol() }

func (c *wsConn) SetReadLimit(n int64) { c.conn.SetReadLimit(n) }

// SetReadDeadline closes the connection at t unless called again first
// (gqlgen's transport uses it to drop a client that answers no ping).
func (c *wsConn) SetReadDeadline(t time.Time) error {
	c.stopDeadline()
	if t.IsZero() {
		return nil
	}
	c.mu.Lock()
	c.deadline = time.AfterFunc(time.Until(t), func() { _ = c.conn.CloseNow() })
	c.mu.Unlock()
	return nil
}

func (c *wsConn) stopDeadline() {
	c.mu.Lock()
	if c.deadline != nil {
		c.deadline.Stop()
		c.deadline = nil
	}
	c.mu.Unlock()
}
