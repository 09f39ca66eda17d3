// Package graph serves tmefeed's GraphQL API: a gqlgen schema-first server
// (schema.graphqls, generated code in generated.go, thin resolvers) with
// explicit transports, limits, persisted queries and a fast path for large
// feeds.
package graph

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/semaphore"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/pages"
)

// Defaults for zero Config fields.
const (
	DefaultComplexityLimit = 200_000
	DefaultFetchCost       = 1_000
	DefaultMaxDepth        = 12
	DefaultMaxAliases      = 30
	DefaultMaxRootFields   = 10
	DefaultMaxBodyBytes    = 64 << 10
	DefaultMaxPostsFirst   = 200
	DefaultConcurrency     = 16
	DefaultTokenLimit      = 15_000
	// A full introspection query (GraphiQL's) selects about 230 fields
	// and nests 15 levels; a feed query about 30 fields and 7 levels.
	DefaultMaxFields             = 1_000
	DefaultMaxIntrospectionDepth = 16
	DefaultTimeout               = 10 * time.Second
	DefaultMaxResponseBytes      = 32 << 20
	// About 400 bytes of heap per value while the executor builds an
	// answer: 80 MB, four full 2,000-post feeds.
	DefaultMaxExecutingValues = 200_000
	// Subscriptions: a dashboard opens a few on its one connection.
	DefaultSubscriptionsPerConnection = 16
	DefaultMaxSubscriptions           = 10_000
	DefaultInitTimeout                = 10 * time.Second
	DefaultKeepAlive                  = 15 * time.Second
	// DefaultStreamWriteTimeout bounds one write to a WebSocket or an
	// event stream; a client that reads nothing for this long is dropped.
	DefaultStreamWriteTimeout = 10 * time.Second
)

// maxMergePairs bounds the field pairs validation compares (see
// measurer.pairs): about 100 ns each, some milliseconds in all.
const maxMergePairs = 50_000

// WorkFunc waits for client's turn to work and returns done, to call
// with the time the work took, which the client owes; refused, ok is
// false and retryAfter says when to come back (HandlerConfig.Work).
type WorkFunc func(ctx context.Context, client string) (done func(worked time.Duration), retryAfter time.Duration, ok bool)

