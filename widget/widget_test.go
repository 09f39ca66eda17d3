package widget_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/internal/httpcache/httpcachetest"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/widget"
)

// env is the widget over the real feed, page service, embedded cache and
// origin client, against the fixture origin on a loopback port. The cache
// is off (CACHE_MODE=off), so every request reads the origin's pages as
// they are now, as a widget sees them once its refresh point passed.
type env struct {
	origin *fixtures.Origin
	h      http.Handler
}

func newEnv(t *testing.T, cfg widget.Config) *env {
	t.Helper()
	o := fixtures.NewOrigin(fixtures.OriginOptions{})
	ts := httptest.NewServer(o)
	t.Cleanup(ts.Close)
	client, err := origin.New(origin.Config{BaseURL: ts.URL, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	fs, err := feed.New(feed.Config{Pages: pages.New(pages.Config{Cache: mem, Origin: client})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Close)
	cfg.Feed = fs
	h, err := widget.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{origin: o, h: h}
}

func (e *env) get(t *testing.T, target string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parse(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, k string) string {
	for _, a := range n.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	for _, x := range strings.Fields(attr(n, "class")) {
		if x == c {
			return true
		}
	}
	return false
}

// all returns the elements under n that match.
func all(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func articles(t *testing.T, s string) []*html.Node {
	return all(parse(t, s), tag("article"))
}

func TestWidgetShowsTheMergedFeed(t *testing.T) {
	e := newEnv(t, widget.Config{})
	r := e.get(t, "/embed?channels=tmefeed_news,hadashot_today&limit=20&theme=dark")
	page := body(t, r)
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%d %s: %.300s", r.StatusCode, r.Header.Get("Content-Type"), page)
	}
	doc := parse(t, page)
	if h := all(doc, tag("html")); attr(h[0], "data-theme") != "dark" {
		t.Errorf("theme %q, want dark", attr(h[0], "data-theme"))
	}
	feeds := all(doc, func(n *html.Node) bool { return attr(n, "role") == "feed" })
	if len(feeds) != 1 {
		t.Fatalf("%d role=feed elements", len(feeds))
	}
	arts := all(feeds[0], tag("article"))
	if len(arts) != 20 {
		t.Fatalf("%d articles, want 20", len(arts))
	}
	seen := map[string]bool{}
	var last string
	for _, a := range arts {
		key := attr(a, "data-key")
		ch, id, _ := strings.Cut(key, "/")
		seen[ch] = true
		// Newest first by the ISO date each post carries.
		times := all(a, tag("time"))
		if len(times) != 1 || attr(times[0], "datetime") == "" {
			t.Fatalf("%s: no <time datetime>", key)
		}
		if d := attr(times[0], "datetime"); last != "" && d > last {
			t.Errorf("%s dated %s after a post dated %s: not newest first", key, d, last)
		} else {
			last = d
		}
		links := all(a, func(n *html.Node) bool { return attr(n, "href") == "https://t.me/"+ch+"/"+id })
		if len(links) == 0 {
			t.Errorf("%s: no link to the post on t.me", key)
		}
		if attr(a, "tabindex") != "0" || attr(a, "aria-labelledby") == "" {
			t.Errorf("%s: article not focusable or unlabelled", key)
		}
		heads := all(a, func(n *html.Node) bool { return hasClass(n, "tf-chan") })
		if len(heads) != 1 || text(heads[0]) == "" {
			t.Errorf("%s: no channel title", key)
		}
		for _, tx := range all(a, func(n *html.Node) bool { return hasClass(n, "tf-text") }) {
			if attr(tx, "dir") != "auto" {
				t.Errorf("%s: text without dir=auto", key)
			}
		}
	}
	if !seen["tmefeed_news"] || !seen["hadashot_today"] {
		t.Errorf("channels shown: %v", seen)
	}
	if !strings.Contains(page, "חדשות היום") {
		t.Error("the Hebrew channel's title is missing")
	}
}

func TestWidgetRendersEveryKindOfPart(t *testing.T) {
	e := newEnv(t, widget.Config{})
	page := body(t, e.get(t, "/embed?channels=tmefeed_news&limit=23"))
	byKey := map[string]*html.Node{}
	for _, a := range articles(t, page) {
		byKey[attr(a, "data-key")] = a
	}
	has := func(id, class, want string) {
		t.Helper()
		a := byKey["tmefeed_news/"+id]
		if a == nil {
			t.Fatalf("post %s not shown", id)
		}
		els := all(a, func(n *html.Node) bool { return hasClass(n, class) })
		if len(els) == 0 || !strings.Contains(text(els[0]), want) {
			t.Errorf("post %s: no .%s holding %q", id, class, want)
		}
	}
	has("32", "tf-text", "tmefeed 1.5 is out")
	has("32", "tf-reacts", "1.2K")
	has("33", "tf-views", "845")
	has("34", "tf-preview", "Back-pressure without tears")
	has("42", "tf-video", "0:48")
	has("42", "tf-buttons", "Docs")
	has("43", "tf-location", "Alexanderplatz")
	has("45", "tf-file", "18.7 MB")
	has("47", "tf-file", "Voice message")
	has("51", "tf-poll", "What do you use tmefeed for?")
	has("51", "tf-poll", "58%")
	has("41", "tf-reply", "Sunset over the data centre")
	has("40", "tf-fwd", "Alex Kim")
	// Formatting survives sanitizing; the hashtag links to the channel's search on t.me.
	a := byKey["tmefeed_news/32"]
	for _, el := range []string{"b", "i", "u", "s", "code", "blockquote", "tg-spoiler", "tg-emoji"} {
		if len(all(a, tag(el))) == 0 {
			t.Errorf("post 32 lost its <%s>", el)
		}
	}
	if len(all(a, func(n *html.Node) bool { return attr(n, "href") == "https://t.me/s/tmefeed_news?q=%23release" })) != 1 {
		t.Error("post 32: the #release hashtag does not link to t.me")
	}
	if imgs := all(byKey["tmefeed_news/33"], tag("img")); len(imgs) < 2 || !strings.HasPrefix(attr(imgs[1], "src"), "https://cdn4.telesco.pe/") {
		t.Error("post 33: the photo is not shown from Telegram's CDN")
	}
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	e := newEnv(t, widget.Config{})
	page := body(t, e.get(t, "/embed?channels=tmefeed_news"))
	var css string
	for _, l := range all(parse(t, page), tag("link")) {
		css = attr(l, "href")
	}
	for _, target := range []string{"/embed?channels=tmefeed_news", "/embed/posts?channels=tmefeed_news", "/embed/new", "/embed/new?channels=tmefeed_news",
		"/embed?channels=x", "/embed/nope", css} {
		r := e.get(t, target)
		csp := r.Header.Get("Content-Security-Policy")
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = val
		}
		for name, want := range map[string]string{
			"default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "connect-src": "'self'",
			"frame-ancestors": "*", "base-uri": "'none'",
		} {
			if directives[name] != want {
				t.Errorf("%s: %s %q, want %q (CSP %q)", target, name, directives[name], want, csp)
			}
		}
		img := strings.Fields(directives["img-src"])
		for _, want := range []string{"'self'", "https://*.telesco.pe", "https://telegram.org"} {
			if !strings.Contains(" "+directives["img-src"]+" ", " "+want+" ") {
				t.Errorf("%s: img-src %q lacks %s", target, img, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "data:") {
			t.Errorf("%s: CSP allows %q", target, csp)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: X-Content-Type-Options %q, Referrer-Policy %q", target, r.Header.Get("X-Content-Type-Options"), r.Header.Get("Referrer-Policy"))
		}
	}
}

func TestFrameAncestorsFromTheSetting(t *testing.T) {
	e := newEnv(t, widget.Config{FrameAncestors: []string{"'self'", "https://dash.example.com"}})
	for _, target := range []string{"/embed?channels=tmefeed_news", "/embed/new", "/embed?limit=0"} {
		csp := e.get(t, target).Header.Get("Content-Security-Policy")
		if !strings.HasSuffix(csp, "; frame-ancestors 'self' https://dash.example.com") {
			t.Errorf("%s: CSP %q", target, csp)
		}
	}
	// The snippet page shows the widget in a frame of the server's own
	// origin: 'self' is allowed whatever the list, unless it is * (which
	// allows it) or 'none' (the operator's choice, preview included).
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"https://dash.example.com"}, "'self' https://dash.example.com"},
		{[]string{"https://a.example", "https://b.example:8443"}, "'self' https://a.example https://b.example:8443"},
		{[]string{"https:"}, "'self' https:"},
		{[]string{"https://dash.example.com", "'self'"}, "https://dash.example.com 'self'"},
		{[]string{"*"}, "*"},
		{nil, "*"},
		{[]string{"'none'"}, "'none'"},
	} {
		h, err := widget.New(widget.Config{Feed: stubFeed{}, FrameAncestors: c.set})
		if err != nil {
			t.Fatalf("%q: %v", c.set, err)
		}
		for _, target := range []string{"/embed?channels=tmefeed_news", "/embed/new"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasSuffix(csp, "; frame-ancestors "+c.want) {
				t.Errorf("EMBED_FRAME_ANCESTORS %q, %s: CSP %q, want frame-ancestors %s", c.set, target, csp, c.want)
			}
		}
	}
	for _, bad := range [][]string{{"https://a.example; script-src *"}, {"'none'", "https://a.example"}, {"https://a.example,https://b.example"}, {"'unsafe-inline'"}} {
		if _, err := widget.New(widget.Config{Feed: stubFeed{}, FrameAncestors: bad}); err == nil {
			t.Errorf("frame ancestors %q accepted", bad)
		}
	}
}

// TestPageNeedsNothingTheCSPForbids: no inline script or style, no event
// handler attributes, no style attributes, and every image on a host the
// policy allows; otherwise the browser would block part of the page.
func TestPageNeedsNothingTheCSPForbids(t *testing.T) {
	e := newEnv(t, widget.Config{})
	for _, target := range []string{"/embed?channels=tmefeed_news,emoji_party,kanal_novostei,hadashot_today,retro_channel&limit=100", "/embed/new?channels=tmefeed_news"} {
		doc := parse(t, body(t, e.get(t, target)))
		var imgs int
		for _, n := range all(doc, func(*html.Node) bool { return true }) {
			for _, a := range n.Attr {
				if a.Key == "style" || strings.HasPrefix(a.Key, "on") {
					t.Errorf("%s: <%s %s=%q>", target, n.Data, a.Key, a.Val)
				}
			}
			switch n.Data {
			case "script":
				if attr(n, "src") == "" || n.FirstChild != nil {
					t.Errorf("%s: inline script", target)
				}
			case "style":
				t.Errorf("%s: inline <style>", target)
			case "img":
				imgs++
				u, err := url.Parse(attr(n, "src"))
				if err != nil || u.Scheme != "https" || !(strings.HasSuffix(u.Host, ".telesco.pe") || u.Host == "telegram.org") {
					t.Errorf("%s: image from %q", target, attr(n, "src"))
				}
			}
		}
		if strings.HasPrefix(target, "/embed?") && imgs < 20 {
			t.Errorf("%s: only %d images", target, imgs)
		}
	}
}

func TestBadParametersAnswer400(t *testing.T) {
	e := newEnv(t, widget.Config{})
	for target, want := range map[string]string{
		"/embed":                                            "channels: list at least one channel",
		"/embed?channels=":                                  "channels: list at least one channel",
		"/embed?channels=a!b":                               "channels:",
		"/embed?channels=tmefeed_news&limit=0":              "limit: want a whole number from 1 to 100",
		"/embed?channels=tmefeed_news&limit=abc":            "limit:",
		"/embed?channels=tmefeed_news&limit=5000":           "limit:",
		"/embed?channels=tmefeed_news&order=best":           "order: want newest or ranked",
		"/embed?channels=tmefeed_news&theme=neon":           "theme: want auto, light or dark",
		"/embed?channels=tmefeed_news&colour=red":           `unknown parameter "colour"`,
		"/embed?channels=a&channels=b":                      `"channels" is given 2 times`,
		"/embed?channels=tmefeed_news&mediaKinds=hologram":  `unknown kind "hologram"`,
		"/embed?channels=tmefeed_news&since=yesterday":      "since: want an RFC 3339",
		"/embed?channels=tmefeed_news&excludeReplies=maybe": "excludeReplies: want true or false",
		"/embed?channels=tmefeed_news&since=2026-05-01T00:00:00Z&until=2026-04-01T00:00:00Z": "since must be before until",
		"/embed/posts?channels=tmefeed_news&limit=-1":                                        "limit:",
	} {
		r := e.get(t, target)
		b := body(t, r)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s, want 400 HTML", target, r.StatusCode, r.Header.Get("Content-Type"))
		}
		if !strings.Contains(html.UnescapeString(b), want) {
			t.Errorf("%s: page does not say %q: %.400s", target, want, b)
		}
	}
	if r := e.get(t, "/embed/elsewhere"); r.StatusCode != http.StatusNotFound {
		t.Errorf("/embed/elsewhere: %d", r.StatusCode)
	}
	req := httptest.NewRequest(http.MethodPost, "/embed?channels=tmefeed_news", nil)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

func TestChannelsThatFailAreSaidNotDropped(t *testing.T) {
	e := newEnv(t, widget.Config{})
	r := e.get(t, "/embed?channels=tmefeed_news,nobody_here_404")
	b := html.UnescapeString(body(t, r))
	if r.StatusCode != http.StatusOK || !strings.Contains(b, "@nobody_here_404 could not be shown") {
		t.Errorf("%d: %.600s", r.StatusCode, b)
	}
}

// TestPollsCostNothingUntilTheFeedChanges: the fragment the page refreshes
// from answers 304 to its own ETag, and new content once a post is
// published or edited at the origin.
func TestPollsCostNothingUntilTheFeedChanges(t *testing.T) {
	e := newEnv(t, widget.Config{})
	const target = "/embed/posts?channels=tmefeed_news,hadashot_today&limit=5"
	r := e.get(t, target)
	first := body(t, r)
	etag := r.Header.Get("ETag")
	if r.StatusCode != http.StatusOK || etag == "" || r.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("%d ETag %q Cache-Control %q", r.StatusCode, etag, r.Header.Get("Cache-Control"))
	}
	if strings.Contains(first, "<html") || len(articles(t, first)) != 5 {
		t.Fatalf("the fragment is not 5 bare articles: %.300s", first)
	}
	r = e.get(t, target, "If-None-Match", etag)
	if r.StatusCode != http.StatusNotModified || body(t, r) != "" {
		t.Fatalf("unchanged feed: %d, want 304", r.StatusCode)
	}
	// The widget page names the same fragment and ETag, so its first poll is a 304.
	doc := parse(t, body(t, e.get(t, "/embed?channels=tmefeed_news,hadashot_today&limit=5")))
	main := all(doc, tag("main"))[0]
	if attr(main, "data-src") != target || attr(main, "data-etag") != etag {
		t.Errorf("page polls %q with ETag %q, want %q %q", attr(main, "data-src"), attr(main, "data-etag"), target, etag)
	}

	id := e.origin.PublishPost("tmefeed_news", "Fresh from the origin")
	r = e.get(t, target, "If-None-Match", etag)
	fresh := body(t, r)
	if r.StatusCode != http.StatusOK || r.Header.Get("ETag") == etag {
		t.Fatalf("after a post was published: %d ETag %q", r.StatusCode, r.Header.Get("ETag"))
	}
	arts := articles(t, fresh)
	if len(arts) != 5 || attr(arts[0], "data-key") != "tmefeed_news/"+strconv.Itoa(id) || !strings.Contains(text(arts[0]), "Fresh from the origin") {
		t.Fatalf("the new post is not first: %q", attr(arts[0], "data-key"))
	}

	// An edit keeps the post's key and changes its revision.
	rev := attr(arts[0], "data-rev")
	e.origin.EditPost("tmefeed_news", id, "Fresh, and corrected")
	arts = articles(t, body(t, e.get(t, target)))
	if attr(arts[0], "data-key") != "tmefeed_news/"+strconv.Itoa(id) || attr(arts[0], "data-rev") == rev || !strings.Contains(text(arts[0]), "Fresh, and corrected") || !strings.Contains(text(arts[0]), "edited") {
		t.Errorf("edited post: key %q rev %q (was %q): %q", attr(arts[0], "data-key"), attr(arts[0], "data-rev"), rev, text(arts[0]))
	}
}

func TestAssetsAreCachedForAYearByName(t *testing.T) {
	e := newEnv(t, widget.Config{})
	doc := parse(t, body(t, e.get(t, "/embed?channels=tmefeed_news")))
	var refs []string
	for _, n := range all(doc, func(n *html.Node) bool { return n.Data == "link" || n.Data == "script" }) {
		refs = append(refs, attr(n, "href")+attr(n, "src"))
	}
	if len(refs) != 2 {
		t.Fatalf("assets %q", refs)
	}
	for _, ref := range refs {
		r := e.get(t, ref)
		b := body(t, r)
		ct := r.Header.Get("Content-Type")
		if r.StatusCode != http.StatusOK || len(b) < 1000 || !(strings.HasPrefix(ct, "text/css") || strings.HasPrefix(ct, "text/javascript")) {
			t.Errorf("%s: %d %q %d bytes", ref, r.StatusCode, ct, len(b))
		}
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q", ref, cc)
		}
		if r2 := e.get(t, ref, "If-None-Match", r.Header.Get("ETag")); r2.StatusCode != http.StatusNotModified {
			t.Errorf("%s: revalidation answered %d", ref, r2.StatusCode)
		}
		if b := body(t, e.get(t, ref+"x")); !strings.Contains(b, "no such asset") {
			t.Errorf("%sx: %.100s", ref, b)
		}
	}
}

