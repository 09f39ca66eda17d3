package parser

// The types below are the one model every face of tmefeed is built from.
// Their json tags name telegram-me 1.x's keys, which the REST v1 API writes
// (server/restjson: a key telegram-me has always there, null when the value
// is missing; keys of tmefeed's own, omitempty, left out when empty); other
// faces (GraphQL, feeds) adapt them in their own packages.

// Rich is text as plain string and as Telegram's inner HTML.
type Rich struct {
	String string `json:"string"`
	HTML   string `json:"html"`
}

// Page is a parsed channel page or "more" chunk.
type Page struct {
	Channel *Channel `json:"channel,omitempty"`
	Content Content  `json:"content"`
	Meta    Meta     `json:"meta"`
}

// Content holds the posts of a page, oldest first as Telegram serves them.
type Content struct {
	Posts []Post `json:"posts"`
}

// Meta carries the cursors for the neighbouring pages.
type Meta struct {
	Offset Offset `json:"offset"`
}

// Offset holds the post ids to pass as before/after to load neighbouring pages.
// Zero (null in JSON) means there is no such page.
type Offset struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// Channel is a channel's header as shown on its /s/ page.
type Channel struct {
	Username    string   `json:"username"`
	Title       Rich     `json:"title"`
	Description *Rich    `json:"description"`
	Avatar      string   `json:"avatar"`
	Counters    Counters `json:"counters"`
	Labels      []string `json:"labels"`
}

// Counters are the channel's counters as displayed ("11.1M") with integer
// values beside them (11100000). A counter Telegram does not show is empty.
type Counters struct {
	Subscribers      string `json:"subscribers"`
	Photos           string `json:"photos"`
	Videos           string `json:"videos"`
	Files            string `json:"files"`
	Links            string `json:"links"`
	SubscribersCount int64  `json:"subscribers_count,omitempty"`
	PhotosCount      int64  `json:"photos_count,omitempty"`
	VideosCount      int64  `json:"videos_count,omitempty"`
	FilesCount       int64  `json:"files_count,omitempty"`
	LinksCount       int64  `json:"links_count,omitempty"`
}

// Preview is the small card served at t.me/<channel>.
type Preview struct {
	Username         string `json:"username"`
	Title            string `json:"title"`
	Subscribers      string `json:"subscribers"`
	SubscribersCount int64  `json:"subscribers_count,omitempty"`
	Description      *Rich  `json:"description"` // written as its plain string
	Avatar           string `json:"avatar"`
	IsVerified       bool   `json:"is_verified"`
}

// Post is one channel message. ID is its message number, 0 when t.me names
// none anywhere (data-post, the date link and data-view all lack it): such
// a post has no link and no global id, and its JSON id is null.
type Post struct {
	ID        int         `json:"id"`
	Channel   string      `json:"-"` // the username in data-post; the page's channel
	View      string      `json:"view"`
	Service   *Service    `json:"service,omitempty"`
	Content   PostContent `json:"content"`
	Footer    Footer      `json:"footer"`
	Forwarded *Forwarded  `json:"forwarded"`
}

// Service marks a service message (pinned, renamed, photo changed, channel created).
type Service struct {
	Type string `json:"type"` // channel_created, title_changed, photo_changed, photo_removed, video_changed, pinned, other
	Text string `json:"text"`
}

// PostContent is everything inside the bubble.
type PostContent struct {
	Text        *Text        `json:"text"`
	Media       []Media      `json:"media"`
	Location    *Location    `json:"location,omitempty"`
	Poll        *Poll        `json:"poll"`
	Inline      []Inline     `json:"inline"`
	Reply       *Reply       `json:"reply"`
	PreviewLink *PreviewLink `json:"preview_link"`
	Reacts      []React      `json:"reacts"`
}

// Text is a post's text. Entity offsets and lengths count UTF-16 code units
// of String, as Telegram's Bot API and JavaScript do.
type Text struct {
	String   string   `json:"string"`
	HTML     string   `json:"html"`
	Entities []Entity `json:"entities"`
}

// Entity is one formatted span of a Text.
type Entity struct {
	Offset   int        `json:"offset"`
	Length   int        `json:"length"`
	Type     EntityKind `json:"type"`
	URL      string     `json:"url"`
	Language string     `json:"language"`
	EmojiID  string     `json:"emoji_id,omitempty"`
}

// Media is one attachment shown in the bubble.
type Media struct {
	Type      MediaKind `json:"type"`
	URL       string    `json:"url"`
	Thumb     string    `json:"thumb"`
	Waves     string    `json:"waves"`
	Duration  *Duration `json:"duration"`
	Title     string    `json:"title,omitempty"` // documents and audio
	Extra     string    `json:"extra,omitempty"` // size, or performer for audio
	Available bool      `json:"available"`
}

// Duration of a time-based media item.
type Duration struct {
	Formatted string `json:"formatted"`
	Raw       int    `json:"raw"`
}

// Location is a shared map point.
type Location struct {
	Latitude  float64 `json:"latitude,omitempty"`
	Longitude float64 `json:"longitude,omitempty"`
	Address   string  `json:"address,omitempty"`
	URL       string  `json:"url,omitempty"`
	Map       string  `json:"map,omitempty"`
}

// Poll is a poll or quiz with its results.
type Poll struct {
	Question   string       `json:"question"`
	Type       string       `json:"type"`
	Votes      string       `json:"votes"`
	VotesCount int64        `json:"votes_count,omitempty"`
	Options    []PollOption `json:"options"`
}

// PollOption is one answer with its share of votes.
type PollOption struct {
	Name    string `json:"name"`
	Percent int    `json:"percent"`
}

// Inline is an inline URL button under the post.
type Inline struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// Reply describes the message a post replies to.
type Reply struct {
	Cover     string `json:"cover"`
	Name      Rich   `json:"name"`
	Text      Rich   `json:"text"`
	ToMessage int    `json:"to_message"`
}

// PreviewLink is a link preview card.
type PreviewLink struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	SiteName    string `json:"site_name"`
	Description *Rich  `json:"description"`
	Thumb       string `json:"thumb"`
}

// React is one reaction counter.
type React struct {
	Count      string       `json:"count"`
	CountValue int64        `json:"count_value"`
	Type       ReactionKind `json:"type"`
	Emoji      string       `json:"emoji"` // written as "⭐" for Telegram Stars
	EmojiID    string       `json:"emoji_id"`
	EmojiImage string       `json:"emoji_image"`
}

// Footer holds views, signature, edited mark and date.
type Footer struct {
	Views      string `json:"views"`
	ViewsCount int64  `json:"views_count,omitempty"`
	Edited     bool   `json:"edited"`
	Author     *Rich  `json:"author"`
	Date       Date   `json:"date"`
}

// Date is a post date as the page writes it (RFC 3339 with the page's
// offset, e.g. "2024-05-01T12:30:00+00:00") and as Unix seconds.
//
// t.me sometimes writes an empty datetime (the newest post of a page, as
// if being published). The date is then estimated from the post's
// neighbours on the page (dates.go) and Estimated is set; String is the
// estimate in the same form. A date that is neither written nor estimated
// is unknown: String is empty and Unix 0, both null in JSON.
type Date struct {
	String    string `json:"string"`
	Unix      int64  `json:"unix"`
	Estimated bool   `json:"estimated,omitempty"`
}

// Known reports whether the date is written on the page or estimated.
func (d Date) Known() bool { return d.String != "" || d.Unix != 0 }

// Forwarded names the source of a forwarded post.
type Forwarded struct {
	Name Rich   `json:"name"`
	URL  string `json:"url"`
}
