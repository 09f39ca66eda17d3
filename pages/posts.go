package pages

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// PostsPerPage is about how many posts one t.me page holds; it sizes the
// page reads a window may need.
const PostsPerPage = 20

// Window selects a channel's posts by t.me's own paging: the First newest,
// or the First next to a post. At most one of Before, After and Around is
// given.
type Window struct {
	First  int
	Before *int // the posts just newer than this post id
	After  *int // the posts just older than this post id
	Around *int // the posts centred on this post id
	// Newest is the channel's newest page when the caller holds it already
	// (it read the channel's header from it), saving a read. Only the
	// window without Before, After or Around uses it.
	Newest *parser.Page
	// Client is whose share of the origin budget the walk's fetches are
	// charged to (tme.Request.Client); identical windows share one
	// walk, charged to the first. Like Newest, not part of what is asked.
	Client string
}

// Posts is a window of a channel's posts.
type Posts struct {
	List     []*parser.Post // newest first; shared, must not be modified
	HasOlder bool           // more posts lie beyond the oldest in List
	HasNewer bool           // more posts lie beyond the newest in List
}

// Posts returns the window w of channel's posts, walking t.me's pages
// towards older posts (the newest window, After) or newer ones (Before).
// A walk from a post starts at the page around it, the page a single post
// is read from too, and then follows the offsets that page gives. It reads
// at most Config.HistoryMaxPages pages: when they hold fewer posts than
// First, the window ends early with HasOlder (or HasNewer) set, and its
// last post is the cursor to go on from. Identical concurrent windows
// share one walk. Bad windows give ErrBadRequest or ErrInvalidPosition.
func (s *Service) Posts(ctx context.Context, channel string, w Window) (Posts, error) {
	if err := w.validate(); err != nil {
		return Posts{}, err
	}
	// Newest only saves a read, so it is not part of what is asked.
	key := "posts|" + channel + "|" + strconv.Itoa(w.First) + "|" + optID(w.Before) + "|" + optID(w.After) + "|" + optID(w.Around)
	r, err := s.walks.Do(ctx, key, func(ctx context.Context) (walked, error) {
		ctx, cancel := context.WithTimeout(ctx, s.walkTimeout)
		defer cancel()
		s.walksRun.Add(1)
		var ages pageAges
		p, err := s.posts(ctx, channel, w, &ages)
		return walked{posts: p, ages: ages}, err
	})
	if err != nil {
		NoteFailure(ctx, err)
		return Posts{}, err
	}
	// The walk noted its reads in its first caller's context; every
	// caller's answer derives from them.
	r.ages.note(ctx)
	return r.posts, nil
}

func optID(id *int) string {
	if id == nil {
		return ""
	}
	return strconv.Itoa(*id)
}

func (s *Service) posts(ctx context.Context, channel string, w Window, ages *pageAges) (Posts, error) {
	var (
		out Posts
		err error
	)
	switch {
	case w.Around != nil:
		out, err = s.postsAround(ctx, channel, *w.Around, w.First, w.Client, ages)
	case w.Before != nil:
		out.List, out.HasNewer, err = s.walk(ctx, tme.Request{Kind: tme.KindBody, Channel: channel, Position: *w.Before, Client: w.Client}, nil, *w.Before, false, w.First, ages)
		out.HasOlder = true // the cursor's own post is older
	case w.After != nil:
		out.List, out.HasOlder, err = s.walk(ctx, tme.Request{Kind: tme.KindBody, Channel: channel, Position: *w.After, Client: w.Client}, nil, *w.After, true, w.First, ages)
		out.HasNewer = true
	default:
		out.List, out.HasOlder, err = s.walk(ctx, tme.Request{Kind: tme.KindBody, Channel: channel, Client: w.Client}, w.Newest, 0, true, w.First, ages)
	}
	if err != nil {
		return Posts{}, err
	}
	return out, nil
}

