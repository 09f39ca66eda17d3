package graph

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tmefeed/tmefeed/live"
)

// Codes of a stream the server ends itself (see streamEnd).
const (
	// CodeSlowSubscriber: updates came faster than the client read them,
	// so the server stopped sending rather than hold them.
	CodeSlowSubscriber = "SLOW_SUBSCRIBER"
	// CodeShuttingDown: the server is going away; reconnect (to another
	// instance) and subscribe again.
	CodeShuttingDown = "SHUTTING_DOWN"
)

// streams keeps count of the subscriptions open in the process and on each
// WebSocket connection, and ends them all when the server shuts down.
type streams struct {
	perConn  int   // subscriptions on one WebSocket connection
	max      int64 // subscriptions open in the process
	maxConns int64 // WebSocket connections open in the process
	open     atomic.Int64
	conns    atomic.Int64

	mu      sync.Mutex
	closing chan struct{} // closed by shutdown
	closed  bool
	cut     chan struct{} // closed by shutdown once streams are drained: event streams end
	cutDone bool
	active  sync.WaitGroup          // open subscriptions
	sockets map[*wsConn]struct{}    // open WebSocket connections
	ended   map[*streamEnd]struct{} // open subscriptions' ends

	channels *channelCap // SUBSCRIBED_CHANNELS_PER_CLIENT

	// starting is the places of the subscriptions starting at once: their
	// documents read, their arguments decoded, their channels looked up in
	// the cache and registered with the hub. That is all CPU, and a client
	// opening two thousand subscriptions at once would otherwise make two
	// thousand goroutines runnable together, each cached read of everyone
	// else queueing behind them in the Go scheduler; so starting keeps to
	// half the CPUs, and a start waiting for Telegram gives its place back
	// while it waits (startTurn.pause).
	starting chan struct{}
}

// startingPlaces is len(streams.starting): half the CPUs, at least one.
func startingPlaces() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// startTurn is one subscription's place among those starting.
type startTurn struct {
	places chan struct{}
	held   bool
}

// take waits for a place while ctx lasts.
func (t *startTurn) take(ctx context.Context) error {
	if t == nil || t.held {
		return nil
	}
	select {
	case t.places <- struct{}{}:
		t.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drop gives the place back, if held.
func (t *startTurn) drop() {
	if t != nil && t.held {
		t.held = false
		<-t.places
	}
}

// pause gives ctx's subscription's place back while it waits for
// something other than the CPU (Telegram); resume takes one again.
func pauseStart(ctx context.Context) (resume func()) {
	e, ok := ctx.Value(streamEndKey{}).(*streamEnd)
	if !ok || e.start == nil || !e.start.held {
		return func() {}
	}
	e.start.drop()
	return func() { _ = e.start.take(ctx) }
}

func newStreams(perConn, maxOpen int) *streams {
	return &streams{
		perConn:  perConn,
		max:      int64(maxOpen),
		maxConns: int64(maxOpen),
		closing:  make(chan struct{}),
		cut:      make(chan struct{}),
		sockets:  map[*wsConn]struct{}{},
		ended:    map[*streamEnd]struct{}{},
		starting: make(chan struct{}, startingPlaces()),
	}
}

// admit opens one subscription, on the connection whose count is conn
// (nil for an event stream, which carries one), or says why it cannot.
func (s *streams) admit(conn *atomic.Int64, end *streamEnd) (release func(), _ *gqlerror.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, shuttingDownError()
	}
	if conn != nil && conn.Add(1) > int64(s.perConn) {
		conn.Add(-1)
		return nil, s.perConnError()
	}
	if s.open.Add(1) > s.max {
		s.open.Add(-1)
		if conn != nil {
			conn.Add(-1)
		}
		err := gqlerror.Errorf("the server has %d subscriptions open, the most it serves; retry in a moment", s.max)
		err.Extensions = map[string]any{"code": CodeRateLimited, "retryAfter": 1}
		return nil, err
	}
	s.active.Add(1)
	s.ended[end] = struct{}{}
	return sync.OnceFunc(func() {
		s.mu.Lock()
		delete(s.ended, end)
		s.mu.Unlock()
		s.open.Add(-1)
		if conn != nil {
			conn.Add(-1)
		}
		s.active.Done()
	}), nil
}

// perConnError refuses a subscription beyond SUBSCRIPTIONS_PER_CONNECTION.
func (s *streams) perConnError() *gqlerror.Error {
	err := gqlerror.Errorf("this connection has %d subscriptions open, the most allowed; complete one first, or watch more channels in one subscription", s.perConn)
	err.Extensions = map[string]any{"code": CodeRateLimited}
	return err
}

// openConn counts a WebSocket connection in, or returns false when the
// process holds as many as it serves.
func (s *streams) openConn() bool {
	if s.conns.Add(1) > s.maxConns {
		s.conns.Add(-1)
		return false
	}
	return true
}

func (s *streams) closeConn() { s.conns.Add(-1) }

// register adds a WebSocket connection to those shutdown closes; false
// when the server is shutting down already.
func (s *streams) register(c *wsConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sockets[c] = struct{}{}
	return true
}

func (s *streams) unregister(c *wsConn) {
	s.mu.Lock()
	delete(s.sockets, c)
	s.mu.Unlock()
}

// shutdown ends the streams so that clients resume them: it refuses new
// subscriptions, lets every open one send the events it holds already
// and waits (until ctx ends, polling: this runs once) for the transports
// to have written them, then closes the WebSocket connections with 1012
// Service Restart and cuts the event streams, neither with complete:
// graphql-ws and graphql-sse take complete as the stream's end and would
// not subscribe again, while a connection lost makes them retry.
func (s *streams) shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()

	var err error
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
wait:
	for !s.drained() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			err = ctx.Err()
			break wait
		}
	}
	s.mu.Lock()
	sockets := make([]*wsConn, 0, len(s.sockets))
	for c := range s.sockets {
		sockets = append(sockets, c)
	}
	if !s.cutDone {
		s.cutDone = true
		close(s.cut)
	}
	s.mu.Unlock()
	for _, c := range sockets {
		_ = c.WriteClose(closeServiceRestart, "the server is restarting; reconnect and subscribe again")
	}

	done := make(chan struct{})
	go func() { s.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return err
}

