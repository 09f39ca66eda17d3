package graph

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// testLimits are the handler's default limits over the real schema.
func testLimits() *limits {
	s := NewExecutableSchema(Config{Resolvers: &Resolver{}}).Schema()
	return &limits{
		tokens:        DefaultTokenLimit,
		maxFields:     DefaultMaxFields,
		maxDepth:      DefaultMaxDepth,
		maxIntroDepth: DefaultMaxIntrospectionDepth,
		maxAliases:    DefaultMaxAliases,
		maxRootFields: DefaultMaxRootFields,
		maxCost:       DefaultComplexityLimit,
		maxPairs:      maxMergePairs,
		schema:        s,
		lists:         introspectionLists(s),
	}
}

// fanOut is the fragment fan-out: each fragment spreads the next
// twice, so the expansion has 2^levels leaves.
func fanOut(levels int) string {
	var b strings.Builder
	b.WriteString("query { ...F0 }\n")
	for i := range levels {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { __typename }\n", levels)
	return b.String()
}

// selections counts the selections written in a document, no fragment
// expanded: the work a linear measure may do.
func selections(doc *ast.QueryDocument) int {
	var walk func(ast.SelectionSet) int
	walk = func(set ast.SelectionSet) int {
		n := 0
		for _, s := range set {
			n++
			switch s := s.(type) {
			case *ast.Field:
				n += walk(s.SelectionSet)
			case *ast.InlineFragment:
				n += walk(s.SelectionSet)
			}
		}
		return n
	}
	n := 0
	for _, op := range doc.Operations {
		n += walk(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		n += walk(f.SelectionSet)
	}
	return n
}

func parse(t *testing.T, q string) *ast.QueryDocument {
	t.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: q})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// The measure visits each written selection once, however many times the
// fragments expand.
func TestMeasureVisitsEachSelectionOnce(t *testing.T) {
	l := testLimits()
	l.maxFields, l.maxPairs, l.maxCost = maxCount, maxCount, maxCount
	cases := map[string]string{
		"fan-out 8":     fanOut(8),
		"fan-out 30":    fanOut(30),
		"fan-out 200":   fanOut(200), // the expansion saturates the counts
		"introspection": mustRead(t, "testdata/introspection.graphql"),
		"inline fan-out": `query { ...A } fragment A on Query { ... on Query { ...B ...B } ...B }
			fragment B on Query { ... { ...C } ...C } fragment C on Query { channel(username: "x") { title } }`,
	}
	for name, q := range cases {
		doc := parse(t, q)
		var steps int
		l.check(doc, &steps)
		if want := selections(doc); steps != want {
			t.Errorf("%s: %d steps, want one per written selection: %d", name, steps, want)
		}
	}
}

func TestMeasureFanOut(t *testing.T) {
	l := testLimits()
	l.maxFields = maxCount
	for _, levels := range []int{4, 9} {
		m := &measurer{l: l, frags: map[string]*ast.FragmentDefinition{}, memo: map[string]shape{}, active: map[string]bool{}}
		doc := parse(t, fanOut(levels))
		for _, f := range doc.Fragments {
			m.frags[f.Name] = f
		}
		s := m.set(doc.Operations[0].SelectionSet, l.schema.Query)
		if s.fields != 1<<levels || s.roots != 0 || s.depth != 1 {
			t.Errorf("fan-out %d: %+v, want %d fields, no root fields, depth 1", levels, s, 1<<levels)
		}
	}
	l = testLimits()
	for _, levels := range []int{10, 30, 1000} {
		err := l.check(parse(t, fanOut(levels)), nil)
		if err == nil || err.Extensions["code"] != CodeComplexity || !strings.Contains(err.Message, "fields") {
			t.Errorf("fan-out %d: %v", levels, err)
		}
	}
}

func TestMeasureCycles(t *testing.T) {
	l := testLimits()
	for name, q := range map[string]string{
		"self":            `{ ...A } fragment A on Query { ...A }`,
		"through two":     `{ ...A } fragment A on Query { ...B } fragment B on Query { __typename ...A }`,
		"inline":          `{ ...A } fragment A on Query { ... on Query { ...A } }`,
		"in a field":      `{ ...A } fragment A on Query { channel(username: "x") { ...C } } fragment C on Channel { posts { edges { node { channel { ...C } } } } }`,
		"not used at all": `{ __typename } fragment A on Query { ...B } fragment B on Query { ...A }`,
	} {
		err := l.check(parse(t, q), nil)
		if err == nil || err.Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(err.Message, "cycles") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMeasureLimits(t *testing.T) {
	l := testLimits()
	rep := func(s string, n int) string { return strings.Repeat(s, n) }
	var aliases strings.Builder
	for i := range 6 {
		fmt.Fprintf(&aliases, "t%d: types { ...T } ", i)
	}
	var fieldAliases strings.Builder
	for i := range 6 {
		fmt.Fprintf(&fieldAliases, "f%d: fields { name } ", i)
	}
	for _, c := range []struct{ name, query, want string }{
		{"repeated fields", `{ channel(username: "x") { ` + rep("title ", 400) + `} }`, "pairs"},
		{"repeated nested fields", `{ channel(username: "x") { ` + rep("posts { edges { node { id } } } ", 150) + `} }`, "pairs"},
		{"many spreads of many fragments", `{ channel(username: "x") { ` + rep("...C ...D ", 200) + `} } fragment C on Channel { title } fragment D on Channel { title }`, "pairs"},
		// The rule follows the spreads of spread fragments: the pairs of
		// fragments two chains reach, or every fragment a chain reaches
		// from each link, even with the same field nowhere repeated.
		{"two chains of fragments spread together", "{ ...A0 ...B0 } " + chain("A", 450, "") + chain("B", 450, ""), "pairs"},
		{"a chain of fragments, each with a field", "{ ...A0 } " + chain("A", 800, "__typename"), "pairs"},
		{"an unused chain of fragments", "{ __typename } " + chain("A", 800, "__typename"), "pairs"},
		{"chains below fields of one key", `{ channel(username: "x") { ...A0 } channel(username: "x") { ...B0 } } ` + chainOn("Channel", "A", 450, "") + chainOn("Channel", "B", 450, ""), "pairs"},
		{"copies of nested copies", `{ channel(username: "x") { ` + copies([]string{"posts", "edges", "node", "id"}, 5) + `} }`, "pairs"},
		{"aliases in introspection", `{ __schema { ` + aliases.String() + `} } fragment T on __Type { ` + fieldAliases.String() + `}`, "aliases"},
		{"introspection lists nested", `{ __schema { types { ` + rep("fields { type { ", 5) + "fields { name }" + rep(" } }", 5) + ` } } }`, "estimated"},
		{"introspection too deep", `{ __type(name: "Post") { ` + rep("ofType { ", 16) + "name" + rep(" }", 16) + ` } }`, "introspection selection"},
		{"too deep", `{ feed(channels: ["x"]) { edges { node { channel { posts { edges { node { channel { posts { edges { node { channel { title } } } } } } } } } } } } }`, "levels deep"},
		{"root fields", "{" + rep(`channel(username: "x") { title } `, 11) + "}", "root fields"},
		{"many operations", rep("query { __typename } ", 1001), "all operations"},
	} {
		err := l.check(parse(t, c.query), nil)
		if err == nil || err.Extensions["code"] != CodeComplexity || !strings.Contains(err.Message, c.want) {
			t.Errorf("%s: %v, want a %s error about %q", c.name, err, CodeComplexity, c.want)
		}
	}
	for name, q := range map[string]string{
		"GraphiQL's introspection query": mustRead(t, "testdata/introspection.graphql"),
		"a feed": `{ feed(channels: ["a", "b"], first: 50) { totalCount pageInfo { hasNextPage endCursor }
			edges { cursor node { score channel { username title } post { id url date views edited text { plain html }
			media { kind url } reactions { emoji count } forwardedFrom { name url } } } } } }`,
		"few repeats":               `{ channel(username: "x") { ...C ...C title title } } fragment C on Channel { title }`,
		"short chains of fragments": "{ ...A0 ...B0 } " + chain("A", 20, "__typename") + chain("B", 20, "__typename"),
	} {
		if err := l.check(parse(t, q), nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// copies selects path n times, each selecting the rest of it n times:
// n + n² + … fields, each set repeating one key n times.
func copies(path []string, n int) string {
	if len(path) == 1 {
		return strings.Repeat(path[0]+" ", n)
	}
	return strings.Repeat(path[0]+" { "+copies(path[1:], n)+"} ", n)
}

// chain is n fragments on Query, prefix0 to prefix(n-1), each selecting
// field (may be empty) and spreading the next; the last selects
// __typename instead.
func chain(prefix string, n int, field string) string { return chainOn("Query", prefix, n, field) }

func chainOn(typ, prefix string, n int, field string) string {
	var b strings.Builder
	for i := range n {
		next := fmt.Sprintf("...%s%d", prefix, i+1)
		if i == n-1 {
			next = "__typename"
		}
		fmt.Fprintf(&b, "fragment %s%d on %s { %s %s } ", prefix, i, typ, field, next)
	}
	return b.String()
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