func (w Window) validate() error {
	if w.First < 0 {
		return fmt.Errorf("%w: first must not be negative", ErrBadRequest)
	}
	given := 0
	for _, a := range []struct {
		name string
		id   *int
	}{{"before", w.Before}, {"after", w.After}, {"around", w.Around}} {
		if a.id == nil {
			continue
		}
		given++
		if *a.id < 1 || *a.id > tme.MaxPosition {
			return fmt.Errorf("%w: %s must be from 1 to %d", tme.ErrInvalidPosition, a.name, tme.MaxPosition)
		}
	}
	if given > 1 {
		return fmt.Errorf("%w: give at most one of before, after and around", ErrBadRequest)
	}
	return nil
}

// walk collects n posts from the page req names (or from first, when it
// is already at hand) on, following t.me's offsets: towards older posts
// (ids below bound, if set) or newer ones (ids above bound). It returns
// them newest first and whether more posts lie beyond.
func (s *Service) walk(ctx context.Context, req tme.Request, first *parser.Page, bound int, older bool, n int, ages *pageAges) ([]*parser.Post, bool, error) {
	var got []*parser.Post // in walking order
	lastID := 0            // the number of the last post got that has one
	maxPages := min(n/PostsPerPage+2, s.historyPages)
	page := first
	for fetched := 0; ; fetched++ {
		if page == nil {
			res, err := s.Page(ctx, req)
			if err != nil {
				return nil, false, err
			}
			ages.add(res)
			page = res.Page
		}
		posts := page.Content.Posts // oldest first
		// A post t.me names nowhere (ID 0) is placed by its neighbours: it
		// is taken once a numbered post before it in walking order was,
		// past the bound and the pages already read.
		open := bound == 0 && lastID == 0
		for i := range posts {
			j := i
			if older {
				j = len(posts) - 1 - i
			}
			p := &posts[j]
			if p.ID == 0 {
				if open {
					got = append(got, p)
				}
				continue
			}
			if bound > 0 && (older && p.ID >= bound || !older && p.ID <= bound) {
				continue
			}
			if lastID != 0 && (older && p.ID >= lastID || !older && p.ID <= lastID) {
				continue // pages may overlap
			}
			got = append(got, p)
			lastID, open = p.ID, true
		}
		next := page.Meta.Offset.Before
		if !older {
			next = page.Meta.Offset.After
		}
		if len(got) >= n {
			more := len(got) > n || next != 0
			got = got[:n]
			return orderNewest(got, older), more, nil
		}
		// Past the page budget, keep going only while nothing was found
		// (a cursor whose page holds no posts beyond it), up to a hard cap.
		if next == 0 || fetched+1 >= maxPages && (len(got) > 0 || fetched+1 >= s.historyPages) {
			return orderNewest(got, older), next != 0, nil
		}
		req = tme.Request{Kind: tme.KindMore, Channel: req.Channel, Position: next, After: !older, Class: tme.ClassHistory, Client: req.Client}
		page = nil
	}
}

func orderNewest(posts []*parser.Post, older bool) []*parser.Post {
	if !older {
		slices.Reverse(posts)
	}
	return posts
}

// postsAround returns up to n posts centred on id, newest first.
func (s *Service) postsAround(ctx context.Context, channel string, id, n int, client string, ages *pageAges) (Posts, error) {
	res, err := s.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: channel, Position: id, Client: client})
	if err != nil {
		return Posts{}, err
	}
	ages.add(res)
	posts := res.Page.Content.Posts
	all := make([]*parser.Post, len(posts))
	for i := range posts {
		all[len(posts)-1-i] = &posts[i]
	}
	// centre: the first post at or below id
	c := len(all)
	for i, p := range all {
		if p.ID != 0 && p.ID <= id {
			c = i
			break
		}
	}
	start := max(0, min(c-n/2, len(all)-n))
	end := min(len(all), start+n)
	return Posts{
		List:     all[start:end],
		HasOlder: end < len(all) || res.Page.Meta.Offset.Before != 0,
		HasNewer: start > 0 || res.Page.Meta.Offset.After != 0,
	}, nil
}
