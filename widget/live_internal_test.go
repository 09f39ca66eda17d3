package widget

import (
	"testing"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/parser"
)

// The widget spells media kinds in its subscription as the schema does:
// every parser kind has the schema value that maps back to it.
func TestLiveMediaKindsAreTheSchemas(t *testing.T) {
	for _, k := range parser.MediaKinds() {
		name, ok := graphQLMediaKinds[k]
		if !ok {
			t.Errorf("no schema name for media kind %q", k)
			continue
		}
		if got, err := model.ParserMediaKind(model.MediaKind(name)); err != nil || got != k {
			t.Errorf("%q → %q → %q, %v", k, name, got, err)
		}
	}
}