// drained reports whether every open stream has handed the transport the
// events it held and the transport has written them.
func (s *streams) drained() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for end := range s.ended {
		if !end.isDrained() {
			return false
		}
	}
	return true
}

// closeServiceRestart is RFC 6455's 1012 (IANA registry): the service is
// restarting. closeGoingAway (1001) is what a connection refused during
// shutdown gets.
const (
	closeServiceRestart = 1012
	closeGoingAway      = 1001
)

func shuttingDownError() *gqlerror.Error {
	err := gqlerror.Errorf("the server is shutting down; reconnect and subscribe again")
	err.Extensions = map[string]any{"code": CodeShuttingDown}
	return err
}

// streamEnd holds why the server ended a stream, if it did: the last
// payload of the stream carries it as an error with a code, before the
// stream completes. It also notes whether the resolver refused the
// subscription before it started.
type streamEnd struct {
	client  string     // the stream's client (clientOf)
	start   *startTurn // its place while it starts (streams.starting)
	mu      sync.Mutex
	err     *gqlerror.Error
	refused bool
	// On shutdown: drained is set once the resolver has sent the events
	// it held (drainedStream); waiting while the transport waits for the
	// next response, that is, has written the last one.
	drained, waiting bool
	// resume is the event id an event stream's Last-Event-ID resumes
	// after ("" none); notes the ids of the updates the resolver has
	// sent and the transport not yet written, oldest first (noteEvent).
	resume string
	notes  []eventNote
}

// eventNote is what the transport adds to one update's payload.
type eventNote struct {
	id  live.EventID
	gap bool
}

// noteEvent tells the transport the id of the update ctx's resolver sends
// next, and whether events may have been missed before it; the transport
// writes one payload for each update, in order.
func noteEvent(ctx context.Context, id live.EventID, gap bool) {
	if e, ok := ctx.Value(streamEndKey{}).(*streamEnd); ok {
		e.mu.Lock()
		e.notes = append(e.notes, eventNote{id, gap})
		e.mu.Unlock()
	}
}

// nextNote takes the note of the update just received from the resolver.
func (e *streamEnd) nextNote() (eventNote, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.notes) == 0 {
		return eventNote{}, false
	}
	n := e.notes[0]
	e.notes = e.notes[1:]
	return n, true
}

// resumeFrom is the event id ctx's event stream resumes after
// (Last-Event-ID), or "".
func resumeFrom(ctx context.Context) string {
	if e, ok := ctx.Value(streamEndKey{}).(*streamEnd); ok {
		return e.resume
	}
	return ""
}

