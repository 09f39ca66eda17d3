package server

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tmefeed/tmefeed/access"
	"github.com/tmefeed/tmefeed/tme"
)

// Anonymous is what a request without a key may do while API keys are on
// (ANONYMOUS).
type Anonymous uint8

const (
	// AnonymousOff: nothing; every route that reads pages or feeds
	// answers 401.
	AnonymousOff Anonymous = iota
	// AnonymousCached: single pages (the /v1 page routes, /v1/previews,
	// /media) answered from the cache only, never fetched from the
	// origin; everything else answers 401.
	AnonymousCached
	// AnonymousOn: everything, each address counted as a client as
	// without keys.
	AnonymousOn
)

// ParseAnonymous reads ANONYMOUS's values.
func ParseAnonymous(s string) (Anonymous, error) {
	switch s {
	case "off":
		return AnonymousOff, nil
	case "cached":
		return AnonymousCached, nil
	case "on":
		return AnonymousOn, nil
	}
	return 0, errors.New("want off, cached or on")
}

// Codes of the refusals of keys.
const (
	CodeUnauthenticated = "unauthenticated"
	CodeForbidden       = "forbidden"
	// The GraphQL handler's codes for the same refusals
	// (graph.CodeUnauthenticated, graph.CodeForbidden).
	gqlCodeUnauthenticated = "UNAUTHENTICATED"
	gqlCodeForbidden       = "FORBIDDEN"
)

// notCachedMessage answers an anonymous request under ANONYMOUS=cached
// for a page the cache does not hold.
const notCachedMessage = "this page is not in the cache, and requests without an API key are answered from the cache only: send a key to have it fetched"

// cacheOnly reports whether r may be answered from the cache only.
func cacheOnly(r *http.Request) bool {
	info := requestInfo(r.Context())
	return info != nil && info.cacheOnly
}

// wwwAuthenticate is the challenge of a 401 (RFC 6750).
const wwwAuthenticate = `Bearer realm="tmefeed"`

// Access asks the routes that read pages and feeds for an API key
// (API_KEYS_FILE): the HTTP routes (Config.Access) and the WebSocket
// connections whose key comes in connection_init (InitWebSocket) share it.
// It settles each request's client: the consumer for a request with a
// key, the address (see TRUSTED_PROXIES) for an anonymous one. Every
// per-client limit counts by that one value.
type Access struct {
	keys      *access.Keys
	anonymous Anonymous
	trusted   []netip.Prefix
}

// NewAccess returns the access check of keys; nil keys (no
// API_KEYS_FILE) return nil: every route open, as without keys.
func NewAccess(keys *access.Keys, anonymous Anonymous, trusted []netip.Prefix) *Access {
	if keys == nil {
		return nil
	}
	return &Access{keys: keys, anonymous: anonymous, trusted: trusted}
}

// keySource is where a request's key was found.
type keySource uint8

const (
	keyNone keySource = iota
	keyHeader
	keyQuery
)

// presentedKey finds the request's key: Authorization: Bearer,
// X-API-Key, or the query's key parameter (feed readers and frames cannot
// set headers).
func presentedKey(r *http.Request) (string, keySource) {
	if v := header(r.Header, "Authorization"); v != "" {
		if k, ok := cutPrefixFold(v, "Bearer "); ok {
			return strings.TrimSpace(k), keyHeader
		}
	}
	if v := header(r.Header, "X-Api-Key"); v != "" {
		return strings.TrimSpace(v), keyHeader
	}
	if strings.Contains(r.URL.RawQuery, "key=") {
		if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && q.Has("key") {
			return q.Get("key"), keyQuery
		}
	}
	return "", keyNone
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// stripKey takes the key parameter out of r's query, so that no handler
// echoes it (self links, the widget's URLs, error messages) and the
// request log never holds it. The key moves to X-API-Key, where a face
// that must hand it on (the widget's own URLs) finds it.
func stripKey(r *http.Request, key string) {
	q := r.URL.Query()
	q.Del("key")
	r.URL.RawQuery = q.Encode()
	r.RequestURI = r.URL.RequestURI()
	r.Header.Set("X-Api-Key", key)
}

// authenticate settles the request's client before the per-client limits
// count it, and refuses a request without a valid key: 401 for none or an
// unknown one, 403 for a widget key outside its channels.
func (h *handler) authenticate(a *Access) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := requestInfo(r.Context())
			key, src := presentedKey(r)
			if src == keyQuery {
				stripKey(r, key)
			}
			if src == keyNone {
				switch {
				case h.isGraphQL(r) && r.Method == http.MethodGet && h.isStream(r) && isUpgrade(r):
					// A browser cannot send headers with a WebSocket
					// upgrade: the key may come in connection_init, where
					// InitWebSocket checks it (4403 when it is missing
					// and anonymous streams are not allowed).
					info.pendingKey = true
				case a.anonymous == AnonymousOn:
				case a.anonymous == AnonymousCached && h.cacheOnlyRoute(r):
					info.cacheOnly = true
				default:
					h.unauthenticated(w, r, access.ErrNoKey)
					return
				}
				info.client = rateKey(clientAddr(r, a.trusted))
				next.ServeHTTP(w, r)
				return
			}
			g, err := a.keys.Lookup(key)
			if err != nil {
				h.unauthenticated(w, r, err)
				return
			}
			if g.Widget() {
				if msg := h.outOfScope(r, g); msg != "" {
					h.forbidden(w, r, msg)
					return
				}
			}
			info.setGrant(g)
			next.ServeHTTP(w, r)
		})
	}
}

