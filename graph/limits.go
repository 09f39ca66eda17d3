package graph

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// limits measures a document before gqlgen parses and validates it, and
// refuses it when it is too large. gqlgen validates before any operation
// context extension runs, and several of its walks (validation rules, the
// complexity calculation, field collection) follow every fragment spread
// or compare repeated fields pairwise: a 1 KB document whose fragments
// spread each other twice, 30 levels deep, costs 2^30 steps there. The
// measure here reads each fragment once and reuses its result at every
// spread, so it is linear in the document's size; once a document passes,
// every later walk is bounded by the expanded size it was allowed.
//
// It runs as an operation parameter mutator, after persisted queries have
// filled in the query text and before gqlgen parses it. A document in
// gqlgen's query cache has passed already: the cache only holds documents
// that were measured and validated, so cached queries cost one lookup.
type limits struct {
	tokens        int // parser token limit
	maxFields     int // fields and directives, fragments expanded
	maxDepth      int
	maxIntroDepth int // depth below __schema and __type
	maxAliases    int
	maxRootFields int
	maxCost       int // estimated result size, see cost
	maxPairs      int // same-key field pairs validation compares, see pairs
	// noIntrospection rejects __schema and __type up front, so a client
	// learns why instead of meeting null fields.
	noIntrospection bool
	schema          *ast.Schema
	// lists holds the expected length of introspection's list fields by
	// type and field, from the schema itself.
	lists map[string]map[string]int
	// validated is gqlgen's query cache.
	validated graphql.Cache[*ast.QueryDocument]
	// parsed, when set, is called for each document that passes the
	// measure and goes on to gqlgen's parser and validator (tests count
	// them).
	parsed func(query string)

	pendingMu sync.Mutex
	pending   map[string]chan struct{} // new documents being parsed, closed when their request is done with the gate
}

// awaitSame waits, at most expensiveWait, when another request is parsing
// and validating the same document, and reports whether it waited. When
// none is, the request becomes the one others wait for, until it is done
// with the gate. Outside a request (no turn) nothing is shared.
func (l *limits) awaitSame(ctx context.Context, query string) bool {
	t, ok := ctx.Value(turnKey{}).(*turn)
	if !ok {
		return false
	}
	l.pendingMu.Lock()
	done, busy := l.pending[query]
	if !busy {
		if l.pending == nil {
			l.pending = map[string]chan struct{}{}
		}
		done = make(chan struct{})
		l.pending[query] = done
		t.onDrop = append(t.onDrop, func() {
			l.pendingMu.Lock()
			delete(l.pending, query)
			l.pendingMu.Unlock()
			close(done)
		})
	}
	l.pendingMu.Unlock()
	if !busy {
		return false
	}
	timer := time.NewTimer(expensiveWait)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	case <-ctx.Done():
	}
	return true
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = (*limits)(nil)

func (*limits) ExtensionName() string                   { return "QueryLimits" }
func (*limits) Validate(graphql.ExecutableSchema) error { return nil }

func (l *limits) MutateOperationParameters(ctx context.Context, params *graphql.RawParams) *gqlerror.Error {
	if params.Query == "" {
		return nil // gqlgen reports the missing query
	}
	if _, ok := l.validated.Get(ctx, params.Query); ok {
		return nil
	}
	// Identical new documents arriving together (a dashboard's clients
	// after a deploy) wait for the first of them to be parsed and
	// validated rather than each queueing at the gate for the same work.
	if l.awaitSame(ctx, params.Query) {
		if _, ok := l.validated.Get(ctx, params.Query); ok {
			return nil
		}
	}
	// Parsing, measuring and validating a new document take a turn at the
	// gate: a flood of new documents, refused or not, then keeps to its
	// share of the CPUs, and cached queries are not held up behind it.
	if !takeTurn(ctx) {
		return busyError()
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: params.Query}, l.tokens)
	if err != nil {
		gerr, ok := err.(*gqlerror.Error)
		if !ok {
			gerr = gqlerror.Wrap(err)
		}
		errcode.Set(gerr, errcode.ParseFailed)
		if gerr.Rule == "" && gerr.Message == fmt.Sprintf("exceeded token limit of %d", l.tokens) {
			gerr.Message = fmt.Sprintf("the document has more than %d tokens; send a smaller query", l.tokens)
		}
		return gerr
	}
	if gerr := l.check(doc, nil); gerr != nil {
		return gerr
	}
	if l.parsed != nil {
		l.parsed(params.Query)
	}
	return nil
}

