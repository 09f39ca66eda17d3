package server_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mmcdole/gofeed"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/server"
)

// The recorded channels, every one of them in the feeds below.
var formatChannels = []string{"tmefeed_news", "kanal_novostei", "hadashot_today", "emoji_party", "retro_channel", "just_launched"}

var formatRoutes = map[string]struct {
	path, contentType string
	feedType          gofeed.FeedType
}{
	"rss":      {"/v1/rss", "application/rss+xml; charset=utf-8", gofeed.FeedTypeRSS},
	"atom":     {"/v1/atom", "application/atom+xml; charset=utf-8", gofeed.FeedTypeAtom},
	"jsonfeed": {"/v1/jsonfeed", "application/feed+json; charset=utf-8", gofeed.FeedTypeJSON},
}

// formatEnv is the whole service behind a real HTTP listener, with feeds.
func formatEnv(t *testing.T, opts envOptions) (*env, *httptest.Server) {
	t.Helper()
	opts.feed = true
	if opts.refresh == 0 {
		opts.refresh = 10 * time.Second
	}
	e := newEnv(t, opts)
	ts := httptest.NewServer(e.h)
	t.Cleanup(ts.Close)
	return e, ts
}

func httpGet(t *testing.T, target string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// restPost is what POST /v1/feed says of a post: the reference the
// documents are checked against.
type restPost struct {
	ID      int `json:"id"`
	Channel struct {
		Username string `json:"username"`
		Title    struct {
			String string `json:"string"`
		} `json:"title"`
	} `json:"channel"`
	Content struct {
		Media []struct {
			Type      string `json:"type"`
			URL       string `json:"url"`
			Thumb     string `json:"thumb"`
			Available bool   `json:"available"`
		} `json:"media"`
	} `json:"content"`
}

func restFeed(t *testing.T, e *env, channels []string, order string, limit int) []restPost {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"channels": channels, "order": order, "limit": limit})
	var out struct {
		Result []restPost `json:"result"`
	}
	wantOK(t, e.do(http.MethodPost, "/v1/feed", body), &out)
	if len(out.Result) == 0 {
		t.Fatal("the REST feed is empty")
	}
	return out.Result
}

func (p restPost) link() string {
	return "https://t.me/" + strings.ToLower(p.Channel.Username) + "/" + strconv.Itoa(p.ID)
}

// readerMedia is a medium of p as a reader gets it: the file when a
// reader can show or play it (not a post's page on t.me, not an animated
// .tgs sticker), and the preview picture beside a file that is no picture
// or in place of one.
type readerMedia struct {
	file, thumb string // "" when not attached
}

func (p restPost) media() []readerMedia {
	var out []readerMedia
	for _, m := range p.Content.Media {
		if m.Type == "unsupported" {
			out = append(out, readerMedia{})
			continue
		}
		var r readerMedia
		u, _ := url.Parse(m.URL)
		ext := ""
		if u != nil {
			ext = path.Ext(u.Path)
		}
		isFile := m.URL != "" && u != nil && u.Host != "t.me" && (m.Type != "sticker" || ext == ".webp" || ext == ".webm")
		picture := m.Type == "image" || m.Type == "sticker" && ext == ".webp"
		if isFile && m.Available {
			r.file = m.URL
		}
		if m.Thumb != "" && (r.file == "" || !picture) {
			r.thumb = m.Thumb
		}
		out = append(out, r)
	}
	return out
}

// files are the media of p a reader can fetch, as attached: each
// medium's file, then its preview picture.
func (p restPost) files() []string {
	var out []string
	for _, m := range p.media() {
		for _, u := range []string{m.file, m.thumb} {
			if u != "" {
				out = append(out, u)
			}
		}
	}
	return out
}