// setGrant makes the grant's consumer the request's client.
func (info *reqInfo) setGrant(g access.Grant) {
	info.grant, info.client, info.pendingKey = g, consumerKey(g.Consumer.Name), false
}

// consumerKey is the client key of a consumer: apart from every address
// key (an address holds no '=').
func consumerKey(name string) string { return consumerPrefix + name }

const consumerPrefix = "consumer="

// OriginRPM is the share of the origin budget of the client every
// per-client limit names client (see ClientKey): a consumer's own
// origin_rpm= from the keys as they are now (after a SIGHUP, the
// new limit), 0 for an address or a consumer without one (CLIENT_ORIGIN_RPM
// then). It is origin.Budget.ClientLimit.
func (a *Access) OriginRPM(client string) int {
	name, ok := strings.CutPrefix(client, consumerPrefix)
	if !ok {
		return 0
	}
	if c := a.keys.Current().Consumer(name); c != nil {
		return c.OriginRPM
	}
	return 0
}

// cacheOnlyRoute reports whether r's route answers single pages, which an
// anonymous request may read from the cache under ANONYMOUS=cached.
// Feeds, GraphQL and the widget build from many pages and keep what they
// build for everyone: they need a key.
func (h *handler) cacheOnlyRoute(r *http.Request) bool {
	switch chi.RouteContext(r.Context()).RoutePattern() {
	case "/v1/body/{channel}", "/v1/post/{channel}/{id}", "/v1/more/{channel}/{direction}/{position}",
		"/v1/preview/{channel}", "/v1/search/{channel}", "/v1/previews", "/media/{channel}/{id}/{index}":
		return true
	}
	return false
}

// outOfScope says why a widget key may not make request r, or "". A
// widget key reads its channels through the routes that name channels in
// their URL, and subscribes to them over event streams and WebSocket
// (checked by the GraphQL handler, see Access.Scope); a body naming
// channels (POST /v1/feed, /v1/previews, GraphQL queries) is not read
// here, so those routes are closed to it.
func (h *handler) outOfScope(r *http.Request, g access.Grant) string {
	rctx := chi.RouteContext(r.Context())
	var names []string
	switch p := rctx.RoutePattern(); {
	case strings.Contains(p, "{channel}"):
		names = []string{pathParam(r, "channel")}
	case p == "/embed" || p == "/embed/*" || strings.HasPrefix(p, "/v1/") && r.Method == http.MethodGet:
		for _, v := range r.URL.Query()["channels"] {
			names = append(names, strings.Split(v, ",")...)
		}
	case p == graphQLPath && h.isStream(r):
		return ""
	default:
		return "a widget key reads its channels through /embed, the /v1 routes naming a channel in their path, the feed documents and /media; this request needs an API key"
	}
	for _, n := range names {
		ch, err := tme.NormalizeUsername(n)
		if err != nil {
			continue // the route answers it with its own 400
		}
		if !g.Allows(ch) {
			return "this widget key reads " + strings.Join(g.Channels, ", ") + " only, not " + ch
		}
	}
	return ""
}

// isUpgrade reports whether r offers a WebSocket upgrade: of the streams
// (an event stream is a GET too), only a WebSocket may bring its key
// after the request, in connection_init.
func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		if strings.EqualFold(strings.TrimSpace(v), "websocket") {
			return true
		}
	}
	return false
}

