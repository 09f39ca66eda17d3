package graph

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// selectsMutation reports whether a GET request's document, refused by
// validation, selects a mutation or subscription: the GraphQL-over-HTTP
// draft answers that 405 whatever else is wrong with it. The schema has
// neither, so validation always refuses them first.
func (run *runner) selectsMutation(rc *graphql.OperationContext, params *graphql.RawParams, errs gqlerror.List) bool {
	doc := rc.Doc
	if doc == nil {
		if errs[0].Extensions["code"] != CodeValidationFailed || params.Query == "" {
			return false // did not parse, or never got that far
		}
		// Validation failed, so it parsed within the limits: a second
		// parse on this rare path is cheap.
		var err error
		if doc, err = parser.ParseQuery(&ast.Source{Input: params.Query}); err != nil {
			return false
		}
	}
	op := doc.Operations.ForName(params.OperationName)
	return op != nil && op.Operation != ast.Query
}

// explain rewrites gqlgen's messages that do not tell the user what to
// fix: an operation not found, and variables that do not fit their type
// ("cannot use value 0 as Int" for 1e40).
func (run *runner) explain(rc *graphql.OperationContext, params *graphql.RawParams, errs gqlerror.List) {
	for _, e := range errs {
		switch {
		case rc.Doc != nil && rc.Operation == nil && len(errs) == 1:
			e.Message = operationMessage(rc.Doc, params.OperationName)
		case rc.Operation != nil && len(e.Path) >= 2 && e.Path[0] == ast.PathName("variable"):
			e.Message = opVariableMessage(run.schema, rc.Operation, params.Variables, e)
		}
	}
}

func operationMessage(doc *ast.QueryDocument, name string) string {
	names := make([]string, len(doc.Operations))
	for i, op := range doc.Operations {
		names[i] = op.Name
		if names[i] == "" {
			names[i] = "an anonymous one"
		}
	}
	list := strings.Join(names, ", ")
	if name == "" {
		return fmt.Sprintf("operationName is required when the document has %d operations (%s)", len(names), list)
	}
	return fmt.Sprintf("operationName %s names no operation of the document; it has %s", strconv.Quote(name), list)
}

func opVariableMessage(schema *ast.Schema, op *ast.OperationDefinition, vars map[string]any, e *gqlerror.Error) string {
	name, _ := e.Path[1].(ast.PathName)
	def := op.VariableDefinitions.ForName(string(name))
	if def == nil {
		return e.Message
	}
	return variableMessage(schema, def, e.Path, vars[string(name)], e.Message)
}

// variableMessage says which variable, or which part of it (path, from
// ["variable", name]), does not fit, what was given (val is the
// variable's whole value) and what its type takes; msg is gqlparser's.
func variableMessage(schema *ast.Schema, def *ast.VariableDefinition, path ast.Path, val any, msg string) string {
	where := "$" + def.Variable
	typ := def.Type
	// The value at the path, as far as the request has it (gqlparser
	// takes a single value for a list of one).
	for _, step := range path[2:] {
		switch s := step.(type) {
		case ast.PathIndex:
			where += "[" + strconv.Itoa(int(s)) + "]"
			if typ.Elem != nil {
				typ = typ.Elem
			}
			// A list as JSON has it ([]any), or as gqlparser made it of
			// a single value.
			if list := reflect.ValueOf(val); list.Kind() == reflect.Slice && int(s) < list.Len() {
				val = list.Index(int(s)).Interface()
			}
		case ast.PathName:
			where += "." + string(s)
			if d := schema.Types[typ.Name()]; d != nil {
				if f := d.Fields.ForName(string(s)); f != nil {
					typ = f.Type
				}
			}
			if obj, ok := val.(map[string]any); ok {
				val = obj[string(s)]
			}
		}
	}
	subject := "Variable " + strconv.Quote(where)
	switch msg {
	case "must be defined":
		return fmt.Sprintf("%s of type %s was not given; it is required", subject, typ)
	case "cannot be null":
		return fmt.Sprintf("%s of type %s must not be null", subject, typ)
	case "unknown field":
		return fmt.Sprintf("%s is not a field of the input type; remove it", subject)
	}
	return fmt.Sprintf("%s got %s: %s", subject, shown(val), takes(schema, typ.Name()))
}

// takes says what values a named input type takes.
func takes(schema *ast.Schema, name string) string {
	switch name {
	case "Int":
		return "Int must be a whole number between -2^31 and 2^31-1"
	case "Float":
		return "Float must be a finite number"
	case "String":
		return "String must be a string"
	case "Boolean":
		return "Boolean must be true or false"
	case "ID":
		return "ID must be a string or a whole number"
	case "DateTime":
		return "DateTime must be an RFC 3339 string, e.g. 2024-05-01T12:30:00Z"
	}
	d := schema.Types[name]
	switch {
	case d == nil:
		return name + " does not take it"
	case d.Kind == ast.Enum:
		values := make([]string, len(d.EnumValues))
		for i, v := range d.EnumValues {
			values[i] = v.Name
		}
		return name + " must be one of " + strings.Join(values, ", ") + ", spelt exactly so"
	case d.Kind == ast.InputObject:
		return name + " must be an object"
	}
	return name + " does not take it"
}

// shown is a variable's value as sent, cut short.
func shown(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "a value that is not JSON"
	}
	s := string(b)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
