package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/web"
)

// graphQL is the GraphQL face and the feed service it shares with
// POST /v1/feed.
type graphQL struct {
	handler    http.Handler
	playground http.Handler
	feeds      *feed.Service
}

// newGraphQL builds the feed service, the GraphQL handler and the
// playground over the page service.
func newGraphQL(cfg serveConfig, svc *pages.Service, store cache.Cache, log *slog.Logger) (*graphQL, error) {
	feeds, err := feed.New(feed.Config{Pages: svc, MaxChannels: cfg.FeedMaxChannels, Keep: cfg.Refresh, CursorKey: cfg.CursorKey})
	if err != nil {
		return nil, err
	}
	h, err := graph.NewHandler(graph.HandlerConfig{
		Pages:                svc,
		Feed:                 feeds,
		Cache:                store,
		DisableIntrospection: !cfg.Introspection,
		CORSOrigins:          splitList(cfg.CORSOrigins),
		Logger:               log,
	})
	if err != nil {
		return nil, fmt.Errorf("graphql: %w", err)
	}
	examples := []string{"durov", "telegram"}
	if cfg.Demo {
		// The demo origin's channels, so the example queries return data.
		examples = fixtures.NewOrigin(fixtures.OriginOptions{}).Channels()
	}
	pg, err := web.Handler(web.Config{Endpoint: "/graphql", Assets: "/playground/assets", Channels: examples})
	if err != nil {
		return nil, fmt.Errorf("playground: %w", err)
	}
	return &graphQL{handler: h, playground: pg, feeds: feeds}, nil
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
