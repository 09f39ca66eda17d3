package graph_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/graph"
)

// The GraphQL half of the bad-input and abuse suite: hostile documents
// over real HTTP against the whole service on loopback, with the fixture
// origin. Each is answered with a limit error (or a small result), and the
// refused ones never reach gqlgen's parser and validator. Run:
//
//	go test -run 'AbuseGraphQL' -v ./graph/

// fanOutDoc is the fragment fan-out: F0 … F<levels-1> each spread
// the next width times, the last selects leaf. Fragments are on typ; with
// inline, every spread sits in an inline fragment of its own.
func fanOutDoc(root, typ, leaf string, levels, width int, inline bool) string {
	var b strings.Builder
	b.WriteString(root)
	for i := range levels {
		fmt.Fprintf(&b, "\nfragment F%d on %s {", i, typ)
		for range width {
			if inline {
				fmt.Fprintf(&b, " ... { ...F%d }", i+1)
			} else {
				fmt.Fprintf(&b, " ...F%d", i+1)
			}
		}
		b.WriteString(" }")
	}
	fmt.Fprintf(&b, "\nfragment F%d on %s { %s }", levels, typ, leaf)
	return b.String()
}

// introspectionAliases is the aliased introspection: types
// selected under n aliases, each with the fields of every type under m
// aliases.
func introspectionAliases(n, m int, inline bool) string {
	var b strings.Builder
	b.WriteString("{ __schema {")
	for i := range n {
		fmt.Fprintf(&b, " t%d: types { ...T }", i)
	}
	b.WriteString(" } }\nfragment T on __Type {")
	if inline {
		b.WriteString(" ... on __Type {")
	}
	for j := range m {
		fmt.Fprintf(&b, " f%d: fields { name type { name } }", j)
	}
	if inline {
		b.WriteString(" }")
	}
	b.WriteString(" }")
	return b.String()
}

func repeat(s string, n int) string { return strings.Repeat(s, n) }

// definitionDirectives is the document: 7,400 unknown directives on
// a fragment definition, which validation answered with 29,598 errors
// (4.35 MB) when only fields' directives were counted.
var definitionDirectives = "{...F} fragment F on Query" + repeat(" @x", 7400) + " {__typename}"

// nested is depth levels of a { … } around leaf.
func nested(field, leaf string, depth int) string {
	return repeat(field+" { ", depth) + leaf + repeat(" }", depth)
}

type abuseCase struct {
	name            string
	class           string // the class it varies, or "input"
	noIntrospection bool
	get             bool
	query           string
	operationName   string
	vars            map[string]any
	extensions      map[string]any
	body            []byte // sent as is instead of a request built from the fields above

	status  int    // 0: not checked
	code    string // the one error code wanted; "" wants no error, or only status
	message string // in the error's message, telling what to fix
	// reaches: the document may go on to gqlgen's parser and validator.
	// A refused document must not.
	reaches bool
}

