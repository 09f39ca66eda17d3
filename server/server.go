// Package server is tmefeed's HTTP face: the REST v1 API (JSON compatible
// with telegram-me 1.x), /healthz, and mount points for GraphQL.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feedformat"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/metrics"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// PageService is what the REST handlers need from the page service;
// *pages.Service is one.
type PageService interface {
	// RenderedRepFor's rep is what Represent made when the hot store
	// held the answer, else nil; the answer's ETag is then computed and
	// its compressed form made per request. who names the client whose
	// share of the origin budget a fetch is charged to, asked only on a
	// miss.
	RenderedRepFor(ctx context.Context, key string, r tme.Request, who pages.ClientNamer, render func(pages.Result) ([]byte, error)) (pages.Rendered, pages.Representation, error)
}

// Represent makes the REST answers' representation with enc (their ETag
// and compressed forms), for pages.Config.Represent: made once as an
// answer enters the hot store, so that a hit neither hashes nor
// compresses.
func Represent(enc *httpcache.Encoder) func([]byte) pages.Representation {
	return func(body []byte) pages.Representation { return enc.NewRep(body, true) }
}

// Widget is the embeddable feed; *widget.Handler is one.
type Widget interface {
	http.Handler
	// RateLimited answers a request to the widget that is over its
	// client's rate limit, in the widget's own shape: its pages are shown
	// in frames of other sites, under its security headers. retryAfter is
	// the seconds until the client may ask again.
	RateLimited(w http.ResponseWriter, r *http.Request, retryAfter int)
	// Refused answers a request to the widget that API keys refuse (401
	// without a valid key, 403 for a widget key of other channels), in
	// the widget's own shape, saying msg.
	Refused(w http.ResponseWriter, r *http.Request, status int, msg string)
}

// Defaults for the zero values of Config.
const (
	DefaultMaxRequestBytes     = 64 << 10
	DefaultPreviewsConcurrency = 8
	// MaxPreviews is the most names POST /v1/previews accepts at once.
	MaxPreviews = 100
)