func (e *streamEnd) isDrained() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.drained && e.waiting
}

func (e *streamEnd) setWaiting(w bool) {
	e.mu.Lock()
	e.waiting = w
	e.mu.Unlock()
}

// drainedStream notes that ctx's subscription has sent, on shutdown, every
// event it held.
func drainedStream(ctx context.Context) {
	if e, ok := ctx.Value(streamEndKey{}).(*streamEnd); ok {
		e.mu.Lock()
		e.drained = true
		e.mu.Unlock()
	}
}

type streamEndKey struct{}

// set records the first reason given.
func (e *streamEnd) set(err *gqlerror.Error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

func (e *streamEnd) get() *gqlerror.Error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *streamEnd) wasRefused() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refused
}

// refuseStream notes that the resolver refused ctx's subscription, for
// what it asks (a bad argument, a channel that does not exist), before
// it started: over WebSocket its errors are then a graphql-transport-ws
// error message, as for a document that does not validate, rather than a
// last next payload and complete.
func refuseStream(ctx context.Context) {
	if e, ok := ctx.Value(streamEndKey{}).(*streamEnd); ok {
		e.mu.Lock()
		e.refused = true
		e.mu.Unlock()
	}
}

// endStream records why the stream of ctx's subscription ends; the
// resolver calls it before closing its channel.
func endStream(ctx context.Context, err *gqlerror.Error) {
	if e, ok := ctx.Value(streamEndKey{}).(*streamEnd); ok {
		e.set(err)
	}
}

// streamExec is the executor as the streaming transports (WebSocket, event
// stream) see it: each document takes its turn at the gate to be parsed,
// only subscriptions run, within the limits on open subscriptions, and a
// stream the server ends says why.
type streamExec struct {
	graphql.GraphExecutor
	streams *streams
	gate    *gate
	conn    *atomic.Int64 // subscriptions open on this connection; nil: one per request
	// scope, when set, is the channels subscriptions may name
	// (HandlerConfig.Scope).
	scope  func(channel string) bool
	client string // the stream's client, for the origin budget (clientOf)
	// resume is an event stream's Last-Event-ID (checked), "" none.
	resume string
	// eventID, when set, hears the id of each update about to be
	// written (the event stream's id: line).
	eventID func(id string)
	// work, when set, is HandlerConfig.Work: a subscription's start is
	// owed by its client.
	work WorkFunc
}

func (e *streamExec) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	tr := &turn{gate: e.gate, client: e.client}
	defer tr.drop()
	start := &startTurn{places: e.streams.starting}
	_ = start.take(ctx) // fails only once the client has gone: no matter
	rc, errs := e.GraphExecutor.CreateOperationContext(context.WithValue(ctx, turnKey{}, tr), params)
	start.drop()
	if errs != nil {
		return rc, capErrors(errs)
	}
	if rc.Operation.Operation != ast.Subscription {
		err := gqlerror.Errorf("only subscriptions are served over WebSocket and event streams; send queries with GET or POST")
		err.Extensions = map[string]any{"code": CodeBadRequest}
		return rc, gqlerror.List{err}
	}
	// The spec's "single root field" rule, which gqlparser leaves to the
	// executor (where it would be an internal error).
	if fields := graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{"Subscription"}); len(fields) != 1 || strings.HasPrefix(fields[0].Name, "__") {
		err := gqlerror.Errorf("a subscription selects exactly one field (not __typename): one stream per subscription")
		errcode.Set(err, errcode.ValidationFailed)
		return rc, gqlerror.List{err}
	} else if e.scope != nil {
		if err := outOfScope(rc, fields[0], e.scope); err != nil {
			return rc, gqlerror.List{err}
		}
	}
	return rc, nil
}

// outOfScope refuses a subscription naming a channel scope does not
// allow, in any argument that names channels.
func outOfScope(rc *graphql.OperationContext, f graphql.CollectedField, scope func(string) bool) *gqlerror.Error {
	args := f.ArgumentMap(rc.Variables)
	var names []string
	for _, a := range []string{"channels", "channel", "username"} {
		switch v := args[a].(type) {
		case string:
			names = append(names, v)
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					names = append(names, s)
				}
			}
		}
	}
	for _, n := range names {
		ch := strings.ToLower(strings.TrimPrefix(n, "@"))
		if !scope(ch) {
			err := gqlerror.Errorf("this key may not subscribe to %s: a widget key reads its own channels only", clip(n))
			err.Extensions = map[string]any{"code": CodeForbidden}
			return err
		}
	}
	return nil
}

