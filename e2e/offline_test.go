//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// offlineBrowser starts Chromium as a machine with no network but
// loopback sees it: its resolver maps every name to nothing (so no name
// resolves, 127.0.0.1 excepted), and every request is intercepted: one to
// a loopback address goes on, any other is failed and noted in left.
func offlineBrowser(t *testing.T, ctx context.Context) (context.Context, func() []string) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumBinary(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	var mu sync.Mutex
	var left []string
	err := chromedp.Listen(bctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		u, err := url.Parse(e.Request.URL)
		loopback := false
		if err == nil {
			ip := net.ParseIP(u.Hostname())
			loopback = ip != nil && ip.IsLoopback()
		}
		var answer func() error
		if loopback {
			answer = func() error {
				_, err := chromedp.Call(bctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
				return err
			}
		} else {
			mu.Lock()
			left = append(left, string(e.ResourceType)+" "+e.Request.URL)
			mu.Unlock()
			answer = func() error {
				_, err := chromedp.Call(bctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonInternetDisconnected})
				return err
			}
		}
		// Commands cannot be sent from the listener itself.
		go func() { _ = answer() }()
	})
	if err != nil {
		t.Fatalf("start chromium (install Debian's chromium package, or set CHROMIUM): %v", err)
	}
	if _, err := chromedp.Call(bctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		t.Fatal(err)
	}
	return bctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), left...)
	}
}

// allImagesLoaded is true once every <img> under root has loaded a
// picture; brokenImages lists those that did not.
const (
	allImagesLoaded = `[...document.querySelectorAll(ROOT + ' img')].every(i => i.complete && i.naturalWidth > 0)`
	brokenImages    = `[...document.querySelectorAll(ROOT + ' img')].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)`
	imageSources    = `[...document.querySelectorAll(ROOT + ' img')].map(i => i.currentSrc)`
)

func under(root, js string) string { return strings.ReplaceAll(js, "ROOT", strconv.Quote(root)) }

// offlineQuery is the feed query run in the playground: posts with
// pictures and videos, their channels' avatars.
const offlineQuery = `query Offline {
  feed(channels: ["tmefeed_news", "kanal_novostei", "video_desk"], first: 12, order: NEWEST, filter: { mediaKinds: [IMAGE, VIDEO] }) {
    edges { node { channel { username avatar } post { messageId media { kind url thumb } } } }
  }
}`

