package widget

import (
	"bytes"
	"embed"
	"hash/fnv"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/internal/medialink"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/sanitize"
)

// renderVersion names the markup renderPosts writes; bump it when that
// changes, so kept renders and clients' ETags are not reused.
const renderVersion = "3"

// avatarHues is the number of tf-c* colours in widget.css.
const avatarHues = 8

//go:embed templates
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"link": linkURL,
}).ParseFS(templateFS, "templates/*.html"))

// postView is a post as the templates show it: every string plain text
// (escaped by html/template) except HTML, which is sanitized.
type postView struct {
	Key, DOMID, Rev    string
	Channel            string
	ChannelTitle       string
	ChannelURL, URL    string
	Avatar             template.URL // "" when the page may not load it (imageHosts.url)
	Initial            string
	Hue                int // of the initial's circle, from the username (tf-c0 … tf-c7)
	Service            string
	Text               template.HTML
	Forwarded          *parser.Forwarded
	ForwardedName      string
	Reply              *replyView
	Media              []mediaView
	Poll               *parser.Poll
	Preview            *previewView
	Location           *parser.Location
	Inline             []parser.Inline
	Reacts             []parser.React
	Views, ViewsCount  string
	Author             string
	Edited             bool
	Date, DateFallback string
}

// mediaView is a media as the templates show it: the picture, preview
// picture and file to link, each "" when there is none the page may use.
type mediaView struct {
	parser.Media
	PostURL                          string
	Src, ThumbSrc, StillSrc, FileURL template.URL
}

type replyView struct {
	Name, Text, URL string
	Thumb           template.URL // as Avatar
}

type previewView struct {
	Title, Site, URL string
	Thumb            template.URL // as Avatar
	Description      template.HTML
}

type failureView struct {
	Channel, Message string
}

type postsData struct {
	Posts  []template.HTML
	Failed []failureView
	Empty  bool
}

