package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/web"
)

// graphQL is the GraphQL face and the feed service it shares with
// POST /v1/feed.
type graphQL struct {
	handler    *graph.Handler
	playground http.Handler
	feeds      *feed.Service
	stores     *graph.Stores
}

// newGraphQL builds the feed service, the GraphQL handler and the
// playground over the page service.
func newGraphQL(cfg serveConfig, budget memoryBudget, svc *pages.Service, fanOut *pages.Gate, hub *live.Hub, apq graph.KV, rateLimit *server.RateLimit, share *server.Share, acc *server.Access, client func(*http.Request) string, enc *httpcache.Encoder, log *slog.Logger) (*graphQL, error) {
	feeds, err := feed.New(feed.Config{
		Pages:         svc,
		MaxChannels:   cfg.FeedMaxChannels,
		Refresh:       cfg.Refresh,
		KeptBytes:     budget.Builds,
		RenderedBytes: budget.Rendered,
		BuildingPages: budget.BuildingPages,
		CursorKey:     cfg.CursorKey,
	})
	if err != nil {
		return nil, err
	}
	stores, err := graph.NewStores(graph.StoresConfig{Shared: apq, APQBytes: budget.APQ, QueryBytes: budget.Queries, AnswerBytes: budget.Answers})
	if err != nil {
		feeds.Close()
		return nil, fmt.Errorf("graphql: %w", err)
	}
	var allowSubscribe func(*http.Request) (bool, time.Duration)
	if rateLimit != nil {
		allowSubscribe = rateLimit.AllowMessage
	}
	// A subscription's start is owed by its client as its requests are.
	var work graph.WorkFunc
	if share != nil {
		work = share.StartWork
	}
	// With API keys on, a WebSocket's key may come in connection_init,
	// and a widget key's streams reach its channels only.
	var initWS func(*http.Request, map[string]any) error
	var scope func(*http.Request) func(string) bool
	if acc != nil {
		initWS, scope = acc.InitWebSocket, acc.Scope
	}
	h, err := graph.NewHandler(graph.HandlerConfig{
		Pages:                svc,
		FanOut:               fanOut,
		Feed:                 feeds,
		Stores:               stores,
		Encoder:              enc,
		DisableIntrospection: !cfg.Introspection,
		Timeout:              cfg.GraphQLTimeout,
		MaxResponseBytes:     cfg.GraphQLMaxMB << 20,
		MaxExpensive:         cfg.GraphQLMaxExpensive,
		MaxExecutingValues:   budget.AnswerValues,
		Refresh:              cfg.Refresh,
		Logger:               log,
		Operation:            server.NoteOperation,
		Refused:              server.NoteRefused,
		Mistaken:             server.NoteMistake,

		Live:                        hub,
		Origins:                     splitList(cfg.CORSOrigins), // the CORS policy
		SubscriptionsPerConnection:  cfg.SubsPerConnection,
		MaxSubscriptions:            cfg.SubsMax,
		InitTimeout:                 cfg.WSInitTimeout,
		KeepAlive:                   cfg.StreamKeepAlive,
		AllowSubscribe:              allowSubscribe,
		InitWebSocket:               initWS,
		Scope:                       scope,
		PrivateAnswers:              acc != nil,
		Client:                      client,
		Work:                        work,
		SubscribedChannelsPerClient: cfg.SubChannelsPerClient,
	})
	if err != nil {
		feeds.Close()
		stores.Close()
		return nil, fmt.Errorf("graphql: %w", err)
	}
	examples := []string{"durov", "telegram"}
	if cfg.Demo {
		// The demo origin's channels, so the example queries return data.
		examples = fixtures.NewOrigin(fixtures.OriginOptions{}).Channels()
	}
	pg, err := web.Handler(web.Config{Endpoint: "/graphql", Assets: "/playground/assets", Channels: examples})
	if err != nil {
		feeds.Close()
		stores.Close()
		return nil, fmt.Errorf("playground: %w", err)
	}
	return &graphQL{handler: h, playground: pg, feeds: feeds, stores: stores}, nil
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
