//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/tmefeed/tmefeed/web"
)

// The query typed into the playground.
const typedQuery = `{
  feed(channels: ["tmefeed_news", "emoji_party"], first: 3, order: NEWEST) {
    totalCount
    edges { node { channel { username } post { messageId text { plain } } } }
  }
}`

// Editors of the playground, as JavaScript expressions.
const (
	queryEditor     = `document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror`
	variablesEditor = `document.querySelector('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror').CodeMirror`
	responsePane    = `document.querySelector('.graphiql-response .CodeMirror').CodeMirror`
	executeButton   = `document.querySelector('.graphiql-execute-button')`
)

// wsSpy wraps the page's WebSocket to note the types of the messages
// received (window.__wsFrames), the subprotocol and whether it closed.
const wsSpy = `(() => {
  if (window.__wsFrames) return;
  window.__wsFrames = [];
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('open', () => { window.__wsProtocol = this.protocol; });
      this.addEventListener('message', (e) => { try { window.__wsFrames.push(JSON.parse(e.data).type); } catch (err) {} });
      this.addEventListener('close', () => { window.__wsClosed = true; });
    }
  };
})()`

var operationName = regexp.MustCompile(`(?m)^(?:query|mutation|subscription)\s+(\w+)`)

// openPlayground serves the demo (or E2E_BASE_URL) and opens the
// playground in a Chromium with a fresh profile, so nothing GraphiQL
// stored in an earlier run is there.
func openPlayground(t *testing.T, ctx context.Context) *page {
	t.Helper()
	base := os.Getenv("E2E_BASE_URL")
	if base == "" {
		base = startDemoServer(t, ctx)
	}
	artifacts := os.Getenv("E2E_ARTIFACTS")
	if artifacts == "" {
		artifacts = "artifacts"
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	page := startChromium(t, ctx, base+"/")
	page.artifacts = artifacts
	t.Cleanup(page.close)
	// GraphiQL renders its editors once React, GraphiQL and the schema
	// (fetched by introspection) are loaded, all from the server itself.
	page.waitFor(t, ctx, `!!document.querySelector('.graphiql-query-editor .CodeMirror') && !!`+executeButton)
	return page
}

// TestGraphiQLRunsEveryPreloadedTab runs each example tab as the page
// shows it, on a fresh profile: its query and variables are in the
// editors, and Run answers data without errors.
func TestGraphiQLRunsEveryPreloadedTab(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	page := openPlayground(t, ctx)

	// What the server told the page to preload.
	var tabs []web.Tab
	page.evalInto(t, ctx, `JSON.parse(document.getElementById('playground-config').textContent).tabs`, &tabs)
	if want := len(web.Examples([]string{"x"})); len(tabs) != want {
		t.Fatalf("the page preloads %d tabs, want the %d examples", len(tabs), want)
	}
	var shown int
	page.evalInto(t, ctx, `document.querySelectorAll('.graphiql-tabs [role=tab]').length`, &shown)
	if shown != len(tabs) {
		t.Fatalf("GraphiQL shows %d tabs, want %d", shown, len(tabs))
	}

	tabAt := func(i int) string {
		return fmt.Sprintf(`document.querySelectorAll('.graphiql-tabs [role=tab]')[%d]`, i)
	}
	// The first tab is open as the page loads.
	var first string
	page.evalInto(t, ctx, tabAt(0)+`.getAttribute('aria-selected')`, &first)
	if first != "true" {
		t.Fatalf("the first tab is not the open one on a fresh profile (aria-selected %q)", first)
	}
	for i, tab := range tabs {
		// The open tab is run as loaded: clicking it would reload its
		// editors from the tab's state and hide what a visitor sees.
		if i > 0 {
			page.click(t, ctx, tabAt(i)+`.querySelector('.graphiql-tab-button')`)
			page.waitFor(t, ctx, tabAt(i)+`.getAttribute('aria-selected') === 'true'`)
		}
		var query, vars, resp string
		page.evalInto(t, ctx, queryEditor+`.getValue()`, &query)
		page.evalInto(t, ctx, variablesEditor+`.getValue()`, &vars)
		page.evalInto(t, ctx, responsePane+`.getValue()`, &resp)
		if query != tab.Query {
			t.Fatalf("tab %d: the query editor holds %q, want %q", i+1, query, tab.Query)
		}
		if vars != tab.Variables {
			t.Errorf("tab %d: the variables editor holds %q, want %q", i+1, vars, tab.Variables)
		}
		if resp != "" {
			t.Fatalf("tab %d: a response before running: %.200s", i+1, resp)
		}

		// GraphiQL reads the operation's name from the query editor a moment
		// after its text changes; Run before that would send the name of the
		// tab shown before.
		if m := operationName.FindStringSubmatch(tab.Query); m != nil {
			page.waitFor(t, ctx, queryEditor+`.operationName === `+strconv.Quote(m[1]))
		}
		subscription := strings.Contains(tab.Query, "\nsubscription ")
		if subscription {
			// GraphiQL opens its graphql-ws client on the first Run, with
			// the WebSocket the page has then: this one notes the types of
			// the messages the server sends.
			page.eval(t, ctx, wsSpy)
		}
		page.click(t, ctx, executeButton)
		if subscription {
			page.waitFor(t, ctx, `window.__wsFrames.includes('connection_ack')`)
			var proto string
			page.evalInto(t, ctx, `window.__wsProtocol`, &proto)
			t.Logf("tab %d: the subscription connected over WebSocket (%s); waiting for the demo's next post", i+1, proto)
		}
		// The answer is in once the response pane holds a whole JSON value
		// (for a subscription: its first event).
		page.waitFor(t, ctx, `(() => { const v = `+responsePane+`.getValue(); return v !== '' && JSON.parse(v) !== null; })()`)
		page.evalInto(t, ctx, responsePane+`.getValue()`, &resp)
		if subscription {
			page.click(t, ctx, executeButton) // stop it
			page.waitFor(t, ctx, `window.__wsFrames.includes('complete') || window.__wsClosed`)
		}
		page.screenshot(t, ctx, filepath.Join(page.artifacts, fmt.Sprintf("graphiql-tab-%d.png", i+1)))

		var out struct {
			Data   map[string]json.RawMessage
			Errors []json.RawMessage
		}
		if err := json.Unmarshal([]byte(resp), &out); err != nil {
			t.Fatalf("tab %d: response pane %q: %v", i+1, resp, err)
		}
		if len(out.Errors) > 0 || len(out.Data) == 0 {
			t.Errorf("tab %d answered errors or no data: %.500s", i+1, resp)
		}
		for field, v := range out.Data {
			if string(v) == "null" {
				t.Errorf("tab %d: %s is null: %.500s", i+1, field, resp)
			}
		}
		if !t.Failed() {
			t.Logf("tab %d (%s): %d bytes of data, no errors", i+1, strings.SplitN(tab.Query, "\n", 2)[0], len(resp))
		}
	}
}

func TestGraphiQLRunsATypedQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	page := openPlayground(t, ctx)
	artifacts := page.artifacts

	// Type the query: focus the editor, select everything, insert the text
	// as keyboard input.
	page.eval(t, ctx, `document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.focus()`)
	page.call(t, ctx, "Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "modifiers": 2, "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65, "commands": []string{"selectAll"}})
	page.call(t, ctx, "Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "modifiers": 2, "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65})
	page.call(t, ctx, "Input.insertText", map[string]any{"text": typedQuery})
	var typed string
	page.evalInto(t, ctx, `document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.getValue()`, &typed)
	if typed != typedQuery {
		page.screenshot(t, ctx, filepath.Join(artifacts, "graphiql-typing.png"))
		t.Fatalf("the editor holds %q after typing", typed)
	}

	// GraphiQL reads the operation's name from the editor a moment after
	// the text changes; Run before that would send the first tab's name
	// with this anonymous query.
	page.waitFor(t, ctx, `!`+queryEditor+`.operationName`)

	// Run it with a mouse click on the execute button.
	page.click(t, ctx, executeButton)

	// The answer is in once the response pane holds a whole JSON value.
	const response = `document.querySelector('.graphiql-response .CodeMirror').CodeMirror.getValue()`
	page.waitFor(t, ctx, `(() => { const v = `+response+`; return v !== '' && JSON.parse(v) !== null; })()`)
	var text string
	page.evalInto(t, ctx, response, &text)
	page.screenshot(t, ctx, filepath.Join(artifacts, "graphiql.png"))

	var out struct {
		Data struct {
			Feed struct {
				TotalCount int
				Edges      []struct {
					Node struct {
						Channel struct{ Username string }
						Post    struct{ MessageID int }
					}
				}
			}
		}
		Errors []json.RawMessage
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("response pane %q: %v", text, err)
	}
	if len(out.Errors) > 0 || out.Data.Feed.TotalCount == 0 || len(out.Data.Feed.Edges) != 3 {
		t.Fatalf("response pane: %s", text)
	}
	for _, e := range out.Data.Feed.Edges {
		if u := e.Node.Channel.Username; u != "tmefeed_news" && u != "emoji_party" || e.Node.Post.MessageID < 1 {
			t.Errorf("post %d of %q", e.Node.Post.MessageID, u)
		}
	}
	t.Logf("GraphiQL answered %d of %d posts; screenshot in %s", len(out.Data.Feed.Edges), out.Data.Feed.TotalCount, filepath.Join(artifacts, "graphiql.png"))

	// The icons the page links load from the server.
	var icons []string
	page.evalInto(t, ctx, `Promise.all([...document.querySelectorAll('link[rel=icon]')].map(l => fetch(l.href).then(r => r.status + ' ' + r.headers.get('content-type'))))`, &icons)
	if !slices.Equal(icons, []string{"200 image/svg+xml", "200 image/x-icon"}) {
		t.Errorf("the page's icons answer %q", icons)
	}

	// Nothing was loaded from outside the server.
	var external []string
	page.evalInto(t, ctx, `performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin))`, &external)
	if len(external) > 0 {
		t.Errorf("loaded from elsewhere: %v", external)
	}
}