func abuseCases(t *testing.T) []abuseCase {
	introspection, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	fan30 := fanOutDoc("query { ...F0 }", "Query", "__typename", 30, 2, false)
	apq := func(q string) map[string]any {
		sum := sha256.Sum256([]byte(q))
		return map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	}
	var manyOps strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&manyOps, "query q%d { __typename } ", i)
	}
	var rootAliases strings.Builder
	for i := range 40 {
		fmt.Fprintf(&rootAliases, `t%d: __type(name: "Post") { name } `, i)
	}
	var manyAliases strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&manyAliases, "a%d: __typename ", i)
	}
	fullSchema := strings.Replace(string(introspection), "query IntrospectionQuery {\n      __schema {", "query IntrospectionQuery {\n a: __schema { ...S } b: __schema { ...S } c: __schema { ...S } d: __schema { ...S }\n e: __schema {", 1)
	names := make([]string, 4000)
	for i := range names {
		names[i] = fmt.Sprintf("chan%05d", i)
	}
	const complexity, validation, parse = graph.CodeComplexity, graph.CodeValidationFailed, graph.CodeParseFailed
	const badRequest, tooLarge = graph.CodeBadRequest, graph.CodeRequestTooLarge
	return []abuseCase{
		// Fragment fan-out: the document, deeper, wider, inline,
		// inside fields and introspection, over GET, with introspection off.
		{name: "fan-out 30 levels", class: "fan-out", query: fan30, code: complexity, message: "fragments expanded"},
		{name: "fan-out 30 levels, GET", class: "fan-out", get: true, query: fan30, code: complexity},
		{name: "fan-out 30 levels, introspection off", class: "fan-out", noIntrospection: true, query: fan30, code: complexity},
		{name: "fan-out 24 levels", class: "fan-out", query: fanOutDoc("query { ...F0 }", "Query", "__typename", 24, 2, false), code: complexity},
		{name: "fan-out 300 levels", class: "fan-out", query: fanOutDoc("query { ...F0 }", "Query", "__typename", 300, 2, false), code: complexity},
		{name: "fan-out 12 levels, 8 wide", class: "fan-out", query: fanOutDoc("query { ...F0 }", "Query", "__typename", 12, 8, false), code: complexity},
		{name: "fan-out through inline fragments", class: "fan-out", query: fanOutDoc("query { ...F0 }", "Query", "__typename", 30, 2, true), code: complexity},
		{name: "fan-out inside a field", class: "fan-out", query: fanOutDoc(`{ channel(username: "tmefeed_news") { ...F0 } }`, "Channel", "title", 30, 2, false), code: complexity},
		{name: "fan-out inside introspection", class: "fan-out", query: fanOutDoc("{ __schema { types { ...F0 } } }", "__Type", "name", 30, 2, false), code: complexity},
		{name: "fan-out inside introspection, introspection off", class: "fan-out", noIntrospection: true, query: fanOutDoc("{ __schema { types { ...F0 } } }", "__Type", "name", 30, 2, false), code: validation, message: "introspection is disabled"},
		{name: "fan-out among many operations", class: "fan-out", query: "query a { __typename } query b { __typename } " + fanOutDoc("query c { ...F0 }", "Query", "__typename", 30, 2, false), operationName: "a", code: complexity},
		{name: "fan-out sent with its persisted-query hash", class: "fan-out", query: fan30, extensions: apq(fan30), code: complexity},
		{name: "fan-out by persisted-query hash alone, GET", class: "fan-out", get: true, extensions: apq(fan30), code: complexity},
		{name: "a chain of 1,000 fragments", class: "fan-out", query: "{ ...F0 }" + fanOutDoc("", "Query", "__typename", 1000, 1, false), code: complexity, message: "pairs"},
		{name: "fragment cycle", class: "fan-out", query: `{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }`, status: http.StatusOK, code: validation, message: "cycles"},
		{name: "fragment cycle through 500 fragments", class: "fan-out", query: "{ ...F0 }" + fanOutDoc("", "Query", "...F0", 500, 1, false), status: http.StatusOK, code: validation, message: "cycles"},
		{name: "fragment cycle that no operation uses", class: "fan-out", query: `{ __typename } fragment A on Query { ...A }`, code: validation, message: "cycles"},

		// Introspection: aliases inside __schema count, and so does the
		// size of what the lists return.
		{name: "introspection aliases 30×30", class: "introspection", query: introspectionAliases(30, 30, false), code: complexity, message: "fragments expanded"},
		{name: "introspection aliases 30×30, GET", class: "introspection", get: true, query: introspectionAliases(30, 30, false), code: complexity, message: "fragments expanded"},
		{name: "introspection aliases 6×6", class: "introspection", query: introspectionAliases(6, 6, false), code: complexity, message: "42 aliases"},
		{name: "introspection aliases 30×30, introspection off", class: "introspection", noIntrospection: true, query: introspectionAliases(30, 30, false), code: validation, message: "introspection is disabled"},
		{name: "introspection aliases in inline fragments", class: "introspection", query: introspectionAliases(8, 8, true), code: complexity, message: "aliases"},
		{name: "introspection aliases, 100×100", class: "introspection", query: introspectionAliases(100, 100, false), code: complexity},
		{name: "introspection lists nested 6 deep", class: "introspection", query: "{ __schema { types { " + nested("fields { type", "name", 6) + repeat(" }", 6) + " } } }", code: complexity, message: "estimated"},
		{name: "introspection nested past the depth limit", class: "introspection", query: `{ __type(name: "Post") { ` + nested("ofType", "name", 20) + " } }", code: complexity, message: "levels deep"},
		{name: "40 aliased __type roots", class: "introspection", query: "{" + rootAliases.String() + "}", code: complexity},
		{name: "the full schema five times", class: "introspection", query: fullSchema + "\nfragment S on __Schema { types { ...FullType } directives { name args { ...InputValue } } }", code: complexity},
		{name: "GraphiQL's introspection query", class: "introspection", query: string(introspection), reaches: true},
		{name: "GraphiQL's introspection query, GET", class: "introspection", get: true, query: string(introspection), reaches: true},
		{name: "GraphiQL's introspection query, introspection off", class: "introspection", noIntrospection: true, query: string(introspection), code: validation, message: "introspection is disabled"},

		// Repeated fields: the merge rule compares each pair.
		{name: "10,800 titles (65 KB)", class: "repeated", query: `{ channel(username: "tmefeed_news") { ` + repeat("title ", 10_800) + "} }", code: complexity, message: "select fewer fields"},
		{name: "10,800 titles, GET", class: "repeated", get: true, query: `{ channel(username: "tmefeed_news") { ` + repeat("title ", 10_800) + "} }", code: complexity},
		{name: "10,800 titles, introspection off", class: "repeated", noIntrospection: true, query: `{ channel(username: "tmefeed_news") { ` + repeat("title ", 10_800) + "} }", code: complexity},
		{name: "400 titles", class: "repeated", query: `{ channel(username: "tmefeed_news") { ` + repeat("title ", 400) + "} }", code: complexity, message: "select each field once"},
		{name: "titles in 2,000 inline fragments", class: "repeated", query: `{ channel(username: "tmefeed_news") { ` + repeat("... on Channel { title } ", 2000) + "} }", code: complexity},
		{name: "nested selections repeated 500 times", class: "repeated", query: `{ channel(username: "tmefeed_news") { ` + repeat("posts { edges { node { id } } } ", 500) + "} }", code: complexity},
		{name: "a fragment spread 5,000 times", class: "repeated", query: `{ channel(username: "tmefeed_news") { ` + repeat("...C ", 5000) + "} } fragment C on Channel { title }", code: complexity},
		{name: "5,000 root __typename", class: "repeated", query: "{" + repeat(" __typename", 5000) + " }", code: complexity},
		{name: "a few repeats", class: "repeated", query: `{ channel(username: "tmefeed_news") { title title ...C ...C } } fragment C on Channel { title username }`, reaches: true},

		// Directives on definitions: each unknown or misplaced one is an
		// error of its own, so they count against the same limit as
		// fields' directives, wherever they stand.
		{name: "7,400 directives on a fragment definition (22 KB)", class: "directives", query: definitionDirectives, code: complexity, message: "directives"},
		{name: "7,400 directives on a fragment definition, GET", class: "directives", get: true, query: definitionDirectives, code: complexity, message: "directives"},
		{name: "7,400 directives on a fragment definition, introspection off", class: "directives", noIntrospection: true, query: definitionDirectives, code: complexity, message: "directives"},
		{name: "7,400 directives on an operation", class: "directives", query: "query Q" + repeat(" @x", 7400) + " { __typename }", code: complexity, message: "directives"},
		{name: "7,400 directives on a variable", class: "directives", query: "query Q($v: Int" + repeat(" @x", 7400) + ") { __typename }", code: complexity, message: "directives"},
		{name: "1,500 known directives on a fragment definition", class: "directives", query: "{ ...F } fragment F on Query" + repeat(" @skip(if: true)", 1500) + " { __typename }", code: complexity, message: "directives"},
		{name: "1,200 directives spread over 400 fragments", class: "directives", query: "{ __typename }" + numbered("fragment F%d on Query @x @y @z { __typename } ", 400), code: complexity, message: "directives"},
		{name: "directives on definitions and fields together", class: "directives", query: "query Q" + repeat(" @x", 600) + " { ...F } fragment F on Query" + repeat(" @x", 300) + " { __typename" + repeat(" @include(if: true)", 200) + " }", code: complexity, message: "directives"},
		{name: "7,400 directives on a fragment by persisted-query hash", class: "directives", query: definitionDirectives, extensions: apq(definitionDirectives), code: complexity, message: "directives"},
		{name: "one unknown directive on an operation", class: "directives", query: "query Q @x { __typename }", code: validation, message: "Unknown directive", reaches: true},

		// Other hostile input.
		{name: "token bomb of directives", class: "input", query: "{ __typename" + repeat(" @skip(if: false)", 3000) + " }", code: parse, message: "tokens"},
		{name: "2,000 directives on one field", class: "input", query: "{ __typename" + repeat(" @include(if: true)", 2000) + " }", code: complexity, message: "directives"},
		{name: "3,000 aliases", class: "input", query: "{" + manyAliases.String() + "}", code: complexity},
		{name: "31 aliases", class: "input", query: "{" + manyAliases.String()[:strings.Index(manyAliases.String(), "a31:")] + "}", code: complexity, message: "aliases"},
		{name: "3,500 unused variables", class: "input", query: "query Q(" + numbered("$v%d: Int ", 3500) + ") { __typename }", code: complexity, message: "variables"},
		{name: "3,500 unknown arguments on a directive", class: "input", query: "{ __typename @include(if: true, " + numbered("a%d: 1 ", 3500) + ") }", code: complexity, message: "arguments"},
		{name: "2,000 operations", class: "input", query: manyOps.String(), operationName: "q1", code: complexity, message: "all operations"},
		{name: "selections nested 3,000 deep", class: "input", query: "{" + nested("channel", "title", 3000) + "}", code: parse},
		{name: "selections nested 13 deep", class: "input", query: `{ feed(channels: ["tmefeed_news"]) { edges { node { channel { posts { edges { node { channel { posts { edges { node { channel { title } } } } } } } } } } } } }`, code: complexity, message: "levels deep"},
		{name: "argument lists nested 3,000 deep", class: "input", query: "{ feed(channels: " + repeat("[", 3000) + `"x"` + repeat("]", 3000) + ") { totalCount } }", code: parse},
		{name: "4,000 channels in a variable", class: "input", query: "query($c: [String!]!) { feed(channels: $c) { totalCount } }", vars: map[string]any{"c": names}, code: complexity, reaches: true},
		{name: "variables nested 5,000 deep", class: "input", body: []byte(`{"query":"query($c: [String!]!) { feed(channels: $c) { totalCount } }","variables":{"c":` + repeat("[", 5000) + repeat("]", 5000) + "}}"), code: validation, reaches: true},
		{name: "document over 64 KiB", class: "input", query: "{" + repeat(" __typename", 7000) + " }", status: http.StatusRequestEntityTooLarge, code: tooLarge}, // the router's own limit answers
		{name: "URL over 64 KiB", class: "input", get: true, query: "{" + repeat(" __typename", 7000) + " }", status: http.StatusRequestURITooLong, code: tooLarge},
		{name: "batch of operations", class: "input", body: []byte(`[{"query":"{ __typename }"},{"query":"{ __typename }"}]`), status: http.StatusBadRequest, code: badRequest},
	}
}

