package pages

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tmefeed/tmefeed/tme"
)

// Defaults for the history walks.
const (
	// DefaultHistoryMaxPages bounds the pages one walk reads per channel:
	// the newest page and 9 "more" chunks, about 200 posts.
	DefaultHistoryMaxPages = 10
	// DefaultWalkTimeout bounds one walk, which runs for every caller
	// sharing it and so is not cancelled by any one of them.
	DefaultWalkTimeout = 30 * time.Second
)

// walked is the outcome of one shared walk.
type walked struct {
	posts Posts
	pages []Result
	ages  pageAges
}

// pageAges is what a walk learned of the age of the pages it read, so that
// every caller sharing the walk can note it in its own Freshness.
type pageAges struct {
	until time.Time // the earliest refresh point
	read  bool
	stale bool
}

// add records a page the walk read.
func (a *pageAges) add(res Result) {
	if !a.read || res.RefreshAt.Before(a.until) {
		a.until = res.RefreshAt
	}
	a.read = true
	a.stale = a.stale || res.Stale
}

func (a pageAges) note(ctx context.Context) {
	if a.read {
		NoteFreshUntil(ctx, a.until, a.stale)
	}
}

// HistoryMaxPages is the most pages one walk reads per channel
// (Config.HistoryMaxPages).
func (s *Service) HistoryMaxPages() int { return s.historyPages }

// Walks counts the walks run so far (Posts and History); callers that
// joined a walk in progress do not count.
func (s *Service) Walks() int64 { return s.walksRun.Load() }

// History returns a channel's newest page followed by the older "more"
// chunks that reach back to since: the walk stops at the first page holding
// a post dated before since, at the channel's first post, or after
// Config.HistoryMaxPages pages in all, whichever comes first. A zero since
// reads the newest page only. Every page comes through the cache, as any
// page read does; identical concurrent walks share one, charged to the
// origin budget of the first one's client (tme.Request.Client). The
// older chunks are history (tme.ClassHistory). Results are newest
// page first and shared: they must not be modified.
func (s *Service) History(ctx context.Context, channel string, since time.Time, client string) ([]Result, error) {
	key := "history|" + channel + "|"
	if !since.IsZero() {
		key += strconv.FormatInt(since.Unix(), 10)
	}
	r, err := s.walks.Do(ctx, key, func(ctx context.Context) (walked, error) {
		ctx, cancel := context.WithTimeout(ctx, s.walkTimeout)
		defer cancel()
		s.walksRun.Add(1)
		var ages pageAges
		p, err := s.history(ctx, channel, since, client, &ages)
		return walked{pages: p, ages: ages}, err
	})
	if err != nil {
		NoteFailure(ctx, err)
		return nil, err
	}
	r.ages.note(ctx)
	return r.pages, nil
}

func (s *Service) history(ctx context.Context, channel string, since time.Time, client string, ages *pageAges) ([]Result, error) {
	res, err := s.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: channel, Client: client})
	if err != nil {
		return nil, err
	}
	ages.add(res)
	out := []Result{res}
	for !since.IsZero() && len(out) < s.historyPages {
		page := out[len(out)-1].Page
		posts := page.Content.Posts // oldest first
		next := page.Meta.Offset.Before
		if len(posts) == 0 || next == 0 || posts[0].Footer.Date.Unix < since.Unix() {
			break
		}
		res, err := s.Page(ctx, tme.Request{Kind: tme.KindMore, Channel: channel, Position: next, Class: tme.ClassHistory, Client: client})
		if err != nil {
			return nil, fmt.Errorf("%s: older posts before %d: %w", channel, next, err)
		}
		ages.add(res)
		out = append(out, res)
	}
	return out, nil
}