// refuse answers a subscription refused before it starts.
func (e *streamExec) refuse(ctx context.Context, gerr *gqlerror.Error) (graphql.ResponseHandler, context.Context) {
	if e.conn != nil {
		// A refusal, as for what the subscription asks: the WebSocket
		// transport sends it as the operation's error message, which
		// clients do not take for the stream's data.
		transport.AddSubscriptionError(ctx, gerr)
		return func(context.Context) *graphql.Response { return nil }, ctx
	}
	return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{gerr}}), ctx
}

// retrySeconds is wait as a retryAfter: whole seconds, at least one.
func retrySeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}

func (e *streamExec) DispatchOperation(ctx context.Context, rc *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	end := &streamEnd{client: e.client, start: &startTurn{places: e.streams.starting}, resume: e.resume}
	release, gerr := e.streams.admit(e.conn, end)
	if gerr != nil {
		return e.refuse(ctx, gerr)
	}
	// Starting looks up every channel the subscription names: work its
	// client owes, as it owes its requests' (CLIENT_CPU_SHARE), so that a
	// connection sending subscribe messages without pause works no more
	// of the cores than a client sending requests.
	workDone := func(time.Duration) {}
	if e.work != nil {
		done, wait, ok := e.work(ctx, e.client)
		if !ok && ctx.Err() != nil {
			// Ended (completed, or its connection closed) while it waited
			// for its client's turn: nobody reads an answer.
			release()
			return func(context.Context) *graphql.Response { return nil }, ctx
		}
		if !ok {
			release()
			secs := retrySeconds(wait)
			gerr := gqlerror.Errorf("this client's work has kept the server's cores busy beyond its share (CLIENT_CPU_SHARE); retry in %ds", secs)
			gerr.Extensions = map[string]any{"code": CodeRateLimited, "retryAfter": secs}
			return e.refuse(ctx, gerr)
		}
		workDone = done
	}
	_ = end.start.take(ctx) // fails only once the client has gone
	// Counted from here: the wait for a place to start is nobody's work.
	began := time.Now()
	ctx = context.WithValue(ctx, streamEndKey{}, end)
	responses, ctx := e.GraphExecutor.DispatchOperation(ctx, rc)
	end.start.drop() // started (or refused): the stream's CPU is its events'
	workDone(time.Since(began))

	// Its place is given back once its context ends: after the
	// transport has written its last message (so that shutdown, waiting
	// for it, closes no connection before), and whichever way the stream
	// goes.
	context.AfterFunc(ctx, release)
	if e.conn != nil && end.wasRefused() {
		// The executor answers a resolver's error at once, in one
		// response; gqlgen's WebSocket transport sends the errors it is
		// given this way as the operation's error message.
		if resp := responses(ctx); resp != nil {
			for _, err := range resp.Errors {
				transport.AddSubscriptionError(ctx, err)
			}
		}
		return func(context.Context) *graphql.Response { return nil }, ctx
	}
	var finished bool
	return func(ctx context.Context) *graphql.Response {
		if finished {
			return nil
		}
		// The transport asks for the next response once it has written
		// the last one.
		end.setWaiting(true)
		resp := responses(ctx)
		end.setWaiting(false)
		if resp != nil {
			if n, ok := end.nextNote(); ok && !n.id.IsZero() {
				if resp.Extensions == nil {
					resp.Extensions = map[string]any{}
				}
				resp.Extensions["eventId"] = n.id.String()
				if n.gap {
					resp.Extensions["missedEvents"] = true
				}
				if e.eventID != nil {
					e.eventID(n.id.String())
				}
			} else if ok && n.gap {
				if resp.Extensions == nil {
					resp.Extensions = map[string]any{}
				}
				resp.Extensions["missedEvents"] = true
			}
			return resp
		}
		finished = true
		if err := end.get(); err != nil && ctx.Err() == nil {
			if fields := graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{"Subscription"}); len(fields) > 0 {
				err.Path = ast.Path{ast.PathName(fields[0].Alias)}
			}
			return &graphql.Response{Data: []byte("null"), Errors: gqlerror.List{err}}
		}
		return nil
	}, ctx
}
