package httpcache

import (
	"net/http"
	"strconv"
	"strings"
)

// Handler compresses the 200 answers of next that are at least the
// Encoder's minimum, in the coding the request's Accept-Encoding picks, for
// answers made per request (GraphQL's). Such an answer is held until next
// returns, then compressed in one call; its ETag, if any, becomes weak. A
// HEAD gets the headers of the same GET (next writes the GET's answer,
// which is compressed and measured, not sent). A 304, an answer already
// coded and any other status pass as they are, and so does an event
// stream (text/event-stream), which must reach the client event by event
// as it is flushed. A nil Encoder returns next.
func (e *Encoder) Handler(next http.Handler) http.Handler {
	if e == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := Negotiate(r.Header.Get("Accept-Encoding"))
		cw := &compressWriter{ResponseWriter: w, enc: e, coding: c, head: r.Method == http.MethodHead}
		next.ServeHTTP(cw, r)
		cw.finish()
	})
}

// compressWriter decides at WriteHeader whether to hold the answer for
// compression.
type compressWriter struct {
	http.ResponseWriter
	enc     *Encoder
	coding  Coding
	head    bool   // a HEAD: the held answer is measured, not written
	wrote   bool   // WriteHeader passed on or held
	holding bool   // the answer is being held for compression
	status  int    // held status
	buf     []byte // held answer
}

func (w *compressWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	h := w.Header()
	// An event stream is written as it happens: holding it for
	// compression would hold it until it ends.
	if status != http.StatusOK || h.Get("Content-Encoding") != "" || isEventStream(h.Get("Content-Type")) {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	n := -1
	if cl := h.Get("Content-Length"); cl != "" {
		n, _ = strconv.Atoi(cl)
	}
	if n >= 0 && !w.enc.Compressible(n) {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	h.Add("Vary", "Accept-Encoding")
	if w.coding == Identity {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.holding, w.status = true, status
	if n > 0 {
		w.buf = make([]byte, 0, n)
	}
}

func (w *compressWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.holding {
		w.buf = append(w.buf, b...)
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// finish writes a held answer, compressed unless it turned out small.
func (w *compressWriter) finish() {
	if !w.holding {
		return
	}
	h := w.Header()
	body := w.buf
	if w.enc.Compressible(len(body)) {
		body = w.enc.Compress(w.coding, body)
		h.Set("Content-Encoding", w.coding.String())
		if tag := h.Get("ETag"); tag != "" {
			h.Set("ETag", Weak(tag))
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.ResponseWriter.WriteHeader(w.status)
	if !w.head {
		_, _ = w.ResponseWriter.Write(body)
	}
}

// Flush sends what is held uncompressed and passes the rest through: a
// handler that flushes wants its bytes on the wire now.
func (w *compressWriter) Flush() {
	if w.holding {
		w.holding = false
		w.Header().Del("Content-Length")
		w.ResponseWriter.WriteHeader(w.status)
		if len(w.buf) > 0 {
			_, _ = w.ResponseWriter.Write(w.buf)
		}
		w.buf = nil
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func isEventStream(ctype string) bool {
	mt, _, _ := strings.Cut(ctype, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// Unwrap lets http.ResponseController reach the connection.
func (w *compressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
