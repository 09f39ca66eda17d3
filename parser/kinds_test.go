package parser

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// The other faces map kinds from the lists, so a constant missing from
// its list would be missing everywhere without a failing test.
func TestKindListsHoldEveryConstant(t *testing.T) {
	consts := typedStringConsts(t, "kinds.go")
	lists := map[string][]string{
		"MediaKind":    asStrings(MediaKinds()),
		"EntityKind":   asStrings(EntityKinds()),
		"ReactionKind": asStrings(ReactionKinds()),
	}
	for typ, list := range lists {
		if len(consts[typ]) == 0 {
			t.Errorf("no %s constants found in kinds.go", typ)
		}
		for _, v := range consts[typ] {
			if !slices.Contains(list, v) {
				t.Errorf("%s %q is a constant but not in the list", typ, v)
			}
		}
		for i, v := range list {
			if !slices.Contains(consts[typ], v) {
				t.Errorf("%s list holds %q, which is no constant", typ, v)
			}
			if slices.Contains(list[:i], v) {
				t.Errorf("%s list holds %q twice", typ, v)
			}
		}
	}
}

func asStrings[K ~string](ks []K) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// typedStringConsts returns the values of the constants of file declared
// with an explicit type, by type name.
func typedStringConsts(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			typ, ok := vs.Type.(*ast.Ident)
			if !ok {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s constant %s is not a string literal", typ.Name, vs.Names[0].Name)
				}
				val, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[typ.Name] = append(out[typ.Name], val)
			}
		}
	}
	return out
}