// shape is what the measure learns about a selection set, fragments
// expanded. Counts saturate at maxCount, so no document overflows them.
type shape struct {
	fields     int // field selections and directives
	aliases    int // fields whose response key differs from their name
	roots      int // fields at this level, __typename aside
	depth      int // levels of nested fields, introspection aside
	introDepth int // levels of nested fields through __schema or __type
	cost       int // estimated result size, see cost
	// reach bounds the fragments the merge rule visits from the
	// spreads of this set (not of the fields below it): each spread
	// counts 1 plus the reach of its fragment, so a fragment reached
	// by several paths counts at each. add leaves it alone: set fills
	// it in.
	reach      int
	introspect bool
}

const maxCount = 1 << 40

func sat(n int) int { return min(n, maxCount) }

// mul multiplies two counts, saturating at maxCount.
func mul(a, b int) int {
	if a != 0 && b > maxCount/a {
		return maxCount
	}
	return sat(a * b)
}

// add merges a sibling's shape into s.
func (s *shape) add(o shape) {
	s.fields = sat(s.fields + o.fields)
	s.aliases = sat(s.aliases + o.aliases)
	s.roots = sat(s.roots + o.roots)
	s.depth = max(s.depth, o.depth)
	s.introDepth = max(s.introDepth, o.introDepth)
	s.cost = sat(s.cost + o.cost)
	s.introspect = s.introspect || o.introspect
}

// measurer walks one document. Each fragment's shape is computed once,
// when first spread, and reused at every other spread.
type measurer struct {
	l     *limits
	frags map[string]*ast.FragmentDefinition
	memo  map[string]shape
	// active holds the fragments being walked; meeting one again is a
	// cycle.
	active map[string]bool
	cycle  string
	// pairs estimates the comparisons of gqlparser's
	// OverlappingFieldsCanBeMerged rule, which compares every two fields
	// of a selection set that share a response key (and what they select),
	// and every two fragment spreads: 1,000 copies of title in one
	// selection take it 0.1 to 0.2 s, 10,800 copies 9 s. Each selection
	// set is counted once, as the rule walks it.
	pairs int
	steps int // selections visited, for tests of linearity
}

// check measures every operation of doc and returns the first limit it
// breaks, or nil. steps, when not nil, receives the selections visited.
func (l *limits) check(doc *ast.QueryDocument, steps *int) *gqlerror.Error {
	m := &measurer{
		l:      l,
		frags:  make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		memo:   make(map[string]shape, len(doc.Fragments)),
		active: map[string]bool{},
	}
	defer func() {
		if steps != nil {
			*steps = m.steps
		}
	}()
	for _, f := range doc.Fragments {
		if _, dup := m.frags[f.Name]; !dup {
			m.frags[f.Name] = f
		}
	}
	// Validation reports each unused variable and each unknown argument
	// as an error of its own, so a document of thousands of them costs an
	// answer of thousands of errors; no real query needs many.
	vars, args := 0, 0
	// Directives on definitions (operations, their variables, fragments)
	// are written once and count once, as fields' directives do: each
	// unknown or misplaced one is an error of its own in the answer, so
	// 7,400 of them on a fragment cost an answer of 30,000 errors.
	var total shape
	for _, op := range doc.Operations {
		vars += len(op.VariableDefinitions)
		args = sat(args + directiveArguments(op.Directives) + writtenArguments(op.SelectionSet))
		total.fields = sat(total.fields + len(op.Directives))
		for _, v := range op.VariableDefinitions {
			args = sat(args + directiveArguments(v.Directives))
			total.fields = sat(total.fields + len(v.Directives))
		}
	}
	for _, f := range doc.Fragments {
		args = sat(args + directiveArguments(f.Directives) + writtenArguments(f.SelectionSet))
		total.fields = sat(total.fields + len(f.Directives))
	}
	if total.fields > l.maxFields {
		return definitionDirectivesError(total.fields, l.maxFields)
	}
	for _, op := range doc.Operations {
		var root *ast.Definition
		if l.schema != nil {
			switch op.Operation {
			case ast.Query:
				root = l.schema.Query
			case ast.Mutation:
				root = l.schema.Mutation
			case ast.Subscription:
				root = l.schema.Subscription
			}
		}
		s := m.set(op.SelectionSet, root)
		if m.cycle != "" {
			return cycleError(m.cycle)
		}
		if err := l.verdict(s); err != nil {
			return err
		}
		if err := l.pairsVerdict(m.pairs); err != nil {
			return err
		}
		total.add(s)
		if total.fields > l.maxFields {
			return limitError("the document selects %d fields and directives (fragments expanded, all operations together), at most %d are allowed; send one operation, or select fewer fields", total.fields, l.maxFields)
		}
	}
	if vars > maxVariables {
		return limitError("the document declares %d variables, at most %d are allowed; declare only the variables an operation uses", vars, maxVariables)
	}
	if args > maxArguments {
		return limitError("the document passes %d arguments, at most %d are allowed; pass fewer arguments", args, maxArguments)
	}
	// Fragments no operation uses are rejected by validation, which walks
	// each of them once; a cycle among them must still be refused here.
	for _, f := range doc.Fragments {
		m.fragment(f.Name)
		if m.cycle != "" {
			return cycleError(m.cycle)
		}
	}
	return l.pairsVerdict(m.pairs)
}

