package graph

import (
	"testing"

	"github.com/tmefeed/tmefeed/fault"
)

// Only Internal falls through to INTERNAL_SERVER_ERROR: a kind added to
// fault without a GraphQL code would be told as a bug.
func TestEveryKindHasACode(t *testing.T) {
	for _, k := range fault.Kinds() {
		if code := graphCode(k); (code == CodeInternal) != (k == fault.Internal) {
			t.Errorf("%v: %s", k, code)
		}
	}
}