// startDemoServer runs `tmefeed serve --demo` on a free loopback port and
// returns its base URL.
func startDemoServer(t *testing.T, ctx context.Context) string {
	t.Helper()
	return startServer(t, ctx, "--demo")
}

// startServer runs `tmefeed serve` with args on a free loopback port (the
// binary in TMEFEED_BIN, else one built now), stops it when the test ends,
// and returns its base URL once /healthz answers.
func startServer(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	bin := os.Getenv("TMEFEED_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "tmefeed")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/tmefeed")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	port := freePort(t)
	cmd := exec.Command(bin, append([]string{"serve", "--port", fmt.Sprint(port), "--log-level", "warn"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("tmefeed did not come up: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// page is one Chromium tab driven over the DevTools protocol.
type page struct {
	cmd       *exec.Cmd
	profile   string // the browser's fresh user-data-dir
	ws        *websocket.Conn
	next      int
	artifacts string // where a screenshot of a failed wait goes
}

// chromiumBinary finds the browser: $CHROMIUM, else chromium on PATH,
// else Debian's /usr/bin/chromium (a CI PATH may lack /usr/bin). A missing
// browser fails the test rather than skipping it, so that CI cannot pass
// without running it.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CHROMIUM"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("chromium"); err == nil {
		return bin
	}
	const debian = "/usr/bin/chromium"
	if _, err := os.Stat(debian); err == nil {
		return debian
	}
	t.Fatalf("no Chromium: CHROMIUM is unset, chromium is not on PATH and %s does not exist; install Debian's chromium package (apt-get install chromium) or set CHROMIUM", debian)
	return ""
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// startChromium launches headless Chromium on url with a fresh profile and
// attaches to its tab.
func startChromium(t *testing.T, ctx context.Context, url string) *page {
	t.Helper()
	bin := chromiumBinary(t)
	profile, err := os.MkdirTemp("", "e2e-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--window-size=1400,900",
		"--user-data-dir="+profile, "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		url)
	// Its own process group, so that close ends the renderers too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (install Debian's chromium package, or set CHROMIUM): %v", bin, err)
	}
	p := &page{cmd: cmd, profile: profile}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	var browserWS string
	select {
	case browserWS = <-found:
	case <-ctx.Done():
		p.close()
		t.Fatal("chromium printed no DevTools address")
	case <-time.After(30 * time.Second):
		p.close()
		t.Fatal("chromium printed no DevTools address in 30s")
	}
	host := strings.SplitN(strings.TrimPrefix(browserWS, "ws://"), "/", 2)[0]
	var targets []struct{ Type, URL, WebSocketDebuggerURL string }
	client := &http.Client{Timeout: 5 * time.Second}
	for i := 0; ; i++ {
		resp, err := client.Get("http://" + host + "/json/list")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		for _, tg := range targets {
			if tg.Type == "page" && tg.WebSocketDebuggerURL != "" {
				ws, err := websocket.Dial(tg.WebSocketDebuggerURL, "", "http://"+host)
				if err != nil {
					p.close()
					t.Fatal(err)
				}
				p.ws = ws
				return p
			}
		}
		if i > 100 {
			p.close()
			t.Fatalf("no page target: %v %+v", err, targets)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *page) close() {
	if p.ws != nil {
		_ = p.ws.Close()
	}
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
	// Renderers may write to the profile until the kill reaches them, so
	// its removal is retried; t.TempDir would fail the test instead.
	for i := 0; i < 50; i++ {
		if os.RemoveAll(p.profile) == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// call sends one DevTools command and returns its result, skipping events.
func (p *page) call(t *testing.T, ctx context.Context, method string, params any) json.RawMessage {
	t.Helper()
	p.next++
	id := p.next
	deadline, _ := ctx.Deadline()
	_ = p.ws.SetDeadline(deadline)
	if err := websocket.JSON.Send(p.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(p.ws, &msg); err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatalf("%s: chromium closed the connection", method)
			}
			t.Fatalf("%s: %v", method, err)
		}
		if msg.ID != id {
			continue
		}
		if msg.Error != nil {
			t.Fatalf("%s: %s", method, msg.Error.Message)
		}
		return msg.Result
	}
}

// evalInto evaluates a JavaScript expression in the page and decodes its value.
func (p *page) evalInto(t *testing.T, ctx context.Context, expr string, v any) {
	t.Helper()
	raw := p.call(t, ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if e := res.ExceptionDetails; e != nil {
		t.Fatalf("%s: %s %s", expr, e.Text, e.Exception.Description)
	}
	if v != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, v); err != nil {
			t.Fatalf("%s: %s: %v", expr, res.Result.Value, err)
		}
	}
}

func (p *page) eval(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	p.evalInto(t, ctx, expr, nil)
}

// click presses and releases the left mouse button over the middle of the
// element a JavaScript expression finds.
func (p *page) click(t *testing.T, ctx context.Context, element string) {
	t.Helper()
	var rect struct{ X, Y float64 }
	p.evalInto(t, ctx, `(() => { const r = (`+element+`).getBoundingClientRect(); return {x: r.x + r.width/2, y: r.y + r.height/2}; })()`, &rect)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		p.call(t, ctx, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": rect.X, "y": rect.Y, "button": "left", "clickCount": 1})
	}
}

// waitFor polls a JavaScript condition until it holds.
func (p *page) waitFor(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	for {
		var ok bool
		p.evalInto(t, ctx, "(() => { try { return !!("+cond+"); } catch (e) { return false; } })()", &ok)
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			p.screenshot(t, context.Background(), filepath.Join(p.artifacts, "graphiql-timeout.png"))
			t.Fatalf("timed out waiting for %s", cond)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// screenshot saves the page as a PNG.
func (p *page) screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	raw := p.call(t, ctx, "Page.captureScreenshot", map[string]any{"format": "png"})
	var res struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
