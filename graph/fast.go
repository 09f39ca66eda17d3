package graph

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph/model"
)

// fastPath answers queries whose root fields are only feed (and
// __typename) from rendered bytes. gqlgen marshals every list with a
// goroutine per element and then buffers and re-encodes the whole
// response, which dominates a 2,000-post feed. Here each feed page is
// rendered once per selection — the connection by hand, every edge with
// gqlgen's own generated marshalers, in chunks spread over the CPUs — and
// kept beside the feed build: a repeated query is a write of kept bytes.
// The schema and the JSON are the same as on the regular path
// (TestFastPathMatchesExecutor checks it, also after regenerating);
// anything unusual (errors, @defer, fields that fetch more pages) falls
// back to the executor.
type fastPath struct {
	es      *executableSchema
	feed    *feed.Service
	present graphql.ErrorPresenterFunc
}

// errFallBack: the regular executor must answer this operation.
var errFallBack = errors.New("graph: not served by the fast path")

// serve returns the response as segments to be written in order, so the
// rendered bytes are written as they are kept, not copied.
func (f *fastPath) serve(ctx context.Context, rc *graphql.OperationContext) ([][]byte, bool) {
	op := rc.Operation
	if op == nil || op.Operation != ast.Query {
		return nil, false
	}
	fields := graphql.CollectFields(rc, op.SelectionSet, []string{"Query"})
	if len(fields) == 0 {
		return nil, false
	}
	for _, fld := range fields {
		if (fld.Name != "feed" && fld.Name != "__typename") || fld.IsDeferred() {
			return nil, false
		}
	}
	out := make([][]byte, 0, 2*len(fields)+1)
	sep := `{"data":{`
	for _, fld := range fields {
		key := sep + `"` + fld.Alias + `":`
		sep = ","
		if fld.Name == "__typename" {
			out = append(out, []byte(key+`"Query"`))
			continue
		}
		b, err := f.feedField(ctx, rc, fld)
		if err != nil {
			return nil, false
		}
		out = append(out, []byte(key), b)
	}
	return append(out, []byte(`}}`)), true
}

func (f *fastPath) feedField(ctx context.Context, rc *graphql.OperationContext, fld graphql.CollectedField) ([]byte, error) {
	var sig strings.Builder
	if !signature(&sig, rc, fld.Selections, "FeedConnection") {
		return nil, errFallBack
	}
	ec := newExecutionContext(rc, f.es, nil)
	args, err := ec.field_Query_feed_args(ctx, fld.ArgumentMap(rc.Variables))
	if err != nil {
		return nil, err
	}
	req, err := feedRequest(args["channels"].([]string), args["first"].(*int), args["after"].(*string), args["last"].(*int), args["before"].(*string), args["order"].(*model.FeedOrder), args["filter"].(*model.FeedFilter))
	if err != nil {
		return nil, err
	}
	p, err := f.feed.Feed(ctx, req)
	if err != nil {
		return nil, err // the regular path reports it
	}
	return f.feed.Rendered(p, "graphql\x00"+sig.String(), func() ([]byte, error) {
		return f.render(ctx, ec, fld.Selections, p)
	})
}

// render writes a FeedConnection for page p: the connection by hand, each
// object in it with the generated marshalers, one after another.
func (f *fastPath) render(ctx context.Context, ec *executionContext, sel ast.SelectionSet, p *feed.Page) ([]byte, error) {
	ctx = graphql.WithResponseContext(ctx, f.present, graphql.DefaultRecover)
	var buf bytes.Buffer
	buf.Grow(1024 + 1024*len(p.Items))
	buf.WriteByte('{')
	for i, fld := range graphql.CollectFields(ec.OperationContext, sel, []string{"FeedConnection"}) {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeKey(&buf, fld.Alias)
		switch fld.Name {
		case "__typename":
			buf.WriteString(`"FeedConnection"`)
		case "totalCount":
			buf.WriteString(strconv.Itoa(p.TotalCount))
		case "pageInfo":
			ec._PageInfo(ctx, fld.Selections, feedPageInfo(p)).MarshalGQL(&buf)
		case "edges":
			buf.WriteByte('[')
			for j, chunk := range renderEdges(ctx, ec, fld.Selections, p.Items) {
				if j > 0 {
					buf.WriteByte(',')
				}
				buf.Write(chunk)
			}
			buf.WriteByte(']')
		case "failedChannels":
			buf.WriteByte('[')
			for j, fc := range failedChannels(p) {
				if j > 0 {
					buf.WriteByte(',')
				}
				ec._FailedChannel(ctx, fld.Selections, fc).MarshalGQL(&buf)
			}
			buf.WriteByte(']')
		default:
			return nil, errFallBack
		}
	}
	buf.WriteByte('}')
	if len(graphql.GetErrors(ctx)) > 0 {
		return nil, errFallBack
	}
	return buf.Bytes(), nil
}

// edgeChunk is the fewest edges worth a goroutine of their own.
const edgeChunk = 128

// renderEdges renders the edges of items in chunks spread over the CPUs;
// each chunk is the comma-separated JSON of its edges.
func renderEdges(ctx context.Context, ec *executionContext, sel ast.SelectionSet, items []feed.Item) [][]byte {
	if len(items) == 0 {
		return nil
	}
	size := max(edgeChunk, (len(items)+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0))
	chunks := make([][]byte, (len(items)+size-1)/size)
	var wg sync.WaitGroup
	for c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := items[c*size : min((c+1)*size, len(items))]
			var buf bytes.Buffer
			buf.Grow(1024 * len(part))
			for j := range part {
				if j > 0 {
					buf.WriteByte(',')
				}
				it := &part[j]
				ec._FeedEdge(ctx, sel, &model.FeedEdge{Cursor: it.Cursor, Node: model.ItemOf(it)}).MarshalGQL(&buf)
			}
			chunks[c] = buf.Bytes()
		}()
	}
	wg.Wait()
	return chunks
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

// writeKey writes a response key; GraphQL names need no escaping.
func writeKey(buf *bytes.Buffer, name string) {
	buf.WriteByte('"')
	buf.WriteString(name)
	buf.WriteString(`":`)
}