// TestFormatsReadByFeedParser reads each format with gofeed, over HTTP from
// the whole service: every post of every channel in the REST feed's order,
// ids that are the posts' t.me links, titles, authors, dates, and media
// as enclosures with their types.
func TestFormatsReadByFeedParser(t *testing.T) {
	e, ts := formatEnv(t, envOptions{})
	want := restFeed(t, e, formatChannels, "newest", 100)
	seen := map[string]bool{}
	withMedia := 0
	for _, p := range want {
		seen[strings.ToLower(p.Channel.Username)] = true
		if len(p.files()) > 0 {
			withMedia++
		}
	}
	for _, ch := range formatChannels {
		if !seen[ch] {
			t.Fatalf("the fixtures give no post of %s", ch)
		}
	}
	if withMedia == 0 {
		t.Fatal("the fixtures give no post with media")
	}
	query := "?channels=" + strings.Join(formatChannels, ",") + "&order=newest&limit=100"
	for name, f := range formatRoutes {
		t.Run(name, func(t *testing.T) {
			res, body := httpGet(t, ts.URL+f.path+query)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			if ct := res.Header.Get("Content-Type"); ct != f.contentType {
				t.Errorf("Content-Type %q, want %q", ct, f.contentType)
			}
			doc, err := gofeed.NewParser().Parse(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("gofeed: %v\n%s", err, body)
			}
			if got := gofeed.DetectFeedType(bytes.NewReader(body)); got != f.feedType {
				t.Errorf("detected feed type %d, want %d (%s)", got, f.feedType, doc.FeedType)
			}
			self := ts.URL + f.path + "?" + (url.Values{"channels": {strings.Join(formatChannels, ",")}, "order": {"newest"}, "limit": {"100"}}).Encode()
			if doc.Title == "" || doc.FeedLink != self {
				t.Errorf("title %q, self link %q", doc.Title, doc.FeedLink)
			}
			if len(doc.Items) != len(want) {
				t.Fatalf("%d items, want the REST feed's %d", len(doc.Items), len(want))
			}
			for i, it := range doc.Items {
				p := want[i]
				if it.GUID != p.link() || it.Link != p.link() {
					t.Errorf("item %d: guid %q, link %q; want %q", i, it.GUID, it.Link, p.link())
				}
				if it.Title == "" || strings.ContainsRune(it.Title, '\n') || len([]rune(it.Title)) > 100 {
					t.Errorf("item %d: title %q", i, it.Title)
				}
				if it.PublishedParsed == nil || it.PublishedParsed.IsZero() {
					t.Errorf("item %d: no date (%q)", i, it.Published)
				}
				if i > 0 && doc.Items[i-1].PublishedParsed != nil && it.PublishedParsed != nil && it.PublishedParsed.After(*doc.Items[i-1].PublishedParsed) {
					t.Errorf("item %d is newer than the one before it in a newest-first feed", i)
				}
				if len(it.Authors) == 0 || it.Authors[0].Name != p.Channel.Title.String {
					t.Errorf("item %d: authors %+v, want %q", i, it.Authors, p.Channel.Title.String)
				}
				if it.Content == "" && it.Description == "" {
					t.Errorf("item %d has no content", i)
				}
				files := p.files()
				var got []string
				for _, enc := range it.Enclosures {
					got = append(got, enc.URL)
					if enc.Type == "" || !strings.Contains(enc.Type, "/") {
						t.Errorf("item %d: enclosure %q has type %q", i, enc.URL, enc.Type)
					}
				}
				if name == "rss" && len(files) > 1 {
					files = files[:1] // one enclosure per item, as RSS 2.0 allows
				}
				if !slices.Equal(got, files) {
					t.Errorf("item %d (%s): enclosures %q, want %q", i, p.link(), got, files)
				}
			}
		})
	}
}

