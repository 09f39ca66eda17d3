package server

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/pages"
)

// gqlCodeRateLimited is the GraphQL handler's code for the same refusal.
const gqlCodeRateLimited = "RATE_LIMITED"

// RateLimit is the per-client budget of RATE_LIMIT_RPM: the HTTP routes
// draw on it (Config.RateLimit), and so do the subscribe messages of an
// open WebSocket connection (AllowMessage), so that one upgrade does not
// buy unlimited work. It is a GCRA bucket per client (internal/gcra, the
// limiter the origin budget uses too), in process: a client may send
// RATE_LIMIT_RPM requests at once, then one every minute/RATE_LIMIT_RPM,
// and a refusal's Retry-After is the wait until its next request is
// admitted, read off the bucket.
type RateLimit struct {
	rpm     int // RATE_LIMIT_RPM; 0 when only consumers' own rpm= limit
	trusted []netip.Prefix
	limit   gcra.Limit
	buckets *gcra.Local
	header  []string // X-RateLimit-Limit's value
}

// RateLimitConfig configures a RateLimit.
type RateLimitConfig struct {
	// RPM is the requests a minute each client may make; ≤ 0 means no
	// limit (NewRateLimit returns nil).
	RPM int
	// Trusted is Config.TrustedProxies: the client is found as it says.
	Trusted []netip.Prefix
	// Now is the limiter's clock; nil means time.Now.
	Now func() time.Time
	// Consumers is set when API keys are on: a consumer's own rpm=
	// (API_KEYS_FILE) limits it even when RPM is 0, so the RateLimit is
	// never nil then.
	Consumers bool
}

// NewRateLimit limits each client as cfg says; nil when cfg.RPM ≤ 0 and
// there are no consumers.
func NewRateLimit(cfg RateLimitConfig) *RateLimit {
	if cfg.RPM <= 0 && !cfg.Consumers {
		return nil
	}
	l := &RateLimit{
		rpm:     max(cfg.RPM, 0),
		trusted: cfg.Trusted,
		buckets: gcra.NewLocal(gcra.LocalConfig{Now: cfg.Now}),
	}
	if l.rpm > 0 {
		l.limit = gcra.Limit{Rate: l.rpm, Per: time.Minute, Burst: l.rpm}
		l.header = []string{strconv.Itoa(l.rpm)}
	}
	return l
}

// limitFor is the limit the request with record info draws on: its
// consumer's own rpm= when it has one, else RATE_LIMIT_RPM's; ok is false
// when neither limits it.
func (l *RateLimit) limitFor(info *reqInfo) (lim gcra.Limit, header []string, ok bool) {
	if info != nil && info.grant.Consumer != nil && info.grant.Consumer.RPM > 0 {
		rpm := info.grant.Consumer.RPM
		return gcra.Limit{Rate: rpm, Per: time.Minute, Burst: rpm}, []string{strconv.Itoa(rpm)}, true
	}
	return l.limit, l.header, l.rpm > 0
}

// take spends one request of key's budget under lim; refused, it returns
// the whole seconds (at least 1) until key's next request is admitted.
func (l *RateLimit) take(key string, lim gcra.Limit) (ok bool, retryAfter int) {
	d, err := l.buckets.Take(context.Background(), 1, gcra.Ask{Key: key, Limit: lim})
	if err != nil { // a valid limit never fails
		return false, int(time.Minute / time.Second)
	}
	if d.OK {
		return true, 0
	}
	return false, max(1, int((d.Wait+time.Second-1)/time.Second))
}

// AllowMessage spends one request of the budget of r's client on a
// message sent over r's connection (r is the WebSocket upgrade). When the
// budget is spent it refuses, with the wait until the client's next
// request would be admitted.
func (l *RateLimit) AllowMessage(r *http.Request) (ok bool, retryAfter time.Duration) {
	info := requestInfo(r.Context())
	lim, _, limited := l.limitFor(info)
	if !limited {
		return true, 0
	}
	ok, secs := l.take(clientKey(r, info, l.trusted), lim)
	return ok, time.Duration(secs) * time.Second
}

