package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/tmefeed/tmefeed/live"
)

const mediaEventStream = "text/event-stream"

// sseTransport serves subscriptions as Server-Sent Events: a POST with a
// JSON body, or a GET with the request in the URL (what a browser's
// EventSource sends), and Accept: text/event-stream is answered with a
// stream of `next` events and a final `complete` (gqlgen's transport, the
// "distinct connections" mode of graphql-sse). The request is read, bounded and
// checked here first, so that what cannot be served is answered with a
// status and a GraphQL error, as every other request is.
type sseTransport struct {
	sse          transport.SSE // keep-alive
	maxBody      int64
	streams      *streams
	gate         *gate
	writeTimeout time.Duration
	scope        func(*http.Request) func(string) bool // HandlerConfig.Scope
	client       func(*http.Request) string            // names the stream's client (runner.clientOf)
	work         WorkFunc                              // HandlerConfig.Work
}

var _ graphql.Transport = sseTransport{}

func (t sseTransport) Supports(r *http.Request) bool {
	if r.Method == http.MethodGet {
		return wantsEventStream(r.Header) && !headerHas(r.Header, "Upgrade", "websocket")
	}
	if r.Method != http.MethodPost || !wantsEventStream(r.Header) {
		return false
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == mediaJSON
}

// IsStream reports whether r asks for an answer the handler keeps open: a
// WebSocket upgrade, or a GET or POST that accepts an event stream. It reads
// headers only and allocates nothing, so that a face in front of the
// handler (the server's bound on each client's open streams) can ask it
// of every request and count exactly what the transports stream.
func IsStream(r *http.Request) bool {
	return headerHas(r.Header, "Upgrade", "websocket") ||
		(r.Method == http.MethodPost || r.Method == http.MethodGet || r.Method == http.MethodHead) && wantsEventStream(r.Header)
}

// IsStream is the package's IsStream, for those holding the handler.
func (h *Handler) IsStream(r *http.Request) bool { return IsStream(r) }

// wantsEventStream reports whether Accept names text/event-stream with a
// weight above zero and above that of either JSON type. A client that
// accepts both alike for every operation (urql's fetch sends JSON types,
// text/event-stream and multipart/mixed, all at q=1) asks a query, and is
// answered JSON; a stream is for those who prefer one (graphql-sse,
// EventSource: text/event-stream alone).
func wantsEventStream(h http.Header) bool {
	stream, json := -1.0, -1.0
	for _, v := range h.Values("Accept") {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			mt, params, _ := strings.Cut(part, ";")
			switch mt = strings.TrimSpace(mt); {
			case strings.EqualFold(mt, mediaEventStream):
				stream = max(stream, weight(params))
			case strings.EqualFold(mt, mediaJSON), strings.EqualFold(mt, graphqlResponseJSON):
				json = max(json, weight(params))
			}
		}
	}
	return stream > 0 && stream > json
}

// weight is the q that media-type parameters give: 1 without one, 0 for
// one that does not parse.
func weight(params string) float64 {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0
			}
			return q
		}
	}
	return 1
}

func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	a := &answer{w: w, r: r}
	tr := &turn{gate: t.gate, client: t.client(r)}
	defer tr.drop()
	ctx := context.WithValue(r.Context(), turnKey{}, tr)
	var (
		params graphql.RawParams
		body   []byte
	)
	if r.Method == http.MethodGet {
		if status, err := readURL(ctx, r, t.maxBody, &params); errors.Is(err, errNoTurn) {
			a.busy()
			return
		} else if err != nil {
			a.refuse(status, codeForStatus(status), err.Error())
			return
		}
		// gqlgen's transport reads the request from the body.
		body, _ = json.Marshal(urlRequest{Query: params.Query, OperationName: params.OperationName, Variables: params.Variables, Extensions: params.Extensions})
	} else {
		var status int
		var err error
		if body, status, err = readBody(w, r, t.maxBody); err != nil {
			a.refuse(status, codeForStatus(status), err.Error())
			return
		}
		if len(body) > bigDocument && !tr.take(ctx) {
			a.busy()
			return
		}
		if status, err := decodeBody(ctx, body, &params); err != nil {
			a.refuse(status, codeForStatus(status), err.Error())
			return
		}
	}
	if params.Query == "" && params.Extensions["persistedQuery"] == nil {
		a.refuse(http.StatusBadRequest, CodeBadRequest, noQueryMessage)
		return
	}
	// An EventSource sends the id of the last event it received when it
	// reconnects: the subscription resumes after it.
	resume := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if resume != "" {
		if _, err := live.ParseEventID(resume); err != nil {
			a.refuse(http.StatusBadRequest, CodeBadRequest, "Last-Event-ID: "+strconv.Quote(clip(resume))+" is not an event id; send the id: of the last event received")
			return
		}
	}
	tr.drop()

	// The stream outlives the server's read and write timeouts: the read
	// deadline goes (net/http would end the request when it passes), and
	// each write gets its own (see streamWriter).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sw := &streamWriter{w: w, rc: rc, timeout: t.writeTimeout}
	defer sw.stop()
	// On shutdown, once the stream has written what it held, it is cut:
	// no complete, which graphql-sse would take as the stream's end
	// rather than retry. One begun during shutdown is refused with
	// SHUTTING_DOWN instead, which must be written.
	select {
	case <-t.streams.closing:
	default:
		go func() {
			select {
			case <-t.streams.cut:
				sw.stop()
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	se := &streamExec{GraphExecutor: exec, streams: t.streams, gate: t.gate, client: tr.client, resume: resume, eventID: sw.nextID, work: t.work}
	if t.scope != nil {
		se.scope = t.scope(r)
	}
	t.sse.Do(sw, r.WithContext(ctx), se)
}

// urlRequest is a GET request's parameters as the body of a POST.
type urlRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
	Extensions    map[string]any `json:"extensions,omitempty"`
}

// streamWriter writes an event stream: every write has a deadline, so a
// client that stops reading ends its stream rather than holding it, and
// nothing is written once the handler has returned (gqlgen's keep-alive
// may tick just then).
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu      sync.Mutex
	stopped bool
	id      string // the id of the update written next
}

// nextID gives the update written next its id: line.
func (s *streamWriter) nextID(id string) {
	s.mu.Lock()
	s.id = id
	s.mu.Unlock()
}

// nextEvent is how the transport begins an update's frame.
var nextEvent = []byte("event: next\n")

func (s *streamWriter) Header() http.Header { return s.w.Header() }

func (s *streamWriter) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.w.WriteHeader(code)
	}
}

func (s *streamWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return 0, io.ErrClosedPipe
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if s.id != "" && bytes.HasPrefix(b, nextEvent) {
		// The transport writes each frame at once: the id goes in it.
		frame := make([]byte, 0, len(b)+len(s.id)+5)
		frame = append(append(append(append(frame, nextEvent...), "id: "...), s.id...), '\n')
		frame = append(frame, b[len(nextEvent):]...)
		s.id = ""
		if _, err := s.w.Write(frame); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return s.w.Write(b)
}

func (s *streamWriter) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
		_ = s.rc.Flush()
	}
}

func (s *streamWriter) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}
