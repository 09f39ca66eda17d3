package model

import (
	"fmt"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/parser"
)

// Each schema enum has one two-way mapping to its domain kinds, written
// out rather than derived from spelling (the parser writes "roundvideo",
// the schema ROUND_VIDEO). TestKindMappingsCoverBothSides fails while a
// domain kind has no schema value or a schema value no domain kind.
//
// At run time a domain kind without a schema value (which that test rules
// out for every kind the parser lists) is not dropped: it answers a
// documented fallback, UNSUPPORTED for media and UNKNOWN for entities and
// reactions, so a post never silently loses an attachment, a span or a
// counter.

var (
	// Media kinds are spelled in feed's one table, which the REST filter
	// and the feed-reader documents read too.
	mediaKinds = newKindMap(schemaMediaKinds(), MediaKindUnsupported)

	entityKinds = newKindMap(map[parser.EntityKind]EntityKind{
		parser.EntityBold:          EntityKindBold,
		parser.EntityItalic:        EntityKindItalic,
		parser.EntityUnderline:     EntityKindUnderline,
		parser.EntityStrikethrough: EntityKindStrikethrough,
		parser.EntitySpoiler:       EntityKindSpoiler,
		parser.EntityCode:          EntityKindCode,
		parser.EntityPre:           EntityKindPre,
		parser.EntityTextLink:      EntityKindTextLink,
		parser.EntityURL:           EntityKindURL,
		parser.EntityMention:       EntityKindMention,
		parser.EntityHashtag:       EntityKindHashtag,
		parser.EntityEmoji:         EntityKindEmoji,
		parser.EntityCustomEmoji:   EntityKindCustomEmoji,
		parser.EntityBlockquote:    EntityKindBlockquote,
		parser.EntityCashtag:       EntityKindCashtag,
	}, EntityKindUnknown)

	reactionKinds = newKindMap(map[parser.ReactionKind]ReactionKind{
		parser.ReactEmoji:       ReactionKindEmoji,
		parser.ReactCustomEmoji: ReactionKindCustomEmoji,
		parser.ReactStars:       ReactionKindTelegramStars,
	}, ReactionKindUnknown)
)

func schemaMediaKinds() map[parser.MediaKind]MediaKind {
	m := make(map[parser.MediaKind]MediaKind, len(feed.MediaKindNames()))
	for _, n := range feed.MediaKindNames() {
		m[n.Kind] = MediaKind(n.GraphQL)
	}
	return m
}

// MediaKindOf is the schema value of parser kind k; UNSUPPORTED for a kind
// without one.
func MediaKindOf(k parser.MediaKind) MediaKind { return mediaKinds.schema(k) }

// EntityKindOf is the schema value of parser kind k; UNKNOWN for a kind
// without one.
func EntityKindOf(k parser.EntityKind) EntityKind { return entityKinds.schema(k) }

// ReactionKindOf is the schema value of parser kind k; UNKNOWN for a kind
// without one.
func ReactionKindOf(k parser.ReactionKind) ReactionKind { return reactionKinds.schema(k) }

// kindMap maps domain kinds D to schema values S and back.
type kindMap[D, S ~string] struct {
	toSchema map[D]S
	toDomain map[S]D
	fallback S // for a domain kind without a value
}

// newKindMap panics when two domain kinds share a schema value: the map
// would not go back.
func newKindMap[D, S ~string](m map[D]S, fallback S) kindMap[D, S] {
	km := kindMap[D, S]{toSchema: m, toDomain: make(map[S]D, len(m)), fallback: fallback}
	for d, s := range m {
		if prev, dup := km.toDomain[s]; dup {
			panic(fmt.Sprintf("model: %q and %q both map to %s", prev, d, s))
		}
		km.toDomain[s] = d
	}
	return km
}

func (km kindMap[D, S]) schema(d D) S {
	if s, ok := km.toSchema[d]; ok {
		return s
	}
	return km.fallback
}

func (km kindMap[D, S]) domain(s S) (D, error) {
	d, ok := km.toDomain[s]
	if !ok {
		return d, fmt.Errorf("%w: %s has no meaning here", ErrInvalidInput, s)
	}
	return d, nil
}
