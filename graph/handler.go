// Package graph serves tmefeed's GraphQL API: a gqlgen schema-first server
// (schema.graphqls, generated code in generated.go, thin resolvers) with
// explicit transports, limits, persisted queries and a fast path for large
// feeds.
package graph

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/go-chi/cors"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph/model"
)

// Defaults for zero Config fields.
const (
	DefaultComplexityLimit = 200_000
	DefaultFetchCost       = 1_000
	DefaultMaxDepth        = 12
	DefaultMaxAliases      = 30
	DefaultMaxRootFields   = 10
	DefaultMaxBodyBytes    = 64 << 10
	DefaultMaxPostsFirst   = 100
	DefaultAPQEntries      = 1_000
	DefaultConcurrency     = 16
	DefaultTokenLimit      = 15_000
)

// HandlerConfig configures the GraphQL handler. (Config is the generated
// schema configuration.)
type HandlerConfig struct {
	Pages PageService   // required
	Feed  *feed.Service // required
	// Cache backs automatic persisted queries so that every replica knows
	// them; nil keeps them in this process only.
	Cache cache.Cache
	// ComplexityLimit caps the cost of one operation. Every upstream page a
	// field may fetch costs FetchCost; every object returned costs its
	// selected fields. A 100-channel feed costs 100·FetchCost plus first
	// times its selection. Zero means DefaultComplexityLimit, raised when
	// needed so that a feed of Feed.MaxChannels() channels fits.
	ComplexityLimit int
	FetchCost       int
	MaxDepth        int // levels of nested fields
	MaxAliases      int // aliased fields in one operation
	MaxRootFields   int // root fields in one operation
	MaxBodyBytes    int64
	MaxPostsFirst   int // first of Channel.posts
	MaxPreviews     int // names of previews; zero means Feed.MaxChannels()
	APQEntries      int // persisted queries kept in process
	Concurrency     int // preview pages fetched at once
	// DisableIntrospection turns schema introspection off (it is on by
	// default, for GraphiQL and code generators).
	DisableIntrospection bool
	// DisableFastPath sends feed queries through the regular executor.
	DisableFastPath bool
	// CORSOrigins lists the origins browsers may call the API from ("*"
	// for any); empty sends no CORS headers.
	CORSOrigins []string
	Logger      *slog.Logger
	Now         func() time.Time
}

// NewHandler returns the http.Handler serving POST and GET /graphql.
func NewHandler(cfg HandlerConfig) (http.Handler, error) {
	if cfg.Pages == nil || cfg.Feed == nil {
		return nil, errors.New("graph: HandlerConfig.Pages and HandlerConfig.Feed are required")
	}
	setDefault(&cfg.FetchCost, DefaultFetchCost)
	// The largest feed the feed service allows must fit, with room for a
	// full selection of its posts.
	setDefault(&cfg.ComplexityLimit, max(DefaultComplexityLimit, cfg.Feed.MaxChannels()*cfg.FetchCost+100_000))
	setDefault(&cfg.MaxDepth, DefaultMaxDepth)
	setDefault(&cfg.MaxAliases, DefaultMaxAliases)
	setDefault(&cfg.MaxRootFields, DefaultMaxRootFields)
	setDefault(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&cfg.MaxPostsFirst, DefaultMaxPostsFirst)
	setDefault(&cfg.MaxPreviews, cfg.Feed.MaxChannels())
	setDefault(&cfg.APQEntries, DefaultAPQEntries)
	setDefault(&cfg.Concurrency, DefaultConcurrency)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}

	r := &Resolver{
		pages:         cfg.Pages,
		feed:          cfg.Feed,
		maxPreviews:   cfg.MaxPreviews,
		maxPostsFirst: cfg.MaxPostsFirst,
		concurrency:   cfg.Concurrency,
	}
	es := NewExecutableSchema(Config{Resolvers: r, Complexity: complexity(cfg.FetchCost)})
	present := errorPresenter(cfg.Logger, cfg.Now)

	var fast *fastPath
	if !cfg.DisableFastPath {
		fast = &fastPath{es: es.(*executableSchema), feed: cfg.Feed, present: present}
	}
	apq, err := newAPQStore(cfg.Cache, cfg.APQEntries)
	if err != nil {
		return nil, err
	}

	srv := handler.New(es)
	srv.AddTransport(transport.Options{AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodOptions}})
	srv.AddTransport(httpTransport{get: true, maxBody: cfg.MaxBodyBytes, fast: fast})
	srv.AddTransport(httpTransport{maxBody: cfg.MaxBodyBytes, fast: fast})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(DefaultTokenLimit)
	srv.SetErrorPresenter(present)
	if !cfg.DisableIntrospection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: apq})
	srv.Use(limits{maxDepth: cfg.MaxDepth, maxAliases: cfg.MaxAliases, maxRootFields: cfg.MaxRootFields, noIntrospection: cfg.DisableIntrospection})
	srv.Use(extension.FixedComplexityLimit(cfg.ComplexityLimit))

	var h http.Handler = srv
	if len(cfg.CORSOrigins) > 0 {
		h = cors.Handler(cors.Options{
			AllowedOrigins: cfg.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodOptions},
			AllowedHeaders: []string{"Accept", "Content-Type", "Authorization"},
			MaxAge:         600,
		})(h)
	}
	return h, nil
}

func setDefault[T int | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// complexity prices fields by the upstream pages they may fetch.
func complexity(fetch int) ComplexityRoot {
	var c ComplexityRoot
	c.Query.Channel = func(child int, _ string) int { return fetch + child }
	c.Query.Post = func(child int, _ string, _ int) int { return fetch + child }
	c.Query.Node = func(child int, _ string) int { return fetch + child }
	c.Query.Nodes = func(child int, ids []string) int { return len(ids) * (fetch + child) }
	c.Query.Previews = func(child int, names []string) int { return len(names) * (fetch + child) }
	c.Query.Feed = func(child int, channels []string, first *int, _ *string, last *int, _ *string, _ *model.FeedOrder, _ *model.FeedFilter) int {
		return len(channels)*fetch + max(feedPageSize(first, last), 1)*child
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
