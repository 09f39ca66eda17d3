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
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// The query typed into the playground.
const typedQuery = `{
  feed(channels: ["tmefeed_news", "emoji_party"], first: 3, order: NEWEST) {
    totalCount
    edges { node { channel { username } post { messageId text { plain } } } }
  }
}`

func TestGraphiQLRunsATypedQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

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
	defer page.close()

	// GraphiQL renders its editors once React, GraphiQL and the schema
	// (fetched by introspection) are loaded, all from the server itself.
	page.waitFor(t, ctx, `!!document.querySelector('.graphiql-query-editor .CodeMirror') && !!document.querySelector('.graphiql-execute-button')`)

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

	// Run it with a mouse click on the execute button.
	var rect struct{ X, Y float64 }
	page.evalInto(t, ctx, `(() => { const r = document.querySelector('.graphiql-execute-button').getBoundingClientRect(); return {x: r.x + r.width/2, y: r.y + r.height/2}; })()`, &rect)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		page.call(t, ctx, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": rect.X, "y": rect.Y, "button": "left", "clickCount": 1})
	}

	// The answer appears in the response pane.
	const response = `document.querySelector('.graphiql-response .CodeMirror').CodeMirror.getValue()`
	page.waitFor(t, ctx, response+`.includes('"totalCount"')`)
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
	bin := os.Getenv("TMEFEED_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "tmefeed")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/tmefeed")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	port := freePort(t)
	cmd := exec.Command(bin, "serve", "--demo", "--port", fmt.Sprint(port), "--log-level", "warn")
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
			t.Fatalf("the demo server did not come up: %v", err)
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
	ws        *websocket.Conn
	next      int
	artifacts string // where a screenshot of a failed wait goes
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// startChromium launches headless Chromium on url with a fresh profile and
// attaches to its tab.
func startChromium(t *testing.T, ctx context.Context, url string) *page {
	t.Helper()
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin = "chromium"
	}
	cmd := exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--window-size=1400,900",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		url)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (install Debian's chromium package): %v", bin, err)
	}
	p := &page{cmd: cmd}
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
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
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
