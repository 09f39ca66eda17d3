package feed

import (
	"strings"

	"github.com/tmefeed/tmefeed/parser"
)

// MediaKindName is how the faces spell one media kind: REST and the feed
// readers' query strings write the parser's own name (Kind, "roundvideo"),
// GraphQL's MediaKind enum its value (GraphQL, "ROUND_VIDEO"), and the
// feed-reader documents show Label to people ("Video message").
type MediaKindName struct {
	Kind    parser.MediaKind
	GraphQL string
	Label   string
}

// mediaKindNames is the one table of media-kind spellings, in the
// parser's order; a test holds it to parser.MediaKinds and graph/model's
// to the schema.
var mediaKindNames = [...]MediaKindName{
	{parser.MediaImage, "IMAGE", "Photo"},
	{parser.MediaVideo, "VIDEO", "Video"},
	{parser.MediaGIF, "GIF", "GIF"},
	{parser.MediaVoice, "VOICE", "Voice message"},
	{parser.MediaRoundVideo, "ROUND_VIDEO", "Video message"},
	{parser.MediaSticker, "STICKER", "Sticker"},
	{parser.MediaDocument, "DOCUMENT", "File"},
	{parser.MediaAudio, "AUDIO", "Audio"},
	{parser.MediaUnsupported, "UNSUPPORTED", "Media not shown on the web"},
}

// MediaKindNames lists every media kind's spellings, in the parser's order.
func MediaKindNames() []MediaKindName { return mediaKindNames[:] }

// NameOfMediaKind is k's spellings; a kind missing from the table (which
// its test rules out) is spelled as the unsupported kind.
func NameOfMediaKind(k parser.MediaKind) MediaKindName {
	for _, n := range mediaKindNames {
		if n.Kind == k {
			return n
		}
	}
	return mediaKindNames[len(mediaKindNames)-1]
}

// MediaKindOf reads a media kind as REST ("image", "roundvideo") or
// GraphQL ("IMAGE", "ROUND_VIDEO") spells it, in any case.
func MediaKindOf(s string) (parser.MediaKind, bool) {
	for _, n := range mediaKindNames {
		if strings.EqualFold(s, string(n.Kind)) || strings.EqualFold(s, n.GraphQL) {
			return n.Kind, true
		}
	}
	return "", false
}

// OrderOf reads a feed order by its name, case-insensitively ("newest",
// "RANKED").
func OrderOf(s string) (Order, bool) {
	for _, o := range Orders() {
		if strings.EqualFold(s, string(o)) {
			return o, true
		}
	}
	return "", false
}
