// Package feedformat writes a feed page as RSS 2.0, Atom 1.0 or JSON Feed
// 1.1, for feed readers. It is a face over package feed: it reads
// feed.Items and knows nothing of HTTP; server mounts it and caches its
// output beside the feed build (feed.Service.Rendered).
//
// Every format says the same: an item per post, identified by the post's
// t.me link (https://t.me/<channel>/<id>, stable across requests), titled
// by the start of its text (distinct among a channel's posts), with the
// text as sanitized HTML, spoilers hidden, and the media both shown in that
// HTML and attached as a reader can use them (RSS allows one enclosure per
// item: the first), the channel as author. Output depends only on its
// inputs, so equal feeds render to equal bytes and an ETag can be their
// hash.
package feedformat

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/parser"
)

// Format is a feed document format.
type Format uint8

// The formats.
const (
	RSS Format = iota + 1
	Atom
	JSONFeed
)

// Formats lists every Format.
func Formats() []Format { return []Format{RSS, Atom, JSONFeed} }

// String is the format's short name, as in its route (/v1/rss, ...).
func (f Format) String() string {
	switch f {
	case RSS:
		return "rss"
	case Atom:
		return "atom"
	case JSONFeed:
		return "jsonfeed"
	}
	return fmt.Sprintf("format%d", uint8(f))
}

// ContentType is the media type the format is served as.
func (f Format) ContentType() string {
	switch f {
	case RSS:
		return "application/rss+xml; charset=utf-8"
	case Atom:
		return "application/atom+xml; charset=utf-8"
	case JSONFeed:
		return "application/feed+json; charset=utf-8"
	}
	return "application/octet-stream"
}

// Options are what a document needs besides the feed's items.
type Options struct {
	// Channels are the channels the feed was asked for, normalized, in
	// the order given; they name the feed.
	Channels []string
	// Order describes the order of the items in the feed's description.
	Order feed.Order
	// SelfURL is where this document is served (RSS atom:link rel=self,
	// Atom link rel=self and id, JSON Feed feed_url).
	SelfURL string
	// HomeURL is the feed's web page when it merges several channels
	// (the widget showing them); a one-channel feed links the channel.
	HomeURL string
	// Headers are the headers of the feed's channels (feed.Page.Channels):
	// a one-channel feed is named by its title even when it has no posts.
	Headers []*parser.Channel
	// Checked is when the feed's pages were last read: the date of a feed
	// with no posts, which has no newer date to give.
	Checked time.Time
	// MediaBase, when set, is the service's public URL: media are linked
	// as MediaBase/media/{channel}/{id}/{index} (and ?thumb=1 for
	// preview pictures), which stay valid while Telegram's CDN links
	// expire. Empty links Telegram's URLs as the page gave them.
	MediaBase string
}

// generator names the software in each document.
const (
	generatorName = "tmefeed"
	generatorURI  = "https://github.com/tmefeed/tmefeed"
)

// Render writes items as a document of format f.
func Render(f Format, items []feed.Item, o Options) ([]byte, error) {
	d := describe(items, &o)
	entries := make([]entry, len(items))
	for i, it := range items {
		entries[i] = newEntry(it, &o)
		if entries[i].date.After(d.updated) {
			d.updated = entries[i].date
		}
	}
	distinctTitles(entries)
	if d.updated.IsZero() && !o.Checked.IsZero() {
		// No post dates the feed: it was last seen empty when its pages
		// were read. Whole hours, so that the document (and its ETag)
		// stays the same across the refreshes of an hour.
		d.updated = o.Checked.UTC().Truncate(time.Hour)
	}
	switch f {
	case RSS:
		return renderRSS(d, entries)
	case Atom:
		return renderAtom(d, entries)
	case JSONFeed:
		return renderJSON(d, entries)
	}
	return nil, fmt.Errorf("feedformat: unknown format %d", uint8(f))
}

// Titles are the titles the documents give items, in order: what a
// reader lists them by. Tools checking a reader against the JSON API use
// it, since a title is the documents' own reading of a post.
func Titles(items []feed.Item) []string {
	var o Options
	entries := make([]entry, len(items))
	for i, it := range items {
		entries[i] = newEntry(it, &o)
	}
	distinctTitles(entries)
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.title
	}
	return out
}