// Config configures the HTTP handler.
type Config struct {
	Pages PageService
	// Refresh is the cache's refresh point (CACHE_MODE); Cache-Control is
	// derived from it. Zero (CACHE_MODE=off) answers "no-store".
	Refresh time.Duration
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// MaxRequestBytes caps request bodies; larger ones get 413.
	MaxRequestBytes int64
	// PreviewsConcurrency bounds the fetches of one POST /v1/previews;
	// FanOut those of every fan-out of the process together (nil: none).
	PreviewsConcurrency int
	FanOut              *pages.Gate
	// GraphQL is mounted at /graphql and Playground at / when not nil.
	GraphQL    http.Handler
	Playground http.Handler
	// Feed serves POST /v1/feed, and GET /v1/rss, /v1/atom and
	// /v1/jsonfeed for feed readers, when not nil.
	Feed FeedService
	// Widget is mounted at /embed and /embed/* (GET) when not nil: the
	// embeddable feed, which sets its own security headers.
	Widget Widget
	// PublicURL is the address clients reach the service at (PUBLIC_URL),
	// e.g. "https://tmefeed.example" or with a path prefix. When set,
	// feed-reader documents name themselves by it and link media through
	// its /media/{channel}/{id}/{index}; when empty, documents name
	// themselves by the request's Host and link Telegram's media URLs.
	PublicURL string
	// Media serves GET /media/{channel}/{id}/{index} when not nil.
	Media MediaService
	// CORSOrigins lists the origins browsers may call every route from
	// ("*" for any); empty sends no CORS headers.
	CORSOrigins []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Encoder compresses answers by Accept-Encoding (REST GETs, POST
	// /v1/feed and GraphQL); nil sends every answer uncompressed.
	Encoder *httpcache.Encoder

	// Metrics, when set, is updated per request and served at /metrics,
	// unless MetricsElsewhere: then another listener serves it
	// (METRICS_ADDR) and /metrics here is an unknown route.
	Metrics          *metrics.Registry
	MetricsElsewhere bool
	// RequestLog, when set, writes the request lines instead of Logger
	// (which still decides the level): a writer that formats them by hand
	// costs less than a generic slog handler on every request.
	RequestLog func(context.Context, RequestLine)
	// Ready are the checks of /readyz; none means always ready.
	Ready []ReadyCheck
	// RateLimit is the budget of requests per minute each client may make
	// to the API routes (RATE_LIMIT_RPM, see NewRateLimit); nil means no
	// limit.
	RateLimit *RateLimit
	// TrustedProxies are the peers whose X-Forwarded-For / X-Real-IP name
	// the client (TRUSTED_PROXIES); from any other peer they are ignored.
	TrustedProxies []netip.Prefix
	// StreamsPerClient bounds the streams (WebSocket connections and
	// event streams at /graphql together) one client, counted as the rate
	// limit counts it, holds open at once (STREAMS_PER_CLIENT); one more
	// is refused with 429. 0 means no bound. Streams are what GraphQL
	// says they are (its IsStream method; *graph.Handler has one).
	StreamsPerClient int
	// Share bounds the requests that build answers from many pages
	// (feeds and feed documents, previews, the widget, GraphQL beyond its
	// kept answers) one client has working at
	// once, so that one client cannot take every core (CLIENT_CONCURRENCY,
	// see ShareConfig); the zero value shares as its defaults say.
	Share ShareConfig
	// Shares, when set, is the share to use instead of one made from
	// Share: made by NewShare and handed to the streaming transports too
	// (graph's HandlerConfig.Work), so that a subscription's start is
	// owed by its client as its requests' work is.
	Shares *Share
	// Tarpit holds the answers of requests refused for budget reasons for
	// their Retry-After, up to a second (see TarpitConfig); the zero value
	// holds them as DefaultTarpitHold says.
	Tarpit TarpitConfig
	// Access, when set, asks the routes that read pages and feeds for an
	// API key (API_KEYS_FILE, see NewAccess) and makes the consumer the
	// client every per-client limit counts. Answers are then marked
	// Cache-Control: private, so that no shared cache hands one
	// consumer's answer to a client without a key. Nil: every route is
	// open and nothing is added to a request.
	Access *Access
}

// handler holds the configuration the routes share.
type handler struct {
	pages      PageService
	feeds      FeedService
	mediaLinks MediaService
	refresh    time.Duration
	// cc makes the Cache-Control values of answers from cached pages.
	cc          *httpcache.CacheControl
	log         *slog.Logger
	maxBody     int64
	concurrency int
	fanOut      *pages.Gate
	now         func() time.Time
	realClock   bool // now is time.Now: Config.Now was not set
	idPrefix    string
	idSeq       atomic.Uint64
	graphQL     bool // Config.GraphQL is mounted at graphQLPath
	widget      Widget
	publicURL   string
	docDates    *docDates // Last-Modified of the feed-reader documents
	enc         *httpcache.Encoder
	metrics     *metrics.HTTP
	requestLog  func(context.Context, RequestLine)
	ready       []ReadyCheck
	trusted     []netip.Prefix
	streams     func(*http.Request) bool // Config.GraphQL's IsStream; nil without
	proxyWarned atomic.Int64             // Unix ns of the last warning of warnUntrustedProxy
	tarpit      *tarpit                  // nil: refusals are answered at once
}

// New returns the HTTP handler serving the REST API.
func New(cfg Config) http.Handler {
	h := &handler{
		pages:       cfg.Pages,
		feeds:       cfg.Feed,
		mediaLinks:  cfg.Media,
		refresh:     cfg.Refresh,
		log:         cfg.Logger,
		maxBody:     cfg.MaxRequestBytes,
		concurrency: cfg.PreviewsConcurrency,
		fanOut:      cfg.FanOut,
		now:         cfg.Now,
		graphQL:     cfg.GraphQL != nil,
		widget:      cfg.Widget,
		publicURL:   strings.TrimRight(cfg.PublicURL, "/"),
		docDates:    newDocDates(),
		enc:         cfg.Encoder,
		requestLog:  cfg.RequestLog,
		ready:       cfg.Ready,
		trusted:     cfg.TrustedProxies,
		tarpit:      newTarpit(cfg.Tarpit),
	}
	// With API keys answers are private, so that no shared cache hands
	// one consumer's answer to a client without a key.
	h.cc = httpcache.NewCacheControl(h.refresh, cfg.Access != nil)
	if st, ok := cfg.GraphQL.(streamTeller); ok {
		h.streams = st.IsStream
	}
	if cfg.Metrics != nil {
		h.metrics = cfg.Metrics.HTTP
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxRequestBytes
	}
	if h.concurrency <= 0 {
		h.concurrency = DefaultPreviewsConcurrency
	}
	if h.now == nil {
		h.now, h.realClock = time.Now, true
	}
	var p [4]byte
	_, _ = rand.Read(p[:])
	h.idPrefix = hex.EncodeToString(p[:])

	r := chi.NewRouter()
	r.Use(h.logRequests, h.recoverPanics)
	// Before the body limit, so that a 413 is readable cross-origin too.
	if c := newCORS(cfg.CORSOrigins); c != nil {
		r.Use(c)
	}
	// The /v1 routes are on this router rather than a sub-router, which
	// would route each request twice; limitURI covers every /v1 target,
	// unknown ones included, as a sub-router's middleware would.
	r.Use(h.limitBody, middleware.GetHead, h.limitV1URI)
	r.NotFound(h.notFound)
	// chi sends here both a known method on a route without it and any
	// method chi does not know; neither tells the handler the allowed
	// methods, so they are looked up again.
	mux := r
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		allow := allowedMethods(mux, r)
		if len(allow) == 0 {
			h.notFound(w, r)
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		if h.isGraphQL(r) {
			msg := clip(r.Method) + " is not served at /graphql; send queries with GET or POST"
			if r.Method == http.MethodPut && h.streams != nil {
				msg = singleConnectionMessage
			}
			h.failGraphQL(w, r, http.StatusMethodNotAllowed, gqlCodeMethodNotAllowed, msg)
			return
		}
		h.fail(w, r, apiError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed, Message: clip(r.Method) + " is not allowed here; allowed: " + strings.Join(allow, ", ")})
	})

	// Probes and scrapes are never rate limited.
	r.Get("/healthz", h.healthz)
	r.Get("/readyz", h.readyz)
	if cfg.Metrics != nil && !cfg.MetricsElsewhere {
		r.Get("/metrics", cfg.Metrics.Handler().ServeHTTP)
	}
	// The API routes, behind the per-client rate limit when there is one.
	// A group's middleware runs after routing, so refusals are counted
	// under their route, and with no limit nothing is added.
	r.Group(func(r chi.Router) {
		// The key first: it settles the client the limits count.
		if cfg.Access != nil {
			r.Use(h.authenticate(cfg.Access))
		}
		if cfg.RateLimit != nil {
			r.Use(h.newRateLimit(cfg.RateLimit))
		}
		// One page's answer (a hit, or one render of a page, a chunk or a
		// search) is left out of the share: it costs a millisecond at most,
		// or waits on Telegram. What builds from many pages (feeds, history
		// walks, previews, GraphQL) takes its client's share.
		work := func(f http.HandlerFunc) http.HandlerFunc { return f }
		share := cfg.Shares
		if share == nil {
			share = NewShare(cfg.Share)
		}
		if share != nil {
			mw := h.shareCPU(share.s)
			work = func(f http.HandlerFunc) http.HandlerFunc { return mw(f).ServeHTTP }
		}
		r.Get("/v1/body/{channel}", h.body)
		r.Get("/v1/post/{channel}/{id}", h.post)
		r.Get("/v1/more/{channel}/{direction}/{position}", h.more)
		r.Get("/v1/preview/{channel}", h.preview)
		r.Get("/v1/search/{channel}", h.search)
		r.Post("/v1/previews", work(h.previews))
		if cfg.Feed != nil {
			r.Post("/v1/feed", work(h.feed))
			for _, f := range feedformat.Formats() {
				r.Get("/v1/"+f.String(), work(h.syndication(f)))
			}
		}
		// Mount points take only the methods they serve, so that any other
		// (TRACE, CONNECT, ...) gets the JSON 405 rather than their own answer.
		// OPTIONS is no exception: CORS preflights never reach the router.
		if cfg.GraphQL != nil {
			var gql http.Handler = cfg.GraphQL
			k, kept := cfg.GraphQL.(keptServer)
			if kept {
				gql = work(k.ServeWork)
			}
			gql = cfg.Encoder.Handler(gql)
			if st, ok := cfg.GraphQL.(streamTeller); ok && (cfg.StreamsPerClient > 0 || cfg.Access != nil) {
				// At /graphql only: no other route streams, and the /v1
				// routes' hits must not pay even the check.
				gql = h.limitStreams(cfg.StreamsPerClient, st.IsStream, gql)
			}
			if kept {
				// Kept answers first, as a REST hit is served: never a
				// stream, written in the coding they keep, and never
				// waiting for the client's share. Only the rest goes
				// through the stream limit, the compression middleware and
				// the share.
				rest := gql
				gql = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !k.ServeKept(w, r) {
						rest.ServeHTTP(w, r)
					}
				})
			}
			r.Get(graphQLPath, gql.ServeHTTP)
			r.Post(graphQLPath, gql.ServeHTTP)
		}
		if cfg.Media != nil {
			r.Get("/media/{channel}/{id}/{index}", h.media)
		}
		// The widget's page and posts read feeds: limited like the API.
		if cfg.Widget != nil {
			r.Get("/embed", work(cfg.Widget.ServeHTTP))
			r.Get("/embed/*", work(cfg.Widget.ServeHTTP))
		}
	})
	// The widget's assets (named by their hash, kept by browsers for a
	// year) and its snippet page read no feed: not limited, so that a
	// dashboard of many widgets behind one address spends its budget on
	// their posts. The more specific routes win over /embed/*.
	if cfg.Widget != nil {
		r.Get("/embed/assets/*", cfg.Widget.ServeHTTP)
		if cfg.Access != nil {
			// The snippet page mints widget keys with the API key its
			// form is given, which must not reach the log.
			r.With(moveKey).Get("/embed/new", cfg.Widget.ServeHTTP)
		} else {
			r.Get("/embed/new", cfg.Widget.ServeHTTP)
		}
	}
	// The playground's page and assets are static: not limited.
	if cfg.Playground != nil {
		r.Get("/", cfg.Playground.ServeHTTP)
		// The playground page again, and its embedded JavaScript and CSS.
		r.Get("/playground", cfg.Playground.ServeHTTP)
		r.Get("/playground/*", cfg.Playground.ServeHTTP)
		r.Get("/favicon.ico", cfg.Playground.ServeHTTP)
	}
	return withRequestContext(r)
}

