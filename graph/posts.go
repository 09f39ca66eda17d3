package graph

import (
	"context"
	"strconv"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/pages"
)

// postsPerPage sizes the page fetches a posts query may need (and so its
// complexity).
const postsPerPage = pages.PostsPerPage

// postsArgs are the arguments of Channel.posts.
type postsArgs struct {
	first         *int
	before, after *string
	around        *int
}

// channelPosts answers Channel.posts from pages.Service.Posts. GraphQL
// keeps only its bound on first (the query's cost) and its cursors, which
// are post ids as text.
func (r *Resolver) channelPosts(ctx context.Context, ch *model.Channel, a postsArgs) (*model.PostConnection, error) {
	w := pages.Window{First: postsPerPage, Around: a.around, Newest: ch.NewestPage()}
	if a.first != nil {
		w.First = *a.first
	}
	if w.First < 0 || w.First > r.maxPostsFirst {
		return nil, inputError("first must be from 0 to %d", r.maxPostsFirst)
	}
	// Cursors are post ids as text.
	for _, c := range []struct {
		arg *string
		dst **int
	}{{a.before, &w.Before}, {a.after, &w.After}} {
		if c.arg == nil {
			continue
		}
		id, err := pages.ParsePosition(*c.arg)
		if err != nil {
			return nil, err
		}
		*c.dst = &id
	}
	p, err := r.pages.Posts(ctx, ch.Username(), w)
	if err != nil {
		return nil, err
	}
	conn := &model.PostConnection{
		Edges:    make([]*model.PostEdge, len(p.List)),
		PageInfo: &model.PageInfo{HasNextPage: p.HasOlder, HasPreviousPage: p.HasNewer},
	}
	for i, post := range p.List {
		conn.Edges[i] = &model.PostEdge{Cursor: strconv.Itoa(post.ID), Node: model.PostOf(post)}
	}
	if len(p.List) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(p.List)-1].Cursor
	}
	return conn, nil
}
