package model

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
)

// ErrInvalidInput: an argument value the schema's types let through but
// tmefeed cannot use, such as a malformed DateTime.
var ErrInvalidInput = errors.New("invalid input")

// MarshalDateTime writes t as an RFC 3339 string in UTC.
func MarshalDateTime(t time.Time) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		_, _ = io.WriteString(w, strconv.Quote(t.UTC().Format(time.RFC3339)))
	})
}

// UnmarshalDateTime reads an RFC 3339 string.
func UnmarshalDateTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("%w: DateTime must be an RFC 3339 string", ErrInvalidInput)
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: DateTime %q is not RFC 3339, e.g. 2024-05-01T12:30:00Z", ErrInvalidInput, s)
	}
	return t, nil
}