func (l *limits) pairsVerdict(pairs int) *gqlerror.Error {
	if pairs > l.maxPairs {
		return limitError("the document repeats the same fields or fragment spreads in a selection, or chains fragments through each other, too often (%d pairs to compare, at most %d); select each field once and spread fewer fragments", pairs, l.maxPairs)
	}
	return nil
}

// verdict returns the first limit an operation of shape s breaks.
func (l *limits) verdict(s shape) *gqlerror.Error {
	if s.introspect && l.noIntrospection {
		err := gqlerror.Errorf("introspection is disabled on this server")
		errcode.Set(err, errcode.ValidationFailed)
		return err
	}
	switch {
	case s.fields > l.maxFields:
		return limitError("the operation selects %d fields and directives (fragments expanded), at most %d are allowed; select fewer fields or spread fragments fewer times", s.fields, l.maxFields)
	case s.roots > l.maxRootFields:
		return limitError("the operation has %d root fields, at most %d are allowed; split it into several requests", s.roots, l.maxRootFields)
	case s.depth > l.maxDepth:
		return limitError("the operation is %d levels deep, at most %d are allowed", s.depth, l.maxDepth)
	case s.introDepth > l.maxIntroDepth:
		return limitError("the introspection selection is %d levels deep, at most %d are allowed", s.introDepth, l.maxIntroDepth)
	case s.aliases > l.maxAliases:
		return limitError("the operation uses %d aliases (fragments expanded, introspection included), at most %d are allowed", s.aliases, l.maxAliases)
	case s.cost > l.maxCost:
		return limitError("the operation's result is estimated at %d values, at most %d are allowed; select fewer fields or use fewer aliases", s.cost, l.maxCost)
	}
	return nil
}

func definitionDirectivesError(n, most int) *gqlerror.Error {
	return limitError("the document's operations, variables and fragments carry %d directives, and at most %d fields and directives are allowed in all; write each directive once", n, most)
}

func cycleError(name string) *gqlerror.Error {
	err := gqlerror.Errorf("fragment %s spreads itself, directly or through other fragments; fragments must not form cycles", name)
	errcode.Set(err, errcode.ValidationFailed)
	return err
}

func limitError(format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	err.Extensions = map[string]any{"code": CodeComplexity}
	return err
}

// merge gathers what the merge rule compares in one selection set, its
// inline fragments included (the rule merges them into it).
type merge struct {
	keys   map[string]*keyCopies
	fields int
	// reach and reachSq sum the reach of each spread (see shape.reach)
	// and its square.
	reach, reachSq int
}

// keyCopies: the fields of one response key, the expanded sizes of what
// they select and the reach of the spreads they select (each summed, and
// summed squared).
type keyCopies struct{ n, size, sizeSq, reach, reachSq int }

