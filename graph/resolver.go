package graph

import (
	"context"
	"log/slog"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
)

// PageService reads t.me pages through the cache; *pages.Service is one.
type PageService interface {
	Page(ctx context.Context, r origin.Request) (pages.Result, error)
	Preview(ctx context.Context, username, client string) (*parser.Preview, error)
	Posts(ctx context.Context, channel string, w pages.Window) (pages.Posts, error)
	// HistoryMaxPages is the most pages a walk reads per channel; it
	// prices feeds with since.
	HistoryMaxPages() int
	Search(ctx context.Context, channel, query string, first int, client string) (pages.Found, error)
}

// Resolver holds what the resolvers call into. Resolvers stay thin: they
// validate arguments and adapt domain values to the schema's types.
type Resolver struct {
	live          LiveHub
	streams       *streams
	pages         PageService
	feed          *feed.Service
	maxPreviews   int
	maxPostsFirst int
	concurrency   int
	timeout       time.Duration // bounds a subscription's look-up of its channels
	log           *slog.Logger
}
