package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Request bodies of the REST API are strict: declared as application/json
// (UTF-8), one JSON object of known fields, nothing after it. Lenient
// decoding let typos and truncated or concatenated bodies through silently.

// Error codes of requests refused for their form rather than their content.
const (
	// CodeUnsupportedMediaType: a body not sent as application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeURITooLong: a request target longer than any valid one.
	CodeURITooLong = "uri_too_long"
)

// decodeJSON reads the request body into dst, a pointer to a struct,
// answering 415, 413 or 400 itself when it cannot; want shows the expected
// body in 400 messages.
func (h *handler) decodeJSON(w http.ResponseWriter, r *http.Request, dst any, want string) bool {
	if e, ok := checkContentType(r.Header); !ok {
		h.fail(w, r, e)
		return false
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.fail(w, r, tooLargeError(tooLarge.Limit))
		} else {
			// A broken chunked encoding or a client gone mid-body.
			noteError(r.Context(), fmt.Errorf("read body: %w", err))
			h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: "could not read the request body"})
		}
		return false
	}
	if err := decodeStrict(b, dst); err != nil {
		h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: err.Error() + "; want " + want})
		return false
	}
	return true
}

// checkContentType accepts application/json with no charset or UTF-8, and
// no content coding: the only body encoding the decoder reads.
func checkContentType(hd http.Header) (apiError, bool) {
	refuse := func(msg string) (apiError, bool) {
		return apiError{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMediaType, Message: msg}, false
	}
	cts := hd.Values("Content-Type")
	switch len(cts) {
	case 0:
		return refuse("Content-Type must be application/json; none was sent")
	case 1:
	default:
		return refuse("Content-Type must be sent once")
	}
	mt, params, err := mime.ParseMediaType(cts[0])
	if err != nil || mt != "application/json" {
		return refuse(fmt.Sprintf("Content-Type must be application/json, not %q", clip(cts[0])))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return refuse(fmt.Sprintf("JSON must be UTF-8, not charset %q", clip(cs)))
	}
	if ce := hd.Values("Content-Encoding"); len(ce) > 0 && !(len(ce) == 1 && strings.EqualFold(ce[0], "identity")) {
		return refuse(fmt.Sprintf("Content-Encoding %q is not supported; send the body uncompressed", clip(strings.Join(ce, ", "))))
	}
	return apiError{}, true
}

// decodeStrict decodes b, a whole request body, into dst: exactly one JSON
// object, valid UTF-8, with no unknown fields and nothing but whitespace
// after it. Errors name the offending field.
func decodeStrict(b []byte, dst any) error {
	body := bytes.TrimLeft(b, " \t\r\n")
	if len(body) == 0 {
		return errors.New("the body is empty")
	}
	if body[0] != '{' {
		// null, a list, a string...: each would decode to an empty request
		// or a less helpful message.
		return fmt.Errorf("the body must be a JSON object, not %s", jsonKind(body[0]))
	}
	if !utf8.Valid(b) {
		// encoding/json would replace bad bytes with U+FFFD unseen.
		return errors.New("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return describeDecodeError(err, dst)
	}
	if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("unexpected data after the JSON object at byte %d", len(b)-len(rest))
	}
	return nil
}

func describeDecodeError(err error, dst any) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("the body is not valid JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the body ends inside the JSON object")
	case errors.As(err, &typ):
		return errors.New(typeErrorMessage(typ, dst))
	}
	// encoding/json reports unknown fields only as text.
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", clip(field))
	}
	return fmt.Errorf("the body is not valid JSON: %w", err)
}

// typeErrorMessage names the field and says what it must be, e.g.
// `"limit" must be a whole number, not a string`.
func typeErrorMessage(e *json.UnmarshalTypeError, dst any) string {
	if e.Field == "" {
		return "the body must be a JSON object, not " + jsonValue(e.Value)
	}
	want := goTypeName(e.Type)
	if num, ok := strings.CutPrefix(e.Value, "number "); ok {
		// A number of the wrong kind: fractional or out of range.
		if ft := fieldType(reflect.TypeOf(dst), e.Field); ft != nil && ft.Kind() == reflect.Slice {
			return fmt.Sprintf("each item of %q must be %s, not %s", e.Field, want, clip(num))
		}
		return fmt.Sprintf("%q must be %s in range, not %s", e.Field, want, clip(num))
	}
	if ft := fieldType(reflect.TypeOf(dst), e.Field); ft != nil && ft.Kind() == reflect.Slice && ft.Elem() == e.Type {
		return fmt.Sprintf("each item of %q must be %s, not %s", e.Field, want, jsonValue(e.Value))
	}
	return fmt.Sprintf("%q must be %s, not %s", e.Field, want, jsonValue(e.Value))
}

// fieldType finds the Go type of a dotted JSON field path in t, or nil.
func fieldType(t reflect.Type, path string) reflect.Type {
	for name := range strings.SplitSeq(path, ".") {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		var found reflect.Type
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == name || tag == "" && f.Name == name {
				found = f.Type
				break
			}
		}
		t = found
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// goTypeName says what JSON value a Go type takes.
func goTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
		return "a list"
	default:
		return "an object"
	}
}

// jsonValue turns encoding/json's description of a value ("string",
// "array", ...) into prose.
func jsonValue(v string) string {
	switch v {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "a boolean"
	case "":
		return "this value"
	}
	return "a " + v
}

// jsonKind names the JSON value starting with c.
func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "a list"
	case c == '"':
		return "a string"
	case c == 'n':
		return "null"
	case c == 't' || c == 'f':
		return "true or false"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return "anything else"
}

// clip keeps echoed input short in messages.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
