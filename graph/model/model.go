// Package model adapts the parser's domain types to the GraphQL schema.
// gqlgen binds the schema's types to these by name (gqlgen.yml autobind);
// most wrap a parser value and expose it through methods, so a post is
// never copied to be served.
package model

import (
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph/ids"
	"github.com/tmefeed/tmefeed/internal/safeurl"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/sanitize"
)

// link is a URL taken from the page, given to clients only when it passes
// safeurl.Link (http, https, tg); nil otherwise, as for no URL.
func link(u string) *string {
	if !safeurl.Link(u) {
		return nil
	}
	return &u
}

// linkOrEmpty is link for the schema's non-null URLs.
func linkOrEmpty(u string) string {
	if !safeurl.Link(u) {
		return ""
	}
	return u
}

// Post is a parser.Post seen through the schema's Post type. A *parser.Post
// converts to a *Post for free.
type Post parser.Post

// PostOf returns p as a *Post.
func PostOf(p *parser.Post) *Post { return (*Post)(p) }

// GlobalID is the post's Node id; one t.me names nowhere has an id of its
// own, which no other post shares.
func (p *Post) GlobalID() string {
	if p.ID == 0 {
		return ids.UnnamedPost(p.Channel, (*parser.Post)(p).UnnamedKey())
	}
	return ids.Post(p.Channel, p.ID)
}

// MessageID is the post's number within its channel, nil when t.me names
// the post nowhere.
func (p *Post) MessageID() *int {
	if p.ID == 0 {
		return nil
	}
	return &p.ID
}

func (*Post) IsNode() {}

// URL is the post's public link: the channel's page for a post without a
// number.
func (p *Post) URL() string {
	if p.ID == 0 {
		return "https://t.me/s/" + p.Channel
	}
	return "https://t.me/" + p.Channel + "/" + strconv.Itoa(p.ID)
}

// Date is when the post was published, or the parser's estimate of it;
// nil when the page does not date it at all.
func (p *Post) Date() *time.Time {
	if !p.Footer.Date.Known() {
		return nil
	}
	t := time.Unix(p.Footer.Date.Unix, 0).UTC()
	return &t
}

// DateEstimated reports whether Date is an estimate.
func (p *Post) DateEstimated() bool { return p.Footer.Date.Estimated }

// Edited reports whether the post shows the edited mark.
func (p *Post) Edited() bool { return p.Footer.Edited }

// Views is the view count; nil when Telegram shows none.
func (p *Post) Views() *int64 {
	if p.Footer.Views == "" {
		return nil
	}
	v := p.Footer.ViewsCount
	return &v
}

// ViewsText is the view count as displayed.
func (p *Post) ViewsText() *string { return optional(p.Footer.Views) }

// Author is the signature of a signed post.
func (p *Post) Author() *string {
	if p.Footer.Author == nil {
		return nil
	}
	return optional(p.Footer.Author.String)
}

// Text is the post's text, if any.
func (p *Post) Text() *Text {
	if p.Content.Text == nil {
		return nil
	}
	return &Text{t: p.Content.Text, channel: p.Channel, post: p}
}

// Media lists the attachments, each of them: one of a kind the schema has
// no name for is UNSUPPORTED.
func (p *Post) Media() []*Media {
	out := make([]*Media, len(p.Content.Media))
	for i := range p.Content.Media {
		out[i] = &Media{m: &p.Content.Media[i], post: p, i: i}
	}
	return out
}

// Poll is the post's poll, if any.
func (p *Post) Poll() *Poll {
	if p.Content.Poll == nil {
		return nil
	}
	return &Poll{p: p.Content.Poll, post: p}
}

// Location is the shared map point, if any.
func (p *Post) Location() *Location {
	if p.Content.Location == nil {
		return nil
	}
	return &Location{l: p.Content.Location, post: p}
}

// InlineButtons are the URL buttons under the post.
func (p *Post) InlineButtons() []*InlineButton {
	out := make([]*InlineButton, len(p.Content.Inline))
	for i, b := range p.Content.Inline {
		out[i] = &InlineButton{Text: b.Title, URL: linkOrEmpty(b.URL), post: p, i: i}
	}
	return out
}

// Reply describes the message the post replies to, if any.
func (p *Post) Reply() *Reply {
	if p.Content.Reply == nil {
		return nil
	}
	return &Reply{r: p.Content.Reply, post: p}
}

