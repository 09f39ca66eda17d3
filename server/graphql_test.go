package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// gqlErrorBody is a GraphQL answer without data.
type gqlErrorBody struct {
	Data   *json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// wantGraphQLError checks a refusal at /graphql: GraphQL's error shape
// (one error with a message and extensions.code, no data entry), not the
// REST one, and never cached.
func wantGraphQLError(t *testing.T, status int, header http.Header, body []byte, wantStatus int, code string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d; body %s", status, wantStatus, body)
	}
	var b gqlErrorBody
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body is not JSON: %v; %s", err, body)
	}
	if strings.Contains(string(body), `"data"`) || len(b.Errors) != 1 || b.Errors[0].Message == "" || b.Errors[0].Extensions["code"] != code {
		t.Errorf("body %s, want one GraphQL error with code %s and no data", body, code)
	}
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
}

// The router's refusals at /graphql (methods it does not route there, a
// body over the limit) are GraphQL errors, since GraphQL clients read
// them; the same refusals elsewhere keep the REST shape.
func TestGraphQLRefusalsInGraphQLShape(t *testing.T) {
	e, reached := corsEnv(t, nil)
	for _, m := range []string{http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodOptions, "TRACE", "PROPFIND"} {
		rec := e.send(m, "/graphql", "")
		wantGraphQLError(t, rec.Code, rec.Header(), rec.Body.Bytes(), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		if got := rec.Header().Get("Allow"); got != "GET, HEAD, POST" {
			t.Errorf("%s /graphql: Allow %q", m, got)
		}
	}
	big := `{"query":"{ __typename }","variables":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`
	rec := e.send(http.MethodPost, "/graphql", big, "Content-Type", "application/json")
	wantGraphQLError(t, rec.Code, rec.Header(), rec.Body.Bytes(), http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE")
	if n := reached.Load(); n != 0 {
		t.Errorf("%d refused requests reached the GraphQL handler", n)
	}
	// Elsewhere, the REST shape.
	wantError(t, e.send(http.MethodDelete, "/v1/feed", ""), http.StatusMethodNotAllowed, "method_not_allowed")
	wantError(t, e.send(http.MethodPost, "/v1/feed", big, "Content-Type", "application/json"), http.StatusRequestEntityTooLarge, "request_too_large")
	// The GraphQL handler itself still gets what is routed to it.
	if rec := e.send(http.MethodGet, "/graphql?query=%7B__typename%7D", ""); rec.Code != http.StatusOK || reached.Load() != 1 {
		t.Errorf("GET /graphql: %d, reached %d", rec.Code, reached.Load())
	}
}
