//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// eventSourcePage is a page of another origin that opens a browser's own
// EventSource on the demo server's feedUpdates, its URL given as ?api=,
// and notes what arrives (window.__events, window.__errors).
const eventSourcePage = `<!doctype html><title>EventSource</title><h1>EventSource</h1><pre id=log></pre>
<script>
window.__events = []; window.__errors = 0;
const api = new URLSearchParams(location.search).get('api');
const q = 'subscription{feedUpdates(channels:["just_launched"]){kind post{id}}}';
const es = new EventSource(api + '/graphql?query=' + encodeURIComponent(q));
window.__es = es;
es.addEventListener('next', (e) => {
  window.__events.push(JSON.parse(e.data));
  document.getElementById('log').textContent += e.data + '\n';
});
es.onerror = () => { window.__errors++; };
</script>`

// TestEventSourceFromAnotherOrigin: Chromium's EventSource, on a page of
// another origin (a second loopback server), receives a post the demo
// server publishes on just_launched (one every 15 s) with no library in
// between: GET with the query in the URL, Accept: text/event-stream, the
// CORS policy allowing the page's origin. Without that origin in
// CORS_ORIGINS the browser refuses the stream and no event arrives.
func TestEventSourceFromAnotherOrigin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, eventSourcePage)
	}))
	defer page.Close()
	allowed := startServer(t, ctx, "--demo", "--cors-origins", page.URL)
	refused := startServer(t, ctx, "--demo")

	bctx, log := newBrowser(t, ctx, strings.TrimPrefix(allowed, "http://"))
	log.allow(strings.TrimPrefix(refused, "http://"))
	log.allow(strings.TrimPrefix(page.URL, "http://"))

	do(t, bctx, chromedp.Navigate(page.URL+"/?api="+allowed))
	waitJS(t, bctx, `window.__events.length > 0`, 60*time.Second)
	got := eval[map[string]any](t, bctx, `window.__events[0]`)
	data, _ := got["data"].(map[string]any)
	upd, _ := data["feedUpdates"].(map[string]any)
	post, _ := upd["post"].(map[string]any)
	if upd["kind"] != "NEW" || post == nil || post["id"] == "" || got["errors"] != nil {
		t.Errorf("first event: %v", got)
	}
	if n := eval[int](t, bctx, `window.__errors`); n != 0 {
		t.Errorf("%d errors on the allowed origin's stream", n)
	}
	shoot(t, bctx, artifactsDir(t)+"/eventsource.png", 1000)

	// The same page against a server that names no CORS origin: the
	// browser fails the stream (and, as EventSource does for a refused
	// response, closes it).
	do(t, bctx, chromedp.Navigate(page.URL+"/?api="+refused))
	waitJS(t, bctx, `window.__errors > 0 && window.__es.readyState === EventSource.CLOSED`, 20*time.Second)
	if n := eval[int](t, bctx, `window.__events.length`); n != 0 {
		t.Errorf("%d events through a server that allows no other origin", n)
	}
	assertOnlyLocal(t, log)
}