// counted is an env whose GraphQL handler counts the documents that go on
// to gqlgen's parser and validator.
type counted struct {
	*env
	parsed atomic.Int64
}

func newCounted(t *testing.T, o envOptions) *counted {
	c := &counted{}
	o.onParse = func(string) { c.parsed.Add(1) }
	c.env = newEnv(t, o)
	return c
}

func (c *counted) send(t *testing.T, ac abuseCase) response {
	t.Helper()
	switch {
	case ac.body != nil:
		return c.do(t, http.MethodPost, "/graphql", ac.body)
	case ac.get:
		return c.get(t, request{Query: ac.query, Variables: ac.vars, Extensions: ac.extensions})
	default:
		return c.post(t, request{Query: ac.query, OperationName: ac.operationName, Variables: ac.vars, Extensions: ac.extensions})
	}
}

func TestAbuseGraphQL(t *testing.T) {
	on := newCounted(t, envOptions{})
	off := newCounted(t, envOptions{noIntrospection: true})
	cases := abuseCases(t)
	if len(cases) < 35 {
		t.Fatalf("%d cases, the suite promises at least 35", len(cases))
	}
	slowest := map[string]float64{}
	var slowestCase string
	var slowestAll float64
	for _, c := range cases {
		e := on
		if c.noIntrospection {
			e = off
		}
		before := e.parsed.Load()
		start := time.Now()
		r := e.send(t, c)
		ms := float64(time.Since(start).Microseconds()) / 1000
		reached := e.parsed.Load() > before

		switch {
		case c.code == "" && c.status >= 400:
			// refused by status alone
		case c.code == "" && len(r.Errors) > 0:
			t.Errorf("%s: %d %+v, want an answer", c.name, r.status, r.Errors)
		case c.code != "" && !slices.Equal(r.codes(), []string{c.code}):
			t.Errorf("%s: %d %s, want one %s", c.name, r.status, r.raw, c.code)
		case c.code != "" && !strings.Contains(r.Errors[0].Message, c.message):
			t.Errorf("%s: message %q does not say %q", c.name, r.Errors[0].Message, c.message)
		case c.code != "" && string(r.Data) != "" && string(r.Data) != "null":
			t.Errorf("%s: refused, yet data %.200s", c.name, r.Data)
		}
		if c.status != 0 && r.status != c.status {
			t.Errorf("%s: status %d, want %d", c.name, r.status, c.status)
		}
		if reached && !c.reaches {
			t.Errorf("%s: the document reached gqlgen's parser and validator", c.name)
		}
		if len(r.raw) > 256<<10 || (c.class == "directives" && len(r.raw) > 20<<10) {
			t.Errorf("%s: a %d-byte answer", c.name, len(r.raw))
		}
		if c.query == definitionDirectives && !c.get && c.extensions == nil && !c.noIntrospection {
			t.Logf("FIGURE: graphql | 7,400 directives on a fragment definition (22 KB): refused in (ms) | %.2f", ms)
			t.Logf("FIGURE: graphql | 7,400 directives on a fragment definition (22 KB): answer (bytes) | %d", len(r.raw))
		}
		t.Logf("%-55s %6.2f ms  %4d %s %s", c.name, ms, r.status, strings.Join(r.codes(), ","), trim(r.Errors))
		if c.code != "" || c.status >= 400 {
			slowest[c.class] = max(slowest[c.class], ms)
			if ms > slowestAll {
				slowestAll, slowestCase = ms, c.name
			}
		}
	}
	t.Logf("FIGURE: graphql | abuse cases over HTTP (count) | %d", len(cases))
	for _, class := range []string{"fan-out", "introspection", "repeated", "directives", "input"} {
		t.Logf("FIGURE: graphql | slowest refusal, %s class (ms) | %.2f", class, slowest[class])
	}
	t.Logf("FIGURE: graphql | slowest refusal of all (ms, %s) | %.2f", slowestCase, slowestAll)
}

