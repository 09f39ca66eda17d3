package graph

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/pages"
)

// fastPath answers queries whose root fields are only feed (and
// __typename) from kept bytes. gqlgen marshals every list with a goroutine
// per element and buffers the whole response, about a hundred tokenizer
// passes for a 2,000-post feed; so the answer is written straight from the
// feed page by the selection (writer.go), and since a feed build serves
// many requests, it is written once and kept beside the build
// (feed.Service.Rendered) under the pages it shows and the selection: a
// repeated query is a write of kept bytes, and concurrent identical ones
// share one render. Only gqlgen's exported API is used
// (TestNoCallsIntoGeneratedInternals), so regenerating or upgrading gqlgen
// cannot break it at run time; anything unusual (errors, @defer, fields
// that fetch more pages) is left to the executor, which runs once.
type fastPath struct {
	feed   *feed.Service
	schema *ast.Schema
	// executorOnly renders every answer with the executor, not the
	// writer (writer.go): tests compare the two.
	executorOnly bool
	texts        *Texts // the writer's Text.html, kept per parse
	// room holds room for the answer the executor renders (see
	// runner.room); nil holds none.
	room func(context.Context, *graphql.OperationContext) (release func(), ok bool)
}

// errFallBack: the regular executor must answer this operation.
var errFallBack = errors.New("graph: not served by the fast path")

// errNoRoom: there was no room to render the answer.
var errNoRoom = errors.New("graph: no room to render the answer")

// fastAnswer is an answer of the fast path and what it was cut from.
type fastAnswer struct {
	body      []byte
	versions  []feed.Version // of the feed pages read
	refreshAt time.Time      // the earliest refresh point of their pages
	stale     bool           // one of them was served past it
	// passing is set when a channel failed for a reason that may pass
	// (pages.Lasting): the answer must not be kept.
	passing bool
	// executed, when not ok, is the executor's answer the fast path did
	// not keep, to be sent without running the operation again. Shared
	// with concurrent identical requests: not to be modified.
	executed *executed
}

// serve returns the response. busy says there was no room to render it:
// the executor has none either. When not ok, ans.executed may hold the
// answer of an operation the executor already ran.
func (f *fastPath) serve(ctx context.Context, exec graphql.GraphExecutor, rc *graphql.OperationContext) (ans fastAnswer, ok, busy bool) {
	op := rc.Operation
	if op == nil || op.Operation != ast.Query {
		return ans, false, false
	}
	// The key names everything the answer depends on besides the first
	// page, which Rendered adds: each root field's response key and
	// selection, and the other feed pages.
	var key strings.Builder
	key.WriteString("graphql\x00")
	var first *feed.Page
	read := make(map[string]*feed.Page)
	for _, fld := range graphql.CollectFields(rc, op.SelectionSet, []string{"Query"}) {
		if fld.IsDeferred() {
			return ans, false, false
		}
		key.WriteString(fld.Alias)
		key.WriteByte(':')
		key.WriteString(fld.Name)
		switch fld.Name {
		case "__typename":
		case "feed":
			if !signature(&key, rc, fld.Selections, "FeedConnection") {
				return ans, false, false
			}
			req, err := feedArgs(ctx, rc, fld)
			if err != nil {
				return ans, false, false // the executor reports it
			}
			p, err := f.feed.Feed(ctx, req)
			if err != nil {
				return ans, false, false
			}
			if first == nil {
				first = p
			} else {
				key.WriteString("@" + p.Key)
			}
			read[fld.Alias] = p
		default:
			return ans, false, false
		}
		key.WriteByte(',')
	}
	if first == nil {
		return ans, false, false
	}
	b, err := f.feed.Rendered(first, key.String(), func() ([]byte, error) {
		if !f.executorOnly {
			// The writer holds nothing but the answer's bytes: it takes
			// no room.
			if b, ok := writeFeedAnswer(f.schema, rc, read, f.texts); ok {
				return b, nil
			}
		}
		if f.room != nil {
			release, ok := f.room(ctx, rc)
			if !ok {
				return nil, errNoRoom
			}
			defer release()
		}
		return render(withFeedPages(ctx, read), exec, rc)
	})
	if err != nil {
		errors.As(err, &ans.executed)
		return ans, false, errors.Is(err, errNoRoom)
	}
	ans.body = b
	for _, p := range read {
		ans.versions = append(ans.versions, p.Version())
		if !p.RefreshAt.IsZero() && (ans.refreshAt.IsZero() || p.RefreshAt.Before(ans.refreshAt)) {
			ans.refreshAt = p.RefreshAt
		}
		ans.stale = ans.stale || p.Stale
		for _, fl := range p.Failed {
			ans.passing = ans.passing || !pages.Lasting(fl.Err)
		}
	}
	return ans, true, false
}