func TestSnippetPageWritesWorkingIframeCode(t *testing.T) {
	e := newEnv(t, widget.Config{})
	r := e.get(t, "/embed/new")
	if r.StatusCode != http.StatusOK || len(all(parse(t, body(t, r)), tag("form"))) != 1 {
		t.Fatalf("/embed/new: %d, no form", r.StatusCode)
	}

	r = e.get(t, "/embed/new?channels=@TMEFEED_NEWS,+hadashot_today&order=ranked&theme=dark&limit=7&width=100%25&height=640&excludeService=true")
	doc := parse(t, body(t, r))
	areas := all(doc, tag("textarea"))
	if r.StatusCode != http.StatusOK || len(areas) != 1 {
		t.Fatalf("%d, %d textareas", r.StatusCode, len(areas))
	}
	code := text(areas[0])
	frames := all(parse(t, code), tag("iframe"))
	if len(frames) != 1 {
		t.Fatalf("code %q holds no iframe", code)
	}
	f := frames[0]
	if attr(f, "width") != "100%" || attr(f, "height") != "640" || attr(f, "title") != "Telegram: @tmefeed_news, @hadashot_today" {
		t.Errorf("iframe %q", code)
	}
	src, err := url.Parse(attr(f, "src"))
	if err != nil || src.Scheme != "http" || src.Host != "example.com" || src.Path != "/embed" {
		t.Fatalf("iframe src %q", attr(f, "src"))
	}
	// The preview shows the same widget.
	if p := all(doc, func(n *html.Node) bool { return attr(n, "id") == "tf-preview" }); len(p) != 1 || attr(p[0], "src") != src.String() {
		t.Errorf("preview frame does not show %s", src)
	}
	w := e.get(t, src.RequestURI())
	page := body(t, w)
	if w.StatusCode != http.StatusOK {
		t.Fatalf("the code's src answers %d: %.300s", w.StatusCode, page)
	}
	wdoc := parse(t, page)
	if attr(all(wdoc, tag("html"))[0], "data-theme") != "dark" || len(all(wdoc, tag("article"))) != 7 {
		t.Errorf("the code's widget: theme %q, %d articles", attr(all(wdoc, tag("html"))[0], "data-theme"), len(all(wdoc, tag("article"))))
	}
	for _, a := range all(wdoc, tag("article")) {
		if all(a, func(n *html.Node) bool { return hasClass(n, "tf-service") }) != nil {
			t.Errorf("excludeService was dropped: %s is a service message", attr(a, "data-key"))
		}
	}

	r = e.get(t, "/embed/new?channels=no!&width=10")
	b := body(t, r)
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(html.UnescapeString(b), "channels:") || len(all(parse(t, b), tag("textarea"))) != 1 {
		t.Errorf("bad snippet input: %d %.300s", r.StatusCode, b)
	}
}