// Updated is when the feed last changed as its readers see it: the date of
// its newest post (zero for an empty feed). It is the documents' updated
// date and a fitting Last-Modified.
func Updated(items []feed.Item) time.Time {
	var newest int64
	for _, it := range items {
		newest = max(newest, it.Post.Footer.Date.Unix)
	}
	if newest == 0 {
		return time.Time{}
	}
	return time.Unix(newest, 0).UTC()
}

// document is the feed-level metadata every format writes.
type document struct {
	title, description string
	home, self         string
	icon               string    // the channel's picture, one-channel feeds only
	updated            time.Time // the newest post's date; zero when there is none
}

// distinctTitles gives the entries of a channel that would share a title
// their post's number (or date) after it: a reader lists them by title.
func distinctTitles(entries []entry) {
	type key struct{ channel, title string }
	n := make(map[key]int, len(entries))
	for _, e := range entries {
		n[key{e.authorURL, e.title}]++
	}
	for i := range entries {
		e := &entries[i]
		if n[key{e.authorURL, e.title}] < 2 {
			continue
		}
		switch {
		case e.num > 0:
			e.title += " (#" + strconv.Itoa(e.num) + ")"
		case !e.date.IsZero():
			e.title += " (" + e.date.Format("2 Jan 2006 15:04") + ")"
		}
	}
}

// maxNamedChannels bounds the channels a feed's title names.
const maxNamedChannels = 5

func describe(items []feed.Item, o *Options) document {
	d := document{self: o.SelfURL, home: o.HomeURL}
	order := "ranked"
	if o.Order == feed.Newest {
		order = "newest first"
	}
	if len(o.Channels) == 1 {
		ch := strings.ToLower(o.Channels[0])
		d.home = "https://t.me/s/" + ch
		d.title = "@" + ch
		d.description = "Posts of @" + ch + " on Telegram, " + order
		heads := o.Headers
		for _, it := range items {
			if it.Channel != nil {
				heads = []*parser.Channel{it.Channel}
				break
			}
		}
		for _, h := range heads {
			if h == nil || !strings.EqualFold(h.Username, ch) {
				continue
			}
			if t := strings.TrimSpace(h.Title.String); t != "" {
				d.title = clean(t)
			}
			if desc := h.Description; desc != nil && strings.TrimSpace(desc.String) != "" {
				d.description = clean(strings.TrimSpace(desc.String))
			}
			d.icon = safeURL(h.Avatar)
			break
		}
		return d
	}
	names := make([]string, 0, maxNamedChannels)
	for i, ch := range o.Channels {
		if i == maxNamedChannels {
			names = append(names, fmt.Sprintf("%d more", len(o.Channels)-i))
			break
		}
		names = append(names, "@"+strings.ToLower(ch))
	}
	d.title = strings.Join(names, ", ")
	d.description = "Posts of " + d.title + " on Telegram, merged, " + order
	return d
}

// --- RSS 2.0 (https://www.rssboard.org/rss-specification) ---

type rssDoc struct {
	XMLName xml.Name   `xml:"rss"`
	Version string     `xml:"version,attr"`
	NSAtom  string     `xml:"xmlns:atom,attr"`
	NSDC    string     `xml:"xmlns:dc,attr"`
	Channel rssChannel `xml:"channel"`
}

type rssChannel struct {
	Title         string    `xml:"title"`
	Link          string    `xml:"link"`
	Description   string    `xml:"description"`
	Self          rssSelf   `xml:"atom:link"`
	LastBuildDate string    `xml:"lastBuildDate,omitempty"`
	PubDate       string    `xml:"pubDate,omitempty"`
	Generator     string    `xml:"generator"`
	Docs          string    `xml:"docs"`
	Image         *rssImage `xml:"image"`
	Items         []rssItem `xml:"item"`
}

// rssSelf is atom:link rel="self", which RSS readers and validators expect.
type rssSelf struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
}

type rssImage struct {
	URL   string `xml:"url"`
	Title string `xml:"title"`
	Link  string `xml:"link"`
}