// TestFormatsStableAndConditional: the same feed asked again has the same
// ids and validators; a reader holding them gets 304 with no body, also
// after the pages were fetched again unchanged.
func TestFormatsStableAndConditional(t *testing.T) {
	e, ts := formatEnv(t, envOptions{})
	for name, f := range formatRoutes {
		t.Run(name, func(t *testing.T) {
			target := ts.URL + f.path + "?channels=tmefeed_news,emoji_party"
			res1, body1 := httpGet(t, target)
			etag, lastMod := res1.Header.Get("ETag"), res1.Header.Get("Last-Modified")
			if res1.StatusCode != http.StatusOK || etag == "" || lastMod == "" {
				t.Fatalf("status %d, ETag %q, Last-Modified %q", res1.StatusCode, etag, lastMod)
			}
			if _, err := http.ParseTime(lastMod); err != nil {
				t.Errorf("Last-Modified %q: %v", lastMod, err)
			}
			e.clock.Advance(time.Minute) // past the refresh point: pages are fetched again
			res2, body2 := httpGet(t, target)
			if res2.Header.Get("ETag") != etag || !bytes.Equal(body1, body2) {
				t.Errorf("unchanged feed: ETag %q then %q, bodies equal %v", etag, res2.Header.Get("ETag"), bytes.Equal(body1, body2))
			}
			ids := func(b []byte) []string {
				doc, err := gofeed.NewParser().Parse(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, it := range doc.Items {
					out = append(out, it.GUID)
				}
				return out
			}
			if a, b := ids(body1), ids(body2); len(a) == 0 || !slices.Equal(a, b) {
				t.Errorf("ids changed between requests: %q then %q", a, b)
			}

			for _, h := range [][]string{{"If-None-Match", etag}, {"If-Modified-Since", lastMod}, {"If-None-Match", `"x", ` + etag}} {
				res, body := httpGet(t, target, h...)
				if res.StatusCode != http.StatusNotModified || len(body) != 0 {
					t.Errorf("%s: %s: status %d, %d bytes; want 304 and no body", h[0], h[1], res.StatusCode, len(body))
				}
				if res.Header.Get("ETag") != etag {
					t.Errorf("304 carries ETag %q, want %q", res.Header.Get("ETag"), etag)
				}
			}
			// Another feed's validator, or an older date, gets the document.
			other, _ := httpGet(t, ts.URL+f.path+"?channels=kanal_novostei")
			old := mustTime(t, lastMod).Add(-time.Hour).Format(http.TimeFormat)
			for _, h := range [][]string{{"If-None-Match", other.Header.Get("ETag")}, {"If-Modified-Since", old}} {
				if res, body := httpGet(t, target, h...); res.StatusCode != http.StatusOK || !bytes.Equal(body, body1) {
					t.Errorf("%s: %s: status %d; want 200 and the document", h[0], h[1], res.StatusCode)
				}
			}
			// HEAD answers the same headers without the body.
			req, _ := http.NewRequest(http.MethodHead, target, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK || res.Header.Get("ETag") != etag || res.Header.Get("Content-Length") != strconv.Itoa(len(body1)) {
				t.Errorf("HEAD: status %d, ETag %q, Content-Length %q", res.StatusCode, res.Header.Get("ETag"), res.Header.Get("Content-Length"))
			}
		})
	}
}

// The documents' other preconditions, in RFC 9110's order: If-None-Match
// decides over If-Modified-Since; If-Match and If-Unmodified-Since that do
// not hold get 412.
func TestFormatsPreconditions(t *testing.T) {
	_, ts := formatEnv(t, envOptions{})
	target := ts.URL + "/v1/atom?channels=tmefeed_news"
	res, _ := httpGet(t, target)
	etag, lastMod := res.Header.Get("ETag"), res.Header.Get("Last-Modified")
	old := mustTime(t, lastMod).Add(-time.Hour).Format(http.TimeFormat)
	for _, c := range []struct {
		h    []string
		want int
	}{
		{[]string{"If-None-Match", `"other"`, "If-Modified-Since", lastMod}, http.StatusOK},
		{[]string{"If-None-Match", etag, "If-Modified-Since", old}, http.StatusNotModified},
		{[]string{"If-Match", etag}, http.StatusOK},
		{[]string{"If-Match", `"other", ` + etag}, http.StatusOK},
		{[]string{"If-Match", "*"}, http.StatusOK},
		{[]string{"If-Match", `"other"`}, http.StatusPreconditionFailed},
		{[]string{"If-Match", "W/" + etag}, http.StatusPreconditionFailed}, // strong comparison
		{[]string{"If-Unmodified-Since", lastMod}, http.StatusOK},
		{[]string{"If-Unmodified-Since", old}, http.StatusPreconditionFailed},
		{[]string{"If-Match", etag, "If-Unmodified-Since", old}, http.StatusOK}, // If-Match decides
	} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		for i := 0; i+1 < len(c.h); i += 2 {
			req.Header.Set(c.h[i], c.h[i+1])
		}
		req.Header.Set("Accept-Encoding", "identity")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.want || (c.want != http.StatusOK) != (len(b) == 0) {
			t.Errorf("%q: %d with %d bytes, want %d", c.h, res.StatusCode, len(b), c.want)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := http.ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Strict shapes of the XML formats: encoding/xml in strict mode refuses
// what gofeed forgives (bad characters, unbalanced markup).
type strictRSS struct {
	XMLName xml.Name `xml:"rss"`
	Version string   `xml:"version,attr"`
	Channel struct {
		// Before Link: a field without a namespace takes the first element
		// of its name in any namespace.
		Self []struct {
			Href string `xml:"href,attr"`
			Rel  string `xml:"rel,attr"`
		} `xml:"http://www.w3.org/2005/Atom link"`
		Title       string `xml:"title"`
		Link        string `xml:"link"`
		Description string `xml:"description"`
		Items       []struct {
			Title       string `xml:"title"`
			Link        string `xml:"link"`
			Description string `xml:"description"`
			GUID        struct {
				IsPermaLink string `xml:"isPermaLink,attr"`
				Value       string `xml:",chardata"`
			} `xml:"guid"`
			PubDate    string `xml:"pubDate"`
			Creator    string `xml:"http://purl.org/dc/elements/1.1/ creator"`
			Enclosures []struct {
				URL    string `xml:"url,attr"`
				Length string `xml:"length,attr"`
				Type   string `xml:"type,attr"`
			} `xml:"enclosure"`
		} `xml:"item"`
	} `xml:"channel"`
}

type strictAtom struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string   `xml:"id"`
	Title   string   `xml:"title"`
	Updated string   `xml:"updated"`
	Links   []struct {
		Href string `xml:"href,attr"`
		Rel  string `xml:"rel,attr"`
	} `xml:"link"`
	Entries []struct {
		ID      string `xml:"id"`
		Title   string `xml:"title"`
		Updated string `xml:"updated"`
		Author  struct {
			Name string `xml:"name"`
			URI  string `xml:"uri"`
		} `xml:"author"`
		Links []struct {
			Href string `xml:"href,attr"`
			Rel  string `xml:"rel,attr"`
			Type string `xml:"type,attr"`
		} `xml:"link"`
		Content struct {
			Type  string `xml:"type,attr"`
			Value string `xml:",chardata"`
		} `xml:"content"`
	} `xml:"entry"`
}

func decodeStrictXML(t *testing.T, b []byte, v any) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	if err := d.Decode(v); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, b)
	}
}

