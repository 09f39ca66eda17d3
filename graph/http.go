package graph

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/pages"
)

// The response media types of GraphQL over HTTP.
const (
	mediaJSON           = "application/json"
	graphqlResponseJSON = "application/graphql-response+json"
)

// allowedMethods are the methods /graphql serves (HEAD as GET).
const allowedMethods = "GET, HEAD, POST"

// negotiate picks the response media type from an Accept header: the
// GraphQL response type (strict) when the client names it and weighs it
// at least as much as JSON, else JSON. A missing Accept, */* and
// application/* mean JSON, as the GraphQL-over-HTTP draft asks of servers
// so that clients that predate the new type keep their status codes; a
// client that refuses JSON but accepts such a range gets the GraphQL
// type, which the range covers. ok is false when Accept rules both out.
func negotiate(accept string) (strict, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	gr, js, app, all := -1.0, -1.0, -1.0, -1.0
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, set := params["q"]; set {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		switch mt {
		case graphqlResponseJSON:
			gr = max(gr, q)
		case mediaJSON:
			js = max(js, q)
		case "application/*":
			app = max(app, q)
		case "*/*":
			all = max(all, q)
		}
	}
	// The most specific range that covers a type gives its weight.
	ranged := app
	if ranged < 0 {
		ranged = all
	}
	if js < 0 {
		js = ranged
	}
	switch {
	case gr > 0 && gr >= js:
		return true, true
	case js > 0:
		return false, true
	case gr < 0 && ranged > 0:
		// JSON refused, the GraphQL type not named but within a range.
		return true, true
	}
	return false, false
}

// front refuses, as GraphQL errors with a code, the requests no transport
// serves: other methods (405), bodies not sent as JSON (415), an Accept
// that allows neither JSON type nor, for a POST, an event stream (406),
// WebSocket upgrades when subscriptions are not served. gqlgen would
// answer them 400 in plain text.
type front struct {
	next    http.Handler
	streams bool // subscriptions are served (WebSocket, event streams)
}

func (f front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	strict, ok := negotiate(r.Header.Get("Accept"))
	// Refusals are in JSON, the one type every client reads, when Accept
	// allows neither type (as the draft allows).
	a := &answer{w: w, r: r, strict: strict && ok}
	switch r.Method {
	case http.MethodGet, http.MethodPost:
	case http.MethodHead:
		// A GET whose body net/http leaves out.
		r = r.WithContext(r.Context())
		r.Method = http.MethodGet
	case http.MethodPut:
		// graphql-sse's single connection mode reserves its stream with a
		// PUT, then starts operations on it with POSTs that carry the
		// token: per-process state a deploy or a second replica would
		// lose. Its client falls back to nothing, so say what to use.
		w.Header().Set("Allow", allowedMethods)
		a.refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, SingleConnectionMessage)
		return
	default:
		w.Header().Set("Allow", allowedMethods)
		a.refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, clip(r.Method)+" is not served at /graphql; send queries with GET or POST")
		return
	}
	// Only a WebSocket offer is taken up; any other (h2c) is ignored.
	if headerHas(r.Header, "Upgrade", "websocket") {
		if !f.streams {
			a.refuse(http.StatusBadRequest, CodeBadRequest, "protocol upgrades (WebSocket) are not served: this server serves no subscriptions; send queries with GET or POST")
			return
		}
		f.next.ServeHTTP(w, r) // the WebSocket transport checks the handshake
		return
	}
	if !ok && !(f.streams && wantsEventStream(r.Header)) {
		a.refuse(http.StatusNotAcceptable, CodeNotAcceptable, "Accept allows neither "+graphqlResponseJSON+" nor "+mediaJSON+", the types of GraphQL answers (nor "+mediaEventStream+" for a subscription)")
		return
	}
	if r.Method == http.MethodPost {
		if msg := unsupportedBody(r.Header); msg != "" {
			w.Header().Set("Accept-Post", mediaJSON)
			a.refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, msg)
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// SingleConnectionMessage answers a PUT at /graphql: what graphql-sse's
// single connection mode sends first. The server's router answers it
// when /graphql is mounted there.
const SingleConnectionMessage = "PUT is not served at /graphql: graphql-sse's single connection mode (a stream reserved with PUT, operations POSTed with its token) is not served; use its distinct connections mode (the client's default, singleConnection: false): one GET or POST with Accept: " + mediaEventStream + " per subscription, or WebSocket (graphql-transport-ws)"

// unsupportedBody says what is wrong with how a POST body is sent, or "".
func unsupportedBody(h http.Header) string {
	ct := h.Get("Content-Type")
	if ct == "" {
		return "a POST needs Content-Type: " + mediaJSON + ` and a body {"query": "…"}`
	}
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil || mt != mediaJSON:
		return "Content-Type " + clip(ct) + " is not served; send " + mediaJSON + ` with a body {"query": "…"}`
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return "charset " + clip(params["charset"]) + " is not served; send UTF-8"
	}
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return "Content-Encoding " + clip(ce) + " is not served; send the body uncompressed"
	}
	return ""
}

// clip bounds a client-given value quoted in a message.
func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}

// answer writes one answer of the GraphQL endpoint, choosing its status,
// media type and caching headers.
type answer struct {
	w      http.ResponseWriter
	r      *http.Request
	strict bool             // application/graphql-response+json; else application/json
	fresh  *pages.Freshness // the pages read, on GET only
	run    *runner
	// request is the request's bytes (a GET's query string, a POST's
	// body) when answers may be kept under them (runner.hot).
	request string
}

