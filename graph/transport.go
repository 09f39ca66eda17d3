package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	gqlcomplexity "github.com/99designs/gqlgen/complexity"
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/sync/semaphore"

	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/pages"
)

// httpTransport serves GraphQL over HTTP: POST with a JSON body, or GET
// with the request in the URL (queries only, so a GET never changes
// anything). It bounds the request size, accepts one operation per request
// (no batches) and hands the operation to run.
type httpTransport struct {
	get     bool // GET; else POST
	maxBody int64
	run     *runner
}

var _ graphql.Transport = httpTransport{}

func (t httpTransport) Supports(r *http.Request) bool {
	if headerHas(r.Header, "Upgrade", "websocket") {
		return false
	}
	if t.get {
		return r.Method == http.MethodGet
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return r.Method == http.MethodPost && err == nil && mediaType == "application/json"
}

func (t httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	// The request's context ends when the client goes away; the deadline
	// bounds the operation even when it stays.
	ctx, cancel := context.WithTimeout(r.Context(), t.run.timeout)
	defer cancel()
	strict, _ := negotiate(r.Header.Get("Accept")) // the front refused what is not acceptable
	a := &answer{w: w, r: r, strict: strict, run: t.run}
	if t.get {
		// Only GET answers may be cached, so only they collect the
		// freshness of the pages they read.
		ctx, a.fresh = pages.WithFreshness(ctx)
	}
	tr := &turn{gate: t.run.gate, client: t.run.clientOf(r)}
	defer tr.drop()
	ctx = context.WithValue(ctx, turnKey{}, tr)

	params := &graphql.RawParams{Headers: r.Header}
	params.ReadTime.Start = graphql.Now()
	body, status, err := t.read(ctx, w, r, params)
	if errors.Is(err, errNoTurn) {
		a.busy()
		return
	} else if err != nil {
		a.refuse(status, codeForStatus(status), err.Error())
		return
	}
	if t.run.hot != nil {
		// The request's bytes, under which its answer may be kept.
		if t.get {
			a.request = r.URL.RawQuery
		} else {
			a.request = string(body)
		}
	}
	params.ReadTime.End = graphql.Now()
	if params.Query == "" && params.Extensions["persistedQuery"] == nil {
		a.refuse(http.StatusBadRequest, CodeBadRequest, noQueryMessage)
		return
	}

	rc, errs := exec.CreateOperationContext(ctx, params)
	tr.drop() // parsed and validated; expensive operations take it again
	if len(errs) == 1 && errs[0].Extensions["code"] == CodeRateLimited {
		a.busy() // no turn to parse the document
		return
	}
	if errs != nil {
		if t.get && t.run.selectsMutation(rc, params, errs) {
			a.getMutation()
			return
		}
		t.run.explain(rc, params, errs)
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		a.requestErrors(resp.Errors, resp.Extensions)
		return
	}
	if rc.Operation.Operation == ast.Subscription {
		a.refuse(http.StatusBadRequest, CodeBadRequest, subscriptionOverHTTP)
		return
	}
	if t.get && rc.Operation.Operation != ast.Query {
		a.getMutation()
		return
	}
	if t.run.operation != nil {
		t.run.operation(ctx, rc.Operation.Name)
	}
	t.run.do(ctx, a, exec, rc)
}

const subscriptionOverHTTP = "subscriptions are served over WebSocket (the graphql-transport-ws subprotocol) or as an event stream (POST with Accept: " + mediaEventStream + "), not as one answer"

const noQueryMessage = `the request has no query: send {"query": "…"} as JSON in a POST body, or ?query=… in a GET URL (or a persisted query's hash in extensions)`

// expensiveWait is how long a request waits for a turn before the client
// is asked to retry.
const expensiveWait = 2 * time.Second

// runner runs validated operations: introspection takes a turn at the
// gate, feed-only queries go to the fast path, and no answer larger than
// maxResponse is written.
type runner struct {
	timeout     time.Duration
	maxResponse int
	gate        *gate
	fast        *fastPath // nil: every operation goes through the executor
	hot         *hot      // keeps the fast path's answers by request; nil: none
	schema      *ast.Schema
	refresh     time.Duration           // the cache's refresh point; 0: nothing is cacheable
	cc          *httpcache.CacheControl // Cache-Control of cacheable answers (private with HandlerConfig.PrivateAnswers)
	now         func() time.Time
	// values bounds the answers the executor builds at once, weighed in
	// the values valued estimates they hold (see room); nil: no bound.
	values    *semaphore.Weighted
	maxValues int64
	valued    graphql.ExecutableSchema
	waiting   atomic.Int64                           // operations waiting for room
	operation func(ctx context.Context, name string) // HandlerConfig.Operation
	client    func(*http.Request) string             // HandlerConfig.Client; nil: nobody's
}

// clientOf names r's client (HandlerConfig.Client).
func (run *runner) clientOf(r *http.Request) string {
	if run.client == nil {
		return ""
	}
	return run.client(r)
}

// maxRoomWaiting bounds the operations waiting for room, as
// waitersPerSlot bounds those at the gate.
const maxRoomWaiting = 64

// smallAnswer is the estimated values below which an operation takes no
// room: its answer is kilobytes.
const smallAnswer = 2_000

// room holds room for the answer of rc while the executor builds it,
// waiting at most as long as at the gate. The executor holds a whole answer in
// memory, several times its JSON while it builds it (20 MB for a
// 2,000-post feed of 2.6 MB), and each distinct selection of a feed is
// rendered afresh, so concurrent large answers alone would outgrow any
// memory budget. An answer is weighed by its estimated values: the
// complexity of the operation with upstream pages priced at nothing.
func (run *runner) room(ctx context.Context, rc *graphql.OperationContext) (release func(), ok bool) {
	if run.values == nil {
		return func() {}, true
	}
	n := int64(gqlcomplexity.Calculate(ctx, run.valued, rc.Operation, rc.Variables))
	if n < smallAnswer {
		return func() {}, true
	}
	n = min(n, run.maxValues)
	if !run.values.TryAcquire(n) {
		if run.waiting.Add(1) > maxRoomWaiting {
			run.waiting.Add(-1)
			return nil, false
		}
		defer run.waiting.Add(-1)
		wctx, cancel := context.WithTimeout(ctx, run.gate.wait)
		defer cancel()
		if run.values.Acquire(wctx, n) != nil {
			return nil, false
		}
	}
	return func() { run.values.Release(n) }, true
}

func (run *runner) do(ctx context.Context, a *answer, exec graphql.GraphExecutor, rc *graphql.OperationContext) {
	if introspects(rc) && !takeTurn(ctx) {
		a.busy()
		return
	}
	var ran executed // the executor's answer, when the fast path ran it
	if run.fast != nil {
		ans, ok, busy := run.fast.serve(ctx, exec, rc)
		if ans.executed != nil {
			ran = *ans.executed
		}
		if busy {
			a.busy()
			return
		}
		if ok {
			if n := len(ans.body); n > run.maxResponse {
				a.requestErrors(gqlerror.List{run.tooLarge(n)}, nil)
				return
			}
			if run.hot != nil && a.request != "" && len(ans.versions) > 0 && !ans.passing && run.refresh > 0 {
				get := a.r.Method == http.MethodGet
				run.hot.keep(a.w, a.r, a.request, get, a.strict, ans.body, rc.Operation.Name, ans.versions, ans.refreshAt, ans.stale)
				return
			}
			a.data([][]byte{ans.body}, true)
			return
		}
	}
	resp, ctxErr := ran.resp, ran.ctx
	if resp == nil {
		release, ok := run.room(ctx, rc)
		if !ok {
			a.busy()
			return
		}
		defer release()
		responses, ctx := exec.DispatchOperation(ctx, rc)
		if resp = responses(ctx); resp == nil {
			resp = &graphql.Response{}
		}
		ctxErr = ctx.Err()
	} else {
		// Shared with the requests that ran it together: the errors are
		// appended to and capped here.
		copied := *resp
		copied.Errors = slices.Clone(resp.Errors)
		resp = &copied
	}
	if a.r.Context().Err() != nil {
		return // nobody reads the answer
	}
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		// The fields cut short say Telegram did not answer in time; this
		// says why they were cut.
		err := gqlerror.Errorf("the operation did not finish within %s; ask for fewer channels or posts, or retry", run.timeout)
		err.Extensions = map[string]any{"code": CodeUpstreamUnavailable}
		resp.Errors = append(resp.Errors, err)
	}
	if len(resp.Data) > run.maxResponse {
		a.requestErrors(gqlerror.List{run.tooLarge(len(resp.Data))}, nil)
		return
	}
	a.data([][]byte{marshalResponse(resp)}, len(resp.Errors) == 0)
}

