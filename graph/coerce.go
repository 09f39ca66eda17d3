package graph

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tmefeed/tmefeed/graph/model"
)

// strictVariables holds variables to the GraphQL spec's input coercion
// after gqlparser's validator.VariableValues, which is looser: it matches
// enum values without regard to case (so "newest" passes and then fails in
// the generated unmarshaler as an internal error), takes a numeric string
// as an Int or Float, and lets any value through as a custom scalar (so a
// malformed DateTime became a field error instead of a request error).
// Every transport creates its operations through the executor, so one
// check here covers POST, GET, event streams and WebSockets alike.
//
// It reads the variables only: the values gqlparser coerced are left as
// they are for the generated unmarshalers.
type strictVariables struct {
	schema *ast.Schema
	// scalars check the custom scalars' input; a custom scalar missing
	// here takes any value.
	scalars map[string]func(any) error
}

var (
	_ graphql.HandlerExtension        = strictVariables{}
	_ graphql.OperationContextMutator = strictVariables{}
)

func newStrictVariables(schema *ast.Schema) strictVariables {
	return strictVariables{
		schema: schema,
		scalars: map[string]func(any) error{
			"DateTime": func(v any) error { _, err := model.UnmarshalDateTime(v); return err },
		},
	}
}

func (strictVariables) ExtensionName() string                   { return "StrictVariables" }
func (strictVariables) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses the operation when a variable's value
// does not coerce to its type: a request error at ["variable", name, …],
// as gqlgen's own refusals are, whose message names the variable, the
// value given and what the type takes.
func (s strictVariables) MutateOperationContext(_ context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	if rc.Operation == nil {
		return nil
	}
	for _, def := range rc.Operation.VariableDefinitions {
		val, ok := rc.Variables[def.Variable]
		if !ok || val == nil {
			continue // absent or null: gqlparser checked nullability and defaults
		}
		path := ast.Path{ast.PathName("variable"), ast.PathName(def.Variable)}
		if bad, at := s.check(def.Type, val, path); bad {
			err := gqlerror.ErrorPathf(at, "%s", variableMessage(s.schema, def, at, val, ""))
			err.Extensions = map[string]any{"code": CodeValidationFailed}
			return err
		}
	}
	return nil
}

// check reports whether val does not coerce to typ, and where.
func (s strictVariables) check(typ *ast.Type, val any, path ast.Path) (bad bool, at ast.Path) {
	if val == nil {
		return false, nil // nullability is gqlparser's, which checked it
	}
	if typ.Elem != nil {
		// JSON decodes a list as []any; gqlparser makes a single value
		// (which stands for a list of one) a slice of its own type.
		list := reflect.ValueOf(val)
		if list.Kind() != reflect.Slice {
			return s.check(typ.Elem, val, path)
		}
		for i := range list.Len() {
			if bad, at := s.check(typ.Elem, list.Index(i).Interface(), append(path[:len(path):len(path)], ast.PathIndex(i))); bad {
				return true, at
			}
		}
		return false, nil
	}
	def := s.schema.Types[typ.NamedType]
	if def == nil {
		return false, nil
	}
	switch def.Kind {
	case ast.Enum:
		name, _ := val.(string)
		if def.EnumValues.ForName(name) == nil {
			return true, path
		}
	case ast.InputObject:
		obj, ok := val.(map[string]any)
		if !ok {
			return true, path
		}
		for _, f := range def.Fields {
			if bad, at := s.check(f.Type, obj[f.Name], append(path[:len(path):len(path)], ast.PathName(f.Name))); bad {
				return true, at
			}
		}
	case ast.Scalar:
		if !s.scalarFits(def.Name, val) {
			return true, path
		}
	}
	return false, nil
}

// scalarFits reports whether val is input the scalar takes: numbers for
// Int and Float, strings for String, never a string for a number or the
// other way round.
func (s strictVariables) scalarFits(name string, val any) bool {
	switch name {
	case "Int":
		n, ok := number(val)
		return ok && n == math.Trunc(n) && n >= math.MinInt32 && n <= math.MaxInt32
	case "Float":
		n, ok := number(val)
		return ok && !math.IsInf(n, 0) && !math.IsNaN(n)
	case "String":
		_, ok := val.(string)
		return ok
	case "Boolean":
		_, ok := val.(bool)
		return ok
	case "ID":
		if _, ok := val.(string); ok {
			return true
		}
		n, ok := number(val)
		return ok && n == math.Trunc(n)
	}
	if f := s.scalars[name]; f != nil {
		return f(val) == nil
	}
	return true
}

// number is a JSON number however it was decoded: json.Number by the
// HTTP and stream transports, float64 by a plain json.Unmarshal, int64
// after gqlparser coerced a top-level Int.
func number(val any) (float64, bool) {
	switch n := val.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}
