package graph

import (
	"testing"

	"github.com/tmefeed/tmefeed/graph/model"
)

// Every kind of the schema's FeedUpdateKind has one live kind mapped to
// it, of the same name.
func TestUpdateKindsMatch(t *testing.T) {
	seen := map[model.FeedUpdateKind]bool{}
	for k, v := range updateKinds {
		if string(k) != string(v) || !v.IsValid() || seen[v] {
			t.Errorf("live kind %q maps to %q", k, v)
		}
		seen[v] = true
	}
	for _, v := range model.AllFeedUpdateKind {
		if !seen[v] {
			t.Errorf("no live kind maps to %s", v)
		}
	}
}