func (a *answer) contentType() string {
	if a.strict {
		return graphqlResponseJSON + "; charset=utf-8"
	}
	return mediaJSON + "; charset=utf-8"
}

// header sets what every answer carries: the media type, and Vary since
// that follows Accept.
func (a *answer) header() http.Header {
	h := a.w.Header()
	h.Set("Content-Type", a.contentType())
	h.Add("Vary", "Accept")
	return h
}

// requestStatus is the status of an answer with no data: a document that
// does not parse, is invalid, breaks a limit, names no operation, has
// variables that do not fit, or a persisted query not known. JSON
// answers them 200, as the GraphQL-over-HTTP draft requires for
// application/json (clients of that type read errors from the body); the
// GraphQL response type 400, since an answer without data must be 4xx.
func (a *answer) requestStatus() int {
	if a.strict {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// requestErrors answers errors raised before execution: no data entry.
// An error without a code is a malformed request (persisted-query
// extensions gqlgen refuses).
func (a *answer) requestErrors(errs gqlerror.List, ext map[string]any) {
	status := a.requestStatus()
	for _, e := range errs {
		if e.Extensions["code"] == nil {
			if e.Extensions == nil {
				e.Extensions = map[string]any{}
			}
			e.Extensions["code"] = CodeBadRequest
			status = http.StatusBadRequest
		}
	}
	a.errors(status, errs, ext)
}

// refuse answers a request that is not a GraphQL request it can serve.
func (a *answer) refuse(status int, code, msg string) {
	a.errors(status, gqlerror.List{{Message: msg, Extensions: map[string]any{"code": code}}}, nil)
}

// getMutation refuses an operation other than a query sent with GET,
// which must not change anything (GraphQL over HTTP: 405).
func (a *answer) getMutation() {
	a.w.Header().Set("Allow", http.MethodPost)
	a.refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "GET requests only allow query operations; send mutations with POST")
}

// busy answers a request that found no turn at the gate.
func (a *answer) busy() {
	if a.r.Context().Err() != nil {
		return // the client left
	}
	a.w.Header().Set("Retry-After", "1")
	a.errors(http.StatusServiceUnavailable, gqlerror.List{busyError()}, nil)
}

// errorsBody is an answer with errors only: the GraphQL spec leaves the
// data entry out when execution did not start.
type errorsBody struct {
	Errors     gqlerror.List  `json:"errors"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

func (a *answer) errors(status int, errs gqlerror.List, ext map[string]any) {
	b, err := json.Marshal(errorsBody{Errors: capErrors(errs), Extensions: ext})
	if err != nil {
		b = []byte(`{"errors":[{"message":"response could not be encoded","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	h := a.header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	a.w.WriteHeader(status)
	_, _ = a.w.Write(b)
}

// data answers an executed operation, written as parts in order. A GET
// answer without errors (clean) is cacheable for as long as the pages it
// read stay fresh, with an ETag that If-None-Match can match.
func (a *answer) data(parts [][]byte, clean bool) {
	h := a.header()
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	secs, cacheable := 0, false
	if a.fresh != nil && clean {
		secs, cacheable = a.fresh.MaxAge(a.run.refresh, a.run.now())
	}
	if !cacheable {
		h.Set("Cache-Control", "no-store")
	} else {
		// The media type is part of the representation, so of its tag.
		etag := httpcache.ETag(append([][]byte{[]byte(a.contentType())}, parts...)...)
		h.Set("Cache-Control", a.run.cc.Value(secs))
		h.Set("ETag", etag)
		if httpcache.NoneMatch(a.r.Header.Get("If-None-Match"), etag) {
			httpcache.NotModified(a.w)
			return
		}
	}
	h.Set("Content-Length", strconv.Itoa(n))
	a.w.WriteHeader(http.StatusOK)
	for _, p := range parts {
		if _, err := a.w.Write(p); err != nil {
			return
		}
	}
}

// marshalResponse encodes an executed operation's answer.
func marshalResponse(resp *graphql.Response) []byte {
	resp.Errors = capErrors(resp.Errors)
	b, err := json.Marshal(resp)
	if err != nil {
		return []byte(`{"data":null,"errors":[{"message":"response could not be encoded","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	return b
}

// codeForStatus is the code of a request the transport could not read.
func codeForStatus(status int) string {
	if status == http.StatusRequestEntityTooLarge || status == http.StatusRequestURITooLong {
		return CodeRequestTooLarge
	}
	return CodeBadRequest
}

// maxErrors is the most errors an answer lists. Each is a few hundred
// bytes, and whatever the document limits let through, a client reads
// the first few: an answer of 30,000 errors is megabytes written for
// nothing.
const maxErrors = 100

// capErrors keeps the first maxErrors errors of errs and says in one more
// how many were left out (extensions.omittedErrors), with the code of the
// first, so a client that reads codes still sees the kind of failure.
func capErrors(errs gqlerror.List) gqlerror.List {
	if len(errs) <= maxErrors {
		return errs
	}
	n := len(errs) - maxErrors
	more := gqlerror.Errorf("%d more errors are left out of this answer; fix the ones above and send it again", n)
	more.Extensions = map[string]any{"omittedErrors": n}
	if code, ok := errs[0].Extensions["code"]; ok {
		more.Extensions["code"] = code
	}
	return append(errs[:maxErrors:maxErrors], more)
}
