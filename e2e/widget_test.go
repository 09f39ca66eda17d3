//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/widget"
)

// Settings of the widget tests' servers.
var (
	// pollOnly: the cache off, so nothing sends live updates and the
	// widget polls, every second.
	pollOnly = []string{"--cache-mode", "off", "--embed-poll-interval", "1s"}
	// liveOnly: the normal cache (a 10 s refresh point; the updater
	// reloads watched channels' pages about every 7.5 s) and a poll so
	// slow (its safety net: 40 minutes) that whatever reaches the widget
	// within the test came over the event stream.
	liveOnly = []string{"--cache-mode", "normal", "--updater", "on", "--embed-poll-interval", "10m"}
)

// widgetServer runs the fixture origin in this process (so the test can
// publish posts on it) and tmefeed against it with the given settings.
func widgetServer(t *testing.T, ctx context.Context, settings []string) (*fixtures.Origin, string) {
	t.Helper()
	o := fixtures.NewOrigin(fixtures.OriginOptions{})
	ts := httptest.NewServer(o)
	t.Cleanup(ts.Close)
	return o, startServer(t, ctx, append([]string{"--origin", ts.URL}, settings...)...)
}

// requestLog records every request the browser makes. Requests to the
// test server go on. Images on the Telegram CDN hosts the widget's policy
// allows (widget.ImageHosts: the fixtures' photos and avatars point there,
// as t.me's do) are answered inside the browser with a stub picture, or a
// 404 while failImages is set, so nothing leaves the machine; any other
// request is failed by the browser before it leaves (Fetch interception)
// and recorded, and assertOnlyLocal fails the test for it.
type requestLog struct {
	mu         sync.Mutex
	allowed    []string // hosts requests may go to
	local      []string // "Type URL" of requests let through
	cdn        []string // "Type URL" of CDN images answered in the browser
	blocked    []string // "Type URL" of requests failed
	failImages bool     // answer CDN images 404 instead of the stub
}

func (l *requestLog) allow(host string) {
	l.mu.Lock()
	l.allowed = append(l.allowed, host)
	l.mu.Unlock()
}

// setFailImages makes the CDN images answered from now on fail (404) or load.
func (l *requestLog) setFailImages(fail bool) {
	l.mu.Lock()
	l.failImages = fail
	l.mu.Unlock()
}

// seen reports whether a request of typ whose URL starts with prefix went through.
func (l *requestLog) seen(typ, prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.local {
		if strings.HasPrefix(r, typ+" "+prefix) {
			return true
		}
	}
	return false
}

