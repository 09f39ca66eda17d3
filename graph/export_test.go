package graph

// SetParseHook makes the handler call f for each document that passes the
// limits and goes on to gqlgen's parser and validator.
func SetParseHook(cfg *HandlerConfig, f func(query string)) { cfg.onParse = f }

// OpenSubscriptions is the number of subscriptions h holds open.
func OpenSubscriptions(h *Handler) int64 { return h.streams.open.Load() }