// introspects reports whether an operation introspects the schema: all
// CPU, unlike operations whose cost is pages fetched, which wait on the
// origin and must not hold a turn while they do.
func introspects(rc *graphql.OperationContext) bool {
	// __schema and __type are fields of the query root only.
	for _, f := range graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{"Query"}) {
		if f.Name == "__schema" || f.Name == "__type" {
			return true
		}
	}
	return false
}

func busyError() *gqlerror.Error {
	err := gqlerror.Errorf("too many expensive operations (introspection, new or large documents, large answers) are running; retry in a moment")
	err.Extensions = map[string]any{"code": CodeRateLimited, "retryAfter": 1}
	return err
}

func (run *runner) tooLarge(n int) *gqlerror.Error {
	err := gqlerror.Errorf("the answer is %d bytes, more than the %d allowed; select fewer fields or ask for fewer posts", n, run.maxResponse)
	err.Extensions = map[string]any{"code": CodeComplexity}
	return err
}

// bigDocument is the request size from which decoding takes a turn at the
// gate: about a millisecond of work with parsing.
const bigDocument = 16 << 10

type turnKey struct{}

// turn is one request's place at the gate. Whatever asks for it (a large
// request, a new document, introspection) takes the one place, so a
// request never waits for itself.
type turn struct {
	gate    *gate
	client  string // the request's client, for the origin budget (clientOf)
	release func() // nil when not held
	// onDrop runs when the request is done with the gate: its document
	// has been parsed and validated, or refused.
	onDrop []func()
}

