package model

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/tmefeed/tmefeed/fault"
)

// ErrInvalidInput: an argument value the schema's types let through but
// tmefeed cannot use, such as a malformed DateTime. It matches
// fault.ErrBadRequest, so every face answers it as bad input.
var ErrInvalidInput error = invalidInput{}

type invalidInput struct{}

func (invalidInput) Error() string        { return "invalid input" }
func (invalidInput) Is(target error) bool { return target == fault.ErrBadRequest }

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