// LinkPreview is the link preview card, if any.
func (p *Post) LinkPreview() *LinkPreview {
	if p.Content.PreviewLink == nil {
		return nil
	}
	return &LinkPreview{l: p.Content.PreviewLink, post: p}
}

// Reactions lists the reaction counters, each of them: one of a kind the
// schema has no name for is UNKNOWN.
func (p *Post) Reactions() []*Reaction {
	out := make([]*Reaction, len(p.Content.Reacts))
	for i := range p.Content.Reacts {
		out[i] = &Reaction{r: &p.Content.Reacts[i], post: p, i: i}
	}
	return out
}

// ForwardedFrom names the source of a forwarded post.
func (p *Post) ForwardedFrom() *Forward {
	if p.Forwarded == nil {
		return nil
	}
	return &Forward{f: p.Forwarded, post: p}
}

// IsService reports a service message.
func (p *Post) IsService() bool { return p.Service != nil }

// Text is a post's text.
type Text struct {
	t       *parser.Text
	channel string // the page's channel: its relative links point there
	post    *Post
}

// ID is the text's key for normalized caches, made of its post's id: a
// text belongs to one post.
func (t *Text) ID() string { return ids.Text(t.post.GlobalID()) }

func (t *Text) Plain() string { return t.t.String }

// HTML is the text's HTML through the widget's allow-list (sanitize.Post):
// front-ends put this field in their pages, and the channel owner wrote it.
func (t *Text) HTML() string { return sanitize.Post(t.t.HTML, t.channel) }

// Parsed is the parser's text, the one value per parse that HTML is made
// from: the key under which its sanitized form may be kept.
func (t *Text) Parsed() *parser.Text { return t.t }

// HTMLAsServed is the page's own markup, for those who sanitize it
// themselves (the schema says it is unsafe to render).
func (t *Text) HTMLAsServed() string { return t.t.HTML }

// Entities lists the formatted spans, each of them: one of a kind the
// schema has no name for is UNKNOWN.
func (t *Text) Entities() []*TextEntity {
	out := make([]*TextEntity, len(t.t.Entities))
	for i := range t.t.Entities {
		out[i] = &TextEntity{e: &t.t.Entities[i], text: t, i: i}
	}
	return out
}

// TextEntity is one formatted span.
type TextEntity struct {
	e    *parser.Entity
	text *Text
	i    int // its place in the text's entities
}

// ID is the span's key for normalized caches: its text's and its place.
func (e *TextEntity) ID() string { return ids.Part("TextEntity", e.text.ID(), ids.Index(e.i)) }

func (e *TextEntity) Kind() EntityKind  { return EntityKindOf(e.e.Type) }
func (e *TextEntity) Offset() int       { return e.e.Offset }
func (e *TextEntity) Length() int       { return e.e.Length }
func (e *TextEntity) URL() *string      { return link(e.e.URL) }
func (e *TextEntity) Language() *string { return optional(e.e.Language) }
func (e *TextEntity) EmojiID() *string  { return optional(e.e.EmojiID) }

// Media is one attachment.
type Media struct {
	m    *parser.Media
	post *Post
	i    int // its place in the post's media
}

// ID is the attachment's key for normalized caches: its post's and its
// place.
func (m *Media) ID() string { return ids.Part("Media", m.post.GlobalID(), ids.Index(m.i)) }

func (m *Media) Kind() MediaKind { return MediaKindOf(m.m.Type) }
func (m *Media) URL() *string    { return link(m.m.URL) }
func (m *Media) Thumb() *string  { return link(m.m.Thumb) }
func (m *Media) Waves() *string  { return optional(m.m.Waves) }
func (m *Media) Title() *string  { return optional(m.m.Title) }
func (m *Media) Extra() *string  { return optional(m.m.Extra) }
func (m *Media) Available() bool { return m.m.Available }
func (m *Media) Duration() *int {
	if m.m.Duration == nil {
		return nil
	}
	d := m.m.Duration.Raw
	return &d
}
func (m *Media) DurationText() *string {
	if m.m.Duration == nil {
		return nil
	}
	return optional(m.m.Duration.Formatted)
}

// Poll is a poll or quiz.
type Poll struct {
	p    *parser.Poll
	post *Post
}

