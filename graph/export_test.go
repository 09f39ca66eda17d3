package graph

import "net/http"

// SetParseHook makes the handler call f for each document that passes the
// limits and goes on to gqlgen's parser and validator.
func SetParseHook(cfg *HandlerConfig, f func(query string)) { cfg.onParse = f }

// SetExecuteHook makes the handler call f each time gqlgen's executor
// runs an operation.
func SetExecuteHook(cfg *HandlerConfig, f func()) { cfg.onExecute = f }

// RenderWithExecutor makes the fast path render feed answers with the
// executor rather than the writer.
func RenderWithExecutor(cfg *HandlerConfig) { cfg.executorOnly = true }

// OpenSubscriptions is the number of subscriptions h holds open.
func OpenSubscriptions(h *Handler) int64 { return h.streams.open.Load() }

// ServeKept answers r from h's kept answers only, reporting whether it
// did: what a repeated request gets without reaching gqlgen.
func ServeKept(h *Handler, w http.ResponseWriter, r *http.Request) bool {
	return h.hot != nil && h.hot.serve(w, r)
}