func trim(errs []gqlError) string {
	if len(errs) == 0 {
		return ""
	}
	m := errs[0].Message
	if len(m) > 90 {
		m = m[:90] + "…"
	}
	return m
}

// A cached request is measured alone, then while clients send one class
// of hostile document as fast as they are answered (a harsher load than
// the eight concurrent requests: each client sends its next
// document as soon as the last is refused). Nothing is asserted about
// time, as the machine may be shared; the ratio of medians is reported,
// and every hostile request must have been refused or told to retry.
func TestAbuseGraphQLLatency(t *testing.T) {
	e := newEnv(t, envOptions{})
	const (
		attackers = 8
		samples   = 200
		spacing   = 2 * time.Millisecond // between samples, so they span the attack
	)
	// The first load is ordinary: the same clients sending a cached query
	// as fast as it is answered. It is the yardstick, since on two cores
	// any eight busy clients slow a ninth; a hostile class should cost no
	// more than ordinary traffic does.
	const ordinary = "ordinary cached queries"
	hostile := []struct{ name, query string }{
		{ordinary, `{ channel(username: "tmefeed_news") { title } }`},
		{"fragment fan-out", fanOutDoc("query { ...F0 }", "Query", "__typename", 30, 2, false)},
		{"introspection aliases", introspectionAliases(30, 30, false)},
		{"repeated fields", `{ channel(username: "tmefeed_news") { ` + repeat("title ", 10_800) + "} }"},
		{"definition directives", definitionDirectives},
	}
	underOrdinary := map[string]time.Duration{}
	rest := e.srv.URL + "/v1/preview/tmefeed_news"
	gql, _ := json.Marshal(request{Query: `{ channel(username: "tmefeed_news") { title } }`})
	cached := []struct {
		name string
		do   func() error
	}{
		{"REST", func() error { return fetch(e.srv.Client(), http.MethodGet, rest, nil) }},
		{"GraphQL", func() error { return fetch(e.srv.Client(), http.MethodPost, e.srv.URL+"/graphql", gql) }},
	}
	for _, c := range cached {
		if err := c.do(); err != nil { // warm the cache
			t.Fatal(err)
		}
	}
	for _, h := range hostile {
		body, _ := json.Marshal(request{Query: h.query})
		for _, c := range cached {
			alone := median(t, samples, spacing, c.do)
			ctx, stop := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			var sent, refused, busy atomic.Int64
			for range attackers {
				wg.Go(func() {
					for ctx.Err() == nil {
						r, err := postRaw(ctx, e.srv.Client(), e.srv.URL+"/graphql", body)
						if err != nil {
							continue
						}
						sent.Add(1)
						switch codes := r.codes(); {
						case h.name == ordinary && len(codes) == 0 && r.status == http.StatusOK:
							refused.Add(1) // answered, as it should be
						case slices.Equal(codes, []string{"COMPLEXITY_LIMIT_EXCEEDED"}):
							refused.Add(1)
						case slices.Equal(codes, []string{"RATE_LIMITED"}) && r.status == http.StatusServiceUnavailable:
							busy.Add(1) // large documents wait for a turn, and may be told to retry
						}
					}
				})
			}
			for sent.Load() < 2*attackers && ctx.Err() == nil {
				time.Sleep(time.Millisecond) // until the attack is under way
			}
			under := median(t, samples, spacing, c.do)
			stop()
			wg.Wait()
			if refused.Load() == 0 || refused.Load()+busy.Load() != sent.Load() {
				t.Errorf("%s: %d of %d hostile requests refused, %d told to retry", h.name, refused.Load(), sent.Load(), busy.Load())
			}
			t.Logf("%s, cached %s: alone %v, under attack %v (%d hostile requests, %d of them told to retry)", h.name, c.name, alone, under, sent.Load(), busy.Load())
			t.Logf("FIGURE: graphql | cached %s request latency under %s from %d clients (ratio) | %.2f", c.name, h.name, attackers, float64(under)/float64(alone))
			t.Logf("FIGURE: graphql | cached %s request latency under %s from %d clients (median ms) | %.3f", c.name, h.name, attackers, float64(under.Microseconds())/1000)
			if h.name == ordinary {
				underOrdinary[c.name] = under
			} else {
				t.Logf("FIGURE: graphql | cached %s request latency under %s vs under as many ordinary clients (ratio) | %.2f", c.name, h.name, float64(under)/float64(underOrdinary[c.name]))
			}
		}
	}
}