// checkRSS checks what RSS 2.0 requires, beyond gofeed's leniency.
func checkRSS(t *testing.T, b []byte, self string) strictRSS {
	t.Helper()
	var doc strictRSS
	decodeStrictXML(t, b, &doc)
	c := doc.Channel
	if doc.Version != "2.0" || c.Title == "" || c.Link == "" || c.Description == "" {
		t.Errorf("rss version %q, channel title %q, link %q, description %q", doc.Version, c.Title, c.Link, c.Description)
	}
	if len(c.Self) != 1 || c.Self[0].Rel != "self" || c.Self[0].Href != self {
		t.Errorf("atom:link %+v, want rel=self href=%q", c.Self, self)
	}
	for i, it := range c.Items {
		if it.Title == "" || it.Description == "" || it.Creator == "" {
			t.Errorf("item %d: title %q, description %d bytes, creator %q", i, it.Title, len(it.Description), it.Creator)
		}
		if it.GUID.IsPermaLink != "true" || it.GUID.Value != it.Link || !strings.HasPrefix(it.Link, "https://t.me/") {
			t.Errorf("item %d: guid %+v, link %q", i, it.GUID, it.Link)
		}
		if _, err := time.Parse(time.RFC1123Z, it.PubDate); err != nil {
			t.Errorf("item %d: pubDate %q is not RFC 822: %v", i, it.PubDate, err)
		}
		if len(it.Enclosures) > 1 {
			t.Errorf("item %d has %d enclosures; RSS allows one", i, len(it.Enclosures))
		}
		for _, enc := range it.Enclosures {
			if _, err := strconv.ParseInt(enc.Length, 10, 64); err != nil || enc.URL == "" || enc.Type == "" {
				t.Errorf("item %d: enclosure %+v lacks url, length or type", i, enc)
			}
		}
	}
	return doc
}

func checkAtom(t *testing.T, b []byte, self string) strictAtom {
	t.Helper()
	var doc strictAtom
	decodeStrictXML(t, b, &doc)
	if doc.ID == "" || doc.Title == "" {
		t.Errorf("feed id %q, title %q", doc.ID, doc.Title)
	}
	if _, err := time.Parse(time.RFC3339, doc.Updated); err != nil {
		t.Errorf("feed updated %q: %v", doc.Updated, err)
	}
	if !slices.ContainsFunc(doc.Links, func(l struct {
		Href string `xml:"href,attr"`
		Rel  string `xml:"rel,attr"`
	}) bool {
		return l.Rel == "self" && l.Href == self
	}) {
		t.Errorf("links %+v lack rel=self %q", doc.Links, self)
	}
	for i, en := range doc.Entries {
		if !strings.HasPrefix(en.ID, "https://t.me/") || en.Title == "" || en.Author.Name == "" || !strings.HasPrefix(en.Author.URI, "https://t.me/") {
			t.Errorf("entry %d: id %q, title %q, author %+v", i, en.ID, en.Title, en.Author)
		}
		if _, err := time.Parse(time.RFC3339, en.Updated); err != nil {
			t.Errorf("entry %d: updated %q: %v", i, en.Updated, err)
		}
		if en.Content.Type != "html" || en.Content.Value == "" {
			t.Errorf("entry %d: content type %q, %d bytes", i, en.Content.Type, len(en.Content.Value))
		}
		for _, l := range en.Links {
			if l.Rel == "enclosure" && (l.Href == "" || l.Type == "") {
				t.Errorf("entry %d: enclosure %+v lacks href or type", i, l)
			}
		}
	}
	return doc
}