// pairs estimates the comparisons the rule makes in the set: each two
// fields sharing a key, with each pair of the fields below them (the
// rule compares those recursively, without memo: five copies of posts,
// each selecting five copies of edges, and so on four levels deep, are
// 780 fields but 200,000 comparisons), and each spread with
// the set's fields, and each two spreads. A spread is compared through
// every fragment it reaches (the rule follows the spreads of a fragment
// too), and two spreads through every pair of fragments they reach: two
// chains of 450 fragments, each spreading the next, spread side by side
// are 200,000 comparisons.
func (g *merge) pairs() int {
	n := sat(mul(fragmentPair, sat(crossPairs(g.reach, g.reachSq)+g.reach)) + mul(g.fields, g.reach))
	for _, k := range g.keys {
		n = sat(n + k.n*(k.n-1)/2 + crossPairs(k.size, k.sizeSq) + mul(fragmentPair, sat(mul(k.n-1, k.reach)+crossPairs(k.reach, k.reachSq))))
	}
	return n
}

// fragmentPair is what comparing through one fragment costs the rule in
// field pairs: it notes each fragment pair, or fragment visited from a
// set, in a map (0.5 to 1 µs, where a field pair takes about 100 ns and
// looking a field up in a fragment's fields 10 to 20 ns).
const fragmentPair = 8

// crossPairs is the sum of r_i·r_j over i < j, given the sum of the r_i
// and the sum of their squares.
func crossPairs(sum, sumSq int) int {
	if sum >= 1<<31 {
		return maxCount
	}
	return sat((sum*sum - sumSq) / 2)
}

// set measures a selection set on type parent (nil when unknown: the
// document is invalid and validation will say so).
func (m *measurer) set(sel ast.SelectionSet, parent *ast.Definition) shape {
	g := merge{keys: make(map[string]*keyCopies, len(sel))}
	s := m.walk(sel, parent, &g)
	m.pairs = sat(m.pairs + g.pairs())
	s.reach = g.reach
	return s
}

// walk measures the selections of one set; inline fragments share its
// merge.
func (m *measurer) walk(sel ast.SelectionSet, parent *ast.Definition, g *merge) shape {
	var s shape
	for _, x := range sel {
		m.steps++
		switch x := x.(type) {
		case *ast.Field:
			f := m.field(x, parent)
			s.add(f)
			key := x.Alias
			if key == "" {
				key = x.Name
			}
			k := g.keys[key]
			if k == nil {
				k = &keyCopies{}
				g.keys[key] = k
			}
			k.n++
			k.size = sat(k.size + f.fields - 1) // what the field selects
			k.sizeSq = sat(k.sizeSq + mul(f.fields-1, f.fields-1))
			k.reach = sat(k.reach + f.reach)
			k.reachSq = sat(k.reachSq + mul(f.reach, f.reach))
			g.fields++
		case *ast.FragmentSpread:
			f := m.fragment(x.Name)
			f.fields = sat(f.fields + len(x.Directives))
			s.add(f)
			r := sat(1 + f.reach)
			g.reach = sat(g.reach + r)
			g.reachSq = sat(g.reachSq + mul(r, r))
		case *ast.InlineFragment:
			typ := parent
			if x.TypeCondition != "" && m.l.schema != nil {
				typ = m.l.schema.Types[x.TypeCondition]
			}
			f := m.walk(x.SelectionSet, typ, g)
			f.fields = sat(f.fields + len(x.Directives))
			s.add(f)
		}
		if m.cycle != "" {
			return s
		}
	}
	return s
}

// field measures one field and what it selects.
func (m *measurer) field(f *ast.Field, parent *ast.Definition) shape {
	var typ *ast.Definition
	mult := 1
	if parent != nil {
		if def := parent.Fields.ForName(f.Name); def != nil && m.l.schema != nil {
			typ = m.l.schema.Types[def.Type.Name()]
		}
		if n, ok := m.l.lists[parent.Name][f.Name]; ok {
			mult = n
		}
	}
	var c shape
	if len(f.SelectionSet) > 0 {
		c = m.set(f.SelectionSet, typ)
	}
	s := shape{
		fields:     sat(1 + len(f.Directives) + c.fields),
		aliases:    c.aliases,
		cost:       sat(1 + sat(mult*c.cost)),
		reach:      c.reach, // for the merge of the set the field is in
		introspect: c.introspect,
	}
	if f.Alias != "" && f.Alias != f.Name {
		s.aliases = sat(s.aliases + 1)
	}
	if f.Name != "__typename" {
		s.roots = 1
	}
	if f.Name == "__schema" || f.Name == "__type" {
		s.introspect = true
		s.introDepth = 1 + max(c.depth, c.introDepth)
	} else {
		s.depth = 1 + c.depth
		if c.introDepth > 0 {
			s.introDepth = 1 + c.introDepth
		}
	}
	return s
}