// median runs do n times, pausing between runs, and returns the median
// duration.
func median(t *testing.T, n int, pause time.Duration, do func() error) time.Duration {
	t.Helper()
	d := make([]time.Duration, n)
	for i := range d {
		time.Sleep(pause)
		start := time.Now()
		if err := do(); err != nil {
			t.Fatal(err)
		}
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	return d[n/2]
}

func fetch(c *http.Client, method, url string, body []byte) error {
	req, err := http.NewRequest(method, url, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if resp.StatusCode != http.StatusOK || v["errors"] != nil {
		return fmt.Errorf("%s %s: %d %v", method, url, resp.StatusCode, v)
	}
	return nil
}

func postRaw(ctx context.Context, c *http.Client, url string, body []byte) (response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	var r response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return response{}, fmt.Errorf("decode: %w", err)
	}
	r.status = resp.StatusCode
	return r, nil
}

// An operation stops at its deadline even when the origin never answers,
// and says so. (The origin would answer after a minute; the client gives
// up after 20 s.)
func TestAbuseGraphQLDeadline(t *testing.T) {
	e := newEnv(t, envOptions{timeout: 200 * time.Millisecond, upstreamTimeout: 2 * time.Minute})
	e.stallOrigin(t)
	client := &http.Client{Timeout: 20 * time.Second}
	for _, q := range []string{
		`{ channel(username: "tmefeed_news") { title } }`,
		`{ feed(channels: ["tmefeed_news", "emoji_party"]) { totalCount } }`,
	} {
		body, _ := json.Marshal(request{Query: q})
		r, err := postRaw(t.Context(), client, e.srv.URL+"/graphql", body)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if !slices.ContainsFunc(r.Errors, func(e gqlError) bool {
			return e.code() == "UPSTREAM_UNAVAILABLE" && strings.Contains(e.Message, "did not finish within 200ms")
		}) {
			t.Errorf("%s: %d %+v, want UPSTREAM_UNAVAILABLE naming the 200ms deadline", q, r.status, r.Errors)
		}
	}
}

// When the client goes away, the operation's context ends and the handler
// returns without waiting for the origin.
func TestAbuseGraphQLClientGone(t *testing.T) {
	e := newEnv(t, envOptions{upstreamTimeout: 2 * time.Minute})
	e.stallOrigin(t)
	done := make(chan struct{})
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		e.gql.ServeHTTP(w, r)
	}))
	ctx, cancel := context.WithCancel(t.Context())
	body, _ := json.Marshal(request{Query: `{ channel(username: "tmefeed_news") { title } }`})
	go func() {
		for e.origin.Total() == 0 {
			time.Sleep(time.Millisecond) // until the origin holds the request
		}
		cancel()
	}()
	if _, err := postRaw(ctx, srv.Client(), srv.URL, body); err == nil {
		t.Fatal("the request was answered, though its client left")
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler still runs 20 s after its client left")
	}
}

