package graph

import (
	"context"
	"log/slog"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/internal/flight"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// PageService reads t.me pages through the cache; *pages.Service is one.
type PageService interface {
	Page(ctx context.Context, r tme.Request) (pages.Result, error)
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
	fanOut        *pages.Gate
	// checked remembers the channels a subscription's look-up found,
	// for a while; lookups shares the look-ups in progress. Subscriptions
	// starting together to the same channels (one client's hundreds, a
	// dashboard's after a deploy) then read each channel once.
	checked *lru.Cache[string, time.Time] // until when
	now     func() time.Time
	lookups flight.Group[struct{}]
	timeout time.Duration // bounds a subscription's look-up of its channels
	log     *slog.Logger
}