type rssItem struct {
	Title       string        `xml:"title"`
	Link        string        `xml:"link"`
	Description string        `xml:"description"`
	Creator     string        `xml:"dc:creator"` // RSS's own author must be an e-mail address
	GUID        rssGUID       `xml:"guid"`
	PubDate     string        `xml:"pubDate,omitempty"`
	Enclosure   *rssEnclosure `xml:"enclosure"`
}

type rssGUID struct {
	IsPermaLink bool   `xml:"isPermaLink,attr"`
	Value       string `xml:",chardata"`
}

type rssEnclosure struct {
	URL    string `xml:"url,attr"`
	Length int64  `xml:"length,attr"` // required; 0 as the spec's advisory board says when unknown
	Type   string `xml:"type,attr"`
}

func renderRSS(d document, entries []entry) ([]byte, error) {
	doc := rssDoc{Version: "2.0", NSAtom: "http://www.w3.org/2005/Atom", NSDC: "http://purl.org/dc/elements/1.1/"}
	c := &doc.Channel
	c.Title, c.Link, c.Description = d.title, d.home, d.description
	c.Self = rssSelf{Href: d.self, Rel: "self", Type: RSS.mediaType()}
	if !d.updated.IsZero() {
		c.LastBuildDate = d.updated.Format(time.RFC1123Z)
		c.PubDate = c.LastBuildDate
	}
	c.Generator = generatorName + " (" + generatorURI + ")"
	c.Docs = "https://www.rssboard.org/rss-specification"
	if d.icon != "" {
		c.Image = &rssImage{URL: d.icon, Title: d.title, Link: d.home}
	}
	c.Items = make([]rssItem, len(entries))
	for i, e := range entries {
		it := rssItem{
			Title:       e.title,
			Link:        e.link,
			Description: e.content,
			Creator:     e.author,
			GUID:        rssGUID{IsPermaLink: e.id == e.link, Value: e.id},
		}
		if !e.date.IsZero() { // pubDate is optional; a post the page does not date has none
			it.PubDate = e.date.Format(time.RFC1123Z)
		}
		if len(e.attachments) > 0 {
			a := e.attachments[0]
			it.Enclosure = &rssEnclosure{URL: a.url, Type: a.mimeType}
		}
		c.Items[i] = it
	}
	return marshalXML(&doc)
}

// --- Atom 1.0 (RFC 4287) ---

type atomFeed struct {
	XMLName   xml.Name      `xml:"http://www.w3.org/2005/Atom feed"`
	Title     atomText      `xml:"title"`
	Subtitle  atomText      `xml:"subtitle"`
	ID        string        `xml:"id"`
	Updated   string        `xml:"updated"`
	Links     []atomLink    `xml:"link"`
	Generator atomGenerator `xml:"generator"`
	Icon      string        `xml:"icon,omitempty"`
	Entries   []atomEntry   `xml:"entry"`
}

type atomText struct {
	Type  string `xml:"type,attr"`
	Value string `xml:",chardata"`
}

type atomLink struct {
	Href   string `xml:"href,attr"`
	Rel    string `xml:"rel,attr"`
	Type   string `xml:"type,attr,omitempty"`
	Title  string `xml:"title,attr,omitempty"`
	Length int64  `xml:"length,attr,omitempty"`
}

type atomGenerator struct {
	URI   string `xml:"uri,attr"`
	Value string `xml:",chardata"`
}

type atomPerson struct {
	Name string `xml:"name"`
	URI  string `xml:"uri"`
}

type atomEntry struct {
	Title     atomText   `xml:"title"`
	ID        string     `xml:"id"`
	Updated   string     `xml:"updated"`
	Published string     `xml:"published,omitempty"`
	Links     []atomLink `xml:"link"`
	Author    atomPerson `xml:"author"` // every entry has one, so the feed needs none
	Content   atomText   `xml:"content"`
}

