package graph

import (
	"context"
	"slices"
	"strconv"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
)

// postsPerPage is about how many posts one t.me page holds; it sizes the
// page fetches a posts query may need (and so its complexity).
const postsPerPage = 20

// maxWalkPages caps the pages one posts query reads.
const maxWalkPages = 8

// postsArgs are the arguments of Channel.posts.
type postsArgs struct {
	first         *int
	before, after *string
	around        *int
}

// channelPosts answers Channel.posts: newest first, walking t.me's pages
// towards older posts (default and after) or newer ones (before).
func (r *Resolver) channelPosts(ctx context.Context, ch *model.Channel, a postsArgs) (*model.PostConnection, error) {
	n := postsPerPage
	if a.first != nil {
		n = *a.first
	}
	if n < 0 || n > r.maxPostsFirst {
		return nil, inputError("first must be from 0 to %d", r.maxPostsFirst)
	}
	given := 0
	for _, set := range []bool{a.before != nil, a.after != nil, a.around != nil} {
		if set {
			given++
		}
	}
	if given > 1 {
		return nil, inputError("give at most one of before, after and around")
	}
	name := ch.Username()
	var (
		list             []*parser.Post // newest first
		hasNext, hasPrev bool
		err              error
	)
	switch {
	case a.around != nil:
		id := *a.around
		if id < 1 || id > pages.MaxPosition {
			return nil, inputError("around must be from 1 to %d", pages.MaxPosition)
		}
		list, hasNext, hasPrev, err = r.postsAround(ctx, name, id, n)
	case a.before != nil:
		id, perr := pages.ParsePosition(*a.before)
		if perr != nil {
			return nil, perr
		}
		list, hasPrev, err = r.walk(ctx, origin.Request{Kind: parser.KindBody, Channel: name, Position: id}, nil, id, false, n)
		hasNext = true // the cursor's own post is older
	case a.after != nil:
		id, perr := pages.ParsePosition(*a.after)
		if perr != nil {
			return nil, perr
		}
		list, hasNext, err = r.walk(ctx, origin.Request{Kind: parser.KindBody, Channel: name, Position: id}, nil, id, true, n)
		hasPrev = true
	default:
		list, hasNext, err = r.walk(ctx, origin.Request{Kind: parser.KindBody, Channel: name}, ch.NewestPage(), 0, true, n)
	}
	if err != nil {
		return nil, err
	}
	conn := &model.PostConnection{
		Edges:    make([]*model.PostEdge, len(list)),
		PageInfo: &model.PageInfo{HasNextPage: hasNext, HasPreviousPage: hasPrev},
	}
	for i, p := range list {
		conn.Edges[i] = &model.PostEdge{Cursor: strconv.Itoa(p.ID), Node: model.PostOf(p)}
	}
	if len(list) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(list)-1].Cursor
	}
	return conn, nil
}

// walk collects n posts from the page req names (or from first, when it
// is already at hand) on, following t.me's offsets: towards older posts
// (ids below bound, if set) or newer ones (ids above bound). It returns
// them newest first and whether more posts lie beyond. A walk from a
// cursor starts at the page around the cursor's post, the page post()
// reads too, and then follows the offsets that page gives.
func (r *Resolver) walk(ctx context.Context, req origin.Request, first *parser.Page, bound int, older bool, n int) ([]*parser.Post, bool, error) {
	var got []*parser.Post // in walking order
	maxPages := n/postsPerPage + 2
	page := first
	for fetched := 0; ; fetched++ {
		if page == nil {
			res, err := r.pages.Page(ctx, req)
			if err != nil {
				return nil, false, err
			}
			page = res.Page
		}
		posts := page.Content.Posts // oldest first
		for i := range posts {
			j := i
			if older {
				j = len(posts) - 1 - i
			}
			p := &posts[j]
			if bound > 0 && (older && p.ID >= bound || !older && p.ID <= bound) {
				continue
			}
			if len(got) > 0 && (older && p.ID >= got[len(got)-1].ID || !older && p.ID <= got[len(got)-1].ID) {
				continue // pages may overlap
			}
			got = append(got, p)
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
		if next == 0 || fetched+1 >= maxPages && (len(got) > 0 || fetched+1 >= maxWalkPages) {
			return orderNewest(got, older), next != 0, nil
		}
		req = origin.Request{Kind: parser.KindMore, Channel: req.Channel, Position: next, After: !older}
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
func (r *Resolver) postsAround(ctx context.Context, name string, id, n int) (list []*parser.Post, hasNext, hasPrev bool, err error) {
	res, err := r.pages.Page(ctx, origin.Request{Kind: parser.KindBody, Channel: name, Position: id})
	if err != nil {
		return nil, false, false, err
	}
	posts := res.Page.Content.Posts
	all := make([]*parser.Post, len(posts))
	for i := range posts {
		all[len(posts)-1-i] = &posts[i]
	}
	// centre: the first post at or below id
	c := len(all)
	for i, p := range all {
		if p.ID <= id {
			c = i
			break
		}
	}
	start := max(0, min(c-n/2, len(all)-n))
	end := min(len(all), start+n)
	return all[start:end], end < len(all) || res.Page.Meta.Offset.Before != 0, start > 0 || res.Page.Meta.Offset.After != 0, nil
}