type strictJSONFeed struct {
	Version string `json:"version"`
	Title   string `json:"title"`
	FeedURL string `json:"feed_url"`
	Items   []struct {
		ID          *string `json:"id"`
		URL         string  `json:"url"`
		ContentHTML *string `json:"content_html"`
		Date        string  `json:"date_published"`
		Authors     []struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"authors"`
		Attachments []struct {
			URL      string `json:"url"`
			MimeType string `json:"mime_type"`
		} `json:"attachments"`
	} `json:"items"`
}

func checkJSONFeed(t *testing.T, b []byte, self string) strictJSONFeed {
	t.Helper()
	var doc strictJSONFeed
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.Version != "https://jsonfeed.org/version/1.1" || doc.Title == "" || doc.FeedURL != self || doc.Items == nil {
		t.Errorf("version %q, title %q, feed_url %q (want %q), items %v", doc.Version, doc.Title, doc.FeedURL, self, doc.Items != nil)
	}
	for i, it := range doc.Items {
		if it.ID == nil || *it.ID == "" || it.ContentHTML == nil || len(it.Authors) == 0 {
			t.Errorf("item %d lacks id, content_html or authors", i)
		}
		if _, err := time.Parse(time.RFC3339, it.Date); err != nil {
			t.Errorf("item %d: date_published %q: %v", i, it.Date, err)
		}
		for _, a := range it.Attachments {
			if a.URL == "" || a.MimeType == "" {
				t.Errorf("item %d: attachment %+v lacks url or mime_type", i, a)
			}
		}
	}
	return doc
}

// TestFormatsStrictStructure checks each document against its spec's
// required elements with strict decoders, for feeds of one and of every
// channel, and an empty (filtered) feed.
func TestFormatsStrictStructure(t *testing.T) {
	_, ts := formatEnv(t, envOptions{})
	queries := []url.Values{
		{"channels": {"tmefeed_news"}},
		{"channels": {strings.Join(formatChannels, ",")}, "order": {"ranked"}},
		{"channels": {"tmefeed_news"}, "query": {"no post says this"}},
	}
	for _, q := range queries {
		for name, f := range formatRoutes {
			self := ts.URL + f.path + "?" + q.Encode()
			res, body := httpGet(t, self)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: status %d: %s", self, res.StatusCode, body)
			}
			n := 0
			switch name {
			case "rss":
				n = len(checkRSS(t, body, self).Channel.Items)
			case "atom":
				n = len(checkAtom(t, body, self).Entries)
			case "jsonfeed":
				n = len(checkJSONFeed(t, body, self).Items)
			}
			if empty := q.Has("query"); empty != (n == 0) {
				t.Errorf("%s: %d items", self, n)
			}
			if q.Has("query") && res.Header.Get("Last-Modified") != "" {
				t.Errorf("%s: an empty feed has Last-Modified %q", self, res.Header.Get("Last-Modified"))
			}
		}
	}
}

// TestFormatsPublicURL: with PUBLIC_URL, documents name themselves by it
// and link media through its durable /media/{channel}/{id}/{index} links;
// without it, by the request's Host alone (never X-Forwarded-Host) and
// Telegram's URLs.
func TestFormatsPublicURL(t *testing.T) {
	const public = "https://tmefeed.example/feeds"
	e, ts := formatEnv(t, envOptions{publicURL: public + "/"})
	want := restFeed(t, e, []string{"tmefeed_news"}, "newest", 100)
	res, body := httpGet(t, ts.URL+"/v1/atom?channels=tmefeed_news&order=newest", "X-Forwarded-Host", "evil.example")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	doc := checkAtom(t, body, public+"/v1/atom?channels=tmefeed_news&order=newest")
	links := 0
	for i, en := range doc.Entries {
		var got []string
		for _, l := range en.Links {
			if l.Rel == "enclosure" {
				got = append(got, l.Href)
			}
		}
		var wantLinks []string
		for j, m := range want[i].media() {
			prefix := public + "/media/tmefeed_news/" + strconv.Itoa(want[i].ID) + "/" + strconv.Itoa(j)
			if m.file != "" {
				wantLinks = append(wantLinks, prefix)
			}
			if m.thumb != "" {
				wantLinks = append(wantLinks, prefix+"?thumb=1")
			}
		}
		if !slices.Equal(got, wantLinks) {
			t.Errorf("entry %s: enclosures %q, want %q", en.ID, got, wantLinks)
		}
		links += len(got)
		if strings.Contains(en.Content.Value, "telesco.pe") || strings.Contains(en.Content.Value, "cdn") {
			t.Errorf("entry %s links Telegram's CDN in its content: %s", en.ID, en.Content.Value)
		}
	}
	if links == 0 {
		t.Fatal("no media links to check")
	}

	_, ts2 := formatEnv(t, envOptions{})
	res, body = httpGet(t, ts2.URL+"/v1/rss?channels=tmefeed_news", "Host", "reader.example:8080", "X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	rss := checkRSS(t, body, "http://reader.example:8080/v1/rss?channels=tmefeed_news")
	if bytes.Contains(body, []byte("evil.example")) || bytes.Contains(body, []byte("/media/")) {
		t.Errorf("the document honours forwarding headers or links /media without PUBLIC_URL:\n%s", body)
	}
	if rss.Channel.Link != "https://t.me/s/tmefeed_news" {
		t.Errorf("a one-channel feed links %q, want the channel", rss.Channel.Link)
	}
}

// TestFormatsFailedChannels: a feed answers with the channels it could
// read and names the others in a header; with none readable it is an
// error, with the status of the failure.
func TestFormatsFailedChannels(t *testing.T) {
	e, ts := formatEnv(t, envOptions{})
	res, body := httpGet(t, ts.URL+"/v1/jsonfeed?channels=tmefeed_news,nobody_here_404,bad-name")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if got := res.Header.Get(server.FailedChannelsHeader); !strings.Contains(got, "nobody_here_404=not_found") || !strings.Contains(got, "bad?name=invalid_username") {
		t.Errorf("%s: %q", server.FailedChannelsHeader, got)
	}
	doc := checkJSONFeed(t, body, ts.URL+"/v1/jsonfeed?channels=tmefeed_news%2Cnobody_here_404%2Cbad-name")
	if len(doc.Items) == 0 {
		t.Error("the readable channel's posts are missing")
	}

	res, body = httpGet(t, ts.URL+"/v1/rss?channels=nobody_here_404")
	wantHTTPError(t, res, body, http.StatusNotFound, "not_found")
	res, body = httpGet(t, ts.URL+"/v1/rss?channels=bad-name")
	wantHTTPError(t, res, body, http.StatusBadRequest, "invalid_username")

	// Telegram failing for one channel: the feed goes on, is not cached
	// downstream; failing for every channel: 502, Telegram's trouble
	// winning over a bad name.
	e.origin.SetFault("/s/emoji_party", fixtures.Fault{Status: http.StatusInternalServerError, Times: 1 << 20})
	res, _ = httpGet(t, ts.URL+"/v1/atom?channels=emoji_party,tmefeed_news")
	if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "no-store" || !strings.Contains(res.Header.Get(server.FailedChannelsHeader), "emoji_party=upstream_error") {
		t.Errorf("status %d, Cache-Control %q, %s %q", res.StatusCode, res.Header.Get("Cache-Control"), server.FailedChannelsHeader, res.Header.Get(server.FailedChannelsHeader))
	}
	res, body = httpGet(t, ts.URL+"/v1/atom?channels=bad-name,emoji_party")
	wantHTTPError(t, res, body, http.StatusBadGateway, "upstream_error")
}

func wantHTTPError(t *testing.T, res *http.Response, body []byte, status int, code string) string {
	t.Helper()
	var b server.ErrorBody
	if res.StatusCode != status || json.Unmarshal(body, &b) != nil || b.Error.Code != code || b.Error.Message == "" {
		t.Errorf("status %d, body %s; want %d %s", res.StatusCode, body, status, code)
	}
	return b.Error.Message
}

// TestFormatsQuery: the query string is read as POST /v1/feed's body is,
// filters included, and refused with a message when it is wrong.
func TestFormatsQuery(t *testing.T) {
	e, ts := formatEnv(t, envOptions{})
	for _, c := range []struct{ query, msg string }{
		{"", `"channels" must list`},
		{"channels=tmefeed_news&limt=3", `unknown parameter "limt"`},
		{"channels=tmefeed_news&limit=abc", `"limit" must be a whole number`},
		{"channels=tmefeed_news&limit=100000", `"limit" must be from 0 to`},
		{"channels=tmefeed_news&limit=1&limit=2", `"limit" must be given once`},
		{"channels=tmefeed_news&order=oldest", `"order" must be one of`},
		{"channels=tmefeed_news&since=yesterday", `"since" must be an RFC 3339 date`},
		{"channels=tmefeed_news&media_kinds=image,hologram", `"media_kinds" must list kinds`},
		{"channels=tmefeed_news&exclude_replies=maybe", `"exclude_replies" must be true or false`},
		{"channels=tmefeed_news&since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "since must be before until"},
		{"channels=tmefeed_news&q=%zz", "malformed"},
	} {
		res, body := httpGet(t, ts.URL+"/v1/rss?"+c.query)
		if msg := wantHTTPError(t, res, body, http.StatusBadRequest, "bad_request"); !strings.Contains(msg, c.msg) {
			t.Errorf("?%s: %s; want a message with %q", c.query, body, c.msg)
		}
	}

	// The filter keeps what the REST feed's filter keeps.
	all := restFeed(t, e, formatChannels, "newest", 100)
	body, _ := json.Marshal(map[string]any{"channels": formatChannels, "order": "newest", "filter": map[string]any{"media_kinds": []string{"image"}}})
	var images struct {
		Result []restPost `json:"result"`
	}
	wantOK(t, e.do(http.MethodPost, "/v1/feed", body), &images)
	if len(images.Result) == 0 || len(images.Result) == len(all) {
		t.Fatalf("the image filter keeps %d of %d posts; the test needs it to keep some", len(images.Result), len(all))
	}
	res, doc := httpGet(t, ts.URL+"/v1/jsonfeed?channels="+strings.Join(formatChannels[:3], ",")+"&channels="+strings.Join(formatChannels[3:], ",")+"&order=NEWEST&media_kinds=IMAGE&exclude_service")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, doc)
	}
	jf := checkJSONFeed(t, doc, ts.URL+"/v1/jsonfeed?"+url.Values{"channels": {strings.Join(formatChannels, ",")}, "order": {"newest"}, "media_kinds": {"IMAGE"}, "exclude_service": {"true"}}.Encode())
	var got, want []string
	for _, it := range jf.Items {
		got = append(got, *it.ID)
	}
	for _, p := range images.Result {
		want = append(want, p.link())
	}
	if !slices.Equal(got, want) {
		t.Errorf("filtered document holds %q, the REST filter %q", got, want)
	}
}

// hostilePages are the recorded pages plus channel hostile_news: a copy
// of tmefeed_news whose first post's text holds markup that must not reach
// a reader, and characters XML cannot hold.
func hostilePages(t *testing.T) fs.FS {
	t.Helper()
	page, err := fs.ReadFile(fixtures.Pages(), "s/tmefeed_news.html")
	if err != nil {
		t.Fatal(err)
	}
	page = bytes.ReplaceAll(page, []byte("tmefeed_news"), []byte("hostile_news"))
	const marker = `js-message_text" dir="auto">`
	i := bytes.Index(page, []byte(marker))
	if i < 0 {
		t.Fatal("no post text in the recorded page")
	}
	i += len(marker)
	hostile := "Bad\x01 \x0bnews <script>alert(1)</script><img src=x onerror=alert(2)>" +
		`<a href="javascript:alert(3)">click</a><iframe src="https://evil.example/"></iframe>` +
		`<b onclick="alert(4)" style="color:red">bold</b><svg><script>alert(5)</script></svg> ]]> end<br/>`
	page = append(page[:i:i], append([]byte(hostile), page[i:]...)...)
	pages := fstest.MapFS{"s/hostile_news.html": &fstest.MapFile{Data: page}}
	err = fs.WalkDir(fixtures.Pages(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fixtures.Pages(), p)
		pages[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// TestFormatsHostileHTML: scripts, handlers, frames and javascript: links
// in a post do not survive into any document's content, and the control
// characters of its text are removed rather than breaking the XML.
func TestFormatsHostileHTML(t *testing.T) {
	_, ts := formatEnv(t, envOptions{originPages: hostilePages(t)})
	for name, f := range formatRoutes {
		self := ts.URL + f.path + "?channels=hostile_news&order=newest"
		res, body := httpGet(t, self)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", name, res.StatusCode, body)
		}
		var contents, titles []string
		switch name {
		case "rss":
			for _, it := range checkRSS(t, body, self).Channel.Items {
				contents, titles = append(contents, it.Description), append(titles, it.Title)
			}
		case "atom":
			for _, en := range checkAtom(t, body, self).Entries {
				contents, titles = append(contents, en.Content.Value), append(titles, en.Title)
			}
		case "jsonfeed":
			for _, it := range checkJSONFeed(t, body, self).Items {
				contents = append(contents, *it.ContentHTML)
			}
			doc, _ := gofeed.NewParser().Parse(bytes.NewReader(body))
			for _, it := range doc.Items {
				titles = append(titles, it.Title)
			}
		}
		found := false
		for i, c := range contents {
			if !strings.Contains(c, "news") || !strings.Contains(c, "click") {
				continue
			}
			found = true
			checkSafeHTML(t, name, c)
			if strings.ContainsAny(c+titles[i], "\x01\x0b") || !strings.Contains(titles[i], "Bad news") {
				t.Errorf("%s: control characters survive: title %q", name, titles[i])
			}
		}
		if !found {
			t.Errorf("%s: the hostile post is missing", name)
		}
	}
}

// checkSafeHTML parses content as a reader would and fails on any
// script, frame, handler, style or non-web link.
func checkSafeHTML(t *testing.T, format, content string) {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(content), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "iframe", "svg", "object", "embed", "style":
				t.Errorf("%s: <%s> survived: %s", format, n.Data, content)
			}
			for _, a := range n.Attr {
				v := strings.ToLower(a.Val)
				if strings.HasPrefix(a.Key, "on") || a.Key == "style" || strings.Contains(v, "javascript:") || strings.Contains(v, "evil.example") {
					t.Errorf("%s: %s=%q on <%s> survived", format, a.Key, a.Val, n.Data)
				}
				if (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
					t.Errorf("%s: %s=%q is not a web URL", format, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	if strings.Contains(content, "alert(") {
		t.Errorf("%s: script text survived: %s", format, content)
	}
}

// A reader that sends only If-Modified-Since sees edits and removals:
// Last-Modified is when the document's content changed, not the newest
// post's date (which an edit or a removal of an older post leaves as it
// is), and it stays put while the content does.
func TestFormatsLastModifiedFollowsChanges(t *testing.T) {
	for name, f := range formatRoutes {
		t.Run(name, func(t *testing.T) {
			e, ts := formatEnv(t, envOptions{}) // each format edits its own origin
			target := ts.URL + f.path + "?channels=tmefeed_news,emoji_party"
			res, _ := httpGet(t, target)
			lm := res.Header.Get("Last-Modified")
			if res.StatusCode != http.StatusOK || lm == "" {
				t.Fatalf("status %d, Last-Modified %q", res.StatusCode, lm)
			}
			// refetch reads the document again after the pages' refresh
			// point, until the build reads the pages fetched anew (a stale
			// copy may answer the first request while they are fetched).
			refetch := func(since, want string) (*http.Response, []byte) {
				t.Helper()
				var res *http.Response
				var body []byte
				// Until the background refresh is in, however long a
				// loaded machine takes: a bound only a broken server
				// reaches.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
					// Past the refresh point again on every try: a
					// refresh started by an earlier read may have stored
					// the page as it was before the change, fresh for
					// another window of this test's stopped clock.
					e.clock.Advance(time.Minute)
					res, body = httpGet(t, target, "If-Modified-Since", since)
					if want == "" || res.StatusCode == http.StatusOK {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				return res, body
			}
			// Unchanged content, pages fetched again: the date holds.
			if res, _ := refetch(lm, ""); res.StatusCode != http.StatusNotModified {
				t.Fatalf("unchanged feed after a refresh: status %d, want 304", res.StatusCode)
			}
			if res, _ := httpGet(t, target); res.Header.Get("Last-Modified") != lm {
				t.Fatalf("unchanged feed after a refresh: Last-Modified %q, was %q", res.Header.Get("Last-Modified"), lm)
			}

			edit := "Corrected for the " + name + " reader"
			e.origin.EditPost("tmefeed_news", 32, edit)
			res, body := refetch(lm, "changed")
			lm2 := res.Header.Get("Last-Modified")
			if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(edit)) {
				t.Fatalf("If-Modified-Since %s after an edit: status %d, edit shown %v", lm, res.StatusCode, bytes.Contains(body, []byte(edit)))
			}
			if !mustTime(t, lm2).After(mustTime(t, lm)) {
				t.Errorf("Last-Modified %q after the edit, %q before", lm2, lm)
			}
			if res, _ := httpGet(t, target, "If-Modified-Since", lm2); res.StatusCode != http.StatusNotModified {
				t.Errorf("If-Modified-Since the new date: status %d, want 304", res.StatusCode)
			}

			e.origin.RemovePost("tmefeed_news", 33)
			res, body = refetch(lm2, "changed")
			if res.StatusCode != http.StatusOK || bytes.Contains(body, []byte("https://t.me/tmefeed_news/33\"")) || bytes.Contains(body, []byte("https://t.me/tmefeed_news/33<")) {
				t.Errorf("If-Modified-Since %s after a removal: status %d, removed post still listed %v", lm2, res.StatusCode, bytes.Contains(body, []byte("tmefeed_news/33")))
			}
			if !mustTime(t, res.Header.Get("Last-Modified")).After(mustTime(t, lm2)) {
				t.Errorf("Last-Modified %q after the removal, %q before", res.Header.Get("Last-Modified"), lm2)
			}
		})
	}
}

// TestFormatsNewestByDefault: a reader subscribed with no parameters but
// the channels gets the newest posts: a post published a moment ago in
// one of 13 channels (more posts than the document holds) is in the
// document, and so is the next one after the feed's pages are refreshed.
// Ranking stays available by asking for it.
func TestFormatsNewestByDefault(t *testing.T) {
	e, ts := formatEnv(t, envOptions{synthetic: 4})
	channels := e.origin.Channels()
	if len(channels) != 13 {
		t.Fatalf("%d channels at the fixture origin, want 13: %v", len(channels), channels)
	}
	published := e.origin.PublishPost("just_launched", "Published a moment ago")
	if total := len(restFeed(t, e, channels, "newest", 500)); total <= server.DefaultFormatLimit {
		t.Fatalf("the 13 channels hold %d posts: no more than a document's window", total)
	}
	query := "?channels=" + strings.Join(channels, ",")
	link := "https://t.me/just_launched/" + strconv.Itoa(published)
	for name, f := range formatRoutes {
		res, body := httpGet(t, ts.URL+f.path+query)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", name, res.StatusCode, body)
		}
		doc, err := gofeed.NewParser().Parse(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(doc.Items) != server.DefaultFormatLimit {
			t.Errorf("%s: %d items, want the default window of %d", name, len(doc.Items), server.DefaultFormatLimit)
		}
		if len(doc.Items) == 0 || doc.Items[0].Link != link || doc.Items[0].Title != "Published a moment ago" { // its title is its text
			t.Errorf("%s: the post published now (%s) does not lead the document", name, link)
		}
		for i := 1; i < len(doc.Items); i++ {
			a, b := doc.Items[i-1].PublishedParsed, doc.Items[i].PublishedParsed
			if a != nil && b != nil && a.Before(*b) {
				t.Errorf("%s: item %d (%s) is older than item %d (%s): not newest first", name, i-1, a, i, b)
				break
			}
		}
	}

	// The next post arrives once the pages are refreshed.
	next := e.origin.PublishPost("kanal_novostei", "Another one")
	nextLink := "https://t.me/kanal_novostei/" + strconv.Itoa(next)
	var found bool
	// A stale page is served while it is refetched; the bound is one only
	// a broken server reaches.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		e.clock.Advance(time.Minute)
		res, body := httpGet(t, ts.URL+"/v1/atom"+query)
		doc, err := gofeed.NewParser().Parse(bytes.NewReader(body))
		if res.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("status %d, %v", res.StatusCode, err)
		}
		// Both were published within the same second or two: either may lead.
		if found = len(doc.Items) > 1 && (doc.Items[0].Link == nextLink && doc.Items[1].Link == link ||
			doc.Items[0].Link == link && doc.Items[1].Link == nextLink); found {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !found {
		t.Errorf("after a refresh the Atom document does not lead with %s and %s", nextLink, link)
	}

	// order=ranked is still served, as its own document.
	res, body := httpGet(t, ts.URL+"/v1/atom"+query+"&order=ranked")
	if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("ranked")) {
		t.Errorf("order=ranked: status %d, description does not say ranked", res.StatusCode)
	}
}
