package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// limits rejects operations that are too deep or use too many aliases or
// root fields, before anything runs. Introspection fields are not counted:
// their shape is fixed, and introspection can be switched off.
type limits struct {
	maxDepth, maxAliases, maxRootFields int
	// noIntrospection rejects __schema and __type up front, so a client
	// learns why instead of meeting null fields.
	noIntrospection bool
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = limits{}

func (limits) ExtensionName() string                   { return "QueryLimits" }
func (limits) Validate(graphql.ExecutableSchema) error { return nil }

func (l limits) MutateOperationContext(_ context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	op := rc.Operation
	if op == nil {
		return nil
	}
	roots := 0
	for _, sel := range op.SelectionSet {
		roots += countRoots(sel)
	}
	if roots > l.maxRootFields {
		return limitError("operation has %d root fields, at most %d are allowed", roots, l.maxRootFields)
	}
	depth, aliases, introspects := measure(op.SelectionSet, 0)
	if introspects && l.noIntrospection {
		err := gqlerror.Errorf("introspection is disabled on this server")
		errcode.Set(err, errcode.ValidationFailed)
		return err
	}
	if depth > l.maxDepth {
		return limitError("operation is %d levels deep, at most %d are allowed", depth, l.maxDepth)
	}
	if aliases > l.maxAliases {
		return limitError("operation uses %d aliases, at most %d are allowed", aliases, l.maxAliases)
	}
	return nil
}

func limitError(format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	err.Extensions = map[string]any{"code": CodeComplexity}
	return err
}

// countRoots counts the root fields a selection contributes, fragments
// expanded.
func countRoots(sel ast.Selection) int {
	switch s := sel.(type) {
	case *ast.Field:
		if s.Name == "__typename" {
			return 0
		}
		return 1
	case *ast.FragmentSpread:
		n := 0
		if s.Definition != nil {
			for _, c := range s.Definition.SelectionSet {
				n += countRoots(c)
			}
		}
		return n
	case *ast.InlineFragment:
		n := 0
		for _, c := range s.SelectionSet {
			n += countRoots(c)
		}
		return n
	}
	return 0
}

// measure returns the depth of a selection set and the aliases used in it,
// counting each use of a fragment, and whether it introspects the schema.
// Validation has ruled out fragment cycles, and the depth cut-off bounds
// the walk.
func measure(set ast.SelectionSet, depth int) (maxDepth, aliases int, introspects bool) {
	maxDepth = depth
	for _, sel := range set {
		var (
			d, a  int
			in    bool
			child ast.SelectionSet
			level = depth
		)
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				introspects = true
				continue
			}
			if s.Alias != "" && s.Alias != s.Name {
				aliases++
			}
			child, level = s.SelectionSet, depth+1
		case *ast.FragmentSpread:
			if s.Definition != nil {
				child = s.Definition.SelectionSet
			}
		case *ast.InlineFragment:
			child = s.SelectionSet
		}
		if level > 64 {
			return level, aliases, introspects
		}
		d, a, in = measure(child, level)
		maxDepth = max(maxDepth, d)
		aliases += a
		introspects = introspects || in
	}
	return maxDepth, aliases, introspects
}