// HandlerConfig configures the GraphQL handler. (Config is the generated
// schema configuration.)
type HandlerConfig struct {
	Pages PageService   // required
	Feed  *feed.Service // required
	// APQ backs automatic persisted queries so that every replica knows
	// them; nil keeps them in this process only. Used when Stores is nil.
	APQ KV
	// Stores are the in-process persisted queries and parsed documents;
	// nil means NewStores with APQ and default bounds.
	Stores *Stores
	// Texts keeps the sanitized HTML of the post texts the fast path has
	// written, per parse; nil means one of the handler's own.
	Texts *Texts
	// ComplexityLimit caps the cost of one operation. Every upstream page a
	// field may fetch costs FetchCost; every object returned costs its
	// selected fields. A 100-channel feed costs 100·FetchCost plus first
	// times its selection. Zero means DefaultComplexityLimit, raised when
	// needed so that a feed of Feed.MaxChannels() channels fits. It also
	// bounds the estimated size of an introspection answer, measured
	// before the document is validated.
	ComplexityLimit int
	FetchCost       int
	MaxDepth        int // levels of nested fields
	MaxAliases      int // aliased fields in one operation
	MaxRootFields   int // root fields in one operation
	// MaxFields caps the fields and directives of a document, each
	// fragment counted at every spread.
	MaxFields int
	// MaxIntrospectionDepth is MaxDepth below __schema and __type, whose
	// type references nest deeper than any query of the schema.
	MaxIntrospectionDepth int
	TokenLimit            int // lexical tokens of a document
	MaxBodyBytes          int64
	MaxPostsFirst         int // first of Channel.posts
	MaxPreviews           int // names of previews; zero means Feed.MaxChannels()
	Concurrency           int // pages fetched at once for previews and for a subscription's look-up of its channels
	// FanOut bounds the look-ups of every fan-out of the process together
	// (pages.EachChannel), shared with the REST face; nil: no bound.
	FanOut *pages.Gate
	// Timeout bounds one operation, from parsing to the last byte
	// written; for a subscription, the look-up of its channels before it
	// starts.
	Timeout time.Duration
	// MaxResponseBytes caps the JSON of one response; a larger answer is
	// replaced by a COMPLEXITY_LIMIT_EXCEEDED error.
	MaxResponseBytes int
	// MaxExecutingValues bounds the answers the executor builds at once,
	// in estimated values (the complexity of each operation with
	// upstream pages priced at nothing); an operation that finds no room
	// within two seconds is answered 503 RATE_LIMITED. Operations of
	// fewer than 2,000 values, and feed answers already rendered or
	// written without the executor (writer.go), take none. Zero means
	// DefaultMaxExecutingValues.
	MaxExecutingValues int
	// MaxExpensive caps the CPU-bound work running at once: parsing and
	// validating documents not in the query cache, decoding requests over
	// 16 KiB, introspection. Others wait briefly for a turn. Zero means
	// half the CPUs, at least one.
	MaxExpensive int
	// DisableIntrospection turns schema introspection off (it is on by
	// default, for GraphiQL and code generators).
	DisableIntrospection bool
	// DisableFastPath sends feed queries through the regular executor
	// (and keeps no answers of repeated requests, see hot.go).
	DisableFastPath bool
	// Encoder makes the compressed forms kept beside the answers of
	// repeated requests, so that a compressed hit compresses nothing;
	// nil keeps none (the encoding middleware, if any, compresses per
	// request).
	Encoder *httpcache.Encoder
	// Refresh is the cache's refresh point (CACHE_MODE). GET answers may
	// be kept downstream until the oldest page they read reaches it;
	// zero answers every request with Cache-Control: no-store.
	Refresh time.Duration
	Logger  *slog.Logger
	Now     func() time.Time
	// Operation, when set, is told the name of each operation whose
	// document passed the limits and validation ("" for an anonymous
	// one), on the request's goroutine before it runs: for the access log
	// and per-operation metrics.
	Operation func(ctx context.Context, name string)
	// Refused, when set, is told of a request whose answer carries an
	// error for the client's spent share of the origin budget, on the
	// goroutine that presents the error: the server holds such answers
	// (see server.NoteRefused).
	Refused func(ctx context.Context)
	// Mistaken, when set, is told of a request whose answer carries an
	// input error (BAD_USER_INPUT) although it is sent with 200, so that a
	// client making many can have them held (see server.NoteMistake).
	Mistaken func(ctx context.Context)

	// Live serves subscriptions (over WebSocket and event streams); nil
	// serves none: upgrades are refused and subscriptions answer an error.
	Live LiveHub
	// Origins are the browser origins allowed to open WebSocket
	// connections besides the server's own: CORS_ORIGINS, the same
	// setting as for every other cross-origin request ("*" for any).
	Origins []string
	// SubscriptionsPerConnection caps the subscriptions open at once on
	// one WebSocket connection; MaxSubscriptions those of the process (and
	// its WebSocket connections).
	SubscriptionsPerConnection int
	// SubscribedChannelsPerClient caps the distinct channels one client
	// (Client) keeps subscribed at once, over all its streams; a
	// subscription that would go over it is refused with RATE_LIMITED.
	// 0 means no cap.
	SubscribedChannelsPerClient int
	MaxSubscriptions            int
	// InitTimeout is how long a new WebSocket connection has to send
	// connection_init; KeepAlive the interval of pings on idle streams
	// (a WebSocket client that answers none within two is dropped).
	InitTimeout time.Duration
	KeepAlive   time.Duration
	// StreamWriteTimeout bounds one write to a stream.
	StreamWriteTimeout time.Duration
	// AllowSubscribe, when set, is asked with the WebSocket upgrade
	// request before each subscribe message (graphql-ws: start) on that
	// connection is served, so that each costs the client as a request
	// would (RATE_LIMIT_RPM): one upgrade must not buy unlimited look-ups.
	// A refused subscribe is answered with an error message for its id,
	// code RATE_LIMITED and extensions.retryAfter (whole seconds, at least
	// 1), and the connection stays open. An event stream is one HTTP
	// request, counted as such, and is not asked again.
	AllowSubscribe func(r *http.Request) (ok bool, retryAfter time.Duration)
	// InitWebSocket, when set, is asked with the WebSocket upgrade
	// request and the connection_init payload before the connection is
	// acknowledged (API keys: a browser cannot send headers with the
	// upgrade, so the key may come here). An error closes the connection
	// with 4403 Forbidden and the error's message as the reason, or with
	// the code of an error that has a CloseCode() int method (4429 for a
	// client holding as many streams as it may). The connection's client
	// (Client) is asked again after it, for the key may have changed it.
	InitWebSocket func(r *http.Request, payload map[string]any) error
	// Scope, when set, is asked with a stream's request (an event
	// stream's, or a WebSocket's upgrade once connection_init is done)
	// which channels its subscriptions may name: nil allows any. A
	// subscription naming another is refused with FORBIDDEN.
	Scope func(r *http.Request) (allowed func(channel string) bool)
	// PrivateAnswers marks cacheable GET answers Cache-Control: private
	// (API keys on): a shared cache must not hand one consumer's answer
	// to a client without a key.
	PrivateAnswers bool
	// Client names a request's client as the server's per-client limits
	// do (server.ClientKey); the pages it causes to be fetched are charged
	// to that client's share of the origin budget (CLIENT_ORIGIN_RPM). A
	// WebSocket connection is its upgrade request's client. nil: nobody's.
	Client func(r *http.Request) string
	// Work, when set, is asked before a subscription starts (over
	// WebSocket or an event stream), with its client (Client): it waits
	// for the client's turn to work and returns done, called with the
	// time the start worked (looking up the channels it names, its wait
	// for a place to start left out), which is owed by the client as its
	// requests' work is (server.Share's
	// StartWork, CLIENT_CPU_SHARE). A refused start is answered with
	// RATE_LIMITED and extensions.retryAfter; over WebSocket the
	// connection stays open. nil: starts are not counted.
	Work WorkFunc

	// onParse is called for each document that goes on to gqlgen's parser
	// and validator (tests count them).
	onParse func(query string)
	// onExecute is called each time the executor runs an operation
	// (tests count them); executorOnly makes the fast path render its
	// answers with the executor instead of the writer (tests compare).
	onExecute    func()
	executorOnly bool
}

