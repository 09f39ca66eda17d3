package server

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"
)

// gqlCodeRateLimited is the GraphQL handler's code for the same refusal.
const gqlCodeRateLimited = "RATE_LIMITED"

// newRateLimit limits each client (see clientAddr) to rpm requests in a
// sliding minute. A refused request gets 429 with Retry-After: the
// seconds until the current window ends, when the client may ask again.
func (h *handler) newRateLimit(rpm int) func(http.Handler) http.Handler {
	l := httprate.NewRateLimiter(rpm, time.Minute,
		httprate.WithKeyFuncs(func(r *http.Request) (string, error) { return rateKey(h.clientAddr(r)), nil }),
		httprate.WithLimitHandler(h.rateLimited),
	)
	return l.Handler
}

// rateLimited answers a request over the limit in the shape its route's
// clients read.
func (h *handler) rateLimited(w http.ResponseWriter, r *http.Request) {
	if h.metrics != nil {
		h.metrics.Route(chi.RouteContext(r.Context()).RoutePattern()).RateLimited()
	}
	retry := 60
	// httprate sets the end of the window as a Unix time; its Retry-After
	// is always the whole window.
	if reset, err := strconv.ParseInt(w.Header().Get("X-RateLimit-Reset"), 10, 64); err == nil {
		retry = max(1, int(reset-h.now().Unix()))
	}
	msg := "too many requests from this client: at most " + w.Header().Get("X-RateLimit-Limit") + " a minute; retry in " + strconv.Itoa(retry) + "s"
	if h.isGraphQL(r) {
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		h.failGraphQL(w, r, http.StatusTooManyRequests, gqlCodeRateLimited, msg)
		return
	}
	if h.widget != nil && (r.URL.Path == "/embed" || strings.HasPrefix(r.URL.Path, "/embed/")) {
		// A page in someone's frame, or the fragment its script reads:
		// the widget's HTML and headers, not the API's JSON.
		h.widget.RateLimited(w, r, retry)
		return
	}
	h.fail(w, r, apiError{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: msg, RetryAfter: retry})
}

// clientAddr is the address requests are limited by: the peer's, unless
// the peer is a trusted proxy; then the nearest address in X-Forwarded-For
// that is not a trusted proxy itself (the ones before it could be forged
// by the client), else X-Real-IP.
func (h *handler) clientAddr(r *http.Request) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if !h.trustedProxy(peer) {
		return peer
	}
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		hops := strings.Split(strings.Join(xff, ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed hop: nothing before it can be trusted
			}
			a = a.Unmap()
			if !h.trustedProxy(a) {
				return a
			}
		}
	}
	if a, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get("X-Real-IP"))); err == nil {
		return a.Unmap()
	}
	return peer
}

// rateKey is the budget a client address draws on: the address itself
// for IPv4, its /64 for IPv6. A host is normally given a whole /64 and
// may use any address in it, so per-address budgets would let one client
// have as many as it likes (and the limiter keep a counter for each).
func rateKey(a netip.Addr) string {
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}

func (h *handler) trustedProxy(a netip.Addr) bool {
	for _, p := range h.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr parses http.Request.RemoteAddr ("ip:port"); an unparsable one
// (not from net/http) maps to the zero address, one shared key.
func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}
