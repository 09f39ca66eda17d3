// Package ids encodes and decodes the GraphQL schema's global object ids
// (Relay's Node.id). An id names its type and the object's natural key —
// "Post:<channel>/<messageId>" or "Channel:<username>" — base64url-encoded
// without padding. Clients treat ids as opaque; the format is fixed so
// that ids stay the same across processes, restarts and settings, as a
// client's normalized cache expects.
package ids

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tmefeed/tmefeed/tme"
)

// Types an id can name.
const (
	TypePost    = "Post"
	TypeChannel = "Channel"

	// Types whose ids are keys for normalized caches only.
	typeText     = "Text"
	typeFeedItem = "FeedItem"
)

// ErrInvalid: the string is not an id this API issues.
var ErrInvalid = errors.New("not an id of this API")

// Ref is a decoded id.
type Ref struct {
	Type      string // TypePost or TypeChannel
	Channel   string // lower-case username
	MessageID int    // TypePost only; 0 for an unnamed post
	Unnamed   string // TypePost of a post t.me names nowhere: its key
}

// Post is the id of message messageID of channel.
func Post(channel string, messageID int) string {
	return encode(TypePost + ":" + strings.ToLower(channel) + "/" + strconv.Itoa(messageID))
}

// UnnamedPost is the id of a post of channel that t.me names nowhere, key
// being parser.Post.UnnamedKey. It is no post's number, so it collides
// with none; node() finds no post by it.
func UnnamedPost(channel, key string) string {
	return encode(TypePost + ":" + strings.ToLower(channel) + "/~" + key)
}

// Text is the id of the text of the post with id post. Texts are no
// Nodes: Parse does not take their ids.
func Text(post string) string { return Part(typeText, post, "") }

// Part is the id, for normalized caches, of a value of type typ that
// belongs to the object (or feed, or requested name) owner names: place
// tells it from the owner's other values of that type (an index, a name),
// "" for the owner's only one. An owner given with a place is an id or a
// feed number, neither of which holds a "/", so two owners' parts never
// share an id. Parts are no Nodes: Parse does not take their ids.
func Part(typ, owner, place string) string {
	if place == "" {
		return encode(typ + ":" + owner)
	}
	return encode(typ + ":" + owner + "/" + place)
}

// Index is place for the i-th value of a list.
func Index(i int) string { return strconv.Itoa(i) }

// Feed is owner for the parts of the feed identified by feed
// (feed.Page.Feed).
func Feed(feed uint64) string { return strconv.FormatUint(feed, 36) }

// FeedItem is the id of the item of post (its id) in the feed identified
// by feed (feed.Page.Feed). Items are no Nodes: Parse does not take
// their ids.
func FeedItem(feed uint64, post string) string {
	return Part(typeFeedItem, Feed(feed), post)
}

// Channel is the id of the channel with this username.
func Channel(username string) string {
	return encode(TypeChannel + ":" + strings.ToLower(username))
}

func encode(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// Parse decodes an id. Only the exact form Post and Channel produce is
// accepted, so that one object has one id.
func Parse(id string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("%w: %q %s; ids are opaque: pass back a Post.id or Channel.id unchanged", ErrInvalid, truncate(id), why)
	}
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return bad("is not base64url")
	}
	typ, key, ok := strings.Cut(string(raw), ":")
	if !ok {
		return bad("names no type")
	}
	var r Ref
	switch typ {
	case TypeChannel:
		r = Ref{Type: typ, Channel: key}
	case TypePost:
		ch, num, ok := strings.Cut(key, "/")
		if k, unnamed := strings.CutPrefix(num, "~"); ok && unnamed && k != "" && len(k) <= 16 && strings.Trim(k, "0123456789abcdef") == "" {
			r = Ref{Type: typ, Channel: ch, Unnamed: k}
			break
		}
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 1 || n > tme.MaxPosition {
			return bad("names no post")
		}
		r = Ref{Type: typ, Channel: ch, MessageID: n}
	default:
		return bad("names an unknown type")
	}
	if _, err := tme.ValidUsername(r.Channel); err != nil {
		return bad("names no channel")
	}
	if r.String() != id {
		return bad("is not in its canonical form")
	}
	return r, nil
}

// String is the id r decodes from.
func (r Ref) String() string {
	if r.Type == TypePost && r.Unnamed != "" {
		return UnnamedPost(r.Channel, r.Unnamed)
	}
	if r.Type == TypePost {
		return Post(r.Channel, r.MessageID)
	}
	return Channel(r.Channel)
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
