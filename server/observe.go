package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-chi/chi/v5"

	"github.com/tmefeed/tmefeed/metrics"
)

// RequestLine is the one log line of a request. At info level it holds no
// query, body or client address: Path and Remote are set only when the
// logger is at debug level.
type RequestLine struct {
	Time      time.Time // when the answer ended
	Level     slog.Level
	ID        string // X-Request-Id, the caller's when sane
	Method    string
	Route     string // the route pattern ("unmatched" for none), never the raw path
	Status    int
	Bytes     int
	Duration  time.Duration
	Cache     string // hit, stale, miss or bypass
	Operation string // the GraphQL operation name, "" when not GraphQL; "anonymous" for none
	Consumer  string // with API keys on, the consumer whose key the request carried ("" for none)
	Err       string // the cause of an error answer
	Path      string // debug only: the request target, query included
	Remote    string // debug only: the peer's address
}

// Attrs is the line as slog attributes, in the order of the fields.
func (l *RequestLine) Attrs() []slog.Attr {
	a := make([]slog.Attr, 0, 12)
	a = append(a,
		slog.String("id", l.ID),
		slog.String("method", l.Method),
		slog.String("route", l.Route),
		slog.Int("status", l.Status),
		slog.Int("bytes", l.Bytes),
		slog.Duration("dur", l.Duration),
		slog.String("cache", l.Cache),
	)
	if l.Operation != "" {
		a = append(a, slog.String("op", l.Operation))
	}
	if l.Consumer != "" {
		a = append(a, slog.String("consumer", l.Consumer))
	}
	if l.Err != "" {
		a = append(a, slog.String("err", l.Err))
	}
	if l.Path != "" {
		a = append(a, slog.String("path", l.Path))
	}
	if l.Remote != "" {
		a = append(a, slog.String("remote", l.Remote))
	}
	return a
}

// NoteOperation records the name of the GraphQL operation a request runs,
// once its document has passed the limits, for the access log and the
// per-operation metrics. graph.HandlerConfig.Operation takes it.
func NoteOperation(ctx context.Context, name string) {
	if info, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		info.operation, info.hasOp = name, true
	}
}

// NoteRefused records that the answer of the request ctx belongs to
// carries a refusal for budget reasons (one field or channel of many),
// so that it is held before it is sent (see TarpitConfig).
// graph.HandlerConfig.Refused takes it.
func NoteRefused(ctx context.Context) {
	if info, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		info.refused.Store(true)
	}
}

// NoteMistake records that the answer of the request ctx belongs to
// answers the client's own mistake (bad input) although its status is
// 200, as a GraphQL answer with input errors is: a client making many a
// second has them held (see TarpitConfig). graph.HandlerConfig.Mistaken
// takes it.
func NoteMistake(ctx context.Context) {
	if info, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		info.mistaken.Store(true)
	}
}

// requestID returns the caller's X-Request-Id when it is short and plain,
// else a fresh one.
func (h *handler) requestID(r *http.Request, info *reqInfo) string {
	if id := header(r.Header, "X-Request-Id"); id != "" && len(id) <= 64 && plain(id) {
		return id
	}
	// Made in the request record's buffer, which is written once and
	// never reused (a record is not recycled): the string may point into
	// it, and a hit allocates nothing for its id.
	b := append(info.idBuf[:0], h.idPrefix...)
	b = append(b, '-')
	b = strconv.AppendUint(b, h.idSeq.Add(1), 10)
	if &b[0] != &info.idBuf[0] { // cannot happen: prefix and number fit
		return string(b)
	}
	return unsafe.String(&b[0], len(b))
}