// TestDemoShowsPicturesOffline: the demo server (`make run`) in a
// Chromium that can reach nothing but loopback. The widget shows its
// posts with every picture loaded (avatars, photos, video previews), and
// the playground runs a feed query whose pictures load in the same
// browser; no request leaves loopback. Screenshots: widget-offline.png,
// playground-offline.png.
func TestDemoShowsPicturesOffline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := startDemoServer(t, ctx)
	artifacts := artifactsDir(t)
	bctx, left := offlineBrowser(t, ctx)

	// The widget.
	do(t, bctx, chromedp.Navigate(base+"/embed?channels=tmefeed_news,kanal_novostei,video_desk&limit=20"))
	waitJS(t, bctx, `document.querySelectorAll('[role=feed] article').length === 20`, 20*time.Second)
	const feed = "[role=feed]"
	deadline := time.Now().Add(20 * time.Second)
	for !eval[bool](t, bctx, under(feed, allImagesLoaded)) {
		if time.Now().After(deadline) {
			shoot(t, bctx, filepath.Join(artifacts, "widget-offline.png"), 1000)
			t.Fatalf("broken pictures in the widget: %q", eval[[]string](t, bctx, under(feed, brokenImages)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	srcs := eval[[]string](t, bctx, under(feed, imageSources))
	avatars := eval[int](t, bctx, `[...document.querySelectorAll('.tf-avatar img')].filter(i => i.naturalWidth > 0 && getComputedStyle(i).display !== 'none').length`)
	photos := eval[int](t, bctx, `[...document.querySelectorAll('.tf-photo img, .tf-video img')].filter(i => i.naturalWidth > 0).length`)
	if avatars < 20 || photos < 5 {
		t.Errorf("the widget shows %d avatars and %d photos or video previews; want one avatar a post and several pictures", avatars, photos)
	}
	for _, s := range srcs {
		if !strings.HasPrefix(s, "http://127.0.0.1:") {
			t.Errorf("widget picture from %s", s)
		}
	}
	// The screenshot starts at the first photo, so it shows pictures
	// beside the avatars.
	eval[any](t, bctx, `document.querySelector('.tf-photo img').scrollIntoView({block: 'start'}); window.scrollBy(0, -120); null`)
	shoot(t, bctx, filepath.Join(artifacts, "widget-offline.png"), 1000)
	t.Logf("widget: %d pictures loaded (%d avatars, %d photos and video previews)", len(srcs), avatars, photos)

	// The playground: run the feed query, then load the pictures it
	// names in the page, as a client of the API would.
	do(t, bctx, chromedp.Navigate(base+"/"))
	waitJS(t, bctx, `!!document.querySelector('.graphiql-query-editor .CodeMirror') && !!`+executeButton, 30*time.Second)
	eval[any](t, bctx, queryEditor+`.setValue(`+strconv.Quote(offlineQuery)+`); null`)
	waitJS(t, bctx, queryEditor+`.operationName === 'Offline'`, 10*time.Second)
	eval[any](t, bctx, executeButton+`.click(); null`)
	waitJS(t, bctx, `(() => { const v = `+responsePane+`.getValue(); return v !== '' && JSON.parse(v) !== null; })()`, 20*time.Second)
	var out struct {
		Data struct {
			Feed struct {
				Edges []struct {
					Node struct {
						Channel struct{ Username, Avatar string }
						Post    struct {
							MessageID int
							Media     []struct{ Kind, URL, Thumb string }
						}
					}
				}
			}
		}
		Errors []json.RawMessage
	}
	resp := eval[string](t, bctx, responsePane+`.getValue()`)
	if err := json.Unmarshal([]byte(resp), &out); err != nil || len(out.Errors) > 0 || len(out.Data.Feed.Edges) == 0 {
		t.Fatalf("the playground answered %.500s (%v)", resp, err)
	}
	seen := map[string]bool{}
	var pics []string
	for _, e := range out.Data.Feed.Edges {
		for _, u := range []string{e.Node.Channel.Avatar} {
			if u != "" && !seen[u] {
				seen[u], pics = true, append(pics, u)
			}
		}
		for _, m := range e.Node.Post.Media {
			u := m.URL
			if m.Kind != "IMAGE" {
				u = m.Thumb
			}
			if u != "" && !seen[u] {
				seen[u], pics = true, append(pics, u)
			}
		}
	}
	if len(pics) < 8 {
		t.Fatalf("the query's answer names %d pictures", len(pics))
	}
	// A strip of the answer's pictures over the response pane, loaded by
	// the page like any client's <img>.
	list, _ := json.Marshal(pics)
	eval[any](t, bctx, `(() => {
  const strip = document.createElement('div');
  strip.id = 'answer-pictures';
  strip.style.cssText = 'position:fixed;right:12px;bottom:12px;max-width:640px;display:flex;flex-wrap:wrap;gap:6px;padding:8px;background:#fff;border:1px solid #ccc;border-radius:8px;z-index:1000';
  const label = document.createElement('div');
  label.textContent = 'Pictures named in the answer';
  label.style.cssText = 'width:100%;font:12px sans-serif;color:#555';
  strip.append(label);
  for (const u of `+string(list)+`) { const i = new Image(); i.src = u; i.style.cssText = 'height:72px;border-radius:4px'; strip.append(i); }
  document.body.append(strip);
  return null;
})()`)
	const strip = "#answer-pictures"
	deadline = time.Now().Add(20 * time.Second)
	for !eval[bool](t, bctx, under(strip, allImagesLoaded)) {
		if time.Now().After(deadline) {
			t.Fatalf("pictures of the answer that did not load: %q", eval[[]string](t, bctx, under(strip, brokenImages)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if broken := eval[[]string](t, bctx, under("body", brokenImages)); len(broken) > 0 {
		t.Errorf("broken images on the playground: %q", broken)
	}
	shoot(t, bctx, filepath.Join(artifacts, "playground-offline.png"), 1400)
	t.Logf("playground: %d edges, %d pictures loaded", len(out.Data.Feed.Edges), len(pics))

	if l := left(); len(l) > 0 {
		t.Errorf("requests that would have left the machine: %q", l)
	}
}
