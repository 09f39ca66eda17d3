package parser

// The kinds of media, text entities and reactions are closed sets: each
// has its constants and a list of them. The other faces (GraphQL, the feed
// filter) map from the lists, and their tests fail while a kind added here
// has no mapping there.

// MediaKind is the kind of an attachment.
type MediaKind string

// Media kinds.
const (
	MediaImage      MediaKind = "image"
	MediaVideo      MediaKind = "video"
	MediaGIF        MediaKind = "gif"
	MediaVoice      MediaKind = "voice"
	MediaRoundVideo MediaKind = "roundvideo"
	MediaSticker    MediaKind = "sticker"
	MediaDocument   MediaKind = "document"
	MediaAudio      MediaKind = "audio"
	// MediaUnsupported stands for a post, or the part of one, that Telegram
	// does not show on the web ("Please open Telegram to view this post");
	// it is never available.
	MediaUnsupported MediaKind = "unsupported"
)

// MediaKinds lists every MediaKind.
func MediaKinds() []MediaKind {
	return []MediaKind{MediaImage, MediaVideo, MediaGIF, MediaVoice, MediaRoundVideo,
		MediaSticker, MediaDocument, MediaAudio, MediaUnsupported}
}

// EntityKind is the kind of a formatted span of a Text.
type EntityKind string

// Entity kinds.
const (
	EntityBold          EntityKind = "bold"
	EntityItalic        EntityKind = "italic"
	EntityUnderline     EntityKind = "underline"
	EntityStrikethrough EntityKind = "strikethrough"
	EntitySpoiler       EntityKind = "spoiler"
	EntityCode          EntityKind = "code"
	EntityPre           EntityKind = "pre"
	EntityTextLink      EntityKind = "text_link"
	EntityURL           EntityKind = "url"
	EntityMention       EntityKind = "mention"
	EntityHashtag       EntityKind = "hashtag"
	EntityEmoji         EntityKind = "emoji"
	EntityCustomEmoji   EntityKind = "custom_emoji"
	EntityBlockquote    EntityKind = "blockquote"
	EntityCashtag       EntityKind = "cashtag"
)

// EntityKinds lists every EntityKind.
func EntityKinds() []EntityKind {
	return []EntityKind{EntityBold, EntityItalic, EntityUnderline, EntityStrikethrough,
		EntitySpoiler, EntityCode, EntityPre, EntityTextLink, EntityURL, EntityMention,
		EntityHashtag, EntityEmoji, EntityCustomEmoji, EntityBlockquote, EntityCashtag}
}

// ReactionKind is the kind of a reaction counter.
type ReactionKind string

// Reaction kinds.
const (
	ReactEmoji       ReactionKind = "emoji"
	ReactCustomEmoji ReactionKind = "custom_emoji"
	ReactStars       ReactionKind = "telegram_stars"
)

// ReactionKinds lists every ReactionKind.
func ReactionKinds() []ReactionKind {
	return []ReactionKind{ReactEmoji, ReactCustomEmoji, ReactStars}
}
