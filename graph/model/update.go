package model

import (
	"github.com/tmefeed/tmefeed/graph/ids"
	"github.com/tmefeed/tmefeed/parser"
)

// FeedUpdate is one event of a feedUpdates subscription: a post of a
// watched channel that appeared, changed or went away.
type FeedUpdate struct {
	Kind    FeedUpdateKind
	post    *parser.Post
	channel *parser.Channel
}

// UpdateOf returns the update of kind k for post p of channel c.
func UpdateOf(k FeedUpdateKind, c *parser.Channel, p *parser.Post) *FeedUpdate {
	return &FeedUpdate{Kind: k, post: p, channel: c}
}

func (u *FeedUpdate) Post() *Post { return PostOf(u.post) }

// ID is the update's key for normalized caches: its post's and its kind.
// The update carries nothing of the subscription that received it, so a
// second change of the same kind is the same object anew, and a cache
// holds one per post and kind, not one per event.
func (u *FeedUpdate) ID() string {
	return ids.Part("FeedUpdate", PostOf(u.post).GlobalID(), string(u.Kind))
}

// Channel is the post's channel as its page showed it when the change was
// seen; its posts field reads the channel's pages anew.
func (u *FeedUpdate) Channel() *Channel { return ChannelOf(u.channel, nil) }
