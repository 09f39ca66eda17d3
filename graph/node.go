package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/sync/errgroup"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/graph/ids"
	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// MaxNodes bounds the ids of one nodes query, as previews bounds names.
const MaxNodes = 100

// findChannel reads the header and newest page of channel name.
func (r *Resolver) findChannel(ctx context.Context, name string) (*model.Channel, error) {
	res, err := r.pages.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: name, Client: clientOf(ctx)})
	if err != nil {
		return nil, err
	}
	if res.Page.Channel == nil {
		return nil, fmt.Errorf("%s: %w", name, pages.ErrNotFound)
	}
	return model.ChannelOf(res.Page.Channel, res.Page), nil
}

// findPost reads message id of channel name from the page around it.
func (r *Resolver) findPost(ctx context.Context, name string, id int) (*model.Post, error) {
	res, err := r.pages.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: name, Position: id, Client: clientOf(ctx)})
	if err != nil {
		return nil, err
	}
	for i := range res.Page.Content.Posts {
		if p := &res.Page.Content.Posts[i]; p.ID == id {
			return model.PostOf(p), nil
		}
	}
	return nil, fmt.Errorf("%s/%d: %w", name, id, pages.ErrPostNotFound)
}

// parseID decodes a Node id given as argument arg.
func parseID(arg, id string) (ids.Ref, error) {
	ref, err := ids.Parse(id)
	if err != nil {
		return ref, fmt.Errorf("%w: %s: %w", fault.ErrBadRequest, arg, err)
	}
	return ref, nil
}

// node returns the object ref names. One that does not exist is nil
// without an error, as Relay's refetching expects: a client learns that
// the object is gone rather than that the request failed.
func (r *Resolver) node(ctx context.Context, ref ids.Ref) (model.Node, error) {
	var (
		n   model.Node
		err error
	)
	switch ref.Type {
	case ids.TypePost:
		if ref.Unnamed != "" {
			// A post t.me names nowhere cannot be asked for again.
			return nil, nil
		}
		var p *model.Post
		if p, err = r.findPost(ctx, ref.Channel, ref.MessageID); err == nil {
			n = p
		}
	case ids.TypeChannel:
		var c *model.Channel
		if c, err = r.findChannel(ctx, ref.Channel); err == nil {
			n = c
		}
	default:
		return nil, fmt.Errorf("graph: id type %q has no resolver", ref.Type)
	}
	if err != nil {
		if graphCode(fault.Classify(err).Kind) == CodeNotFound {
			return nil, nil
		}
		return nil, err
	}
	return n, nil
}

// nodes resolves every id at once. Bad input fails the whole field; a
// failure to read one object nulls that entry alone, with an error on its
// path.
func (r *Resolver) nodes(ctx context.Context, list []string) ([]model.Node, error) {
	if len(list) > MaxNodes {
		return nil, inputError("%d ids given, at most %d allowed", len(list), MaxNodes)
	}
	refs := make([]ids.Ref, len(list))
	for i, id := range list {
		ref, err := parseID(fmt.Sprintf("ids[%d]", i), id)
		if err != nil {
			return nil, err
		}
		refs[i] = ref
	}
	out := make([]model.Node, len(refs))
	errs := make([]error, len(refs))
	var g errgroup.Group
	g.SetLimit(r.concurrency)
	for i, ref := range refs {
		g.Go(func() error {
			out[i], errs[i] = r.node(ctx, ref)
			return nil
		})
	}
	_ = g.Wait()
	path := graphql.GetPath(ctx)
	for i, err := range errs {
		if err != nil {
			graphql.AddError(ctx, gqlerror.WrapPath(append(path[:len(path):len(path)], ast.PathIndex(i)), err))
		}
	}
	return out, nil
}