// An answer over the cap is replaced by an error, on the executor and on
// the fast feed path.
func TestAbuseGraphQLResponseCap(t *testing.T) {
	e := newEnv(t, envOptions{maxResponse: 4 << 10})
	for _, q := range []string{
		`{ channel(username: "tmefeed_news") { posts(first: 20) { edges { node { id text { html plain } } } } } }`,
		`{ feed(channels: ["tmefeed_news"], first: 20) { edges { node { post { id text { html plain } } } } } }`,
	} {
		r := e.query(t, q, nil)
		if !slices.Equal(r.codes(), []string{"COMPLEXITY_LIMIT_EXCEEDED"}) || !strings.Contains(r.Errors[0].Message, "more than the 4096 allowed") || len(r.raw) > 1<<10 {
			t.Errorf("%s: %d %.300s", q, r.status, r.raw)
		}
	}
	if r := e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil); len(r.Errors) > 0 {
		t.Errorf("a small answer: %+v", r.Errors)
	}
}

// A document within the limits can still be wrong in many places at
// once; the answer lists the first 100 errors and says how many more
// there were, under the first one's code, over POST and GET alike.
func TestAbuseGraphQLErrorCap(t *testing.T) {
	e := newEnv(t, envOptions{})
	q := "{ __typename" + repeat(" @x", 900) + " }" // 900 unknown directives: within the 1,000
	for _, get := range []bool{false, true} {
		var r response
		if get {
			r = e.get(t, request{Query: q})
		} else {
			r = e.post(t, request{Query: q})
		}
		if len(r.Errors) != 101 {
			t.Fatalf("GET %v: %d errors (%d bytes), want the first 100 and a count", get, len(r.Errors), len(r.raw))
		}
		last := r.Errors[100]
		omitted, _ := last.Extensions["omittedErrors"].(float64)
		if last.code() != graph.CodeValidationFailed || omitted < 800 || !strings.Contains(last.Message, fmt.Sprintf("%d more errors", int(omitted))) {
			t.Errorf("GET %v: last error %+v, want the count of those left out", get, last)
		}
		if r.Errors[0].code() != graph.CodeValidationFailed || !strings.Contains(r.Errors[0].Message, "Unknown directive") {
			t.Errorf("GET %v: first error %+v", get, r.Errors[0])
		}
		if len(r.raw) > 64<<10 {
			t.Errorf("GET %v: a %d-byte answer", get, len(r.raw))
		}
	}
}