func (t *turn) take(ctx context.Context) bool {
	if t.release == nil {
		t.release, _ = t.gate.enter(ctx)
	}
	return t.release != nil
}

func (t *turn) drop() {
	if t.release != nil {
		t.release()
		t.release = nil
	}
	for _, f := range t.onDrop {
		f()
	}
	t.onDrop = nil
}

// clientOf is the client of the request or stream ctx belongs to
// (HandlerConfig.Client), whose share of the origin budget the pages its
// resolvers read are charged to; "" outside one.
func clientOf(ctx context.Context) string {
	if t, ok := ctx.Value(turnKey{}).(*turn); ok {
		return t.client
	}
	if e, ok := ctx.Value(streamEndKey{}).(*streamEnd); ok {
		return e.client
	}
	return ""
}

// takeTurn takes the turn of the request ctx belongs to; outside a
// request (tests calling the executor directly) there is no gate.
func takeTurn(ctx context.Context) bool {
	t, ok := ctx.Value(turnKey{}).(*turn)
	return !ok || t.take(ctx)
}

// gate admits a bounded number of holders at once, and lets a bounded
// number wait: a waiter holds its request (up to 64 KiB read, for a large
// one) for as long as g.wait, so a flood of thousands of new documents
// would otherwise hold hundreds of megabytes in the queue.
type gate struct {
	slots      chan struct{}
	wait       time.Duration
	waiting    atomic.Int64
	maxWaiting int64
}

// waitersPerSlot bounds the queue at the gate: more than the slots can
// serve within expensiveWait, unless each turn takes over 60 ms.
const waitersPerSlot = 32

func newGate(n int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, n), wait: wait, maxWaiting: int64(n) * waitersPerSlot}
}