// clientKey is the client every per-client limit counts r by: the one
// authenticate settled (a consumer, or the address of an anonymous
// request) when API keys are on, else the address key.
func clientKey(r *http.Request, info *reqInfo, trusted []netip.Prefix) string {
	if info != nil && info.client != "" {
		return info.client
	}
	return rateKey(clientAddr(r, trusted))
}

// newRateLimit limits each client (see clientAddr) to l's budget. A
// refused request gets 429 with Retry-After: the seconds until the
// client's next request would be admitted.
func (h *handler) newRateLimit(l *RateLimit) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := requestInfo(r.Context())
			lim, header, limited := l.limitFor(info)
			if !limited {
				next.ServeHTTP(w, r)
				return
			}
			w.Header()["X-Ratelimit-Limit"] = header
			if ok, retry := l.take(h.clientKey(r, info), lim); !ok {
				h.rateLimited(w, r, retry)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// rateLimited answers a request over the limit in the shape its route's
// clients read.
func (h *handler) rateLimited(w http.ResponseWriter, r *http.Request, retry int) {
	h.refuse(w, r, retry, "too many requests from this client: at most "+w.Header().Get("X-RateLimit-Limit")+" a minute; retry in "+strconv.Itoa(retry)+"s")
}

// refuse answers a request refused by one of its client's own limits,
// with msg, in the shape its route's clients read: 429 with Retry-After.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, retry int, msg string) {
	if h.metrics != nil {
		h.metrics.Route(chi.RouteContext(r.Context()).RoutePattern()).RateLimited()
	}
	if info := requestInfo(r.Context()); info != nil {
		info.refused.Store(true)
	}
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	if h.isGraphQL(r) {
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
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if !trustedProxy(trusted, peer) {
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
			if !trustedProxy(trusted, a) {
				return a
			}
		}
	}
	if a, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get("X-Real-IP"))); err == nil {
		return a.Unmap()
	}
	return peer
}

// clientName is the client of r as every per-client limit counts it
// (RATE_LIMIT_RPM, STREAMS_PER_CLIENT, CLIENT_ORIGIN_RPM): the one name a
// request's client goes by, passed down to the origin budget with its
// requests.
func (h *handler) clientName(r *http.Request) string {
	return h.clientKey(r, requestInfo(r.Context()))
}

// clientKey is the client every per-client limit counts r by (see the
// function clientKey).
func (h *handler) clientKey(r *http.Request, info *reqInfo) string {
	return clientKey(r, info, h.trusted)
}

// who names r's client for the origin budget when asked (on a miss):
// the request's record, so that a hit pays for nothing.
func (h *handler) who(r *http.Request, info *reqInfo) pages.ClientNamer {
	if info == nil {
		return clientName(h.clientName(r))
	}
	info.clientOf.h, info.clientOf.r = h, r
	return info
}

// clientName is a client's name as a pages.ClientNamer.
type clientName string

func (c clientName) ClientName() string { return string(c) }

func (c clientName) ClientID() uint64 { return pages.ClientID(string(c)) }

// ClientKey returns the function naming a request's client as the
// server's per-client limits do, for the faces mounted beside it (GraphQL,
// the widget) to charge the origin budget alike; trusted is
// Config.TrustedProxies.
func ClientKey(trusted []netip.Prefix) func(*http.Request) string {
	return func(r *http.Request) string { return clientKey(r, requestInfo(r.Context()), trusted) }
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

// rateKeyID is pages.ClientID(rateKey(a)), made in a buffer of its own
// rather than a string.
func rateKeyID(a netip.Addr) uint64 {
	if !a.IsValid() {
		return pages.ClientID(rateKey(a))
	}
	var buf [64]byte
	b := buf[:0]
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return xxh3.Hash(p.AppendTo(b))
		}
	}
	return xxh3.Hash(a.AppendTo(b))
}

func (h *handler) trustedProxy(a netip.Addr) bool { return trustedProxy(h.trusted, a) }

func trustedProxy(trusted []netip.Prefix, a netip.Addr) bool {
	for _, p := range trusted {
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