// cdnImage reports whether u is on a host of widget.ImageHosts.
func cdnImage(u *url.URL) bool {
	if u.Scheme != "https" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range widget.ImageHosts {
		h = strings.TrimPrefix(h, "https://")
		if wild, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+wild) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// stubImage is the picture CDN images are answered with: 320×200, a flat
// blue-grey, so a screenshot shows where pictures are.
func stubImage(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 320, 200))
	draw.Draw(img, img.Bounds(), &image.Uniform{C: color.RGBA{R: 0x9f, G: 0xb3, B: 0xc8, A: 0xff}}, image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// newBrowser starts Debian's Chromium headless with a fresh profile,
// intercepting every request as requestLog says.
func newBrowser(t *testing.T, ctx context.Context, serverHost string) (context.Context, *requestLog) {
	t.Helper()
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumBinary(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1000, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	log := &requestLog{allowed: []string{serverHost}}
	stub := stubImage(t)
	// The stub is not kept: a later page that fails images asks again.
	headers := func(ctype string) []*fetch.HeaderEntry {
		return []*fetch.HeaderEntry{{Name: "Content-Type", Value: ctype}, {Name: "Cache-Control", Value: "no-store"}}
	}
	err := chromedp.Listen(bctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		entry := string(e.ResourceType) + " " + e.Request.URL
		u, err := url.Parse(e.Request.URL)
		log.mu.Lock()
		var answer func() error
		switch {
		case err == nil && slices.Contains(log.allowed, u.Host):
			log.local = append(log.local, entry)
			answer = func() error {
				_, err := chromedp.Call(bctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
				return err
			}
		case err == nil && e.ResourceType == network.ResourceTypeImage && cdnImage(u):
			log.cdn = append(log.cdn, entry)
			p := fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: http.StatusOK, ResponseHeaders: headers("image/png"), Body: stub}
			if log.failImages {
				p = fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: http.StatusNotFound, ResponseHeaders: headers("text/plain"), Body: []byte("not found")}
			}
			answer = func() error {
				_, err := chromedp.Call(bctx, fetch.FulfillRequest, p)
				return err
			}
		default:
			log.blocked = append(log.blocked, entry)
			answer = func() error {
				_, err := chromedp.Call(bctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
				return err
			}
		}
		log.mu.Unlock()
		// Commands cannot be sent from the listener itself.
		go func() { _ = answer() }()
	})
	if err != nil {
		t.Fatalf("start chromium (install Debian's chromium package, or set CHROMIUM): %v", err)
	}
	if _, err := chromedp.Call(bctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		t.Fatal(err)
	}
	return bctx, log
}

func artifactsDir(t *testing.T) string {
	dir := os.Getenv("E2E_ARTIFACTS")
	if dir == "" {
		dir = "artifacts"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func shoot(t *testing.T, ctx context.Context, path string, width int64) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 1100), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func waitJS(t *testing.T, ctx context.Context, cond string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok := eval[bool](t, ctx, `(() => { try { return !!(`+cond+`); } catch (e) { return false; } })()`)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", cond)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fetchSpy notes every fetch() a page makes (window.__fetches: method,
// URL and Accept), installed before the page's own scripts run.
const fetchSpy = `(() => {
  window.__fetches = [];
  const native = window.fetch;
  window.fetch = function (input, init) {
    const h = new Headers((init && init.headers) || {});
    window.__fetches.push({method: (init && init.method) || 'GET', url: String(input), accept: h.get('Accept') || ''});
    return native.apply(this, arguments);
  };
})()`

// TestWidgetLiveInChromium loads the widget in headless Chromium, checks it
// shows the posts and only talks to tmefeed, and saves screenshots of both
// themes and of a 320 px wide frame. Then, with polling set to minutes,
// it publishes, edits and removes posts at the origin: each change reaches
// the open widget over its feedUpdates event stream, without a reload.
func TestWidgetLiveInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o, base := widgetServer(t, ctx, liveOnly)
	host := strings.TrimPrefix(base, "http://")
	artifacts := artifactsDir(t)
	bctx, log := newBrowser(t, ctx, host)
	if _, err := chromedp.Call(bctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: fetchSpy}); err != nil {
		t.Fatal(err)
	}

	// The page reports what its Content-Security-Policy blocked.
	const watchCSP = `window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`
	for _, theme := range []string{"light", "dark"} {
		// Light: the pictures load (the stub); dark: they fail.
		log.setFailImages(theme == "dark")
		target := base + "/embed?channels=tmefeed_news,hadashot_today,kanal_novostei&limit=30&theme=" + theme
		do(t, bctx, chromedp.Navigate(target))
		eval[any](t, bctx, watchCSP+" null")
		waitJS(t, bctx, `document.querySelectorAll('[role=feed] article').length === 30`, 20*time.Second)
		// Relative dates are written by the page's script from <time datetime>.
		waitJS(t, bctx, `[...document.querySelectorAll('article time')].every(t => t.title && !/UTC$/.test(t.textContent))`, 10*time.Second)
		if n := eval[int](t, bctx, `document.querySelectorAll('article .tf-text[dir=auto]').length`); n < 20 {
			t.Errorf("%s: %d texts with dir=auto", theme, n)
		}
		bg := eval[string](t, bctx, `getComputedStyle(document.body).backgroundColor`)
		if (theme == "dark") != (bg == "rgb(15, 20, 25)") {
			t.Errorf("%s theme: body background %s", theme, bg)
		}
		if theme == "light" {
			// Every picture (avatars, photos, thumbnails) loads and shows.
			waitJS(t, bctx, `[...document.querySelectorAll('[role=feed] img')].every(i => i.complete && i.naturalWidth > 0 && getComputedStyle(i).display !== 'none')`, 10*time.Second)
			shoot(t, bctx, filepath.Join(artifacts, "widget-"+theme+".png"), 1000)
			continue
		}
		// Avatars: every request to Telegram's CDN fails, so each picture
		// fails and the initial on its coloured circle stands in.
		waitJS(t, bctx, `[...document.querySelectorAll('.tf-avatar img')].every(i => getComputedStyle(i).display === 'none')`, 10*time.Second)
		if bad := eval[[]string](t, bctx, `[...document.querySelectorAll('.tf-avatar')].filter(a => { const r = a.getBoundingClientRect(), s = getComputedStyle(a);
			return r.width !== 40 || r.height !== 40 || a.textContent.trim().length === 0 || s.backgroundColor === 'rgba(0, 0, 0, 0)'; }).map(a => a.closest('article').dataset.key)`); len(bad) > 0 {
			t.Errorf("%s: avatars without a visible stand-in: %q", theme, bad)
		}
		shoot(t, bctx, filepath.Join(artifacts, "widget-"+theme+".png"), 1000)
	}
	shoot(t, bctx, filepath.Join(artifacts, "widget-320.png"), 320)
	if eval[bool](t, bctx, `document.documentElement.scrollWidth > 320`) {
		t.Error("at 320 px the page scrolls sideways")
	}

	// The widget subscribed: one POST to /graphql asking for an event stream.
	do(t, bctx, chromedp.EmulateViewport(1000, 1100))
	type call struct{ Method, URL, Accept string }
	streams := func() []call {
		var out []call
		for _, c := range eval[[]call](t, bctx, `window.__fetches`) {
			if strings.HasSuffix(c.URL, "/graphql") {
				out = append(out, c)
			}
		}
		return out
	}
	waitJS(t, bctx, `window.__fetches.some(f => f.url.endsWith('/graphql'))`, 10*time.Second)
	if s := streams(); len(s) != 1 || s[0].Method != "POST" || s[0].Accept != "text/event-stream" {
		t.Fatalf("subscription requests: %+v", s)
	}

	// Live: a post published at the origin appears at the top, highlighted,
	// in the same document (the marker set now would not survive a reload).
	eval[bool](t, bctx, `window.__sameDocument = true`)
	id := o.PublishPost("hadashot_today", "Published while the widget was open")
	key := fmt.Sprintf("hadashot_today/%d", id)
	waitJS(t, bctx, `document.querySelector('[role=feed] article').dataset.key === '`+key+`'`, 30*time.Second)
	type pageState struct {
		Same, New bool
		Text      string
		Count     int
		Live      string
	}
	state := eval[pageState](t, bctx, `(() => { const a = document.querySelector('[role=feed] article');
		return {same: window.__sameDocument === true, new: a.classList.contains('tf-new'), text: a.textContent,
			count: document.querySelectorAll('[role=feed] article').length, live: document.getElementById('tf-live').textContent}; })()`)
	if !state.Same || !state.New || !strings.Contains(state.Text, "Published while the widget was open") || state.Count != 30 || state.Live != "1 new post" {
		t.Errorf("after publishing: %+v", state)
	}
	shoot(t, bctx, filepath.Join(artifacts, "widget-new-post.png"), 1000)

	// An edit updates the post in place: the same position, new text.
	o.EditPost("hadashot_today", id, "Published, then corrected")
	waitJS(t, bctx, `document.querySelector('[role=feed] article').textContent.includes('Published, then corrected') && window.__sameDocument`, 30*time.Second)
	if k := eval[string](t, bctx, `document.querySelector('[role=feed] article').dataset.key`); k != key {
		t.Errorf("after the edit the first post is %s, want %s", k, key)
	}

	// A removed post disappears: the channel's post before the new one (a
	// removal is told for a post within the page's range of ids).
	gone := eval[string](t, bctx, `[...document.querySelectorAll('[role=feed] article')].map(a => a.dataset.key).filter(k => k.startsWith('hadashot_today/'))[1]`)
	goneID, err := strconv.Atoi(strings.TrimPrefix(gone, "hadashot_today/"))
	if err != nil {
		t.Fatalf("no second hadashot_today post shown: %q", gone)
	}
	o.RemovePost("hadashot_today", goneID)
	waitJS(t, bctx, `!document.querySelector('[data-key="`+gone+`"]') && window.__sameDocument`, 30*time.Second)

	// All of it came over the one stream: it was never reopened, and the
	// page's timer (40 minutes while streaming) never fired.
	if s := streams(); len(s) != 1 {
		t.Errorf("the stream was opened %d times: %+v", len(s), s)
	}
	if csp := eval[[]string](t, bctx, `window.__csp`); len(csp) > 0 {
		t.Errorf("the Content-Security-Policy blocked: %q", csp)
	}
	assertOnlyLocal(t, log)
}

// assertOnlyLocal: every request the browser made went to the test
// servers, or was an image on Telegram's CDN hosts, answered inside the
// browser: no request left this machine, and none was to another host.
func assertOnlyLocal(t *testing.T, log *requestLog) {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.local) == 0 {
		t.Fatal("no request reached the test server")
	}
	for _, b := range log.blocked {
		t.Errorf("a request to another host: %s", b)
	}
	t.Logf("%d requests to the test servers; %d image requests to Telegram's CDN, answered in the browser; %d to other hosts", len(log.local), len(log.cdn), len(log.blocked))
}

