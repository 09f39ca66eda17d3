package model

import (
	"fmt"
	"io"
	"strconv"
)

// FeedOrder is the order of a feed.
type FeedOrder string

// FeedOrder values.
const (
	FeedOrderNewest FeedOrder = "NEWEST"
	FeedOrderRanked FeedOrder = "RANKED"
)

// IsValid reports whether e is one of the schema's values.
func (e FeedOrder) IsValid() bool {
	switch e {
	case FeedOrderNewest, FeedOrderRanked:
		return true
	}
	return false
}

func (e FeedOrder) String() string { return string(e) }

// UnmarshalGQL reads an enum value of a query.
func (e *FeedOrder) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("enums must be strings")
	}
	*e = FeedOrder(str)
	if !e.IsValid() {
		return fmt.Errorf("%s is not a valid FeedOrder", str)
	}
	return nil
}

// MarshalGQL writes e as a JSON string.
func (e FeedOrder) MarshalGQL(w io.Writer) {
	io.WriteString(w, strconv.Quote(e.String()))
}

// MediaKind is the kind of an attachment.
type MediaKind string

// MediaKind values.
const (
	MediaKindImage       MediaKind = "IMAGE"
	MediaKindVideo       MediaKind = "VIDEO"
	MediaKindGif         MediaKind = "GIF"
	MediaKindVoice       MediaKind = "VOICE"
	MediaKindRoundVideo  MediaKind = "ROUND_VIDEO"
	MediaKindSticker     MediaKind = "STICKER"
	MediaKindDocument    MediaKind = "DOCUMENT"
	MediaKindAudio       MediaKind = "AUDIO"
	MediaKindUnsupported MediaKind = "UNSUPPORTED"
)

// IsValid reports whether e is one of the schema's values.
func (e MediaKind) IsValid() bool {
	switch e {
	case MediaKindImage, MediaKindVideo, MediaKindGif, MediaKindVoice, MediaKindRoundVideo, MediaKindSticker, MediaKindDocument, MediaKindAudio, MediaKindUnsupported:
		return true
	}
	return false
}

func (e MediaKind) String() string { return string(e) }

// UnmarshalGQL reads an enum value of a query.
func (e *MediaKind) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("enums must be strings")
	}
	*e = MediaKind(str)
	if !e.IsValid() {
		return fmt.Errorf("%s is not a valid MediaKind", str)
	}
	return nil
}

// MarshalGQL writes e as a JSON string.
func (e MediaKind) MarshalGQL(w io.Writer) {
	io.WriteString(w, strconv.Quote(e.String()))
}

// EntityKind is the kind of a formatted span.
type EntityKind string

// EntityKind values.
const (
	EntityKindBold          EntityKind = "BOLD"
	EntityKindItalic        EntityKind = "ITALIC"
	EntityKindUnderline     EntityKind = "UNDERLINE"
	EntityKindStrikethrough EntityKind = "STRIKETHROUGH"
	EntityKindSpoiler       EntityKind = "SPOILER"
	EntityKindCode          EntityKind = "CODE"
	EntityKindPre           EntityKind = "PRE"
	EntityKindTextLink      EntityKind = "TEXT_LINK"
	EntityKindUrl           EntityKind = "URL"
	EntityKindMention       EntityKind = "MENTION"
	EntityKindHashtag       EntityKind = "HASHTAG"
	EntityKindEmoji         EntityKind = "EMOJI"
	EntityKindCustomEmoji   EntityKind = "CUSTOM_EMOJI"
	EntityKindBlockquote    EntityKind = "BLOCKQUOTE"
	EntityKindCashtag       EntityKind = "CASHTAG"
)

// IsValid reports whether e is one of the schema's values.
func (e EntityKind) IsValid() bool {
	switch e {
	case EntityKindBold, EntityKindItalic, EntityKindUnderline, EntityKindStrikethrough, EntityKindSpoiler, EntityKindCode, EntityKindPre, EntityKindTextLink, EntityKindUrl, EntityKindMention, EntityKindHashtag, EntityKindEmoji, EntityKindCustomEmoji, EntityKindBlockquote, EntityKindCashtag:
		return true
	}
	return false
}

func (e EntityKind) String() string { return string(e) }

// UnmarshalGQL reads an enum value of a query.
func (e *EntityKind) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("enums must be strings")
	}
	*e = EntityKind(str)
	if !e.IsValid() {
		return fmt.Errorf("%s is not a valid EntityKind", str)
	}
	return nil
}

// MarshalGQL writes e as a JSON string.
func (e EntityKind) MarshalGQL(w io.Writer) {
	io.WriteString(w, strconv.Quote(e.String()))
}

// ReactionKind is the kind of a reaction.
type ReactionKind string

// ReactionKind values.
const (
	ReactionKindEmoji         ReactionKind = "EMOJI"
	ReactionKindCustomEmoji   ReactionKind = "CUSTOM_EMOJI"
	ReactionKindTelegramStars ReactionKind = "TELEGRAM_STARS"
)

// IsValid reports whether e is one of the schema's values.
func (e ReactionKind) IsValid() bool {
	switch e {
	case ReactionKindEmoji, ReactionKindCustomEmoji, ReactionKindTelegramStars:
		return true
	}
	return false
}

func (e ReactionKind) String() string { return string(e) }

// UnmarshalGQL reads an enum value of a query.
func (e *ReactionKind) UnmarshalGQL(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("enums must be strings")
	}
	*e = ReactionKind(str)
	if !e.IsValid() {
		return fmt.Errorf("%s is not a valid ReactionKind", str)
	}
	return nil
}

// MarshalGQL writes e as a JSON string.
func (e ReactionKind) MarshalGQL(w io.Writer) {
	io.WriteString(w, strconv.Quote(e.String()))
}
