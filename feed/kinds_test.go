package feed_test

import (
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/parser"
)

// Every parser media kind has one row, in the parser's order, and every
// spelling reads back as its kind.
func TestMediaKindNamesCoverTheParser(t *testing.T) {
	names := feed.MediaKindNames()
	kinds := parser.MediaKinds()
	if len(names) != len(kinds) {
		t.Fatalf("%d rows for %d parser kinds", len(names), len(kinds))
	}
	seen := map[string]parser.MediaKind{}
	for i, n := range names {
		if n.Kind != kinds[i] {
			t.Errorf("row %d is %q, the parser lists %q there", i, n.Kind, kinds[i])
		}
		if n.GraphQL == "" || n.Label == "" {
			t.Errorf("%q: spelling missing: %+v", n.Kind, n)
		}
		for _, s := range []string{string(n.Kind), n.GraphQL, strings.ToLower(n.GraphQL), strings.ToUpper(string(n.Kind))} {
			if k, ok := feed.MediaKindOf(s); !ok || k != n.Kind {
				t.Errorf("MediaKindOf(%q) = %q, %v; want %q", s, k, ok, n.Kind)
			}
			if prev, dup := seen[strings.ToLower(s)]; dup && prev != n.Kind {
				t.Errorf("%q spells both %q and %q", s, prev, n.Kind)
			}
			seen[strings.ToLower(s)] = n.Kind
		}
		if got := feed.NameOfMediaKind(n.Kind); got != n {
			t.Errorf("NameOfMediaKind(%q) = %+v, want %+v", n.Kind, got, n)
		}
	}
	for _, bad := range []string{"", "photo", "round_video_", "images"} {
		if k, ok := feed.MediaKindOf(bad); ok {
			t.Errorf("MediaKindOf(%q) = %q, want none", bad, k)
		}
	}
	if got := feed.NameOfMediaKind("hologram"); got.Kind != parser.MediaUnsupported {
		t.Errorf("an unknown kind is spelled %+v, want the unsupported kind's", got)
	}
}

func TestOrderOf(t *testing.T) {
	for _, o := range feed.Orders() {
		for _, s := range []string{string(o), strings.ToLower(string(o))} {
			if got, ok := feed.OrderOf(s); !ok || got != o {
				t.Errorf("OrderOf(%q) = %q, %v", s, got, ok)
			}
		}
	}
	if got, ok := feed.OrderOf("oldest"); ok {
		t.Errorf("OrderOf(oldest) = %q", got)
	}
}