// Handler serves /graphql.
type Handler struct {
	front
	streams *streams
	hot     *hot // nil: no answers kept
}

// ServeHTTP answers a repeated query from its kept answer, and everything
// else through the transports.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.ServeKept(w, r) {
		return
	}
	h.front.ServeHTTP(w, r)
}

// ServeKept answers r with a kept answer when one is current, and
// reports whether it did; ServeHTTP then does the rest. A server that
// makes work wait (a client's share of the cores) puts it between the
// two, so that kept answers never wait.
func (h *Handler) ServeKept(w http.ResponseWriter, r *http.Request) bool {
	return h.hot != nil && h.hot.serve(w, r)
}

// ServeWork answers r without looking for a kept answer: what ServeHTTP
// does after ServeKept reported false.
func (h *Handler) ServeWork(w http.ResponseWriter, r *http.Request) {
	h.front.ServeHTTP(w, r)
}

// Shutdown ends every open subscription with a SHUTTING_DOWN error and
// closes the WebSocket connections once their last messages are written
// (or ctx ends), refusing new subscriptions from the start. The HTTP
// server's own Shutdown does not see upgraded connections and would wait
// for open event streams until its deadline.
func (h *Handler) Shutdown(ctx context.Context) error { return h.streams.shutdown(ctx) }