func renderAtom(d document, entries []entry) ([]byte, error) {
	updated := d.updated
	if updated.IsZero() {
		// Atom requires a date; a feed with no posts whose pages were
		// never read has none but the Unix epoch, which readers show as 1970.
		updated = time.Unix(0, 0).UTC()
	}
	doc := atomFeed{
		Title:    atomText{Type: "text", Value: d.title},
		Subtitle: atomText{Type: "text", Value: d.description},
		// The feed's address is its identity: the same channels, order and
		// filter give the same feed.
		ID:      d.self,
		Updated: updated.Format(time.RFC3339),
		Links: []atomLink{
			{Href: d.self, Rel: "self", Type: Atom.mediaType()},
			{Href: d.home, Rel: "alternate", Type: "text/html"},
		},
		Generator: atomGenerator{URI: generatorURI, Value: generatorName},
		Icon:      d.icon,
		Entries:   make([]atomEntry, len(entries)),
	}
	for i, e := range entries {
		// Atom requires an entry's updated date: one the page does not
		// date is no later than the feed; published is optional.
		date, published := updated.Format(time.RFC3339), ""
		if !e.date.IsZero() {
			date = e.date.Format(time.RFC3339)
			published = date
		}
		ae := atomEntry{
			Title:     atomText{Type: "text", Value: e.title},
			ID:        e.id,
			Updated:   date,
			Published: published,
			Links:     []atomLink{{Href: e.link, Rel: "alternate", Type: "text/html"}},
			Author:    atomPerson{Name: e.author, URI: e.authorURL},
			Content:   atomText{Type: "html", Value: e.content},
		}
		for _, a := range e.attachments {
			ae.Links = append(ae.Links, atomLink{Href: a.url, Rel: "enclosure", Type: a.mimeType, Title: a.title})
		}
		doc.Entries[i] = ae
	}
	return marshalXML(&doc)
}

func marshalXML(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("feedformat: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// mediaType is the content type without its charset, as links name it.
func (f Format) mediaType() string {
	t, _, _ := strings.Cut(f.ContentType(), ";")
	return t
}

// --- JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/) ---

type jsonFeed struct {
	Version     string       `json:"version"`
	Title       string       `json:"title"`
	HomePageURL string       `json:"home_page_url"`
	FeedURL     string       `json:"feed_url"`
	Description string       `json:"description"`
	Icon        string       `json:"icon,omitempty"`
	Authors     []jsonAuthor `json:"authors,omitempty"`
	Items       []jsonItem   `json:"items"`
}

type jsonAuthor struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

type jsonItem struct {
	ID            string           `json:"id"`
	URL           string           `json:"url"`
	Title         string           `json:"title"`
	ContentHTML   string           `json:"content_html"`
	Image         string           `json:"image,omitempty"`
	DatePublished string           `json:"date_published,omitempty"`
	Authors       []jsonAuthor     `json:"authors"`
	Attachments   []jsonAttachment `json:"attachments,omitempty"`
}

type jsonAttachment struct {
	URL               string `json:"url"`
	MimeType          string `json:"mime_type"`
	Title             string `json:"title,omitempty"`
	DurationInSeconds int    `json:"duration_in_seconds,omitempty"`
}

func renderJSON(d document, entries []entry) ([]byte, error) {
	doc := jsonFeed{
		Version:     "https://jsonfeed.org/version/1.1",
		Title:       d.title,
		HomePageURL: d.home,
		FeedURL:     d.self,
		Description: d.description,
		Icon:        d.icon,
		Items:       make([]jsonItem, len(entries)),
	}
	for i, e := range entries {
		ji := jsonItem{
			ID:          e.id,
			URL:         e.link,
			Title:       e.title,
			ContentHTML: e.content,
			Image:       e.image,
			Authors:     []jsonAuthor{{Name: e.author, URL: e.authorURL}},
		}
		if !e.date.IsZero() { // optional in JSON Feed
			ji.DatePublished = e.date.Format(time.RFC3339)
		}
		for _, a := range e.attachments {
			ji.Attachments = append(ji.Attachments, jsonAttachment{URL: a.url, MimeType: a.mimeType, Title: a.title, DurationInSeconds: a.duration})
		}
		doc.Items[i] = ji
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("feedformat: %w", err)
	}
	return buf.Bytes(), nil
}
