package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/server"
)

const (
	appOrigin   = "https://app.example"
	otherOrigin = "https://other.example"
	evilOrigin  = "https://evil.example"
)

// corsEnv is the router with CORS_ORIGINS set to origins, the real REST
// routes, and a GraphQL mount that counts the requests reaching it.
func corsEnv(t *testing.T, origins []string) (*env, *atomic.Int64) {
	t.Helper()
	var reached atomic.Int64
	mount := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{}}`)
	})
	return newEnv(t, envOptions{refresh: 10 * time.Second, feed: true, graphQL: mount, playground: mount, cors: origins}), &reached
}

// send sends one request with the given headers, name and value pairs.
func (e *env) send(method, target, body string, header ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

func preflight(e *env, origin, method, target, headers string) *httptest.ResponseRecorder {
	h := []string{"Origin", origin, "Access-Control-Request-Method", method}
	if headers != "" {
		h = append(h, "Access-Control-Request-Headers", headers)
	}
	return e.send(http.MethodOptions, target, "", h...)
}

// listHas reports whether a comma-separated header, over all its lines,
// holds v (case-insensitively).
func listHas(h http.Header, name, v string) bool {
	for _, line := range h.Values(name) {
		for _, item := range strings.Split(line, ",") {
			if strings.EqualFold(strings.TrimSpace(item), v) {
				return true
			}
		}
	}
	return false
}

// noCORS checks that an answer allows nothing cross-origin.
func noCORS(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	for name := range rec.Header() {
		if strings.HasPrefix(name, "Access-Control-") {
			t.Errorf("%s: %q", name, rec.Header().Values(name))
		}
	}
}

// The preflights browsers send for the API's routes, each asking for the
// headers a GraphQL or REST client adds.
var corsPreflights = []struct {
	method, target, headers string
}{
	{"POST", "/v1/feed", "content-type, x-request-id, apollographql-client-name, apollographql-client-version"},
	{"POST", "/v1/previews", "content-type, traceparent, tracestate, baggage, sentry-trace"},
	{"GET", "/v1/preview/" + demoChannel, "if-none-match, cache-control, x-request-id"},
	{"GET", "/v1/body/" + demoChannel + "?position=1", "x-request-id, if-modified-since, pragma, x-requested-with"},
	{"GET", "/v1/more/" + demoChannel + "/before/5", "accept"},
	{"POST", "/graphql", "content-type, accept, apollographql-client-name, apollographql-client-version, apollo-require-preflight, x-apollo-operation-name, x-apollo-operation-id, authorization"},
	{"POST", "/graphql", "content-type, graphql-client-name, graphql-client-version, x-graphql-client-name, x-graphql-client-version"},
	{"GET", "/graphql?query=%7B__typename%7D", "apollo-require-preflight, x-apollo-operation-name, x-request-id, if-none-match"},
}

func TestCORSPreflightOnEveryRoute(t *testing.T) {
	for _, c := range []struct {
		name    string
		origins []string
		want    string // Access-Control-Allow-Origin
	}{
		{"any origin", []string{"*"}, "*"},
		{"listed origins", []string{otherOrigin, appOrigin}, appOrigin},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, reached := corsEnv(t, c.origins)
			for _, p := range corsPreflights {
				rec := preflight(e, appOrigin, p.method, p.target, p.headers)
				if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
					t.Errorf("%s %s: status %d, body %q; want 204 and no body", p.method, p.target, rec.Code, rec.Body)
				}
				h := rec.Header()
				if got := h.Get("Access-Control-Allow-Origin"); got != c.want {
					t.Errorf("%s %s: Allow-Origin %q, want %q", p.method, p.target, got, c.want)
				}
				if !listHas(h, "Access-Control-Allow-Methods", p.method) {
					t.Errorf("%s %s: Allow-Methods %q", p.method, p.target, h.Values("Access-Control-Allow-Methods"))
				}
				for _, name := range strings.Split(p.headers, ",") {
					if !listHas(h, "Access-Control-Allow-Headers", strings.TrimSpace(name)) {
						t.Errorf("%s %s: Allow-Headers %q lacks %s", p.method, p.target, h.Values("Access-Control-Allow-Headers"), name)
					}
				}
				if h.Get("Access-Control-Max-Age") == "" {
					t.Errorf("%s %s: no Access-Control-Max-Age", p.method, p.target)
				}
				if !listHas(h, "Vary", "Origin") {
					t.Errorf("%s %s: Vary %q", p.method, p.target, h.Values("Vary"))
				}
				if h.Get("X-Request-Id") == "" {
					t.Errorf("%s %s: no X-Request-Id", p.method, p.target)
				}
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("%d preflights reached the GraphQL handler", n)
			}
			if n := e.origin.Total(); n != 0 {
				t.Errorf("preflights made %d origin fetches", n)
			}
		})
	}
}

func TestCORSActualRequests(t *testing.T) {
	for _, c := range []struct {
		name    string
		origins []string
		want    string
	}{
		{"any origin", []string{"*"}, "*"},
		{"listed origins", []string{appOrigin, otherOrigin}, appOrigin},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, reached := corsEnv(t, c.origins)
			for _, r := range []struct {
				method, target, body string
				status               int
			}{
				{"GET", "/v1/preview/" + demoChannel, "", http.StatusOK},
				{"HEAD", "/v1/body/" + demoChannel, "", http.StatusOK},
				{"POST", "/v1/feed", `{"channels": ["` + demoChannel + `"], "limit": 2}`, http.StatusOK},
				{"POST", "/graphql", `{"query": "{ __typename }"}`, http.StatusOK},
				{"GET", "/graphql?query=%7B__typename%7D", "", http.StatusOK},
				// Errors too, so that a script can read their code.
				{"GET", "/v1/body/%00", "", http.StatusBadRequest},
				{"PUT", "/v1/feed", "{}", http.StatusMethodNotAllowed},
			} {
				rec := e.send(r.method, r.target, r.body, "Origin", appOrigin, "Content-Type", "application/json", "X-Request-Id", "trace-42")
				if rec.Code != r.status {
					t.Errorf("%s %s: status %d, want %d; %s", r.method, r.target, rec.Code, r.status, rec.Body)
				}
				h := rec.Header()
				if got := h.Get("Access-Control-Allow-Origin"); got != c.want && r.method != "PUT" {
					t.Errorf("%s %s: Allow-Origin %q, want %q", r.method, r.target, got, c.want)
				}
				if r.method == "PUT" { // not a method cross-origin scripts may use
					if got := h.Get("Access-Control-Allow-Origin"); got != "" {
						t.Errorf("PUT: Allow-Origin %q", got)
					}
					continue
				}
				for _, name := range []string{"X-Request-Id", "ETag"} {
					if !listHas(h, "Access-Control-Expose-Headers", name) {
						t.Errorf("%s %s: Expose-Headers %q lacks %s", r.method, r.target, h.Values("Access-Control-Expose-Headers"), name)
					}
				}
				if !listHas(h, "Vary", "Origin") {
					t.Errorf("%s %s: Vary %q", r.method, r.target, h.Values("Vary"))
				}
				if got := h.Get("X-Request-Id"); got != "trace-42" {
					t.Errorf("%s %s: X-Request-Id %q", r.method, r.target, got)
				}
				if h.Get("Access-Control-Allow-Credentials") != "" {
					t.Errorf("%s %s: credentials allowed", r.method, r.target)
				}
			}
			if n := reached.Load(); n != 2 {
				t.Errorf("%d requests reached the GraphQL handler, want 2", n)
			}
		})
	}
}

func TestCORSRefusals(t *testing.T) {
	e, reached := corsEnv(t, []string{appOrigin, otherOrigin})
	for _, p := range []struct {
		name, origin, method, target, headers string
	}{
		{"origin not listed", evilOrigin, "POST", "/v1/feed", "content-type"},
		{"origin not listed, GraphQL", evilOrigin, "POST", "/graphql", "content-type"},
		{"listed origin's subdomain", "https://x.app.example", "GET", "/v1/preview/" + demoChannel, ""},
		{"header not allowed", appOrigin, "POST", "/graphql", "content-type, x-secret"},
		{"method not allowed", appOrigin, "DELETE", "/v1/body/" + demoChannel, ""},
	} {
		rec := preflight(e, p.origin, p.method, p.target, p.headers)
		if rec.Code != http.StatusNoContent {
			t.Errorf("%s: status %d, want 204", p.name, rec.Code)
		}
		noCORS(t, rec)
		if !listHas(rec.Header(), "Vary", "Origin") {
			t.Errorf("%s: Vary %q", p.name, rec.Header().Values("Vary"))
		}
	}
	for _, target := range []string{"/v1/preview/" + demoChannel, "/graphql?query=%7B__typename%7D"} {
		rec := e.send(http.MethodGet, target, "", "Origin", evilOrigin)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s from %s: status %d", target, evilOrigin, rec.Code)
		}
		noCORS(t, rec)
		// Caches must not hand this answer to an allowed origin.
		if !listHas(rec.Header(), "Vary", "Origin") {
			t.Errorf("GET %s from %s: Vary %q", target, evilOrigin, rec.Header().Values("Vary"))
		}
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("%d requests reached the GraphQL handler, want 1", n)
	}
}

// Without CORS_ORIGINS no answer carries CORS headers, and OPTIONS, a
// preflight or not, gets the JSON 405 like any method a route lacks (in
// GraphQL's error shape at /graphql).
func TestCORSOff(t *testing.T) {
	e, reached := corsEnv(t, nil)
	for _, p := range []struct{ target, allow string }{
		{"/v1/feed", "POST"},
		{"/v1/preview/" + demoChannel, "GET, HEAD"},
		{"/graphql", "GET, HEAD, POST"},
	} {
		for _, rec := range []*httptest.ResponseRecorder{
			preflight(e, appOrigin, "POST", p.target, "content-type, x-request-id"),
			e.send(http.MethodOptions, p.target, ""),
		} {
			if p.target == "/graphql" {
				wantGraphQLError(t, rec.Code, rec.Header(), rec.Body.Bytes(), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
			} else {
				wantError(t, rec, http.StatusMethodNotAllowed, server.CodeMethodNotAllowed)
			}
			if got := rec.Header().Get("Allow"); got != p.allow {
				t.Errorf("OPTIONS %s: Allow %q, want %q", p.target, got, p.allow)
			}
			noCORS(t, rec)
		}
	}
	rec := e.send(http.MethodGet, "/v1/preview/"+demoChannel, "", "Origin", appOrigin)
	var v map[string]json.RawMessage
	wantOK(t, rec, &v)
	noCORS(t, rec)
	if slices.Contains(rec.Header().Values("Vary"), "Origin") {
		t.Errorf("Vary %q without CORS", rec.Header().Values("Vary"))
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d requests reached the GraphQL handler", n)
	}
}