// keptServer is a GraphQL handler that answers kept answers apart from
// the rest (*graph.Handler).
type keptServer interface {
	ServeKept(w http.ResponseWriter, r *http.Request) bool
	ServeWork(w http.ResponseWriter, r *http.Request)
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, apiError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such route: " + clip(r.URL.Path)})
}

// allowedMethods lists the methods the router serves at r's path, HEAD
// wherever GET is (middleware.GetHead answers it).
func allowedMethods(mux chi.Routes, r *http.Request) []string {
	path := r.URL.RawPath // chi routes on the raw path when there is one
	if path == "" {
		path = r.URL.Path
	}
	if path == "" { // CONNECT host:port
		path = "/"
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if mux.Match(chi.NewRouteContext(), m, path) || m == http.MethodHead && slices.Contains(allow, http.MethodGet) {
			allow = append(allow, m)
		}
	}
	return allow
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, "{\"status\":\"ok\"}\n")
}

// GET /v1/body/{channel}[?position=N]: the channel page, or the page around post N.
func (h *handler) body(w http.ResponseWriter, r *http.Request) {
	ch, err := tme.NormalizeUsername(pathParam(r, "channel"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	pos := 0
	if r.URL.RawQuery != "" {
		if q := r.URL.Query(); q.Has("position") {
			if len(q["position"]) > 1 {
				h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeInvalidPosition, Message: "position must be given once"})
				return
			}
			if pos, err = tme.ParsePosition(q.Get("position")); err != nil {
				h.failErr(w, r, err)
				return
			}
		}
	}
	req := tme.Request{Kind: tme.KindBody, Channel: ch, Position: pos}
	h.serve(w, r, req.Name(), req, func(res pages.Result) ([]byte, error) {
		return EncodeJSON(BodyView(res.Page), false)
	})
}