// stubFeed serves one fixed page; it lets a test hand the widget a post
// whose HTML no recorded page has.
type stubFeed struct{ page *feed.Page }

func (s stubFeed) Feed(context.Context, feed.Request) (*feed.Page, error) {
	if s.page == nil {
		return nil, errors.New("no page")
	}
	return s.page, nil
}
func (stubFeed) Rendered(_ *feed.Page, _ string, render func() ([]byte, error)) ([]byte, error) {
	return render()
}
func (stubFeed) MaxChannels() int { return 100 }

func TestHostilePostIsInertOnThePage(t *testing.T) {
	post := &parser.Post{ID: 7, Channel: "evil_channel", Content: parser.PostContent{
		Text: &parser.Text{HTML: `<b>bold</b><script>alert(1)</script><img src=x onerror=alert(1)><a href="javascript:alert(1)">j</a>` +
			`<iframe src="https://evil.example/"></iframe><i style="width:expression(alert(1))">e</i></div></article><b>open`},
		PreviewLink: &parser.PreviewLink{Title: "t", URL: "javascript:alert(1)", Thumb: "https://evil.example/x.png",
			Description: &parser.Rich{HTML: `<svg onload=alert(1)>x`}},
		Inline: []parser.Inline{{Title: "go", URL: "data:text/html,<script>alert(1)</script>"}},
		Media:  []parser.Media{{Type: parser.MediaImage, URL: "javascript:alert(1)"}},
	}, Footer: parser.Footer{Date: parser.Date{String: "2026-01-01T00:00:00+00:00", Unix: 1767225600}}}
	ch := &parser.Channel{Username: "evil_channel", Title: parser.Rich{String: `<script>alert(1)</script>`}, Avatar: "javascript:alert(1)"}
	h, err := widget.New(widget.Config{Feed: stubFeed{page: &feed.Page{Key: "k", Items: []feed.Item{{Post: post, Channel: ch}}}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/embed?channels=evil_channel", nil))
	page := rec.Body.String()
	doc := parse(t, page)
	for _, n := range all(doc, func(*html.Node) bool { return true }) {
		switch n.Data {
		case "iframe", "svg", "style":
			t.Errorf("<%s> on the page", n.Data)
		case "script":
			if !strings.HasPrefix(attr(n, "src"), "/embed/assets/") {
				t.Errorf("a script that is not the widget's: %q", attr(n, "src"))
			}
		}
		for _, a := range n.Attr {
			v := strings.ToLower(a.Val)
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" || strings.Contains(v, "javascript:") || strings.Contains(v, "data:") || strings.Contains(v, "evil.example") {
				t.Errorf("<%s %s=%q> on the page", n.Data, a.Key, a.Val)
			}
		}
	}
	arts := all(doc, tag("article"))
	if len(arts) != 1 || len(all(arts[0], tag("footer"))) != 1 {
		t.Fatalf("the post's markup escaped its article: %d articles", len(arts))
	}
	if !strings.Contains(text(arts[0]), "bold") || !strings.Contains(text(arts[0]), "<script>alert(1)</script>") {
		t.Errorf("text lost, or the title not shown as text: %q", text(arts[0]))
	}
}

// TestPageSubscribesToExactlyItsFeed: the page names the subscription it
// opens, with its channels and the same filter its /embed parameters
// give its posts; order and limit stay the refetch's.
func TestPageSubscribesToExactlyItsFeed(t *testing.T) {
	e := newEnv(t, widget.Config{Subscribe: "/graphql"})
	const target = "/embed?channels=TmeFeed_News,@hadashot_today&order=ranked&limit=7&mediaKinds=image,round_video&hashtags=news,%23x" +
		"&query=+hello+&since=2026-01-01T00:00:00Z&until=2026-06-01T00:00:00%2B02:00&excludeReplies=true&excludeService=1&theme=dark"
	main := all(parse(t, body(t, e.get(t, target))), tag("main"))[0]
	if attr(main, "data-live") != "/graphql" {
		t.Fatalf("data-live %q", attr(main, "data-live"))
	}
	var req struct {
		Query         string `json:"query"`
		OperationName string `json:"operationName"`
		Variables     struct {
			Channels []string       `json:"channels"`
			Filter   map[string]any `json:"filter"`
		} `json:"variables"`
	}
	if err := json.Unmarshal([]byte(attr(main, "data-live-body")), &req); err != nil {
		t.Fatalf("data-live-body: %v", err)
	}
	if !strings.HasPrefix(req.Query, "subscription WidgetUpdates(") || !strings.Contains(req.Query, "feedUpdates(channels: $channels, filter: $filter)") {
		t.Errorf("document %q", req.Query)
	}
	if got := strings.Join(req.Variables.Channels, ","); got != "tmefeed_news,hadashot_today" {
		t.Errorf("channels %q", got)
	}
	want := map[string]any{
		"mediaKinds": []any{"IMAGE", "ROUND_VIDEO"}, "hashtags": []any{"news", "#x"}, "query": "hello",
		"since": "2026-01-01T00:00:00Z", "until": "2026-06-01T00:00:00+02:00", "excludeReplies": true, "excludeService": true,
	}
	if !reflect.DeepEqual(req.Variables.Filter, want) {
		t.Errorf("filter %v, want %v", req.Variables.Filter, want)
	}
	// No filter: an empty one, which keeps every post.
	main = all(parse(t, body(t, e.get(t, "/embed?channels=tmefeed_news"))), tag("main"))[0]
	if b := attr(main, "data-live-body"); !strings.Contains(b, `"variables":{"channels":["tmefeed_news"],"filter":{}}`) {
		t.Errorf("unfiltered: %s", b)
	}
	// Channels that do not exist, or are not channels, are left out: the
	// server would refuse the subscription for them. One that fails for
	// now stays. With none left, the page polls only.
	e.origin.SetFault("/s/emoji_party", fixtures.Fault{Status: http.StatusBadGateway})
	main = all(parse(t, body(t, e.get(t, "/embed?channels=tmefeed_news,nobody_here_404,emoji_party,jane_doe_writer"))), tag("main"))[0]
	if b := attr(main, "data-live-body"); !strings.Contains(b, `"channels":["tmefeed_news","emoji_party"]`) {
		t.Errorf("with missing channels: %s", b)
	}
	main = all(parse(t, body(t, e.get(t, "/embed?channels=nobody_here_404"))), tag("main"))[0]
	if b := attr(main, "data-live-body"); b != "" {
		t.Errorf("no channel to watch: %s", b)
	}
	// Without a subscription endpoint the page polls only.
	plain := newEnv(t, widget.Config{})
	main = all(parse(t, body(t, plain.get(t, "/embed?channels=tmefeed_news"))), tag("main"))[0]
	if attr(main, "data-live") != "" || attr(main, "data-live-body") != "" {
		t.Errorf("a widget without Subscribe names a stream: %q", attr(main, "data-live"))
	}
}

// TestAvatarsHaveAStandIn: every post's header holds the channel title's
// first letter on a circle coloured by the username, under the picture,
// so a picture that is missing or cannot load leaves no gap; channels of
// different names tend to get different colours.
func TestAvatarsHaveAStandIn(t *testing.T) {
	e := newEnv(t, widget.Config{})
	colours := map[string]string{}
	for _, a := range articles(t, body(t, e.get(t, "/embed?channels=tmefeed_news,hadashot_today,kanal_novostei,emoji_party&limit=100"))) {
		avatars := all(a, func(n *html.Node) bool { return hasClass(n, "tf-avatar") })
		if len(avatars) != 1 {
			t.Fatalf("%s: %d avatars", attr(a, "data-key"), len(avatars))
		}
		av := avatars[0]
		initial := strings.TrimSpace(text(av))
		if n := len([]rune(initial)); n != 1 {
			t.Errorf("%s: initial %q", attr(a, "data-key"), initial)
		}
		var colour string
		for _, c := range strings.Fields(attr(av, "class")) {
			if strings.HasPrefix(c, "tf-c") {
				colour = c
			}
		}
		ch, _, _ := strings.Cut(attr(a, "data-key"), "/")
		if prev, ok := colours[ch]; colour == "" || ok && prev != colour {
			t.Errorf("%s: colour %q (before: %q)", ch, colour, prev)
		}
		colours[ch] = colour
	}
	distinct := map[string]bool{}
	for _, c := range colours {
		distinct[c] = true
	}
	if len(colours) != 4 || len(distinct) < 2 {
		t.Errorf("colours by channel %v", colours)
	}
}

// With PUBLIC_URL set, the posts' pictures, video thumbnails and files are
// linked through the service's /media redirects, which outlive Telegram's
// CDN links, and the policy lets the page load images from there.
func TestMediaLinkedThroughPublicURL(t *testing.T) {
	e := newEnv(t, widget.Config{PublicURL: "https://feeds.example/"})
	for _, target := range []string{"/embed?channels=tmefeed_news&limit=30", "/embed/posts?channels=tmefeed_news&limit=30"} {
		r := e.get(t, target)
		page := body(t, r)
		byKey := map[string]*html.Node{}
		for _, a := range articles(t, page) {
			byKey[attr(a, "data-key")] = a
		}
		srcs := func(id, class, el, at string) []string {
			var out []string
			for _, box := range all(byKey["tmefeed_news/"+id], func(n *html.Node) bool { return hasClass(n, class) }) {
				for _, n := range all(box, tag(el)) {
					out = append(out, attr(n, at))
				}
			}
			if len(out) == 0 {
				t.Errorf("%s: post %s has no .%s <%s>", target, id, class, el)
			}
			return out
		}
		want := map[string][]string{
			"photo":    {"https://feeds.example/media/tmefeed_news/33/0"},
			"album":    {"https://feeds.example/media/tmefeed_news/35/0", "https://feeds.example/media/tmefeed_news/35/1", "https://feeds.example/media/tmefeed_news/35/2", "https://feeds.example/media/tmefeed_news/35/3"},
			"video":    {"https://feeds.example/media/tmefeed_news/42/0?thumb=1"},
			"document": {"https://feeds.example/media/tmefeed_news/45/0"},
		}
		got := map[string][]string{
			"photo":    srcs("33", "tf-photo", "img", "src"),
			"album":    srcs("35", "tf-photo", "img", "src"),
			"video":    srcs("42", "tf-video", "img", "src"),
			"document": nil,
		}
		for _, a := range all(byKey["tmefeed_news/45"], tag("a")) {
			if hasClass(a, "tf-file") {
				got["document"] = append(got["document"], attr(a, "href"))
			}
		}
		for k, w := range want {
			if strings.Join(got[k], " ") != strings.Join(w, " ") {
				t.Errorf("%s: %s linked as %q, want %q", target, k, got[k], w)
			}
		}
		// Every picture is one the policy lets the page load.
		var imgSrc []string
		for _, d := range strings.Split(r.Header.Get("Content-Security-Policy"), ";") {
			if name, val, _ := strings.Cut(strings.TrimSpace(d), " "); name == "img-src" {
				imgSrc = strings.Fields(val)
			}
		}
		if !slices.Contains(imgSrc, "https://feeds.example") || !slices.Contains(imgSrc, "https://*.telesco.pe") {
			t.Errorf("%s: img-src %q lacks the public URL's origin or Telegram's CDN (where /media redirects)", target, imgSrc)
		}
		for _, n := range all(parse(t, page), tag("img")) {
			u, err := url.Parse(attr(n, "src"))
			if err != nil || u.Scheme != "https" || !(u.Host == "feeds.example" || strings.HasSuffix(u.Host, ".telesco.pe") || u.Host == "telegram.org") {
				t.Errorf("%s: image from %q", target, attr(n, "src"))
			}
		}
	}
	for _, bad := range []string{"feeds.example", "ftp://feeds.example", "https://feeds.example/?x=1", "https://"} {
		if _, err := widget.New(widget.Config{Feed: stubFeed{}, PublicURL: bad}); err == nil {
			t.Errorf("PublicURL %q accepted", bad)
		}
	}
}

// The page and its posts are sent compressed to a client that accepts it,
// decode to the identity answer, and revalidate with the compressed
// answer's weak ETag (If-None-Match compares weakly), GET and HEAD alike.
func TestPageAndPostsCompressed(t *testing.T) {
	enc, err := httpcache.New(httpcache.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, widget.Config{Encoder: enc})
	for _, target := range []string{"/embed?channels=tmefeed_news,hadashot_today&limit=20", "/embed/posts?channels=tmefeed_news,hadashot_today&limit=20"} {
		plain := e.get(t, target)
		identity := body(t, plain)
		strong := plain.Header.Get("ETag")
		if plain.StatusCode != http.StatusOK || plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Vary") != "Accept-Encoding" || strings.HasPrefix(strong, "W/") {
			t.Fatalf("%s without Accept-Encoding: %d, Content-Encoding %q, Vary %q, ETag %q", target, plain.StatusCode, plain.Header.Get("Content-Encoding"), plain.Header.Get("Vary"), strong)
		}
		for _, c := range []struct{ ae, want string }{{"gzip", "gzip"}, {"zstd", "zstd"}, {"gzip, deflate, br, zstd", "zstd"}, {"br", ""}} {
			for range 2 { // the second from the kept form
				r := e.get(t, target, "Accept-Encoding", c.ae)
				raw, _ := io.ReadAll(r.Body)
				if r.StatusCode != http.StatusOK || r.Header.Get("Content-Encoding") != c.want || r.Header.Get("Vary") != "Accept-Encoding" || r.Header.Get("Content-Length") != strconv.Itoa(len(raw)) {
					t.Fatalf("%s AE %q: %d, Content-Encoding %q, Vary %q, Content-Length %s for %d bytes", target, c.ae, r.StatusCode, r.Header.Get("Content-Encoding"), r.Header.Get("Vary"), r.Header.Get("Content-Length"), len(raw))
				}
				wantTag := strong
				if c.want != "" {
					wantTag = "W/" + strong
					if len(raw) > len(identity)/3 {
						t.Errorf("%s AE %q: %d bytes from %d", target, c.ae, len(raw), len(identity))
					}
				}
				if r.Header.Get("ETag") != wantTag {
					t.Errorf("%s AE %q: ETag %q, want %q", target, c.ae, r.Header.Get("ETag"), wantTag)
				}
				if got := string(httpcachetest.Decode(t, c.want, raw)); got != identity {
					t.Errorf("%s AE %q: does not decode to the identity answer", target, c.ae)
				}
				// The weak tag revalidates, compressed or not.
				for _, ae := range []string{c.ae, ""} {
					nm := e.get(t, target, "Accept-Encoding", ae, "If-None-Match", r.Header.Get("ETag"))
					if nm.StatusCode != http.StatusNotModified || body(t, nm) != "" || nm.Header.Get("Vary") != "Accept-Encoding" {
						t.Errorf("%s AE %q If-None-Match %s: %d, Vary %q; want 304", target, ae, r.Header.Get("ETag"), nm.StatusCode, nm.Header.Get("Vary"))
					}
				}
				req := httptest.NewRequest(http.MethodHead, target, nil)
				req.Header.Set("Accept-Encoding", c.ae)
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				for _, k := range []string{"Content-Encoding", "Etag", "Vary", "Content-Length"} {
					if rec.Header().Get(k) != r.Header.Get(k) {
						t.Errorf("HEAD %s AE %q: %s %q, GET has %q", target, c.ae, k, rec.Header().Get(k), r.Header.Get(k))
					}
				}
			}
		}
	}
	// Off (no Encoder): sent as they are, not varying.
	off := newEnv(t, widget.Config{})
	r := off.get(t, "/embed/posts?channels=tmefeed_news", "Accept-Encoding", "gzip")
	if r.Header.Get("Content-Encoding") != "" || r.Header.Get("Vary") != "" {
		t.Errorf("without an Encoder: Content-Encoding %q, Vary %q", r.Header.Get("Content-Encoding"), r.Header.Get("Vary"))
	}
}

// The assets every widget loads, and the snippet page, are sent compressed
// to a client that accepts it, like the page and its posts: each asset's
// forms are made once, decode to the identity bytes and revalidate by
// their ETags; a HEAD gets the headers of the same GET.
func TestAssetsAndSnippetCompressed(t *testing.T) {
	enc, err := httpcache.New(httpcache.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, widget.Config{Encoder: enc})
	var assets []string
	for _, page := range []string{"/embed?channels=tmefeed_news", "/embed/new"} {
		for _, n := range all(parse(t, body(t, e.get(t, page))), func(n *html.Node) bool { return n.Data == "link" || n.Data == "script" }) {
			if ref := attr(n, "href") + attr(n, "src"); !slices.Contains(assets, ref) {
				assets = append(assets, ref)
			}
		}
	}
	if len(assets) != 3 {
		t.Fatalf("assets %q, want the CSS and both scripts", assets)
	}
	for _, target := range append(assets, "/embed/new", "/embed/new?channels=tmefeed_news,hadashot_today&theme=dark") {
		plain := e.get(t, target)
		identity := body(t, plain)
		if plain.StatusCode != http.StatusOK || plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s without Accept-Encoding: %d, Content-Encoding %q, Vary %q", target, plain.StatusCode, plain.Header.Get("Content-Encoding"), plain.Header.Get("Vary"))
		}
		isAsset := strings.HasPrefix(target, "/embed/assets/")
		for _, c := range []struct{ ae, want string }{{"gzip", "gzip"}, {"zstd", "zstd"}, {"gzip, zstd", "zstd"}, {"identity", ""}} {
			r := e.get(t, target, "Accept-Encoding", c.ae)
			raw, _ := io.ReadAll(r.Body)
			if r.StatusCode != http.StatusOK || r.Header.Get("Content-Encoding") != c.want || r.Header.Get("Vary") != "Accept-Encoding" || r.Header.Get("Content-Length") != strconv.Itoa(len(raw)) {
				t.Errorf("%s AE %q: %d, Content-Encoding %q, Vary %q, Content-Length %s for %d bytes", target, c.ae, r.StatusCode, r.Header.Get("Content-Encoding"), r.Header.Get("Vary"), r.Header.Get("Content-Length"), len(raw))
				continue
			}
			if got := string(httpcachetest.Decode(t, c.want, raw)); got != identity {
				t.Errorf("%s AE %q: does not decode to the identity answer", target, c.ae)
			}
			if c.want != "" && len(raw) > len(identity)*2/3 {
				t.Errorf("%s AE %q: %d bytes from %d", target, c.ae, len(raw), len(identity))
			}
			req := httptest.NewRequest(http.MethodHead, target, nil)
			req.Header.Set("Accept-Encoding", c.ae)
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			for _, k := range []string{"Content-Encoding", "Etag", "Vary", "Content-Length", "Content-Type"} {
				if rec.Header().Get(k) != r.Header.Get(k) {
					t.Errorf("HEAD %s AE %q: %s %q, GET has %q", target, c.ae, k, rec.Header().Get(k), r.Header.Get(k))
				}
			}
			if !isAsset {
				continue
			}
			tag := r.Header.Get("ETag")
			if (c.want != "") != strings.HasPrefix(tag, "W/") || strings.TrimPrefix(tag, "W/") != plain.Header.Get("ETag") {
				t.Errorf("%s AE %q: ETag %q, identity's %q", target, c.ae, tag, plain.Header.Get("ETag"))
			}
			// Either form's tag revalidates, in any coding.
			for _, ae := range []string{c.ae, ""} {
				nm := e.get(t, target, "Accept-Encoding", ae, "If-None-Match", tag)
				if nm.StatusCode != http.StatusNotModified || body(t, nm) != "" || nm.Header.Get("Vary") != "Accept-Encoding" || nm.Header.Get("Content-Encoding") != "" {
					t.Errorf("%s AE %q If-None-Match %s: %d, Vary %q, Content-Encoding %q; want 304", target, ae, tag, nm.StatusCode, nm.Header.Get("Vary"), nm.Header.Get("Content-Encoding"))
				}
			}
		}
	}
}

