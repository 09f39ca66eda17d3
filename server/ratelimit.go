package server

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"
)

// gqlCodeRateLimited is the GraphQL handler's code for the same refusal.
const gqlCodeRateLimited = "RATE_LIMITED"

// rateWindow is the limiter's window: RATE_LIMIT_RPM counts requests in
// a sliding minute.
const rateWindow = time.Minute

// RateLimit is the per-client budget of RATE_LIMIT_RPM: the HTTP routes
// draw on it (Config.RateLimit), and so do the subscribe messages of an
// open WebSocket connection (AllowMessage), so that one upgrade does not
// buy unlimited work.
type RateLimit struct {
	*bucket // RATE_LIMIT_RPM's; nil when it is 0
	trusted []netip.Prefix

	// The buckets of consumers' own rpm= (API_KEYS_FILE), one per value:
	// consumers' client keys are apart, so those of one value share one.
	mu      sync.Mutex
	buckets map[int]*bucket
}

// bucket is one limiter: rpm requests a minute for each client key.
type bucket struct {
	rpm int
	// counter is the limiter's own rather than httprate's default so that
	// its windows are whole minutes of the wall clock (httprate aligns a
	// default counter's to the limiter's start, which a handler cannot
	// see) and the counts a refusal is explained by can be read back.
	counter httprate.LimitCounter
	limiter *httprate.RateLimiter
}

func newBucket(rpm int) *bucket {
	c := httprate.NewLocalLimitCounter(rateWindow)
	return &bucket{rpm: rpm, counter: c, limiter: httprate.NewRateLimiter(rpm, rateWindow, httprate.WithLimitCounter(c))}
}

// NewRateLimit limits each client to rpm requests in a sliding minute.
// The client is found as Config.TrustedProxies says, which trusted should
// be too. rpm ≤ 0 means no limit: nil.
func NewRateLimit(rpm int, trusted []netip.Prefix) *RateLimit {
	if rpm <= 0 {
		return nil
	}
	return &RateLimit{bucket: newBucket(rpm), trusted: trusted}
}

// NewConsumerRateLimit is NewRateLimit for an instance with API keys,
// where a consumer's own rpm= limits it even when rpm (RATE_LIMIT_RPM,
// everyone else's) is 0: never nil.
func NewConsumerRateLimit(rpm int, trusted []netip.Prefix) *RateLimit {
	l := &RateLimit{trusted: trusted}
	if rpm > 0 {
		l.bucket = newBucket(rpm)
	}
	return l
}

// bucketFor is the bucket the request with record info draws on: its
// consumer's own when it has an rpm=, else RATE_LIMIT_RPM's (nil: none).
func (l *RateLimit) bucketFor(info *reqInfo) *bucket {
	if info == nil || info.grant.Consumer == nil || info.grant.Consumer.RPM == 0 {
		return l.bucket
	}
	rpm := info.grant.Consumer.RPM
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[rpm]
	if b == nil {
		if l.buckets == nil {
			l.buckets = map[int]*bucket{}
		}
		b = newBucket(rpm)
		l.buckets[rpm] = b
	}
	return b
}

// AllowMessage spends one request of the budget of r's client on a
// message sent over r's connection (r is the WebSocket upgrade). When the
// budget is spent it refuses, with the wait until the client's next
// request would be admitted.
func (l *RateLimit) AllowMessage(r *http.Request) (ok bool, retryAfter time.Duration) {
	info := requestInfo(r.Context())
	b := l.bucketFor(info)
	if b == nil {
		return true, 0
	}
	key := clientKey(r, info, l.trusted)
	// httprate reports in headers, which here have no response to go to.
	if b.limiter.OnLimit(discardHeaders{}, r, key) {
		return false, time.Duration(b.retryAfter(key)) * time.Second
	}
	return true, 0
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

// discardHeaders is a ResponseWriter for httprate's headers alone.
type discardHeaders map[string][]string

func (d discardHeaders) Header() http.Header       { return http.Header(d) }
func (discardHeaders) Write(b []byte) (int, error) { return len(b), nil }
func (discardHeaders) WriteHeader(int)             {}

// retryAfter is the whole seconds until key's next request would be
// admitted, read from the counts the limiter holds now.
func (l *bucket) retryAfter(key string) int {
	now := time.Now().UTC()
	cw := now.Truncate(rateWindow) // as httprate computes it with a counter of its own
	curr, prev, err := l.counter.Get(key, cw, cw.Add(-rateWindow))
	if err != nil { // the local counter never fails
		return int(rateWindow / time.Second)
	}
	return admitAfter(l.rpm, prev, curr, now.Sub(cw), rateWindow)
}

// admitAfter is the whole seconds, at least 1, a client with prev requests
// in the previous window and curr in the current one, elapsed into it,
// waits until httprate admits its next one. httprate weighs the previous
// window by the part of it still inside the sliding window,
//
//	rate = prev·(W−elapsed)/W + curr,
//
// and admits while round(rate)+1 ≤ limit, which rate ≤ limit−1 ensures.
// The end of the current window is not enough: the requests of this one
// then weigh in as the previous window's.
func admitAfter(limit, prev, curr int, elapsed, window time.Duration) int {
	room := float64(limit - 1)
	var wait time.Duration
	switch {
	case curr <= limit-1 && prev == 0:
		// Admitted already (a race with the window's end); ask again soon.
	case curr <= limit-1:
		// Within this window, once enough of the previous one has slid out.
		at := float64(window) * (1 - (room-float64(curr))/float64(prev))
		wait = time.Duration(at) - elapsed
	default:
		// In the next window, once enough of this one has slid out.
		wait = window - elapsed + time.Duration(float64(window)*(1-room/float64(curr)))
	}
	return max(1, int((wait+time.Second-1)/time.Second))
}

// newRateLimit limits each client (see clientAddr) to rpm requests in a
// sliding minute. A refused request gets 429 with Retry-After: the
// seconds until the client's next request would be admitted.
func (h *handler) newRateLimit(l *RateLimit) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := requestInfo(r.Context())
			b := l.bucketFor(info)
			if b == nil {
				next.ServeHTTP(w, r)
				return
			}
			key := h.clientKey(r, info)
			if b.limiter.OnLimit(w, r, key) {
				h.rateLimited(w, r, b.retryAfter(key))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// rateLimited answers a request over the limit in the shape its route's
// clients read.
func (h *handler) rateLimited(w http.ResponseWriter, r *http.Request, retry int) {
	if h.metrics != nil {
		h.metrics.Route(chi.RouteContext(r.Context()).RoutePattern()).RateLimited()
	}
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	msg := "too many requests from this client: at most " + w.Header().Get("X-RateLimit-Limit") + " a minute; retry in " + strconv.Itoa(retry) + "s"
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

// clientKey is the client every per-client limit counts r by (see the
// function clientKey).
func (h *handler) clientKey(r *http.Request, info *reqInfo) string {
	return clientKey(r, info, h.trusted)
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