// TestSnippetPageCodeLoadsTheWidget fills the snippet page's form as a
// visitor would, takes the <iframe> code its script writes, and loads the
// code's src: the widget it names shows the chosen channels and theme.
// The server lets only the dashboard's origin embed the widget
// (EMBED_FRAME_ANCESTORS): the snippet page's own preview, a frame of the
// server's origin, still shows it.
func TestSnippetPageCodeLoadsTheWidget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The dashboard: a page of another origin (another port) holding
	// nothing but the code, as an embedding site would.
	var code atomic.Pointer[string]
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>dashboard</title><h1>Dashboard</h1>"+*code.Load())
	}))
	defer page.Close()
	_, base := widgetServer(t, ctx, append([]string{"--embed-frame-ancestors", page.URL}, pollOnly...))
	host := strings.TrimPrefix(base, "http://")
	bctx, log := newBrowser(t, ctx, host)

	do(t, bctx, chromedp.Navigate(base+"/embed/new"),
		chromedp.WaitVisible(chromedp.CSS(`#f-channels`)),
		chromedp.SendKeys(chromedp.CSS(`#f-channels`), "kanal_novostei, emoji_party"),
		chromedp.SetValue(chromedp.CSS(`#f-theme`), "dark"),
		chromedp.SetValue(chromedp.CSS(`#f-limit`), "5"))
	eval[bool](t, bctx, `document.getElementById('f-theme').dispatchEvent(new Event('change', {bubbles: true}))`)
	waitJS(t, bctx, `document.getElementById('tf-code').value.includes('theme=dark') && document.getElementById('tf-code').value.includes('limit=5')`, 10*time.Second)
	// The preview frame shows the widget the code names.
	waitJS(t, bctx, `document.getElementById('tf-preview').contentDocument.querySelectorAll('[role=feed] article').length === 5`, 20*time.Second)
	shoot(t, bctx, filepath.Join(artifactsDir(t), "snippet.png"), 1200)

	written := eval[string](t, bctx, `document.getElementById('tf-code').value`)
	code.Store(&written)
	log.allow(strings.TrimPrefix(page.URL, "http://"))
	do(t, bctx, chromedp.Navigate(page.URL))
	src := eval[string](t, bctx, `document.querySelector('iframe').src`)
	if !strings.HasPrefix(src, base+"/embed?channels=kanal_novostei,emoji_party") {
		t.Fatalf("the code's iframe src is %q", src)
	}
	// The frame is another origin, so its DOM is out of the page's reach;
	// its requests say it loaded and its script runs: the widget's
	// document, then the refresh only its script makes.
	deadline := time.Now().Add(20 * time.Second)
	for !log.seen("XHR", base+"/embed/posts?channels=kanal_novostei,emoji_party") {
		if time.Now().After(deadline) {
			t.Fatalf("the embedded widget never refreshed; requests: %q", log.local)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !log.seen("Document", src) {
		t.Errorf("no document request for %s", src)
	}
	assertOnlyLocal(t, log)
}

// responseSpy notes every fetch() a page makes with its answer's status
// and Retry-After (window.__answers), installed before the page's scripts.
const responseSpy = `(() => {
  window.__answers = [];
  const native = window.fetch;
  window.fetch = function (input, init) {
    const a = {url: String(input), at: Date.now(), status: 0, retry: 0};
    window.__answers.push(a);
    return native.apply(this, arguments).then(r => { a.status = r.status; a.retry = parseInt(r.headers.get('Retry-After'), 10) || 0; return r; });
  };
})()`

// TestWidgetWaitsOutTheRateLimit: with RATE_LIMIT_RPM spent by a widget
// polling every second, its refresh answered 429 makes it wait the
// Retry-After it was given before asking again, rather than back off from
// a second; a widget page loaded over the limit shows the widget's own
// page, styled (its assets are not limited), saying when it reloads.
func TestWidgetWaitsOutTheRateLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The limiter's windows are whole minutes: start early in one, so the
	// refusal's Retry-After (at least the seconds left in it, more while
	// the sliding window still weighs this minute's requests) is long
	// enough to tell waiting it out from backing off.
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 20*time.Second {
		time.Sleep(left + 500*time.Millisecond)
	}
	_, base := widgetServer(t, ctx, append([]string{"--rate-limit-rpm", "3"}, pollOnly...))
	bctx, log := newBrowser(t, ctx, strings.TrimPrefix(base, "http://"))
	if _, err := chromedp.Call(bctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: responseSpy}); err != nil {
		t.Fatal(err)
	}
	target := base + "/embed?channels=tmefeed_news&limit=5"
	do(t, bctx, chromedp.Navigate(target)) // the first of the 3
	waitJS(t, bctx, `window.__answers.some(a => a.status === 429)`, 20*time.Second)
	type answer struct {
		URL           string
		At            float64
		Status, Retry int
	}
	answers := eval[[]answer](t, bctx, `window.__answers`)
	var refused answer
	for _, a := range answers {
		if a.Status == http.StatusTooManyRequests {
			refused = a
			break
		}
	}
	// Sliding over two minutes, the wait is at most two of them.
	if refused.Retry < 1 || refused.Retry > 120 {
		t.Fatalf("the refusal's Retry-After: %d", refused.Retry)
	}
	// Watch for as long as the refusal asked, up to 10 s: no refresh
	// before then (backing off from the poll interval would ask after 2 s).
	watch := min(time.Duration(refused.Retry)*time.Second, 10*time.Second)
	time.Sleep(watch)
	for _, a := range eval[[]answer](t, bctx, `window.__answers`) {
		if a.At > refused.At && a.At < refused.At+float64(refused.Retry)*1000 {
			t.Errorf("asked again %.1f s after a 429 with Retry-After %d: %s", (a.At-refused.At)/1000, refused.Retry, a.URL)
		}
	}
	if !t.Failed() {
		t.Logf("429 with Retry-After %d s; no request in the %v watched", refused.Retry, watch)
	}

	// A widget page loaded now: the widget's 429 page, in its style.
	do(t, bctx, chromedp.Navigate(target))
	waitJS(t, bctx, `document.title === '429 Too Many Requests'`, 10*time.Second)
	type errorPage struct {
		Text, Refresh, HeadingSize string
	}
	p := eval[errorPage](t, bctx, `({text: document.body.innerText, refresh: (document.querySelector('meta[http-equiv=refresh]') || {}).content || '',
		headingSize: getComputedStyle(document.querySelector('h1')).fontSize})`)
	// The heading's size is the widget's CSS (a browser's own is 32px).
	if !strings.Contains(p.Text, "reloads by itself in about") || p.Refresh == "" || p.HeadingSize != "20px" {
		t.Errorf("the widget over the limit: %+v", p)
	}
	shoot(t, bctx, filepath.Join(artifactsDir(t), "widget-429.png"), 600)
	assertOnlyLocal(t, log)
}

