package model

import "github.com/tmefeed/tmefeed/parser"

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

// Channel is the post's channel as its page showed it when the change was
// seen; its posts field reads the channel's pages anew.
func (u *FeedUpdate) Channel() *Channel { return ChannelOf(u.channel, nil) }
