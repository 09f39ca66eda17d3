package server

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// graphQLPath is where Config.GraphQL is mounted. The refusals the router
// and the body limit give there (405, 413) take GraphQL's error shape,
// which clients of that endpoint read, with the codes the GraphQL handler
// uses for the same refusals.
const graphQLPath = "/graphql"

// Codes of GraphQL errors the server writes itself (see graph.Code*).
const (
	gqlCodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	gqlCodeRequestTooLarge  = "REQUEST_TOO_LARGE"
)

// isGraphQL reports whether r is for the mounted GraphQL handler.
func (h *handler) isGraphQL(r *http.Request) bool {
	return h.graphQL && r.URL.Path == graphQLPath
}

// singleConnectionMessage answers a PUT at /graphql when subscriptions
// are served: graphql-sse's single connection mode begins with one. It
// keeps a stream and its operations in one process's memory, which a
// deploy or another replica would lose; the handler's own answer to a PUT
// (graph.SingleConnectionMessage) says the same.
const singleConnectionMessage = "PUT is not served at /graphql: graphql-sse's single connection mode (a stream reserved with PUT, operations POSTed with its token) is not served; use its distinct connections mode (the client's default, singleConnection: false): one GET or POST with Accept: text/event-stream per subscription, or WebSocket (graphql-transport-ws)"

// failGraphQL answers a request to /graphql with a GraphQL error: no data
// entry, the message and a code in extensions.
func (h *handler) failGraphQL(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	closeIfBodyUnread(w, r)
	type gqlError struct {
		Message    string            `json:"message"`
		Extensions map[string]string `json:"extensions"`
	}
	b, _ := json.Marshal(struct {
		Errors []gqlError `json:"errors"`
	}{[]gqlError{{Message: message, Extensions: map[string]string{"code": code}}}})
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