// isStream reports whether the GraphQL handler keeps r open as a stream
// (its IsStream): the handler itself checks the channels streams
// subscribe to, and reads a WebSocket's key in connection_init.
func (h *handler) isStream(r *http.Request) bool {
	return h.streams != nil && h.streams(r)
}

// unauthenticated answers 401 with the challenge, in the shape the
// route's clients read.
func (h *handler) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	noteError(r.Context(), err)
	w.Header().Set("WWW-Authenticate", wwwAuthenticate)
	h.refuseAccess(w, r, http.StatusUnauthorized, err.Error())
}

func (h *handler) forbidden(w http.ResponseWriter, r *http.Request, msg string) {
	noteError(r.Context(), errors.New(msg))
	h.refuseAccess(w, r, http.StatusForbidden, msg)
}

func (h *handler) refuseAccess(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if h.isGraphQL(r) {
		code := gqlCodeUnauthenticated
		if status == http.StatusForbidden {
			code = gqlCodeForbidden
		}
		h.failGraphQL(w, r, status, code, msg)
		return
	}
	if h.widget != nil && (r.URL.Path == "/embed" || strings.HasPrefix(r.URL.Path, "/embed/")) {
		h.widget.Refused(w, r, status, msg)
		return
	}
	code := CodeUnauthenticated
	if status == http.StatusForbidden {
		code = CodeForbidden
	}
	h.fail(w, r, apiError{Status: status, Code: code, Message: msg})
}

// InitWebSocket checks the key a WebSocket connection sends in its
// connection_init payload ("key", "apiKey", "X-API-Key" or "Authorization":
// "Bearer <key>"), when its upgrade request r came without one, and makes
// its consumer the connection's client: the one its streams
// (STREAMS_PER_CLIENT, the consumer's streams=) and subscribed channels
// (SUBSCRIBED_CHANNELS_PER_CLIENT) are counted by. An error refuses the
// connection (graphql-transport-ws closes it with 4403, or 4429 when the
// client holds as many streams as it may). A connection whose upgrade
// carried a key needs none here.
func (a *Access) InitWebSocket(r *http.Request, payload map[string]any) error {
	info := requestInfo(r.Context())
	if info == nil || !info.pendingKey {
		return nil
	}
	key := ""
	for _, name := range []string{"key", "apiKey", "X-API-Key", "x-api-key", "Authorization", "authorization"} {
		if v, ok := payload[name].(string); ok && v != "" {
			if k, ok := cutPrefixFold(v, "Bearer "); ok {
				v = k
			}
			key = strings.TrimSpace(v)
			break
		}
	}
	if key == "" && a.anonymous == AnonymousOn {
		info.pendingKey = false
	} else {
		g, err := a.keys.Lookup(key)
		if err != nil {
			return err
		}
		info.setGrant(g)
	}
	// The client settled, the connection is counted in its
	// STREAMS_PER_CLIENT (see limitStreams).
	if info.holdStream != nil {
		return info.holdStream()
	}
	return nil
}

// Scope is the channels the subscriptions of a stream (an event stream's
// request, a WebSocket's upgrade) may name: nil for any, or a widget
// key's test.
func (a *Access) Scope(r *http.Request) func(channel string) bool {
	info := requestInfo(r.Context())
	if info == nil || !info.grant.Widget() {
		return nil
	}
	return info.grant.Allows
}

// moveKey takes a ?key= out of the query into X-API-Key (see stripKey)
// for routes that read a key without requiring one: the snippet page.
func moveKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, src := presentedKey(r); src == keyQuery {
			stripKey(r, key)
		}
		next.ServeHTTP(w, r)
	})
}

// MintWidgetKey mints a read-only widget key for channels (validated,
// lower-cased) with the consumer key r carries: the snippet page's, so
// that a dashboard's page source holds a key that reads its widget's
// channels and nothing else. A widget key cannot mint another.
func (a *Access) MintWidgetKey(r *http.Request, channels []string) (string, error) {
	key, _ := presentedKey(r)
	s := a.keys.Current()
	g, err := s.Lookup(key)
	if err != nil {
		return "", err
	}
	if g.Widget() {
		return "", errors.New("a widget key cannot mint another: give an API key")
	}
	return s.MintWidget(g.Consumer, channels)
}