// GET /v1/post/{channel}/{id}: one post, read from the page around it.
func (h *handler) post(w http.ResponseWriter, r *http.Request) {
	ch, err := tme.NormalizeUsername(pathParam(r, "channel"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	id, err := tme.ParsePosition(pathParam(r, "id"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	req := tme.Request{Kind: tme.KindBody, Channel: ch, Position: id}
	h.serve(w, r, "post:"+strconv.Itoa(id), req, func(res pages.Result) ([]byte, error) {
		p := findPost(res.Page, id)
		if p == nil {
			return nil, fmt.Errorf("%s/%d: %w", ch, id, pages.ErrPostNotFound)
		}
		return EncodeJSON(p, false)
	})
}

// GET /v1/more/{channel}/{before|after}/{position}: the posts before or after a post.
func (h *handler) more(w http.ResponseWriter, r *http.Request) {
	ch, err := tme.NormalizeUsername(pathParam(r, "channel"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	dir := pathParam(r, "direction")
	if dir != "before" && dir != "after" {
		h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "direction must be before or after"})
		return
	}
	pos, err := tme.ParsePosition(pathParam(r, "position"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	req := tme.Request{Kind: tme.KindMore, Channel: ch, Position: pos, After: dir == "after"}
	h.serve(w, r, req.Name(), req, func(res pages.Result) ([]byte, error) {
		return EncodeJSON(MoreView(res.Page), false)
	})
}

// GET /v1/search/{channel}?q=<query>: Telegram's own search of the
// channel (t.me/s/<channel>?q=<query>), in /v1/body's shape: the channel
// header and the matching posts of one search page, oldest first as on
// every page; none when nothing matches.
func (h *handler) search(w http.ResponseWriter, r *http.Request) {
	ch, err := tme.NormalizeUsername(pathParam(r, "channel"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	qs := r.URL.Query()["q"]
	if len(qs) != 1 {
		h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "give the search query once, as ?q=<text>"})
		return
	}
	q, err := tme.ValidSearchQuery(qs[0])
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	req := pages.SearchRequest(ch, q, "")
	h.serve(w, r, req.Name(), req, func(res pages.Result) ([]byte, error) {
		return EncodeJSON(BodyView(res.Page), false)
	})
}

// GET /v1/preview/{channel}: the channel's preview card.
func (h *handler) preview(w http.ResponseWriter, r *http.Request) {
	ch, err := tme.NormalizeUsername(pathParam(r, "channel"))
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	req := tme.Request{Kind: tme.KindPreview, Channel: ch}
	h.serve(w, r, req.Name(), req, renderPreview)
}

func (h *handler) previewEntry(ctx context.Context, ch, client string, cacheOnly bool) (pages.Rendered, error) {
	req := tme.Request{Kind: tme.KindPreview, Channel: ch, Client: client, CacheOnly: cacheOnly}
	var who pages.ClientNamer // the request's record, which hears of a render
	if info := requestInfo(ctx); info != nil {
		who = info
	}
	e, _, err := h.pages.RenderedRepFor(ctx, renderKey(req.Name()), req, who, renderPreview)
	return e, err
}

func renderPreview(res pages.Result) ([]byte, error) {
	return EncodeJSON(&PreviewResponse{Channel: res.Preview}, false)
}

// serve answers with the rendered bytes for req, from the cache when held.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, key string, req tme.Request, render func(pages.Result) ([]byte, error)) {
	info := requestInfo(r.Context())
	req.CacheOnly = info != nil && info.cacheOnly
	e, rep, err := h.pages.RenderedRepFor(r.Context(), renderKey(key), req, h.who(r, info), render)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	info.noteEntry(e.Stale)
	h.writeEntry(w, r, info, e, rep)
}

// writeEntry writes a cached answer in the coding Accept-Encoding picks,
// or 304 when If-None-Match holds its ETag. rep, when the hot store kept
// one, has the ETag and compressed forms ready; otherwise they are made
// now.
func (h *handler) writeEntry(w http.ResponseWriter, r *http.Request, info *reqInfo, e pages.Rendered, kept pages.Representation) {
	rep, _ := kept.(*httpcache.Rep)
	if rep == nil {
		rep = h.enc.NewRep(e.Value, false)
	}
	// A HEAD is answered with the headers a GET with the same
	// Accept-Encoding gets (RFC 9110 §9.3.2): coding, weak ETag and Vary.
	body, coding, etag, vary := h.enc.Select(rep, header(r.Header, "Accept-Encoding"))
	// This is every cache hit: the keys are canonical already, so they are
	// assigned rather than passed through Header.Set's canonicalization.
	// The values share one array, the request record's when there is one,
	// each slice capped at its one element so that an Add elsewhere copies
	// rather than overwrites the next.
	var v *[6]string
	if info != nil {
		v = &info.hitValues
	} else {
		v = new([6]string)
	}
	*v = [6]string{h.cc.At(h.requestTime(info), e.RefreshAt, e.Stale), etag, "Accept-Encoding", "application/json; charset=utf-8", "", coding.String()}
	hd := w.Header()
	hd["Cache-Control"] = v[0:1:1]
	hd["Etag"] = v[1:2:2]
	if vary {
		if old := hd["Vary"]; len(old) > 0 {
			hd["Vary"] = append(old, v[2])
		} else {
			hd["Vary"] = v[2:3:3]
		}
	}
	if httpcache.NoneMatch(header(r.Header, "If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if v[4] = rep.ContentLength(coding); v[4] == "" {
		v[4] = strconv.Itoa(len(body))
	}
	hd["Content-Type"] = v[3:4:4]
	hd["Content-Length"] = v[4:5:5]
	if coding != httpcache.Identity {
		hd["Content-Encoding"] = v[5:6:6]
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// cacheControl tells downstream caches what CACHE_MODE tells ours (see
// httpcache.CacheControl): keep an answer only until the page it came
// from reaches its refresh point (refreshAt), never longer than a refresh
// window (a copy refreshed ahead of time is fresh for somewhat longer,
// see cache.RefreshAhead), then serve it stale for one more period while
// revalidating.
func (h *handler) cacheControl(refreshAt time.Time, stale bool) string {
	return h.cc.At(h.now(), refreshAt, stale)
}

// requestTime is the time a cached answer's max-age counts from: with the
// real clock, when the request began, which logRequests has read already
// (microseconds before now, well within max-age's whole seconds), so that a
// hit reads the clock once less; with a configured clock, its time.
func (h *handler) requestTime(info *reqInfo) time.Time {
	if h.realClock && info != nil && !info.start.IsZero() {
		return info.start
	}
	return h.now()
}

// POST /v1/previews {"channels": [...]}: the previews of up to MaxPreviews
// channels. Names are read as on every route ("@Name" is the channel name)
// and each channel is fetched once, concurrently; each name given, lower-
// cased, maps to {"channel": {...}} or {"error": {...}}, so one bad name
// does not fail the others.
func (h *handler) previews(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Channels []string `json:"channels"`
	}
	if !h.decodeJSON(w, r, &in, `{"channels": ["name", ...]}`) {
		return
	}
	if len(in.Channels) == 0 {
		h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: `"channels" must list at least one name`})
		return
	}
	if len(in.Channels) > MaxPreviews {
		h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: `"channels" must list at most ` + strconv.Itoa(MaxPreviews) + " names"})
		return
	}

	client, cacheOnly := h.clientName(r), cacheOnly(r)
	results := pages.EachChannel(r.Context(), h.fanOut, in.Channels, h.concurrency, func(ctx context.Context, ch string) (pages.Rendered, error) {
		return h.previewEntry(ctx, ch, client, cacheOnly)
	})
	out := make(map[string]json.RawMessage, len(results))
	maxAge, cacheable := h.refresh, h.refresh > 0
	for _, res := range results {
		key := strings.ToLower(res.Name)
		if errors.Is(res.Err, pages.ErrNotCached) {
			cacheable = false
			b, _ := EncodeJSON(ErrorBody{Error: ErrorInfo{Code: CodeUnauthenticated, Message: notCachedMessage}}, false)
			out[key] = b
			continue
		}
		if res.Err != nil {
			f := fault.Classify(res.Err)
			status, code := restStatus(f.Kind)
			if status >= 429 { // transient: the list must not be cached
				cacheable = false
			}
			if overBudget(f.Kind) {
				NoteRefused(r.Context())
			}
			if f.Kind == fault.Internal { // a bug: the answer says no more than that
				h.log.Error("previews: internal error", "path", r.URL.Path, "channel", res.Channel, "err", res.Err)
			}
			b, _ := EncodeJSON(ErrorBody{Error: ErrorInfo{Code: code, Message: f.Message}}, false)
			out[key] = b
			continue
		}
		out[key] = res.Value.Value
		if age := time.Duration(h.cc.MaxAge(h.now(), res.Value.RefreshAt, res.Value.Stale)) * time.Second; age < maxAge {
			maxAge = age
		}
	}
	b, err := EncodeJSON(out, false)
	if err != nil { // only if a cached value were not JSON
		h.failErr(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	if cacheable {
		// POST answers are rarely cached downstream, but the header is kept
		// consistent with the GET routes.
		hd.Set("Cache-Control", h.cc.Value(int(maxAge/time.Second)))
	} else {
		hd.Set("Cache-Control", httpcache.NoStore)
	}
	_, _ = w.Write(b)
}

func tooLargeError(limit int64) apiError {
	return apiError{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: "request body larger than " + strconv.FormatInt(limit, 10) + " bytes"}
}

// failErr answers with the error's classification.
func (h *handler) failErr(w http.ResponseWriter, r *http.Request, err error) {
	noteError(r.Context(), err)
	closeIfBodyUnread(w, r)
	if errors.Is(err, pages.ErrNotCached) {
		w.Header().Set("WWW-Authenticate", wwwAuthenticate)
		writeError(w, apiError{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: notCachedMessage})
		return
	}
	writeError(w, classify(err, h.now()))
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, e apiError) {
	closeIfBodyUnread(w, r)
	writeError(w, e)
}

// pathParam is the named path segment, percent-decoded. chi matches the
// raw path when the request has one, so a segment written the way
// encodeURIComponent writes it ("%40durov") arrives still encoded. A
// segment that does not decode is returned as it came and refused by the
// validation that follows.
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	// Without a raw path chi matched the decoded one: decoding again
	// would take "%2540" for "@".
	if r.URL.RawPath == "" || strings.IndexByte(v, '%') < 0 {
		return v
	}
	if d, err := url.PathUnescape(v); err == nil {
		return d
	}
	return v
}