// fragment returns the shape of the named fragment, walking it the first
// time only. An unknown fragment measures empty; validation reports it.
func (m *measurer) fragment(name string) shape {
	if s, ok := m.memo[name]; ok {
		return s
	}
	def := m.frags[name]
	if def == nil {
		return shape{}
	}
	if m.active[name] {
		m.cycle = name
		return shape{}
	}
	m.active[name] = true
	var typ *ast.Definition
	if m.l.schema != nil {
		typ = m.l.schema.Types[def.TypeCondition]
	}
	s := m.set(def.SelectionSet, typ)
	delete(m.active, name)
	if m.cycle == "" {
		m.memo[name] = s
	}
	return s
}

// introspectionLists returns the expected length of each list field of
// the introspection types, so that the cost of an introspection query
// follows the size of its answer: __schema { types } is one value per
// type, __Type.fields the mean number of fields of the types that have
// some, and so on. Means rather than maxima keep a full introspection
// query (what GraphiQL sends) well under the limit, while aliases that
// repeat those lists multiply their cost.
func introspectionLists(s *ast.Schema) map[string]map[string]int {
	mean := func(total, n int) int {
		if n == 0 {
			return 1
		}
		return max(1, (total+n-1)/n)
	}
	var fields, withFields, inputs, withInputs, enums, withEnums, ifaces, withIfaces, args, withArgs, possible, withPossible int
	for _, t := range s.Types {
		var own int
		for _, f := range t.Fields {
			if len(f.Name) > 1 && f.Name[:2] == "__" {
				continue
			}
			own++
			if len(f.Arguments) > 0 {
				args += len(f.Arguments)
				withArgs++
			}
		}
		switch t.Kind {
		case ast.Object, ast.Interface:
			fields, withFields = fields+own, withFields+1
			if len(t.Interfaces) > 0 {
				ifaces, withIfaces = ifaces+len(t.Interfaces), withIfaces+1
			}
		case ast.InputObject:
			inputs, withInputs = inputs+own, withInputs+1
		case ast.Enum:
			enums, withEnums = enums+len(t.EnumValues), withEnums+1
		}
		if t.IsAbstractType() {
			possible, withPossible = possible+len(s.GetPossibleTypes(t)), withPossible+1
		}
	}
	var dirArgs, withDirArgs, locations int
	for _, d := range s.Directives {
		if len(d.Arguments) > 0 {
			dirArgs, withDirArgs = dirArgs+len(d.Arguments), withDirArgs+1
		}
		locations = max(locations, len(d.Locations))
	}
	return map[string]map[string]int{
		"__Schema": {"types": len(s.Types), "directives": max(1, len(s.Directives))},
		"__Type": {
			"fields":        mean(fields, withFields),
			"inputFields":   mean(inputs, withInputs),
			"enumValues":    mean(enums, withEnums),
			"interfaces":    mean(ifaces, withIfaces),
			"possibleTypes": mean(possible, withPossible),
		},
		"__Field":     {"args": mean(args, withArgs)},
		"__Directive": {"args": mean(dirArgs, withDirArgs), "locations": max(1, locations)},
	}
}

// maxVariables and maxArguments bound what a document declares and passes
// as written (a fragment counts once): a feed query declares a handful of
// variables and passes about ten arguments.
const (
	maxVariables = 100
	maxArguments = 500
)

// writtenArguments counts the arguments of the fields and directives of a
// selection set as written, fragments' bodies aside (they are counted once
// on their own).
func writtenArguments(set ast.SelectionSet) int {
	n := 0
	for _, sel := range set {
		switch x := sel.(type) {
		case *ast.Field:
			n = sat(n + len(x.Arguments) + directiveArguments(x.Directives) + writtenArguments(x.SelectionSet))
		case *ast.InlineFragment:
			n = sat(n + directiveArguments(x.Directives) + writtenArguments(x.SelectionSet))
		case *ast.FragmentSpread:
			n = sat(n + directiveArguments(x.Directives))
		}
	}
	return n
}

func directiveArguments(ds ast.DirectiveList) int {
	n := 0
	for _, d := range ds {
		n += len(d.Arguments)
	}
	return n
}