// executed is the answer of an operation the executor ran that is not
// worth keeping (errors, extensions, no data): it is sent as it is rather
// than run again.
type executed struct {
	resp *graphql.Response
	ctx  error // the operation's context's error when it ended
}

func (e *executed) Error() string { return "graph: the answer has errors and is not kept" }

// render runs the operation through the executor and returns its answer,
// if it is one worth keeping: data alone, no errors. Otherwise the error
// is an *executed holding the answer.
func render(ctx context.Context, exec graphql.GraphExecutor, rc *graphql.OperationContext) ([]byte, error) {
	responses, ctx := exec.DispatchOperation(ctx, rc)
	resp := responses(ctx)
	if resp == nil || len(resp.Errors) > 0 || len(resp.Extensions) > 0 || resp.Data == nil || ctx.Err() != nil {
		if resp == nil {
			resp = &graphql.Response{}
		}
		return nil, &executed{resp: resp, ctx: ctx.Err()}
	}
	b := make([]byte, 0, len(`{"data":}`)+len(resp.Data))
	b = append(b, `{"data":`...)
	b = append(b, resp.Data...)
	return append(b, '}'), nil
}

// feedArgs decodes the arguments of a feed field as the executor does.
// gqlgen's exported complexity hook is where generated code hands a
// field's decoded, typed arguments to a function of ours; its signature
// follows the schema, so an argument change fails to compile here rather
// than at run time.
func feedArgs(ctx context.Context, rc *graphql.OperationContext, fld graphql.CollectedField) (feed.Request, error) {
	var req feed.Request
	err := errFallBack // stays when the arguments do not decode
	var c ComplexityRoot
	c.Query.Feed = func(_ int, channels []string, first *int, after *string, last *int, before *string, order *model.FeedOrder, filter *model.FeedFilter) int {
		req, err = feedRequest(channels, first, after, last, before, order, filter)
		return 0
	}
	NewExecutableSchema(Config{Complexity: c}).Complexity(ctx, "Query", "feed", 0, fld.ArgumentMap(rc.Variables))
	req.Client = clientOf(ctx)
	return req, err
}

type feedPagesKey struct{}

// withFeedPages gives the executor the pages the fast path fetched, by
// response key, so that the bytes kept under a page's key are that page's
// even when the feed is rebuilt meanwhile.
func withFeedPages(ctx context.Context, pages map[string]*feed.Page) context.Context {
	return context.WithValue(ctx, feedPagesKey{}, pages)
}

// feedPage returns the page for the feed field being resolved: the one the
// fast path fetched, else a fresh one.
func (r *Resolver) feedPage(ctx context.Context, req feed.Request) (*feed.Page, error) {
	if pages, ok := ctx.Value(feedPagesKey{}).(map[string]*feed.Page); ok {
		if fc := graphql.GetFieldContext(ctx); fc != nil && pages[fc.Field.Alias] != nil {
			return pages[fc.Field.Alias], nil
		}
	}
	return r.feed.Feed(ctx, req)
}

// signature writes a key for a selection set on type typ, fragments and
// @skip/@include resolved, and reports whether the fast path can serve
// it: no field below takes arguments (Channel.posts would fetch pages the
// feed build does not track) and nothing is deferred.
func signature(b *strings.Builder, rc *graphql.OperationContext, sel ast.SelectionSet, typ string) bool {
	b.WriteByte('{')
	for _, fld := range graphql.CollectFields(rc, sel, []string{typ}) {
		if fld.IsDeferred() || len(fld.Arguments) > 0 {
			return false
		}
		b.WriteString(fld.Alias)
		b.WriteByte(':')
		b.WriteString(fld.Name)
		if len(fld.Selections) > 0 {
			if fld.Definition == nil || !signature(b, rc, fld.Selections, fld.Definition.Type.Name()) {
				return false
			}
		}
		b.WriteByte(',')
	}
	b.WriteByte('}')
	return true
}