// ID is the poll's key for normalized caches, its post's: a post has one
// poll.
func (p *Poll) ID() string { return ids.Part("Poll", p.post.GlobalID(), "") }

func (p *Poll) Question() string  { return p.p.Question }
func (p *Poll) Type() *string     { return optional(p.p.Type) }
func (p *Poll) VotesText() string { return p.p.Votes }
func (p *Poll) Votes() *int64 {
	if p.p.Votes == "" {
		return nil
	}
	v := p.p.VotesCount
	return &v
}
func (p *Poll) Options() []*PollOption {
	out := make([]*PollOption, len(p.p.Options))
	for i, o := range p.p.Options {
		out[i] = &PollOption{Text: o.Name, Percent: o.Percent, poll: p, i: i}
	}
	return out
}

// PollOption is one answer of a poll.
type PollOption struct {
	Text    string
	Percent int
	poll    *Poll
	i       int // its place in the poll's options
}

// ID is the answer's key for normalized caches: its poll's and its place.
func (o *PollOption) ID() string { return ids.Part("PollOption", o.poll.ID(), ids.Index(o.i)) }

// Location is a shared map point.
type Location struct {
	l    *parser.Location
	post *Post
}

// ID is the point's key for normalized caches, its post's.
func (l *Location) ID() string { return ids.Part("Location", l.post.GlobalID(), "") }

func (l *Location) Latitude() *float64 {
	if l.l.Latitude == 0 && l.l.Longitude == 0 {
		return nil
	}
	return &l.l.Latitude
}
func (l *Location) Longitude() *float64 {
	if l.l.Latitude == 0 && l.l.Longitude == 0 {
		return nil
	}
	return &l.l.Longitude
}
func (l *Location) Address() *string { return optional(l.l.Address) }
func (l *Location) URL() *string     { return optional(l.l.URL) }
func (l *Location) Map() *string     { return optional(l.l.Map) }

// InlineButton is a URL button under a post.
type InlineButton struct {
	Text string
	URL  string
	post *Post
	i    int // its place under the post
}

// ID is the button's key for normalized caches: its post's and its place.
func (b *InlineButton) ID() string {
	return ids.Part("InlineButton", b.post.GlobalID(), ids.Index(b.i))
}

// Reply describes a replied-to message.
type Reply struct {
	r    *parser.Reply
	post *Post // the reply, not the message replied to
}

// ID is the reply's key for normalized caches, its post's: what a post
// shows of the message it replies to belongs to that post.
func (r *Reply) ID() string { return ids.Part("Reply", r.post.GlobalID(), "") }

func (r *Reply) ToMessage() *int {
	if r.r.ToMessage == 0 {
		return nil
	}
	return &r.r.ToMessage
}
func (r *Reply) Name() string     { return r.r.Name.String }
func (r *Reply) NameHTML() string { return r.r.Name.HTML }
func (r *Reply) Text() string     { return r.r.Text.String }
func (r *Reply) TextHTML() string { return r.r.Text.HTML }
func (r *Reply) Cover() *string   { return optional(r.r.Cover) }

// LinkPreview is a link preview card.
type LinkPreview struct {
	l    *parser.PreviewLink
	post *Post
}

// ID is the card's key for normalized caches, its post's: the same link
// in two posts may be shown two ways.
func (l *LinkPreview) ID() string { return ids.Part("LinkPreview", l.post.GlobalID(), "") }

func (l *LinkPreview) URL() string       { return linkOrEmpty(l.l.URL) }
func (l *LinkPreview) Title() *string    { return optional(l.l.Title) }
func (l *LinkPreview) SiteName() *string { return optional(l.l.SiteName) }
func (l *LinkPreview) Thumb() *string    { return optional(l.l.Thumb) }
func (l *LinkPreview) Description() *string {
	if l.l.Description == nil {
		return nil
	}
	return &l.l.Description.String
}
func (l *LinkPreview) DescriptionHTML() *string {
	if l.l.Description == nil {
		return nil
	}
	return &l.l.Description.HTML
}

// Reaction is one reaction counter.
type Reaction struct {
	r    *parser.React
	post *Post
	i    int // its place under the post
}

// ID is the counter's key for normalized caches: its post's and its place.
func (r *Reaction) ID() string { return ids.Part("Reaction", r.post.GlobalID(), ids.Index(r.i)) }

