package graph

import (
	"context"
	"strconv"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
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
	w := pages.Window{First: postsPerPage, Around: a.around, Newest: ch.NewestPage(), Client: clientOf(ctx)}
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
		id, err := tme.ParsePosition(*c.arg)
		if err != nil {
			return nil, err
		}
		*c.dst = &id
	}
	p, err := r.pages.Posts(ctx, ch.Username(), w)
	if err != nil {
		return nil, err
	}
	return postConnection(p.List, p.HasOlder, p.HasNewer), nil
}

// channelSearch answers Channel.search from pages.Service.Search: one
// search page, so first is bounded by what a page holds.
func (r *Resolver) channelSearch(ctx context.Context, ch *model.Channel, query string, first *int) (*model.PostConnection, error) {
	n := postsPerPage
	if first != nil {
		n = *first
	}
	if n < 0 || n > postsPerPage {
		return nil, inputError("first must be from 0 to %d: a search reads one page of results", postsPerPage)
	}
	found, err := r.pages.Search(ctx, ch.Username(), query, n, clientOf(ctx))
	if err != nil {
		return nil, err
	}
	return postConnection(found.List, found.HasMore, false), nil
}

// postConnection is a connection of posts, newest first, whose cursors
// are their message numbers.
func postConnection(list []*parser.Post, older, newer bool) *model.PostConnection {
	conn := &model.PostConnection{
		Edges:    make([]*model.PostEdge, len(list)),
		PageInfo: &model.PageInfo{HasNextPage: older, HasPreviousPage: newer},
	}
	for i, post := range list {
		conn.Edges[i] = &model.PostEdge{Cursor: strconv.Itoa(post.ID), Node: model.PostOf(post)}
	}
	if len(list) > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[len(list)-1].Cursor
	}
	return conn
}