// renderPosts writes a feed page as the widget's notes and articles. Each
// article carries a hash of its own markup, so the page's refresh can tell
// which posts changed.
//
// base, when set, is the service's public URL: media are linked through
// its /media redirects (package medialink), as the feed-reader documents
// link them, so that a page left open keeps showing them after Telegram's
// CDN links expire.
//
// img says which images the page may load.
func renderPosts(p *feed.Page, base string, img imageHosts) ([]byte, error) {
	var d postsData
	for _, f := range p.Failed {
		d.Failed = append(d.Failed, failureView{Channel: f.Username, Message: fault.Classify(f.Err).Message})
	}
	d.Empty = len(p.Items) == 0
	var buf, art bytes.Buffer
	for _, it := range p.Items {
		v := newPostView(it, base, img)
		art.Reset()
		if err := templates.ExecuteTemplate(&art, "post-body", v); err != nil {
			return nil, err
		}
		v.Rev = strconv.FormatUint(xxh3.Hash(art.Bytes()), 36)
		buf.Reset()
		if err := templates.ExecuteTemplate(&buf, "post", struct {
			V    postView
			Body template.HTML
		}{v, template.HTML(art.String())}); err != nil {
			return nil, err
		}
		d.Posts = append(d.Posts, template.HTML(buf.String()))
	}
	var out bytes.Buffer
	out.Grow(4096 * (len(p.Items) + 1))
	if err := templates.ExecuteTemplate(&out, "posts", d); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func newPostView(it feed.Item, base string, img imageHosts) postView {
	p := it.Post
	ch := p.Channel
	if it.Channel != nil && it.Channel.Username != "" {
		ch = it.Channel.Username
	}
	v := postView{
		Key:        ch + "/" + strconv.Itoa(p.ID),
		DOMID:      "p-" + ch + "-" + strconv.Itoa(p.ID),
		Channel:    ch,
		ChannelURL: "https://t.me/s/" + url.PathEscape(ch),
		URL:        "https://t.me/" + url.PathEscape(ch) + "/" + strconv.Itoa(p.ID),
		Poll:       p.Content.Poll,
		Location:   p.Content.Location,
		Inline:     p.Content.Inline,
		Reacts:     p.Content.Reacts,
		Views:      p.Footer.Views,
		Edited:     p.Footer.Edited,
		Date:       p.Footer.Date.String,
	}
	v.ChannelTitle = "@" + ch
	if it.Channel != nil {
		if t := strings.TrimSpace(it.Channel.Title.String); t != "" {
			v.ChannelTitle = t
		}
		v.Avatar = img.url(it.Channel.Avatar)
	}
	// The avatar's stand-in, under the picture while it loads and in its
	// place when it cannot: the title's first letter (or symbol) on a
	// circle whose colour follows the username, so channels stay apart.
	title := strings.TrimLeft(v.ChannelTitle, "@")
	if r, _ := utf8.DecodeRuneInString(strings.ToUpper(title)); r != utf8.RuneError {
		v.Initial = string(r)
	}
	hue := fnv.New32a()
	_, _ = hue.Write([]byte(ch))
	v.Hue = int(hue.Sum32() % avatarHues)
	if p.ID == 0 {
		// t.me names this post nowhere: it is read on the channel's page,
		// and known by what it shows.
		key := p.UnnamedKey()
		v.Key, v.DOMID, v.URL = ch+"/~"+key, "p-"+ch+"-u"+key, v.ChannelURL
	}
	if p.Footer.Date.Unix > 0 {
		v.DateFallback = time.Unix(p.Footer.Date.Unix, 0).UTC().Format("2 Jan 2006 15:04 UTC")
	}
	if p.Footer.ViewsCount > 0 {
		v.ViewsCount = strconv.FormatInt(p.Footer.ViewsCount, 10)
	}
	if p.Footer.Author != nil {
		v.Author = p.Footer.Author.String
	}
	if p.Service != nil {
		v.Service = p.Service.Text
	}
	for i, m := range p.Content.Media {
		v.Media = append(v.Media, newMediaView(m, v.URL, base, ch, p.ID, i, img))
	}
	if t := p.Content.Text; t != nil && t.HTML != "" {
		v.Text = template.HTML(sanitize.Post(t.HTML, ch))
	}
	if f := p.Forwarded; f != nil {
		v.Forwarded, v.ForwardedName = f, f.Name.String
	}
	if r := p.Content.Reply; r != nil {
		v.Reply = &replyView{Name: r.Name.String, Text: r.Text.String, Thumb: img.url(r.Cover)}
		if r.ToMessage > 0 {
			v.Reply.URL = "https://t.me/" + url.PathEscape(ch) + "/" + strconv.Itoa(r.ToMessage)
		}
	}
	if l := p.Content.PreviewLink; l != nil {
		v.Preview = &previewView{Title: l.Title, Site: l.SiteName, URL: l.URL, Thumb: img.url(l.Thumb)}
		if l.Description != nil {
			v.Preview.Description = template.HTML(sanitize.Post(l.Description.HTML, ch))
		}
	}
	return v
}

// newMediaView decides what the page shows of the index-th media of post
// id: Telegram's URLs when the page may load them, or with base set their
// durable links, which redirect to those same URLs (on hosts the policy
// allows, which is why they are checked either way).
func newMediaView(m parser.Media, postURL, base, channel string, id, index int, img imageHosts) mediaView {
	v := mediaView{Media: m, PostURL: postURL}
	src, thumb := string(img.url(m.URL)), string(img.url(m.Thumb))
	still := string(img.still(v))
	file := string(linkURL(m.URL))
	if base != "" {
		// The sticker's still picture is its thumbnail or the file itself.
		switch still {
		case "":
		case thumb:
			still = medialink.Link(base, channel, id, index, true)
		default:
			still = medialink.Link(base, channel, id, index, false)
		}
		src, thumb = medialink.Links(base, channel, id, index, src, thumb)
		file, _ = medialink.Links(base, channel, id, index, file, "")
	} else {
		// Without durable links a file links to its post: Telegram's
		// file URLs expire while the page stays open.
		file = ""
	}
	v.Src, v.ThumbSrc, v.StillSrc, v.FileURL = template.URL(src), template.URL(thumb), template.URL(still), template.URL(file)
	return v
}

// imageHosts are the origins a page may load images from besides
// ImageHosts (Config.ImageOrigins), each "scheme://host[:port]".
type imageHosts []string

// url keeps an image only when it is an https URL on one of ImageHosts or
// a URL on one of x, the hosts the Content-Security-Policy lets the page
// load from; anything else would be blocked and show as a broken image.
func (x imageHosts) url(s string) template.URL {
	u, err := url.Parse(s)
	if err != nil || u.User != nil {
		return ""
	}
	if (u.Scheme == "http" || u.Scheme == "https") && slices.Contains(x, u.Scheme+"://"+strings.ToLower(u.Host)) {
		return template.URL(u.String())
	}
	if u.Scheme != "https" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range ImageHosts {
		h = strings.TrimPrefix(h, "https://")
		if wild, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+wild) {
				return template.URL(u.String())
			}
		} else if host == h {
			return template.URL(u.String())
		}
	}
	return ""
}

// still is a sticker's picture: its thumbnail, or the sticker itself
// when it is a still image (animated and video stickers are not images).
func (x imageHosts) still(m mediaView) template.URL {
	if u := x.url(m.Thumb); u != "" {
		return u
	}
	p := strings.ToLower(m.URL)
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	for _, ext := range []string{".webp", ".png", ".jpg", ".jpeg"} {
		if strings.HasSuffix(p, ext) {
			return x.url(m.URL)
		}
	}
	return ""
}

// linkURL keeps links to the web and to Telegram (tg:), which
// html/template would otherwise replace; anything else is dropped.
func linkURL(s string) template.URL {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return ""
		}
	case "tg":
	default:
		return ""
	}
	return template.URL(u.String())
}

// pageData is the widget page around its posts.
type pageData struct {
	Theme, Title string
	Channels     []string
	Source       string // the fragment's URL
	Poll         int64  // milliseconds
	Live         string // where to subscribe ("" for nowhere: poll only)
	LiveBody     string // the subscription's request (JSON)
	ETag         string
	Posts        []byte
	CSS, JS      string
}

func renderPage(d pageData) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(d.Posts) + 2048)
	err := templates.ExecuteTemplate(&out, "page", struct {
		pageData
		PostsHTML template.HTML
	}{d, template.HTML(d.Posts)})
	return out.Bytes(), err
}

type errorData struct {
	Status              int
	StatusText, Message string
	CSS                 string
	Refresh             int // seconds until the page reloads itself; 0 for never
}

func renderError(d errorData) ([]byte, error) {
	var out bytes.Buffer
	err := templates.ExecuteTemplate(&out, "error", d)
	return out.Bytes(), err
}
