package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"

	"github.com/tmefeed/tmefeed/internal/memsize"
)

// TestStoresAccounting fills the persisted-query store and the document
// cache with queries of the schema's usual shapes and compares the
// estimate with the heap they take. Documents vary in heap per byte of
// query, so the estimate (docBytesPerByte) must stay within a band around
// each shape (0.6–1.4×) rather than match exactly; persisted queries are
// plain strings and must match within 10%.
func TestStoresAccounting(t *testing.T) {
	schema := NewExecutableSchema(Config{Resolvers: &Resolver{}}).Schema()
	shapes := map[string]func(i int) string{
		"feed": func(i int) string {
			return fmt.Sprintf(`query Q%d($channels: [String!]!) { feed(channels: $channels, first: 2000) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { score channel { username title } post { id url date views edited text { plain html } media { kind url } reactions { emoji count } } } } } }`, i)
		},
		"small": func(i int) string { return fmt.Sprintf(`{ channel(username: "durov%d") { title } }`, i) },
		"flat": func(i int) string {
			return fmt.Sprintf("query Q%d {", i) + strings.Repeat(" __typename", 300) + "}"
		},
		"aliases": func(i int) string {
			var b strings.Builder
			b.WriteString("{")
			for j := range 25 {
				fmt.Fprintf(&b, " a%d_%d: channel(username: \"x%d\") { title username }", i, j, j)
			}
			return b.String() + "}"
		},
	}
	ctx := context.Background()
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			const n = 300
			s, err := NewStores(StoresConfig{APQBytes: 1 << 30, QueryBytes: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			queries := make([]string, n)
			for i := range queries {
				queries[i] = shape(i)
			}
			before := memsize.LiveHeap()
			for _, q := range queries {
				doc, err := gqlparser.LoadQueryWithRules(schema, q, nil)
				if err != nil {
					t.Fatal(err)
				}
				s.queries.Add(ctx, q, doc)
			}
			s.CleanUp()
			growth := float64(memsize.LiveHeap()) - float64(before)
			est := float64(s.Bytes())
			t.Logf("%d documents of %d B: estimate %.0f B, heap %.0f B (%+.1f%%)", n, len(queries[0]), est, growth, 100*(est-growth)/growth)
			if est < 0.6*growth || est > 1.4*growth {
				t.Errorf("documents: estimate %.0f B, heap %.0f B: outside 0.6–1.4×", est, growth)
			}
		})
	}
	t.Run("apq", func(t *testing.T) {
		const n = 20_000
		s, err := NewStores(StoresConfig{APQBytes: 1 << 30, QueryBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		hashes, queries := make([]string, n), make([]string, n)
		for i := range queries {
			queries[i] = shapes["small"](i)
			sum := sha256.Sum256([]byte(queries[i]))
			hashes[i] = hex.EncodeToString(sum[:])
		}
		before := memsize.LiveHeap()
		for i := range n {
			s.apq.Add(ctx, strings.Clone(hashes[i]), strings.Clone(queries[i]))
		}
		s.CleanUp()
		growth := float64(memsize.LiveHeap()) - float64(before)
		est := float64(s.Bytes())
		t.Logf("%d persisted queries: estimate %.0f B, heap %.0f B (%+.1f%%)", n, est, growth, 100*(est-growth)/growth)
		if est < 0.9*growth || est > 1.1*growth {
			t.Errorf("persisted queries: estimate %.0f B, heap %.0f B: more than 10%% apart", est, growth)
		}
		runtime.KeepAlive(hashes)
		runtime.KeepAlive(queries)
	})
}

// TestStoresWithinBounds: many distinct queries stay within the bounds.
func TestStoresWithinBounds(t *testing.T) {
	const apqMax, docMax = 32 << 10, 256 << 10
	schema := NewExecutableSchema(Config{Resolvers: &Resolver{}}).Schema()
	s, err := NewStores(StoresConfig{APQBytes: apqMax, QueryBytes: docMax})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 500 {
		q := fmt.Sprintf(`{ a: channel(username: "durov%d") { title } b: channel(username: "x") { username } }`, i)
		doc, err := gqlparser.LoadQueryWithRules(schema, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.queries.Add(ctx, q, doc)
		s.apq.Add(ctx, fmt.Sprintf("%064d", i), q)
	}
	s.CleanUp()
	apq, docs := s.apq.local.WeightedSize(), s.queries.c.WeightedSize()
	t.Logf("500 queries: APQ %d B (bound %d), documents %d B (bound %d)", apq, apqMax, docs, docMax)
	if apq > apqMax || docs > docMax || apq < apqMax/2 || docs < docMax/2 {
		t.Errorf("APQ %d B of %d, documents %d B of %d: want each filled to its bound, not past it", apq, apqMax, docs, docMax)
	}
}