func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// logRequests gives every request an id (echoed in X-Request-Id), then,
// once it is answered, updates the metrics of its route and GraphQL
// operation and logs one line.
func (h *handler) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info, ok := r.Context().Value(reqInfoKey{}).(*reqInfo)
		if !ok { // not served through withRequestContext
			info = &reqInfo{}
			r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info))
		}
		info.start = start
		id := h.requestID(r, info)
		// The header's value slice is the record's, which lives as long
		// as the request: no allocation for it. Capped, so that an Add
		// elsewhere copies it.
		info.idValue[0] = id
		w.Header()["X-Request-Id"] = info.idValue[:1:1] // canonical already
		if h.metrics != nil {
			h.metrics.Begin()
			// Deferred: a handler aborting with http.ErrAbortHandler
			// skips the rest of this function.
			defer h.metrics.End()
		}
		ww := &info.recorder
		ww.ResponseWriter = w
		next.ServeHTTP(ww, r)

		// The monotonic clock alone: the end's wall time is the start's
		// plus the duration, which saves reading the wall clock again.
		dur := time.Since(start)
		end := start.Add(dur)
		status := ww.status
		if status == 0 {
			status = http.StatusOK
		}
		// A refusal for budget reasons, or the answer to a client's own
		// mistake once it makes more than a few a second, is held before it
		// is sent (its bytes wait in the connection's buffer); the duration
		// measured is the work, not the hold.
		if h.tarpit != nil {
			if d, client, ok := h.holdDue(r, info, status, ww); ok {
				held := h.tarpit.wait(r.Context(), client, d)
				if h.metrics != nil {
					h.metrics.RefusalHeld(held)
				}
			}
		}
		route := chi.RouteContext(r.Context()).RoutePattern()
		if h.metrics != nil {
			if isStream(status, ww.Header()) {
				h.metrics.Route(route).ObserveStream(status, info.cache)
			} else {
				h.metrics.Route(route).Observe(status, dur, info.cache)
			}
			if info.hasOp {
				h.metrics.Operation(info.operation).Observe(status, dur)
			}
			if c := info.grant.Consumer; c != nil {
				h.metrics.Consumer(c.Name, status)
			}
		}

		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case status == http.StatusTooManyRequests:
			level = slog.LevelWarn
		}
		ctx := r.Context()
		if !h.log.Enabled(ctx, level) {
			return
		}
		if route == "" {
			route = metrics.RouteUnmatched
		}
		line := RequestLine{
			Time:     end,
			Level:    level,
			ID:       id,
			Method:   r.Method,
			Route:    route,
			Status:   status,
			Bytes:    ww.bytes,
			Duration: dur,
			Cache:    info.cache.String(),
		}
		if info.hasOp {
			line.Operation = info.operation
			if line.Operation == "" {
				line.Operation = metrics.OperationAnonymous
			}
		}
		if c := info.grant.Consumer; c != nil {
			line.Consumer = c.Name
		}
		if info.err != nil {
			line.Err = info.err.Error()
		}
		if h.log.Enabled(ctx, slog.LevelDebug) {
			line.Path, line.Remote = r.URL.RequestURI(), r.RemoteAddr
		}
		if h.requestLog != nil {
			h.requestLog(ctx, line)
			return
		}
		// The record goes straight to the handler: Logger.LogAttrs would
		// also capture the caller's program counter, which no handler here
		// uses (none sets AddSource), and read the clock once more.
		rec := slog.NewRecord(end, level, "request", 0)
		rec.AddAttrs(line.Attrs()...)
		_ = h.log.Handler().Handle(ctx, rec)
	})
}

// recorder is the writer logRequests hands on: it notes the answer's
// status and size for the log and the metrics. It is part of the
// request's record, so that wrapping the writer allocates nothing, and
// offers what the writer it wraps offers (flushing for event streams,
// hijacking for WebSockets, ReadFrom for files) as chi's
// WrapResponseWriter does.
type recorder struct {
	http.ResponseWriter
	status int // 0 until the header is written
	bytes  int
}

func (w *recorder) WriteHeader(code int) {
	if w.status != 0 {
		return // superfluous, as net/http would log
	}
	// Informational answers (103 Early Hints) precede the real one; 101
	// is the last a WebSocket gets.
	if code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// ReadFrom lets a file served through the recorder reach the
// connection's own ReadFrom (sendfile).
func (w *recorder) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(onlyWriter{w.ResponseWriter}, r)
	}
	w.bytes += int(n)
	return n, err
}

// onlyWriter hides a writer's ReadFrom, so that io.Copy does not call it
// back.
type onlyWriter struct{ io.Writer }

func (w *recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if hj, ok := w.ResponseWriter.(http.Hijacker); ok {
		return hj.Hijack()
	}
	return nil, nil, fmt.Errorf("server: %T cannot be hijacked: %w", w.ResponseWriter, http.ErrNotSupported)
}

// Unwrap lets http.ResponseController reach the writer's own deadlines.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isStream reports whether an answer was a stream that lasts as long as
// its client stays: a WebSocket (101) or an event stream.
func isStream(status int, h http.Header) bool {
	return status == http.StatusSwitchingProtocols || strings.HasPrefix(header(h, "Content-Type"), "text/event-stream")
}

// header is h.Get(key) for a key already in canonical form, as every
// constant name here is: the lookup skips Get's canonicalization, which
// the hit path would pay several times a request. Equivalent to Get,
// which canonicalizes only its argument.
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Rendered is called by the page service's load of a rendered answer: the
// request that started the load rendered the answer (a cache miss).
func (info *reqInfo) Rendered() {
	if info != nil {
		info.rendered.Store(true)
	}
}

// noteEntry records how a cached answer was had, for the log and metrics.
func (info *reqInfo) noteEntry(stale bool) {
	if info == nil {
		return
	}
	switch {
	case info.rendered.Load():
		info.cache = metrics.CacheMiss
	case stale:
		info.cache = metrics.CacheStale
	default:
		info.cache = metrics.CacheHit
	}
}

func requestInfo(ctx context.Context) *reqInfo {
	info, _ := ctx.Value(reqInfoKey{}).(*reqInfo)
	return info
}
