package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tmefeed/tmefeed/access"
	"github.com/tmefeed/tmefeed/metrics"
	"github.com/tmefeed/tmefeed/pages"
)

// reqInfoKey keys the per-request record the handlers add to.
type reqInfoKey struct{}

// reqInfo is what a handler tells the access log and the metrics beyond
// status and size.
type reqInfo struct {
	err       error
	operation string // the GraphQL operation's name, set by NoteOperation
	hasOp     bool   // a GraphQL operation passed the limits
	cache     metrics.CacheOutcome
	rendered  atomic.Bool // the answer was rendered for this request; set by a load that may outlive it
	refused   atomic.Bool // the answer is, or carries, a refusal for budget reasons (see refusedForBudget); set by resolvers running at once
	mistaken  atomic.Bool // the answer is the client's own mistake although its status is 200 (see mistaken)
	// The backing arrays of header values set on every answer (the
	// request id; a cached answer's fields), part of the record so that
	// setting them allocates nothing.
	idValue   [1]string
	hitValues [6]string
	idBuf     [32]byte  // the bytes of a request id made here
	start     time.Time // when logRequests began the request
	recorder  recorder  // the writer logRequests hands on

	// Set by authenticate, with API keys on (Config.Access).
	client     string       // the key every per-client limit counts by: a consumer's, or an anonymous request's address
	grant      access.Grant // the key's; Consumer nil for an anonymous request
	cacheOnly  bool         // anonymous under ANONYMOUS=cached: answers from the cache only
	pendingKey bool         // a WebSocket upgrade whose key comes in connection_init
	// holdStream counts a pendingKey upgrade in its client's streams once
	// connection_init has settled the client (set by limitStreams, called
	// by InitWebSocket).
	holdStream func() error
	// The request and handler that name its client for the origin budget,
	// set by serve and asked only on a miss (see ClientName).
	clientOf struct {
		h *handler
		r *http.Request
	}
}

// ClientName implements pages.ClientNamer: the client of the request
// serve set, named as every per-client limit names it.
func (i *reqInfo) ClientName() string {
	if i.clientOf.h == nil {
		return ""
	}
	return i.clientOf.h.clientName(i.clientOf.r)
}

// ClientID implements pages.ClientNamer: pages.ClientID of ClientName,
// hashed from the address's bytes without making the name, so that a
// hit tells the updater its reader for nothing.
func (i *reqInfo) ClientID() uint64 {
	if i.clientOf.h == nil {
		return 0
	}
	if i.client != "" {
		return pages.ClientID(i.client)
	}
	return rateKeyID(clientAddr(i.clientOf.r, i.clientOf.h.trusted))
}

// requestContext is the one context New's handler adds to a request: it
// carries both chi's routing context and the access log's record, so that
// neither chi nor logRequests copies the request to add its own.
type requestContext struct {
	context.Context
	route *chi.Context
	info  reqInfo
}

func (c *requestContext) Value(key any) any {
	switch key {
	case chi.RouteCtxKey:
		return c.route
	case reqInfoKey{}:
		return &c.info
	}
	return c.Context.Value(key)
}

// routeContexts recycles chi's routing contexts, as chi itself does.
var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// withRequestContext serves mux with a requestContext: chi finds its routing
// context there and uses it rather than adding one.
func withRequestContext(mux *chi.Mux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rctx := routeContexts.Get().(*chi.Context)
		rctx.Reset()
		rctx.Routes = mux
		mux.ServeHTTP(w, r.WithContext(&requestContext{Context: r.Context(), route: rctx}))
		routeContexts.Put(rctx)
	})
}

// noteError records the cause of an error answer for the access log.
func noteError(ctx context.Context, err error) {
	if info, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		info.err = err
	}
}

// recoverPanics turns a panic into a 500 JSON answer as a last resort, so
// one bad request cannot take the process down.
func (h *handler) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler { // the server's own way to abort a response
				panic(rec)
			}
			h.log.Error("panic", "path", r.URL.Path, "panic", rec, "stack", string(debug.Stack()))
			if ww, ok := w.(*recorder); ok && ww.status != 0 {
				return // the answer has begun; nothing sane can be added
			}
			writeError(w, classify(fmt.Errorf("panic: %v", rec), h.now()))
		}()
		next.ServeHTTP(w, r)
	})
}

// limitBody caps request bodies at maxBody bytes: a declared larger body
// gets 413 at once, an undeclared one fails when read past the cap.
func (h *handler) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > h.maxBody {
			if h.isGraphQL(r) {
				h.failGraphQL(w, r, http.StatusRequestEntityTooLarge, gqlCodeRequestTooLarge, tooLargeError(h.maxBody).Message)
				return
			}
			h.fail(w, r, tooLargeError(h.maxBody))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &trackedBody{ReadCloser: http.MaxBytesReader(w, r.Body, h.maxBody)}
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				// No GET route reads a body: without this, net/http would
				// wait for one declared and never sent before answering.
				closeIfBodyUnread(w, r)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// trackedBody notes whether a request body was read to its end.
type trackedBody struct {
	io.ReadCloser
	eof bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// unreadBodyGrace is how long a connection answered before its body was
// read goes on taking that body in: long enough for a client still sending
// a refused body (up to net/http's 256 KiB) to finish and read the answer
// instead of meeting a reset, short enough that a client which declares a
// body and never sends it holds the connection for at most this long.
const unreadBodyGrace = time.Second

// closeIfBodyUnread ends the connection after an error answer when the
// request's body was not read to its end. Otherwise net/http reads up to
// 256 KiB of the body before sending the answer, to reuse the connection:
// a client that declares a body and never sends it would hold the answer
// until the read timeout. Connection: close skips that read, so the answer
// goes out at once; net/http still takes in what follows when the request
// ends (closing the socket on unread bytes would reset the connection, and
// the client, still writing, would see the reset and not the answer), and
// the read deadline bounds that. (MaxBytesReader would ask for the close
// itself, but cannot through the logging middleware's wrapped
// ResponseWriter.)
func closeIfBodyUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	if b, ok := r.Body.(*trackedBody); ok && b.eof {
		return
	}
	w.Header().Set("Connection", "close")
	// Fails only on writers that cannot set deadlines, such as test recorders.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyGrace))
}

// maxURIBytes bounds REST request targets: the longest valid one is under
// 100 bytes, and a huge query string would otherwise be parsed in full.
const maxURIBytes = 8 << 10

// limitV1URI answers 414 for request targets under /v1 longer than
// maxURIBytes: those chi would route to a sub-router mounted at /v1.
func (h *handler) limitV1URI(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !underV1(r) {
			next.ServeHTTP(w, r)
			return
		}
		if len(r.RequestURI) > maxURIBytes || len(r.URL.Path)+len(r.URL.RawQuery) > maxURIBytes {
			h.fail(w, r, apiError{Status: http.StatusRequestURITooLong, Code: CodeURITooLong, Message: "request target longer than " + strconv.Itoa(maxURIBytes) + " bytes"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// underV1 reports whether chi would route r into /v1: it routes on the raw
// path when there is one.
func underV1(r *http.Request) bool {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	return strings.HasPrefix(path, "/v1") && (len(path) == 3 || path[3] == '/')
}