// NewHandler returns the handler serving POST and GET (and HEAD) /graphql
// as the GraphQL-over-HTTP draft describes, and subscriptions over
// WebSocket (graphql-transport-ws) and event streams.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Pages == nil || cfg.Feed == nil {
		return nil, errors.New("graph: HandlerConfig.Pages and HandlerConfig.Feed are required")
	}
	defaults.Set(&cfg.FetchCost, DefaultFetchCost)
	// The largest feed the feed service allows must fit, with room for a
	// full selection of its posts.
	defaults.Set(&cfg.ComplexityLimit, max(DefaultComplexityLimit, cfg.Feed.MaxChannels()*cfg.FetchCost+100_000))
	defaults.Set(&cfg.MaxDepth, DefaultMaxDepth)
	defaults.Set(&cfg.MaxAliases, DefaultMaxAliases)
	defaults.Set(&cfg.MaxRootFields, DefaultMaxRootFields)
	defaults.Set(&cfg.MaxFields, DefaultMaxFields)
	defaults.Set(&cfg.MaxIntrospectionDepth, max(DefaultMaxIntrospectionDepth, cfg.MaxDepth))
	defaults.Set(&cfg.TokenLimit, DefaultTokenLimit)
	defaults.Set(&cfg.Timeout, DefaultTimeout)
	defaults.Set(&cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	defaults.Set(&cfg.MaxExecutingValues, DefaultMaxExecutingValues)
	defaults.Set(&cfg.MaxExpensive, max(1, runtime.GOMAXPROCS(0)/2))
	defaults.Set(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Set(&cfg.MaxPostsFirst, DefaultMaxPostsFirst)
	defaults.Set(&cfg.MaxPreviews, cfg.Feed.MaxChannels())
	defaults.Set(&cfg.Concurrency, DefaultConcurrency)
	defaults.Set(&cfg.SubscriptionsPerConnection, DefaultSubscriptionsPerConnection)
	defaults.Set(&cfg.MaxSubscriptions, DefaultMaxSubscriptions)
	defaults.Set(&cfg.InitTimeout, DefaultInitTimeout)
	defaults.Set(&cfg.KeepAlive, DefaultKeepAlive)
	defaults.Set(&cfg.StreamWriteTimeout, DefaultStreamWriteTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}

	st := newStreams(cfg.SubscriptionsPerConnection, cfg.MaxSubscriptions)
	st.channels = newChannelCap(cfg.SubscribedChannelsPerClient)
	r := &Resolver{
		live:          cfg.Live,
		streams:       st,
		pages:         cfg.Pages,
		feed:          cfg.Feed,
		maxPreviews:   cfg.MaxPreviews,
		maxPostsFirst: cfg.MaxPostsFirst,
		concurrency:   cfg.Concurrency,
		fanOut:        cfg.FanOut,
		timeout:       cfg.Timeout,
		log:           cfg.Logger,
		now:           cfg.Now,
	}
	// An LRU of expiry times rather than one that expires entries itself,
	// which would run a goroutine for ever.
	r.checked, _ = lru.New[string, time.Time](checkedChannels) // errors only for a size < 1
	var es graphql.ExecutableSchema = NewExecutableSchema(Config{Resolvers: r, Complexity: complexity(cfg.FetchCost, cfg.Pages.HistoryMaxPages())})
	if cfg.onExecute != nil {
		es = countedSchema{ExecutableSchema: es, onExec: cfg.onExecute}
	}
	present := errorPresenter(cfg.Logger, cfg.Now, cfg.Refused, cfg.Mistaken)

	var fast *fastPath
	if !cfg.DisableFastPath {
		fast = &fastPath{feed: cfg.Feed, schema: es.Schema(), executorOnly: cfg.executorOnly, texts: cfg.Texts}
		if fast.texts == nil {
			fast.texts = &Texts{}
		}
	}
	stores := cfg.Stores
	if stores == nil {
		var err error
		if stores, err = NewStores(StoresConfig{Shared: cfg.APQ}); err != nil {
			return nil, err
		}
	}

	run := &runner{
		timeout:     cfg.Timeout,
		maxResponse: cfg.MaxResponseBytes,
		gate:        newGate(cfg.MaxExpensive, expensiveWait),
		fast:        fast,
		schema:      es.Schema(),
		refresh:     max(cfg.Refresh, 0),
		cc:          httpcache.NewCacheControl(cfg.Refresh, cfg.PrivateAnswers),
		now:         cfg.Now,
		values:      semaphore.NewWeighted(int64(cfg.MaxExecutingValues)),
		maxValues:   int64(cfg.MaxExecutingValues),
		valued:      NewExecutableSchema(Config{Complexity: complexity(0, 1)}),
		operation:   cfg.Operation,
		client:      cfg.Client,
	}
	var hot *hot
	if fast != nil {
		fast.room = run.room
		hot = newHot(stores.answers, cfg.Feed, cfg.Encoder, run, cfg.MaxBodyBytes)
		run.hot = hot
	}
	srv := handler.New(es)
	if cfg.Live != nil {
		srv.AddTransport(wsTransport{
			ws: transport.Websocket{
				PingPongInterval:      cfg.KeepAlive, // graphql-transport-ws
				KeepAlivePingInterval: cfg.KeepAlive, // the older graphql-ws
				PayloadReadLimit:      &cfg.MaxBodyBytes,
			},
			initTimeout:  cfg.InitTimeout,
			streams:      st,
			gate:         run.gate,
			origins:      cfg.Origins,
			anyOrigin:    slices.Contains(cfg.Origins, "*"),
			writeTimeout: cfg.StreamWriteTimeout,
			allow:        cfg.AllowSubscribe,
			init:         cfg.InitWebSocket,
			scope:        cfg.Scope,
			client:       run.clientOf,
			work:         cfg.Work,
		})
		srv.AddTransport(sseTransport{
			sse:          transport.SSE{KeepAlivePingInterval: cfg.KeepAlive},
			maxBody:      cfg.MaxBodyBytes,
			streams:      st,
			gate:         run.gate,
			writeTimeout: cfg.StreamWriteTimeout,
			scope:        cfg.Scope,
			client:       run.clientOf,
			work:         cfg.Work,
		})
	}
	srv.AddTransport(httpTransport{get: true, maxBody: cfg.MaxBodyBytes, run: run})
	srv.AddTransport(httpTransport{maxBody: cfg.MaxBodyBytes, run: run})
	srv.SetQueryCache(stores.queries)
	srv.SetParserTokenLimit(cfg.TokenLimit)
	srv.SetErrorPresenter(present)
	if !cfg.DisableIntrospection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: stores.apq})
	// After persisted queries (which fill in the query), before parsing.
	srv.Use(&limits{
		tokens:          cfg.TokenLimit,
		maxFields:       cfg.MaxFields,
		maxDepth:        cfg.MaxDepth,
		maxIntroDepth:   cfg.MaxIntrospectionDepth,
		maxAliases:      cfg.MaxAliases,
		maxRootFields:   cfg.MaxRootFields,
		maxCost:         cfg.ComplexityLimit,
		maxPairs:        maxMergePairs,
		noIntrospection: cfg.DisableIntrospection,
		schema:          es.Schema(),
		lists:           introspectionLists(es.Schema()),
		validated:       stores.queries,
		parsed:          cfg.onParse,
	})
	srv.Use(extension.FixedComplexityLimit(cfg.ComplexityLimit))
	srv.Use(newStrictVariables(es.Schema()))

	return &Handler{front: front{next: srv, streams: cfg.Live != nil}, streams: st, hot: hot}, nil
}

