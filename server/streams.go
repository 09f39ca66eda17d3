package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// streamRetryAfter is the Retry-After of a stream refused for its
// client's bound: a stream frees its place whenever its client closes it,
// so there is no window to wait for; a few seconds keep a client that
// retries at once from spinning.
const streamRetryAfter = 5

// errTooManyStreams is the cause of the refusal, for the request log.
var errTooManyStreams = errors.New("the client has STREAMS_PER_CLIENT streams open")

// streamLimit bounds the streams (WebSocket connections and event
// streams) each client holds open at once. Its map holds the clients with
// a stream open, each entry removed when its last stream ends, so it is
// as large as the streams open at most.
type streamLimit struct {
	max int

	mu   sync.Mutex
	open map[string]int // client key → streams open
}

func newStreamLimit(perClient int) *streamLimit {
	return &streamLimit{max: perClient, open: map[string]int{}}
}

// acquire counts a stream of key in, or returns false when key holds
// limit.
func (l *streamLimit) acquire(key string, limit int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.open[key]
	if n >= limit {
		return false
	}
	l.open[key] = n + 1
	return true
}

// release counts a stream of key out.
func (l *streamLimit) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.open[key]; n > 1 {
		l.open[key] = n - 1
	} else {
		delete(l.open, key)
	}
}

// streamTeller is a GraphQL handler that tells which requests it keeps open
// as streams; *graph.Handler is one (graph.IsStream).
type streamTeller interface {
	IsStream(r *http.Request) bool
}

// limitStreams bounds the streams each client (clientKey, as the rate
// limit counts it) holds open at /graphql. A stream request over
// the bound is refused before the upgrade or the stream begins; a stream
// is counted until its handler returns, however it ends (the client gone,
// the server shutting down, a panic). Other requests pass untouched.
func (h *handler) limitStreams(perClient int, isStream func(*http.Request) bool, next http.Handler) http.Handler {
	l := newStreamLimit(perClient)
	msg := func(limit int) string {
		return "too many open streams from this client: it may hold " + strconv.Itoa(limit) +
			" at once (WebSocket connections and event streams together); close one (several subscriptions can share one WebSocket connection), or retry in " +
			strconv.Itoa(streamRetryAfter) + "s"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			next.ServeHTTP(w, r)
			return
		}
		info := requestInfo(r.Context())
		if info != nil && info.pendingKey {
			// A WebSocket whose key comes in connection_init: until it
			// does, its client is unknown (the address would count every
			// consumer behind it as one), so the connection is counted
			// when InitWebSocket has settled it, and refused then with
			// 4429 (see tooManyStreams).
			var mu sync.Mutex
			held := ""
			info.holdStream = func() error {
				limit := l.max
				if info.grant.Consumer != nil && info.grant.Consumer.Streams > 0 {
					limit = info.grant.Consumer.Streams
				}
				if limit == 0 {
					return nil
				}
				key := h.clientKey(r, info)
				if !l.acquire(key, limit) {
					h.streamsRefused(r)
					return tooManyStreams{limit: limit}
				}
				mu.Lock()
				held = key
				mu.Unlock()
				return nil
			}
			defer func() {
				mu.Lock()
				defer mu.Unlock()
				if held != "" {
					l.release(held)
				}
			}()
			next.ServeHTTP(w, r)
			return
		}
		// A consumer's own streams= bound, else STREAMS_PER_CLIENT's;
		// 0 for both is no bound.
		limit := l.max
		if info != nil && info.grant.Consumer != nil && info.grant.Consumer.Streams > 0 {
			limit = info.grant.Consumer.Streams
		}
		if limit == 0 {
			next.ServeHTTP(w, r)
			return
		}
		key := h.clientKey(r, info)
		if !l.acquire(key, limit) {
			h.streamsRefused(r)
			w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
			h.failGraphQL(w, r, http.StatusTooManyRequests, gqlCodeRateLimited, msg(limit))
			return
		}
		defer l.release(key)
		next.ServeHTTP(w, r)
	})
}

// streamsRefused notes a stream refused for its client's bound.
func (h *handler) streamsRefused(r *http.Request) {
	if h.metrics != nil {
		h.metrics.Route(chi.RouteContext(r.Context()).RoutePattern()).StreamsLimited()
	}
	h.warnUntrustedProxy(r)
	noteError(r.Context(), errTooManyStreams)
}

// closeTooManyStreams closes a WebSocket refused at connection_init for
// its client's bound: the HTTP status 429 in graphql-transport-ws's
// range of application codes.
const closeTooManyStreams = 4429

// tooManyStreams refuses a WebSocket at connection_init when its client
// holds as many streams as it may; its CloseCode is the GraphQL
// handler's close code (graph.HandlerConfig.InitWebSocket).
type tooManyStreams struct{ limit int }

func (e tooManyStreams) Error() string {
	return "too many open streams from this client: it may hold " + strconv.Itoa(e.limit) + " at once"
}

func (e tooManyStreams) CloseCode() int { return closeTooManyStreams }

func (e tooManyStreams) Unwrap() error { return errTooManyStreams }

// proxyWarnEvery spaces the warnings of warnUntrustedProxy.
const proxyWarnEvery = time.Minute

// warnUntrustedProxy logs, at most once per proxyWarnEvery, a refusal of
// streams to a peer that forwards for others but is not in
// TRUSTED_PROXIES: most likely the operator's own reverse proxy, whose
// clients then all share one bound.
func (h *handler) warnUntrustedProxy(r *http.Request) {
	if r.Header.Get("X-Forwarded-For") == "" && r.Header.Get("X-Real-IP") == "" {
		return
	}
	peer := peerAddr(r.RemoteAddr)
	if h.trustedProxy(peer) {
		return
	}
	now := h.now().UnixNano()
	last := h.proxyWarned.Load()
	if (last != 0 && now-last < int64(proxyWarnEvery)) || !h.proxyWarned.CompareAndSwap(last, now) {
		return // warned lately, or another request is warning just now
	}
	h.log.LogAttrs(r.Context(), slog.LevelWarn, "streams refused to a peer that forwards for others (X-Forwarded-For or X-Real-IP); if it is your reverse proxy, list it in TRUSTED_PROXIES, or every client behind it shares one STREAMS_PER_CLIENT",
		slog.String("peer", peer.String()))
}
