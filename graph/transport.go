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
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
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
	if r.Header.Get("Upgrade") != "" {
		return false
	}
	if t.get {
		return r.Method == http.MethodGet
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return r.Method == http.MethodPost && err == nil && mediaType == "application/json"
}

const graphqlResponseJSON = "application/graphql-response+json"

func (t httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	// The request's context ends when the client goes away; the deadline
	// bounds the operation even when it stays.
	ctx, cancel := context.WithTimeout(r.Context(), t.run.timeout)
	defer cancel()
	strict := acceptsGraphQLResponse(r.Header.Get("Accept"))
	if strict {
		w.Header().Set("Content-Type", graphqlResponseJSON)
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	tr := &turn{gate: t.run.gate}
	defer tr.drop()
	ctx = context.WithValue(ctx, turnKey{}, tr)

	params := &graphql.RawParams{Headers: r.Header}
	params.ReadTime.Start = graphql.Now()
	if status, err := t.read(ctx, w, r, params); errors.Is(err, errNoTurn) {
		t.run.busy(w, r)
		return
	} else if err != nil {
		writeErrors(w, status, gqlerror.List{badRequest(err.Error())})
		return
	}
	params.ReadTime.End = graphql.Now()

	rc, errs := exec.CreateOperationContext(ctx, params)
	tr.drop() // parsed and validated; expensive operations take it again
	if len(errs) == 1 && errs[0].Extensions["code"] == CodeRateLimited {
		t.run.busy(w, r) // no turn to parse the document
		return
	}
	if errs != nil {
		status := http.StatusOK
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			status = http.StatusUnprocessableEntity
			if strict {
				status = http.StatusBadRequest
			}
		} else if strict {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		writeJSON(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
		return
	}
	if t.get && rc.Operation.Operation != ast.Query {
		writeErrors(w, http.StatusMethodNotAllowed, gqlerror.List{badRequest("GET requests only allow query operations")})
		return
	}
	t.run.do(ctx, w, r, exec, rc)
}

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
}

func (run *runner) do(ctx context.Context, w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor, rc *graphql.OperationContext) {
	if introspects(rc) && !takeTurn(ctx) {
		run.busy(w, r)
		return
	}
	if run.fast != nil {
		if parts, ok := run.fast.serve(ctx, exec, rc); ok {
			n := 0
			for _, p := range parts {
				n += len(p)
			}
			if n > run.maxResponse {
				writeErrors(w, http.StatusOK, gqlerror.List{run.tooLarge(n)})
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
			for _, p := range parts {
				if _, err := w.Write(p); err != nil {
					return
				}
			}
			return
		}
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	resp := responses(ctx)
	if r.Context().Err() != nil {
		return // nobody reads the answer
	}
	if resp == nil {
		resp = &graphql.Response{}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The fields cut short say Telegram did not answer in time; this
		// says why they were cut.
		err := gqlerror.Errorf("the operation did not finish within %s; ask for fewer channels or posts, or retry", run.timeout)
		err.Extensions = map[string]any{"code": CodeUpstreamUnavailable}
		resp.Errors = append(resp.Errors, err)
	}
	if len(resp.Data) > run.maxResponse {
		writeErrors(w, http.StatusOK, gqlerror.List{run.tooLarge(len(resp.Data))})
		return
	}
	writeJSON(w, resp)
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

// busy answers a request that found no turn at the gate.
func (run *runner) busy(w http.ResponseWriter, r *http.Request) {
	if r.Context().Err() != nil {
		return // the client left
	}
	w.Header().Set("Retry-After", "1")
	writeErrors(w, http.StatusServiceUnavailable, gqlerror.List{busyError()})
}

func busyError() *gqlerror.Error {
	err := gqlerror.Errorf("too many expensive operations (introspection, new or large documents) are running; retry in a moment")
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
	release func() // nil when not held
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
}

// takeTurn takes the turn of the request ctx belongs to; outside a
// request (tests calling the executor directly) there is no gate.
func takeTurn(ctx context.Context) bool {
	t, ok := ctx.Value(turnKey{}).(*turn)
	return !ok || t.take(ctx)
}

// gate admits a bounded number of holders at once.
type gate struct {
	slots chan struct{}
	wait  time.Duration
}

func newGate(n int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, n), wait: wait}
}

// enter takes a slot, waiting at most g.wait, and returns its release.
func (g *gate) enter(ctx context.Context) (release func(), ok bool) {
	release = func() { <-g.slots }
	select {
	case g.slots <- struct{}{}:
		return release, true
	default:
	}
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
func (t httpTransport) read(ctx context.Context, w http.ResponseWriter, r *http.Request, params *graphql.RawParams) (int, error) {
	if t.get {
		if int64(len(r.URL.RawQuery)) > t.maxBody {
			return http.StatusRequestURITooLong, fmt.Errorf("request URL longer than %d bytes", t.maxBody)
		}
		if len(r.URL.RawQuery) > bigDocument && !takeTurn(ctx) {
			return 0, errNoTurn
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return http.StatusBadRequest, fmt.Errorf("malformed query string: %w", err)
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, t.maxBody))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes", t.maxBody)
		}
		return http.StatusBadRequest, fmt.Errorf("could not read request body: %w", err)
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		return http.StatusBadRequest, errors.New("batched operations are not supported: send one operation per request")
	}
	if len(body) > bigDocument && !takeTurn(ctx) {
		return 0, errNoTurn
	}
	if err := decodeJSON(body, params); err != nil {
		return http.StatusBadRequest, fmt.Errorf("request body could not be decoded: %w", err)
	}
	return 0, nil
}

func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// acceptsGraphQLResponse reports whether the client asks for the
// application/graphql-response+json media type, whose error statuses
// follow the GraphQL-over-HTTP draft.
func acceptsGraphQLResponse(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == graphqlResponseJSON {
			return true
		}
	}
	return false
}

func badRequest(msg string) *gqlerror.Error {
	return &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": CodeBadUserInput}}
}

func writeErrors(w http.ResponseWriter, status int, errs gqlerror.List) {
	w.WriteHeader(status)
	writeJSON(w, &graphql.Response{Errors: errs})
}

func writeJSON(w io.Writer, resp *graphql.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		b = []byte(`{"errors":[{"message":"response could not be encoded","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	_, _ = w.Write(b)
}