// CPU-bound work takes turns: while a new document holds the only turn
// (its parse is held up here), introspection waits, then is told to
// retry; a cached query is answered meanwhile.
func TestAbuseGraphQLBusy(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	e := newEnv(t, envOptions{maxExpensive: 1, onParse: func(q string) {
		if strings.Contains(q, "# hold") {
			close(held)
			<-hold
		}
	}})
	cached := `{ channel(username: "tmefeed_news") { title } }`
	if r := e.query(t, cached, nil); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	done := make(chan response)
	go func() {
		body, _ := json.Marshal(request{Query: "{ __typename } # hold"})
		r, _ := postRaw(t.Context(), e.srv.Client(), e.srv.URL+"/graphql", body)
		done <- r
	}()
	<-held
	r := e.query(t, `{ __schema { queryType { name } } }`, nil)
	if r.status != http.StatusServiceUnavailable || !slices.Equal(r.codes(), []string{"RATE_LIMITED"}) {
		t.Errorf("introspection while the turn is held: %d %s", r.status, r.raw)
	}
	r = e.query(t, `{ channel(username: "tmefeed_news") { username } }`, nil)
	if r.status != http.StatusServiceUnavailable || !slices.Equal(r.codes(), []string{"RATE_LIMITED"}) {
		t.Errorf("a new document while the turn is held: %d %s", r.status, r.raw)
	}
	if r := e.query(t, cached, nil); len(r.Errors) > 0 {
		t.Errorf("a cached query while the turn is held: %+v", r.Errors)
	}
	close(hold)
	if r := <-done; len(r.Errors) > 0 || string(r.Data) != `{"__typename":"Query"}` {
		t.Errorf("the held document: %d %s", r.status, r.raw)
	}
	if r := e.query(t, `{ __schema { queryType { name } } }`, nil); len(r.Errors) > 0 {
		t.Errorf("introspection once the turn is free: %+v", r.Errors)
	}
}

