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
	mediaKinds = newKindMap(map[parser.MediaKind]MediaKind{
		parser.MediaImage:       MediaKindImage,
		parser.MediaVideo:       MediaKindVideo,
		parser.MediaGIF:         MediaKindGif,
		parser.MediaVoice:       MediaKindVoice,
		parser.MediaRoundVideo:  MediaKindRoundVideo,
		parser.MediaSticker:     MediaKindSticker,
		parser.MediaDocument:    MediaKindDocument,
		parser.MediaAudio:       MediaKindAudio,
		parser.MediaUnsupported: MediaKindUnsupported,
	}, MediaKindUnsupported)

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

	// Orders are only ever read from queries, so there is no fallback:
	// the zero value stands for none.
	feedOrders = newKindMap(map[feed.Order]FeedOrder{
		feed.Newest: FeedOrderNewest,
		feed.Ranked: FeedOrderRanked,
	}, "")
)

// MediaKindOf is the schema value of parser kind k; UNSUPPORTED for a kind
// without one.
func MediaKindOf(k parser.MediaKind) MediaKind { return mediaKinds.schema(k) }

// ParserMediaKind is the parser kind of schema value k.
func ParserMediaKind(k MediaKind) (parser.MediaKind, error) { return mediaKinds.domain(k) }

// EntityKindOf is the schema value of parser kind k; UNKNOWN for a kind
// without one.
func EntityKindOf(k parser.EntityKind) EntityKind { return entityKinds.schema(k) }

// ReactionKindOf is the schema value of parser kind k; UNKNOWN for a kind
// without one.
func ReactionKindOf(k parser.ReactionKind) ReactionKind { return reactionKinds.schema(k) }

// FeedOrderOf is the feed order of schema value k.
func FeedOrderOf(k FeedOrder) (feed.Order, error) { return feedOrders.domain(k) }

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