// enter takes a slot, waiting at most g.wait, and returns its release.
// When the queue is full it fails at once.
func (g *gate) enter(ctx context.Context) (release func(), ok bool) {
	release = func() { <-g.slots }
	select {
	case g.slots <- struct{}{}:
		return release, true
	default:
	}
	if g.waiting.Add(1) > g.maxWaiting {
		g.waiting.Add(-1)
		return nil, false
	}
	defer g.waiting.Add(-1)
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	select {
	case g.slots <- struct{}{}:
		return release, true
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil, false
}

// errNoTurn: a large request found no turn at the gate to be decoded.
var errNoTurn = errors.New("graph: no turn to decode the request")

// read fills params from the request, returning the HTTP status to answer
// with when it cannot. Decoding and parsing a large document cost
// milliseconds even when it is refused, so a large request takes its
// turn at the gate (once read: a slow sender must not hold one) and a
// flood of them keeps to its share of the CPUs.
func (t httpTransport) read(ctx context.Context, w http.ResponseWriter, r *http.Request, params *graphql.RawParams) ([]byte, int, error) {
	if t.get {
		status, err := readURL(ctx, r, t.maxBody, params)
		return nil, status, err
	}
	body, status, err := readBody(w, r, t.maxBody)
	if err != nil {
		return nil, status, err
	}
	status, err = decodeBody(ctx, body, params)
	return body, status, err
}

// readURL reads a GET request's parameters from its URL, of at most
// maxBody bytes, returning the HTTP status to answer with when it cannot.
func readURL(ctx context.Context, r *http.Request, maxBody int64, params *graphql.RawParams) (int, error) {
	if int64(len(r.URL.RawQuery)) > maxBody {
		return http.StatusRequestURITooLong, fmt.Errorf("request URL longer than %d bytes", maxBody)
	}
	if len(r.URL.RawQuery) > bigDocument && !takeTurn(ctx) {
		return 0, errNoTurn
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("malformed query string: %w", err)
	}
	for _, k := range [...]string{"query", "operationName", "variables", "extensions"} {
		// Answers echo names and text the request holds; they must
		// stay UTF-8.
		if !utf8.ValidString(q.Get(k)) {
			return http.StatusBadRequest, fmt.Errorf("%s is not valid UTF-8 once percent-decoded", k)
		}
	}
	params.Query = q.Get("query")
	params.OperationName = q.Get("operationName")
	if v := q.Get("variables"); v != "" {
		if err := decodeJSON([]byte(v), &params.Variables); err != nil {
			return http.StatusBadRequest, fmt.Errorf("variables could not be decoded: %w", err)
		}
	}
	if v := q.Get("extensions"); v != "" {
		if err := decodeJSON([]byte(v), &params.Extensions); err != nil {
			return http.StatusBadRequest, fmt.Errorf("extensions could not be decoded: %w", err)
		}
	}
	return 0, nil
}

// tooLargeDrain bounds what is read of a body past its limit.
const tooLargeDrain = 256 << 10

// readBody reads a POST body of at most maxBody bytes, returning the HTTP
// status to answer with when it cannot.
func readBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, int, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			// Take in (a bounded amount of) what the client is still
			// sending, so that it reads the 413 instead of meeting a
			// connection reset while it writes.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(time.Second))
			_, _ = io.CopyN(io.Discard, r.Body, tooLargeDrain)
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes", maxBody)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("could not read request body: %w", err)
	}
	return body, 0, nil
}

// decodeBody fills params from a POST body, as read does.
func decodeBody(ctx context.Context, body []byte, params *graphql.RawParams) (int, error) {
	switch b := bytes.TrimLeft(body, " \t\r\n"); {
	case len(b) == 0:
		return http.StatusBadRequest, errors.New(noQueryMessage)
	case b[0] == '[':
		return http.StatusBadRequest, errors.New("batched operations are not supported: send one operation per request")
	}
	if len(body) > bigDocument && !takeTurn(ctx) {
		return 0, errNoTurn
	}
	if !utf8.Valid(body) {
		// encoding/json would replace the bad bytes with U+FFFD unseen.
		return http.StatusBadRequest, errors.New("request body is not valid UTF-8")
	}
	if err := decodeJSON(body, params); err != nil {
		return http.StatusBadRequest, fmt.Errorf("request body could not be decoded: %w", err)
	}
	return 0, nil
}

// decodeJSON decodes b, which must hold one JSON value and nothing after
// it, into v.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			what := "the value"
			if te.Field != "" {
				what = strconv.Quote(te.Field)
			}
			return fmt.Errorf("%s must be %s, not %s", what, jsonKind(te.Type), withArticle(te.Value))
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more follows the JSON value; send exactly one")
	}
	return nil
}

func withArticle(kind string) string {
	switch kind {
	case "object", "array":
		return "an " + kind
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// jsonKind names the JSON type a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return withArticle(t.String())
}