// Large answers take room while the executor builds them: while one holds
// it (its page is held up at the origin), another is told to retry rather
// than building a second answer beside it; small queries are answered.
func TestAbuseGraphQLAnswerRoom(t *testing.T) {
	e := newEnv(t, envOptions{maxValues: 3000, timeout: 4 * time.Second})
	large := func(name string) string {
		return `{ channel(username: "` + name + `") { posts(first: 100) { edges { cursor node { id messageId channel url date edited views viewsText author isService text { plain html } media { kind url } reactions { emoji count } inlineButtons { text url } } } } } }`
	}
	if r := e.query(t, large("tmefeed_news"), nil); len(r.Errors) > 0 {
		t.Fatal(r.Errors)
	}
	e.stallOrigin(t)
	go func() {
		body, _ := json.Marshal(request{Query: large("durov")})
		_, _ = postRaw(t.Context(), e.srv.Client(), e.srv.URL+"/graphql", body)
	}()
	for e.origin.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	if r := e.query(t, `{ __typename }`, nil); len(r.Errors) > 0 {
		t.Errorf("a small query while a large answer is built: %d %s", r.status, r.raw)
	}
	r := e.query(t, large("telegram"), nil)
	if r.status != http.StatusServiceUnavailable || !slices.Equal(r.codes(), []string{"RATE_LIMITED"}) {
		t.Errorf("a second large answer while one is built: %d %.300s", r.status, r.raw)
	}
}

// numbered repeats format (with one %d) n times, numbered from 0.
func numbered(format string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}