func (r *Reaction) Kind() ReactionKind  { return ReactionKindOf(r.r.Type) }
func (r *Reaction) Emoji() *string      { return optional(r.r.Emoji) }
func (r *Reaction) EmojiID() *string    { return optional(r.r.EmojiID) }
func (r *Reaction) EmojiImage() *string { return optional(r.r.EmojiImage) }
func (r *Reaction) Count() int64        { return r.r.CountValue }
func (r *Reaction) CountText() string   { return r.r.Count }

// Forward is the source of a forwarded post.
type Forward struct {
	f    *parser.Forwarded
	post *Post // the forward
}

// ID is the source's key for normalized caches, its post's: the same
// source forwarded twice is named as each post shows it.
func (f *Forward) ID() string { return ids.Part("Forward", f.post.GlobalID(), "") }

func (f *Forward) Name() string     { return f.f.Name.String }
func (f *Forward) NameHTML() string { return f.f.Name.HTML }
func (f *Forward) URL() *string     { return link(f.f.URL) }

// Channel is a channel's header together with the newest page it came
// from, whose posts answer posts() without arguments.
type Channel struct {
	c    *parser.Channel
	page *parser.Page
}

// ChannelOf returns the Channel of header c; page, when not nil, is the
// channel's newest page.
func ChannelOf(c *parser.Channel, page *parser.Page) *Channel { return &Channel{c: c, page: page} }

// NewestPage is the page the channel was read from, nil if unknown.
func (c *Channel) NewestPage() *parser.Page { return c.page }

// GlobalID is the channel's Node id.
func (c *Channel) GlobalID() string { return ids.Channel(c.c.Username) }

func (*Channel) IsNode() {}

func (c *Channel) Username() string  { return c.c.Username }
func (c *Channel) Title() string     { return c.c.Title.String }
func (c *Channel) TitleHTML() string { return c.c.Title.HTML }
func (c *Channel) Avatar() *string   { return optional(c.c.Avatar) }
func (c *Channel) URL() string       { return "https://t.me/" + c.c.Username }
func (c *Channel) Counters() *Counters {
	return &Counters{c: &c.c.Counters, channel: c}
}
func (c *Channel) Description() *string {
	if c.c.Description == nil {
		return nil
	}
	return &c.c.Description.String
}
func (c *Channel) DescriptionHTML() *string {
	if c.c.Description == nil {
		return nil
	}
	return &c.c.Description.HTML
}
func (c *Channel) Verified() bool {
	for _, l := range c.c.Labels {
		if l == "verified" {
			return true
		}
	}
	return false
}

// Counters are a channel's counters.
type Counters struct {
	c       *parser.Counters
	channel *Channel
}

// ID is the counters' key for normalized caches, their channel's.
func (c *Counters) ID() string { return ids.Part("Counters", c.channel.GlobalID(), "") }

func (c *Counters) Subscribers() *int64      { return count(c.c.Subscribers, c.c.SubscribersCount) }
func (c *Counters) SubscribersText() *string { return optional(c.c.Subscribers) }
func (c *Counters) Photos() *int64           { return count(c.c.Photos, c.c.PhotosCount) }
func (c *Counters) Videos() *int64           { return count(c.c.Videos, c.c.VideosCount) }
func (c *Counters) Files() *int64            { return count(c.c.Files, c.c.FilesCount) }
func (c *Counters) Links() *int64            { return count(c.c.Links, c.c.LinksCount) }

// ChannelPreview is the card served at t.me/<username>.
type ChannelPreview struct{ p *parser.Preview }

// ID is the card's key for normalized caches, its channel's (not its Node
// id: the card and the channel page are two types).
func (p *ChannelPreview) ID() string {
	return ids.Part("ChannelPreview", ids.Channel(p.p.Username), "")
}

// PreviewOf returns p as a ChannelPreview.
func PreviewOf(p *parser.Preview) *ChannelPreview { return &ChannelPreview{p: p} }

