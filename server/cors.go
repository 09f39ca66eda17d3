package server

import (
	"net/http"

	"github.com/go-chi/cors"
)

// corsAllowedHeaders are the request headers cross-origin scripts may send:
// what GraphQL clients (Apollo, urql, Relay, graphql-request, Hive) and
// front-end tracing add to a fetch. A preflight asking for any other header
// gets no allow headers, so the browser never sends the request.
// Authorization and X-API-Key carry API keys (API_KEYS_FILE; without keys
// the API ignores them, and many clients send Authorization anyway).
// Credentials (cookies) are never allowed.
var corsAllowedHeaders = []string{
	"Accept",
	"Content-Type",
	"Authorization",
	"X-Api-Key",
	"X-Request-Id",
	"X-Requested-With",
	"If-None-Match",
	"If-Modified-Since",
	"Cache-Control",
	"Pragma",
	"Apollographql-Client-Name",
	"Apollographql-Client-Version",
	"Apollo-Require-Preflight",
	"X-Apollo-Operation-Name",
	"X-Apollo-Operation-Id",
	"Graphql-Client-Name",
	"Graphql-Client-Version",
	"X-Graphql-Client-Name",
	"X-Graphql-Client-Version",
	"Traceparent",
	"Tracestate",
	"Baggage",
	"Sentry-Trace",
}

// corsExposedHeaders are the answer headers scripts may read beyond the
// CORS-safelisted ones.
var corsExposedHeaders = []string{"X-Request-Id", "ETag", "Retry-After"}

// corsMaxAge is how long, in seconds, a browser may reuse a preflight.
const corsMaxAge = 600

// newCORS returns the one CORS policy of every route, or nil when origins
// is empty (no CORS headers at all). Preflights are answered here, 204,
// before routing: the router would send an OPTIONS to the JSON 405.
func newCORS(origins []string) func(http.Handler) http.Handler {
	if len(origins) == 0 {
		return nil
	}
	c := cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost},
		AllowedHeaders: corsAllowedHeaders,
		ExposedHeaders: corsExposedHeaders,
		MaxAge:         corsMaxAge,
		// go-chi/cors would answer preflights 200 itself; passing them on
		// lets the handler below answer 204 No Content.
		OptionsPassthrough: true,
	})
	return func(next http.Handler) http.Handler {
		return c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isPreflight(r) {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
}

// isPreflight tells a CORS preflight as go-chi/cors does.
func isPreflight(r *http.Request) bool {
	_, origin := r.Header["Origin"]
	return r.Method == http.MethodOptions && origin && r.Header.Get("Access-Control-Request-Method") != ""
}