// TestWidgetRightToLeftInChromium shows the Hebrew channel, whose file
// names, poll, link preview and signature are right-to-left text beside
// the widget's own left-to-right text (sizes, counts, "edited"): each
// name is isolated, so it reads right to left as a whole and the size
// stays after it, as laid out by Chromium. Screenshots of those posts are
// saved as artifacts.
func TestWidgetRightToLeftInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, base := widgetServer(t, ctx, pollOnly)
	bctx, log := newBrowser(t, ctx, strings.TrimPrefix(base, "http://"))
	do(t, bctx, chromedp.Navigate(base+"/embed?channels=hadashot_today&limit=100&theme=light"), chromedp.EmulateViewport(420, 1100))
	waitJS(t, bctx, `document.querySelectorAll('[role=feed] article').length > 10`, 20*time.Second)
	artifacts := artifactsDir(t)
	for name, find := range map[string]string{
		"file":    `[...document.querySelectorAll('.tf-file')].find(f => f.textContent.includes('860 KB'))`,
		"poll":    `document.querySelector('.tf-poll')`,
		"preview": `document.querySelector('.tf-preview')`,
		"author":  `document.querySelector('.tf-author')`,
	} {
		key := eval[string](t, bctx, find+`.closest('article').dataset.key`)
		sel := `[data-key="` + key + `"]`
		png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if err := os.WriteFile(filepath.Join(artifacts, "widget-rtl-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The file's line: the name as one right-to-left run, then " · 860 KB"
	// to its right, as the widget's left-to-right text reads.
	type line struct {
		Name, Size     string
		NameR, SizeL   float64
		NameTop, SizeT float64
	}
	l := eval[line](t, bctx, `(() => {
		const file = [...document.querySelectorAll('.tf-file')].find(f => f.textContent.includes('860 KB'));
		const name = file.querySelector('bdi');
		const size = [...file.querySelectorAll('span')].flatMap(s => [...s.childNodes]).find(n => n.nodeType === 3 && n.textContent.includes('860 KB'));
		const r = document.createRange(); r.selectNodeContents(size);
		const nr = name.getBoundingClientRect(), sr = r.getBoundingClientRect();
		return {name: name.textContent, size: size.textContent, nameR: nr.right, sizeL: sr.left, nameTop: nr.top, sizeT: sr.top};
	})()`)
	if l.Name != "לוח_אירועים_יוני_2026.pdf" || strings.TrimSpace(l.Size) != "· 860 KB" || l.SizeL < l.NameR-1 || l.SizeT != l.NameTop {
		t.Errorf("the file's line: %+v; want the name isolated, the size after it on its line", l)
	}
	assertOnlyLocal(t, log)
}

// hostilePost is a post's text as a hostile channel could make t.me show
// it: scripts, event handlers, javascript: URLs and frames, each of which
// would note that it ran in window.__pwned, among formatting that must
// survive. (package sanitize's tests hold the wider corpus.)
const hostilePost = `<b>bold words</b> and <a href="https://example.org/safe">a safe link</a> ` +
	`<script>window.__pwned = 'script'; alert('script')</script>` +
	`<img src="https://cdn4.telesco.pe/file/pwned.jpg" onload="window.__pwned = 'img onload'" onerror="window.__pwned = 'img onerror'">` +
	`<a href="javascript:window.__pwned = 'href'">a javascript link</a> ` +
	`<a href="https://example.org/hover" onmouseover="window.__pwned = 'hover'" onclick="window.__pwned = 'click'">hover me</a> ` +
	`<i onfocus="window.__pwned = 'focus'" tabindex="0" style="background:url(javascript:alert(1))">styled</i> ` +
	`<svg onload="window.__pwned = 'svg'"><script>window.__pwned = 'svg script'</script></svg>` +
	`<iframe srcdoc="&lt;script&gt;parent.__pwned = 'iframe'&lt;/script&gt;"></iframe>` +
	`<details open ontoggle="window.__pwned = 'toggle'"><summary>more</summary>x</details>` +
	`<form action="javascript:window.__pwned = 'form'"><button>go</button></form>` +
	`<a href="  JaVaScRiPt:window.__pwned = 'mixed case'">mixed</a> the end`

// TestHostilePostInertInChromium: a post carrying scripts, handlers and
// javascript: URLs, published at the origin, is shown by the widget in
// Chromium with its formatting and nothing of the rest: no script runs
// (the flag it would set stays unset, no dialog opens, hovering and
// focusing do nothing), no handler or javascript: URL is in the DOM, and
// the Content-Security-Policy had nothing to block, since the markup never
// reached the browser.
func TestHostilePostInertInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, base := widgetServer(t, ctx, pollOnly)
	const marker = "HOSTILE_POST_MARKER"
	id := o.PublishPost("tmefeed_news", marker)
	o.SetRewrite("/s/tmefeed_news", marker, hostilePost)
	bctx, log := newBrowser(t, ctx, strings.TrimPrefix(base, "http://"))
	var dialogs atomic.Int32
	err := chromedp.Listen(bctx, func(ev any) {
		if _, ok := ev.(*cdppage.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go func() {
				_, _ = chromedp.Call(bctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true})
			}()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	const watch = `window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`
	if _, err := chromedp.Call(bctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: watch}); err != nil {
		t.Fatal(err)
	}
	do(t, bctx, chromedp.Navigate(base+"/embed?channels=tmefeed_news&limit=5"))
	post := fmt.Sprintf(`document.querySelector('[data-key="tmefeed_news/%d"]')`, id)
	waitJS(t, bctx, post, 20*time.Second)
	// Whatever a handler could wait for: hover, focus and click each
	// element of the post (links are not clicked: they open new tabs).
	eval[any](t, bctx, `(() => { for (const el of `+post+`.querySelectorAll('*')) {
		for (const type of ['mouseover', 'mouseenter', 'focus', 'toggle']) el.dispatchEvent(new Event(type, {bubbles: true}));
		if (el.focus) el.focus();
		if (!el.closest('a')) el.dispatchEvent(new MouseEvent('click', {bubbles: true}));
	} return null; })()`)
	time.Sleep(500 * time.Millisecond) // a handler's timers, had any run
	type state struct {
		Pwned    string
		Bad      []string
		Bold     string
		Links    []string
		Text     string
		CSP      []string
		Rendered bool
	}
	s := eval[state](t, bctx, `(() => { const p = `+post+`, bad = [];
		for (const el of p.querySelectorAll('*')) {
			if (['SCRIPT', 'IFRAME', 'SVG', 'STYLE', 'FORM', 'OBJECT', 'EMBED'].includes(el.tagName.toUpperCase())) bad.push('<' + el.tagName + '>');
			for (const a of el.attributes) {
				if (a.name.startsWith('on') || a.name === 'style' || a.name === 'srcdoc' || /^\s*javascript:/i.test(a.value)) bad.push(el.tagName + ' ' + a.name + '=' + a.value);
			}
		}
		const text = p.querySelector('.tf-text');
		return {pwned: String(window.__pwned || ''), bad, bold: (text.querySelector('b') || {}).textContent || '',
			links: [...text.querySelectorAll('a[href]')].map(a => a.getAttribute('href') + ' ' + a.textContent),
			text: text.textContent, csp: window.__csp, rendered: getComputedStyle(text.querySelector('b')).fontWeight >= 600};
	})()`)
	if s.Pwned != "" || dialogs.Load() != 0 {
		t.Errorf("a script of the post ran: window.__pwned = %q, %d dialogs", s.Pwned, dialogs.Load())
	}
	if len(s.Bad) > 0 {
		t.Errorf("in the post's DOM: %q", s.Bad)
	}
	if s.Bold != "bold words" || !s.Rendered || !slices.Contains(s.Links, "https://example.org/safe a safe link") || !strings.Contains(s.Text, "the end") {
		t.Errorf("the formatting did not survive: bold %q (rendered %v), links %q, text %q", s.Bold, s.Rendered, s.Links, s.Text)
	}
	if len(s.CSP) > 0 {
		t.Errorf("the Content-Security-Policy had to block %q: the markup reached the browser", s.CSP)
	}
	png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS(fmt.Sprintf(`[data-key="tmefeed_news/%d"]`, id))))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactsDir(t), "widget-hostile.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	assertOnlyLocal(t, log)
}