// complexity prices fields by the upstream pages they may fetch: a feed
// with since may walk historyPages pages of each channel, and posts one
// page per 20 posts asked for.
func complexity(fetch, historyPages int) ComplexityRoot {
	var c ComplexityRoot
	c.Query.Channel = func(child int, _ string) int { return fetch + child }
	c.Query.Post = func(child int, _ string, _ int) int { return fetch + child }
	c.Query.Node = func(child int, _ string) int { return fetch + child }
	c.Query.Nodes = func(child int, ids []string) int { return len(ids) * (fetch + child) }
	c.Query.Previews = func(child int, names []string) int { return len(names) * (fetch + child) }
	c.Query.Feed = func(child int, channels []string, first *int, _ *string, last *int, _ *string, _ *model.FeedOrder, filter *model.FeedFilter) int {
		perChannel := fetch
		if filter != nil && filter.Since != nil {
			perChannel = mul(fetch, max(historyPages, 1))
		}
		return sat(mul(len(channels), perChannel) + mul(max(feedPageSize(first, last), 1), child))
	}
	c.Channel.Search = func(child int, _ string, first *int) int {
		n := postsPerPage
		if first != nil {
			n = *first
		}
		return fetch + max(n, 1)*child
	}
	// A subscription is priced as a feed of one post per event: its
	// channels are watched (and refreshed) while it is open.
	c.Subscription.FeedUpdates = func(child int, channels []string, _ *model.FeedFilter, _ *string) int {
		return len(channels)*fetch + child
	}
	c.Channel.Posts = func(child int, first *int, _, _ *string, _ *int) int {
		n := postsPerPage
		if first != nil {
			n = *first
		}
		pages := max(1, (n+postsPerPage-1)/postsPerPage)
		return pages*fetch + max(n, 1)*child
	}
	return c
}

// countedSchema tells onExec of each operation it executes
// (HandlerConfig.onExecute).
type countedSchema struct {
	graphql.ExecutableSchema
	onExec func()
}

func (s countedSchema) Exec(ctx context.Context) graphql.ResponseHandler {
	s.onExec()
	return s.ExecutableSchema.Exec(ctx)
}