// A name in someone's script stands beside the widget's own text (a size,
// a duration, a count): each name is isolated (<bdi>) and the widget's
// text is outside it, in no element whose direction the name would set,
// so a right-to-left name reads as a whole and the size stays after it.
// (Laid out in Chromium by e2e's TestWidgetRightToLeftInChromium.)
func TestUserTextIsolatedFromOurs(t *testing.T) {
	post := &parser.Post{ID: 9, Channel: "hadashot_today", Content: parser.PostContent{
		Media: []parser.Media{
			{Type: parser.MediaDocument, URL: "https://t.me/hadashot_today/9", Title: "לוח_אירועים_יוני_2026.pdf", Extra: "860 KB"},
			{Type: parser.MediaAudio, URL: "https://t.me/hadashot_today/9", Title: "שיר הבוקר", Extra: "להקת הנמל", Duration: &parser.Duration{Formatted: "3:05", Raw: 185}},
		},
		Poll: &parser.Poll{Question: "מה דעתכם?", Type: "סקר אנונימי", Votes: "1.5K", Options: []parser.PollOption{{Name: "כן", Percent: 60}, {Name: "לא", Percent: 40}}},
	}, Footer: parser.Footer{Views: "2.4K", Author: &parser.Rich{String: "עורכת משמרת"}, Edited: true, Date: parser.Date{String: "2026-06-17T11:00:00+00:00", Unix: 1781694000}}}
	ch := &parser.Channel{Username: "hadashot_today", Title: parser.Rich{String: "חדשות היום"}}
	h, err := widget.New(widget.Config{Feed: stubFeed{page: &feed.Page{Key: "k", Items: []feed.Item{{Post: post, Channel: ch}}}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/embed/posts?channels=hadashot_today", nil))
	checkIsolated(t, rec.Body.String(),
		[]string{"לוח_אירועים_יוני_2026.pdf", "שיר הבוקר", "להקת הנמל", "סקר אנונימי", "כן", "לא", "עורכת משמרת", "מה דעתכם?", "חדשות היום"},
		[]string{"· 860 KB", "· 3:05", "· 1.5K votes", "60%", "2.4K views", "edited"})

	// The recorded Hebrew channel's file, as t.me shows it.
	e := newEnv(t, widget.Config{})
	checkIsolated(t, body(t, e.get(t, "/embed/posts?channels=hadashot_today&limit=100")), []string{"לוח_אירועים_יוני_2026.pdf"}, []string{"· 860 KB"})
}

// checkIsolated: each of names is the whole text of an isolating element
// (<bdi>, or one with dir); each of ours is in none.
func checkIsolated(t *testing.T, page string, names, ours []string) {
	t.Helper()
	doc := parse(t, page)
	isolating := func(n *html.Node) bool {
		return n.Type == html.ElementNode && (n.Data == "bdi" || attr(n, "dir") != "")
	}
	for _, name := range names {
		if len(all(doc, func(n *html.Node) bool { return isolating(n) && strings.TrimSpace(text(n)) == name })) == 0 {
			t.Errorf("%q is not isolated on its own", name)
		}
	}
	var texts []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			texts = append(texts, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, s := range ours {
		found := false
		for _, tn := range texts {
			if !strings.Contains(tn.Data, s) {
				continue
			}
			found = true
			for p := tn.Parent; p != nil; p = p.Parent {
				if isolating(p) {
					t.Errorf("%q is inside <%s dir=%q> holding %q: it takes that text's direction", s, p.Data, attr(p, "dir"), text(p))
					break
				}
			}
		}
		if !found {
			t.Errorf("%q not on the page", s)
		}
	}
}

// An origin serving the pages' pictures itself (the demo's) is one the
// page loads images from when Config.ImageOrigins names it: its pictures
// show and the policy allows them. Without it they are left out, as any
// image the policy would block.
func TestImagesFromAnOriginNamedInTheConfig(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	ts.Config.Handler = fixtures.NewOrigin(fixtures.OriginOptions{MediaBase: base})
	ts.Start()
	t.Cleanup(ts.Close)
	client, err := origin.New(origin.Config{BaseURL: ts.URL, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	fs, err := feed.New(feed.Config{Pages: pages.New(pages.Config{Cache: mem, Origin: client})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Close)
	for _, named := range []bool{true, false} {
		cfg := widget.Config{Feed: fs}
		if named {
			cfg.ImageOrigins = []string{base}
		}
		h, err := widget.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/embed/posts?channels=tmefeed_news,kanal_novostei&limit=40", nil))
		r := rec.Result()
		imgs := all(parse(t, body(t, r)), tag("img"))
		avatars := 0
		for _, n := range imgs {
			if !strings.HasPrefix(attr(n, "src"), base+fixtures.MediaPath) {
				t.Errorf("named %v: image from %q", named, attr(n, "src"))
			}
			if n.Parent != nil && hasClass(n.Parent, "tf-avatar") {
				avatars++
			}
		}
		csp := r.Header.Get("Content-Security-Policy")
		if named {
			if len(imgs) < 10 || avatars == 0 {
				t.Errorf("%d images, %d avatars: want the pages' pictures and avatars", len(imgs), avatars)
			}
			if !strings.Contains(csp, "img-src 'self' https://telegram.org") || !strings.Contains(csp, " "+base+";") {
				t.Errorf("img-src does not allow %s: %s", base, csp)
			}
		} else if len(imgs) != 0 || strings.Contains(csp, base) {
			t.Errorf("origin not named: %d images, policy %s", len(imgs), csp)
		}
	}
	for _, bad := range []string{"127.0.0.1:8081", "ftp://127.0.0.1", "http://127.0.0.1/cdn", "http://user@127.0.0.1"} {
		if _, err := widget.New(widget.Config{Feed: stubFeed{}, ImageOrigins: []string{bad}}); err == nil {
			t.Errorf("ImageOrigins %q accepted", bad)
		}
	}
}

// The snippet page suggests Config.ExampleChannels, or durov and telegram.
func TestSnippetPageSuggestsTheExampleChannels(t *testing.T) {
	for _, c := range []struct {
		examples []string
		want     string
	}{{nil, "durov, telegram"}, {[]string{"tmefeed_news", "kanal_novostei"}, "tmefeed_news, kanal_novostei"}} {
		h, err := widget.New(widget.Config{Feed: stubFeed{}, ExampleChannels: c.examples})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/embed/new", nil))
		var got []string
		for _, n := range all(parse(t, body(t, rec.Result())), tag("input")) {
			if attr(n, "name") == "channels" {
				got = append(got, attr(n, "placeholder"))
			}
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("examples %v: placeholder %q, want %q", c.examples, got, c.want)
		}
	}
}