func (p *ChannelPreview) Username() string         { return p.p.Username }
func (p *ChannelPreview) Title() string            { return p.p.Title }
func (p *ChannelPreview) Subscribers() *int64      { return count(p.p.Subscribers, p.p.SubscribersCount) }
func (p *ChannelPreview) SubscribersText() *string { return optional(p.p.Subscribers) }
func (p *ChannelPreview) Avatar() *string          { return optional(p.p.Avatar) }
func (p *ChannelPreview) Verified() bool           { return p.p.IsVerified }
func (p *ChannelPreview) URL() string              { return "https://t.me/" + p.p.Username }
func (p *ChannelPreview) Description() *string {
	if p.p.Description == nil {
		return nil
	}
	return &p.p.Description.String
}
func (p *ChannelPreview) DescriptionHTML() *string {
	if p.p.Description == nil {
		return nil
	}
	return &p.p.Description.HTML
}

// PreviewResult is the outcome for one name of previews().
type PreviewResult struct {
	Username string
	Preview  *ChannelPreview
	Error    *PreviewError
}

// ID is the result's key for normalized caches, the name as requested:
// the outcome for a name, whichever request asked for it.
func (r *PreviewResult) ID() string { return ids.Part("PreviewResult", r.Username, "") }

// PreviewError says why a name has no preview.
type PreviewError struct {
	Code    ChannelErrorCode
	Message string
	Name    string // as requested
}

// ID is the error's key for normalized caches, its result's.
func (e *PreviewError) ID() string {
	return ids.Part("PreviewError", (&PreviewResult{Username: e.Name}).ID(), "")
}

// FeedConnection is one page of a feed.
type FeedConnection struct {
	Edges          []*FeedEdge
	PageInfo       *PageInfo
	TotalCount     int
	FailedChannels []*FailedChannel
}

// FeedEdge is one item of a feed page.
type FeedEdge struct {
	Cursor string
	Node   *FeedItem
}

// FeedItem is a post of a feed with its channel and score.
type FeedItem struct {
	it   *feed.Item
	feed uint64 // feed.Page.Feed
}

// ItemOf returns it, an item of the feed identified by feedID
// (feed.Page.Feed), as a FeedItem.
func ItemOf(it *feed.Item, feedID uint64) *FeedItem { return &FeedItem{it: it, feed: feedID} }

// ID is the item's key for normalized caches: its feed and its post, so
// that the score one feed gives a post never stands in another feed.
func (f *FeedItem) ID() string { return ids.FeedItem(f.feed, PostOf(f.it.Post).GlobalID()) }

func (f *FeedItem) Post() *Post       { return PostOf(f.it.Post) }
func (f *FeedItem) Channel() *Channel { return ChannelOf(f.it.Channel, nil) }
func (f *FeedItem) Score() float64    { return f.it.Score }

// FailedChannel is a channel of a feed that could not be read.
type FailedChannel struct {
	Username string
	Code     ChannelErrorCode
	Reason   string
	Feed     uint64 // feed.Page.Feed
}

// ID is the failure's key for normalized caches: its feed's and the name
// as requested, so that one feed's failure never shows in another.
func (f *FailedChannel) ID() string { return ids.Part("FailedChannel", ids.Feed(f.Feed), f.Username) }

// PageInfo says where a page sits in its connection.
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
	StartCursor     *string
	EndCursor       *string
}

// PostConnection is a page of a channel's posts.
type PostConnection struct {
	Edges    []*PostEdge
	PageInfo *PageInfo
}

// PostEdge is one post of a channel page.
type PostEdge struct {
	Cursor string
	Node   *Post
}

// optional maps "" to nil.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// count returns n when Telegram shows the counter (text is set), else nil.
func count(text string, n int64) *int64 {
	if text == "" {
		return nil
	}
	return &n
}

// ServiceMessage is a post's service message.
type ServiceMessage struct {
	*parser.Service
	post *Post
}

// ServiceMessage is the post's service message, nil for other posts.
func (p *Post) ServiceMessage() *ServiceMessage {
	if p.Service == nil {
		return nil
	}
	return &ServiceMessage{Service: p.Service, post: p}
}

// ID is the message's key for normalized caches, its post's.
func (s *ServiceMessage) ID() string { return ids.Part("ServiceMessage", s.post.GlobalID(), "") }

// Kind is the parser's type as the schema's enum: one the schema has no
// name for is OTHER.
func (s *ServiceMessage) Kind() ServiceMessageKind {
	if k := ServiceMessageKind(strings.ToUpper(s.Type)); k.IsValid() {
		return k
	}
	return ServiceMessageKindOther
}
