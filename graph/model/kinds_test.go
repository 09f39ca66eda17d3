package model

import (
	"slices"
	"testing"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/parser"
)

// checkKindMap fails for a domain kind without a schema value, a schema
// value without a domain kind (only the fallback may have none, and only
// when no domain kind maps to it) and for a mapping outside either list.
func checkKindMap[D, S ~string](t reporter, name string, km kindMap[D, S], domain []D, schema []S) {
	t.Helper()
	for _, d := range domain {
		s, ok := km.toSchema[d]
		if !ok {
			t.Errorf("%s: domain kind %q has no schema value", name, d)
			continue
		}
		if back, err := km.domain(s); err != nil || back != d {
			t.Errorf("%s: %q → %s → %q, %v", name, d, s, back, err)
		}
	}
	for _, s := range schema {
		if _, err := km.domain(s); err != nil && s != km.fallback {
			t.Errorf("%s: schema value %s has no domain kind", name, s)
		}
	}
	for d, s := range km.toSchema {
		if !slices.Contains(domain, d) {
			t.Errorf("%s: %q is mapped but not a domain kind", name, d)
		}
		if !slices.Contains(schema, s) {
			t.Errorf("%s: %q maps to %s, which the schema does not have", name, d, s)
		}
	}
	if km.fallback != "" && !slices.Contains(schema, km.fallback) {
		t.Errorf("%s: fallback %s is not a schema value", name, km.fallback)
	}
}

type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// gaps records what checkKindMap reports.
type gaps struct{ n int }

func (*gaps) Helper()                 {}
func (g *gaps) Errorf(string, ...any) { g.n++ }

func TestKindMappingsCoverBothSides(t *testing.T) {
	checkKindMap(t, "MediaKind", mediaKinds, parser.MediaKinds(), AllMediaKind)
	checkKindMap(t, "EntityKind", entityKinds, parser.EntityKinds(), AllEntityKind)
	checkKindMap(t, "ReactionKind", reactionKinds, parser.ReactionKinds(), AllReactionKind)
}

// GraphQL's enum values are read by the one feed-request reader, which
// knows feed's spellings: every schema value must read as its kind, and
// every feed order must be a schema value.
func TestSchemaValuesReadAsFeedKinds(t *testing.T) {
	for _, v := range AllMediaKind {
		want, err := mediaKinds.domain(v)
		if got, ok := feed.MediaKindOf(string(v)); err != nil || !ok || got != want {
			t.Errorf("MediaKind %s reads as %q, %v; want %q (%v)", v, got, ok, want, err)
		}
	}
	for _, v := range AllFeedOrder {
		if _, ok := feed.OrderOf(string(v)); !ok {
			t.Errorf("FeedOrder %s is no feed order", v)
		}
	}
	for _, o := range feed.Orders() {
		if !FeedOrder(o).IsValid() {
			t.Errorf("feed order %q is not a FeedOrder value", o)
		}
	}
}

// The check itself must catch a kind missing on either side.
func TestCheckKindMapCatchesGaps(t *testing.T) {
	km := newKindMap(map[parser.MediaKind]MediaKind{parser.MediaImage: MediaKindImage}, MediaKindUnsupported)
	for _, c := range []struct {
		name   string
		domain []parser.MediaKind
		schema []MediaKind
	}{
		{"domain kind without value", []parser.MediaKind{parser.MediaImage, parser.MediaVideo}, []MediaKind{MediaKindImage, MediaKindUnsupported}},
		{"schema value without kind", []parser.MediaKind{parser.MediaImage}, []MediaKind{MediaKindImage, MediaKindVideo, MediaKindUnsupported}},
		{"mapped kind not listed", nil, []MediaKind{MediaKindImage, MediaKindUnsupported}},
	} {
		var g gaps
		checkKindMap(&g, c.name, km, c.domain, c.schema)
		if g.n == 0 {
			t.Errorf("%s: not caught", c.name)
		}
	}
}

// A domain kind the schema cannot name still shows, as the fallback.
func TestUnnamedKindsAreNotDropped(t *testing.T) {
	p := &Post{Content: parser.PostContent{
		Text:   &parser.Text{Entities: []parser.Entity{{Type: parser.EntityBold}, {Type: "date_time"}}},
		Media:  []parser.Media{{Type: parser.MediaImage}, {Type: "hologram"}},
		Reacts: []parser.React{{Type: parser.ReactEmoji}, {Type: "sparkles"}},
	}}
	var media []MediaKind
	for _, m := range p.Media() {
		media = append(media, m.Kind())
	}
	if want := []MediaKind{MediaKindImage, MediaKindUnsupported}; !slices.Equal(media, want) {
		t.Errorf("media kinds %v, want %v", media, want)
	}
	var ents []EntityKind
	for _, e := range p.Text().Entities() {
		ents = append(ents, e.Kind())
	}
	if want := []EntityKind{EntityKindBold, EntityKindUnknown}; !slices.Equal(ents, want) {
		t.Errorf("entity kinds %v, want %v", ents, want)
	}
	var reacts []ReactionKind
	for _, r := range p.Reactions() {
		reacts = append(reacts, r.Kind())
	}
	if want := []ReactionKind{ReactionKindEmoji, ReactionKindUnknown}; !slices.Equal(reacts, want) {
		t.Errorf("reaction kinds %v, want %v", reacts, want)
	}
}
