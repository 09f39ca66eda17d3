package graph_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Hand-written code in this package uses only gqlgen's exported API: the
// generated file's unexported functions, methods, types and variables
// (newExecutionContext, ec._FeedEdge, field_Query_feed_args, ...) change
// with every regeneration and gqlgen upgrade, and code calling them would
// compile and then fail at run time.
func TestNoCallsIntoGeneratedInternals(t *testing.T) {
	top, methods := generatedInternals(t, "generated.go")
	if !top["newExecutionContext"] || !methods["_FeedEdge"] || !methods["field_Query_feed_args"] {
		t.Fatalf("generated.go no longer declares the internals this test knows; found %d top-level and %d methods", len(top), len(methods))
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if name == "generated.go" {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if ast.IsGenerated(f) {
			continue
		}
		for _, use := range internalUses(f, top, methods) {
			t.Errorf("%s: uses %s, an unexported part of the generated code", fset.Position(use.Pos()), use.Name)
		}
	}
}

// The scan must see a use of each kind of internal.
func TestInternalUsesAreFound(t *testing.T) {
	src := `package graph
func f(ec *executionContext) {
	_ = newExecutionContext(nil, nil, nil)
	ec._FeedEdge(nil, nil, nil)
	var x struct{ _FeedEdge int }
	_ = x._FeedEdge
	_ = sources
}`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{"newExecutionContext": true, "executionContext": true, "sources": true}
	methods := map[string]bool{"_FeedEdge": true}
	var got []string
	for _, id := range internalUses(f, top, methods) {
		got = append(got, id.Name)
	}
	// x._FeedEdge is a field of the same name: reported too, as the scan
	// does not type-check; hand-written code can rename such a field.
	if want := "executionContext newExecutionContext _FeedEdge _FeedEdge sources"; strings.Join(got, " ") != want {
		t.Errorf("found %q, want %q", strings.Join(got, " "), want)
	}
}

// generatedInternals returns the unexported top-level names and method
// names declared in file.
func generatedInternals(t *testing.T, file string) (top, methods map[string]bool) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	top, methods = map[string]bool{}, map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() {
				continue
			}
			if d.Recv != nil {
				methods[d.Name.Name] = true
			} else {
				top[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						top[s.Name.Name] = true
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !n.IsExported() && n.Name != "_" {
							top[n.Name] = true
						}
					}
				}
			}
		}
	}
	return top, methods
}

// internalUses returns the identifiers of f that name one of top, and the
// selectors x.name whose name is one of methods.
func internalUses(f *ast.File, top, methods map[string]bool) []*ast.Ident {
	var out []*ast.Ident
	selected := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			selected[n.Sel] = true
			if methods[n.Sel.Name] {
				out = append(out, n.Sel)
			}
		case *ast.Ident:
			if !selected[n] && top[n.Name] {
				out = append(out, n)
			}
		}
		return true
	})
	return out
}
