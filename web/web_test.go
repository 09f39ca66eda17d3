package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/tmefeed/tmefeed/web"
)

func serve(t *testing.T, h http.Handler, target string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestFavicon(t *testing.T) {
	h, err := web.Handler(web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp := serve(t, h, "/favicon.ico")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/x-icon" {
		t.Fatalf("/favicon.ico: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// An ICO directory: reserved 0, type 1, then at least one image.
	if len(body) < 22 || !bytes.Equal(body[:4], []byte{0, 0, 1, 0}) || body[4] == 0 {
		t.Errorf("/favicon.ico is not an icon: % x", body[:min(len(body), 8)])
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=") || strings.Contains(cc, "max-age=0") {
		t.Errorf("/favicon.ico Cache-Control %q", cc)
	}
	tag := resp.Header.Get("ETag")
	if tag == "" {
		t.Fatal("/favicon.ico has no ETag")
	}
	if again := serve(t, h, "/favicon.ico", "If-None-Match", tag); again.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s: %d, want 304", tag, again.StatusCode)
	}

	// The page links the SVG icon by a versioned URL, cached for good.
	page, _ := io.ReadAll(serve(t, h, "/").Body)
	m := regexp.MustCompile(`<link rel="icon" href="([^"]+\.svg\?v=[0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("the page links no SVG icon: %.600s", page)
	}
	if !bytes.Contains(page, []byte(`href="/favicon.ico"`)) {
		t.Error("the page does not link /favicon.ico")
	}
	svg := serve(t, h, string(m[1]))
	b, _ := io.ReadAll(svg.Body)
	if svg.StatusCode != http.StatusOK || svg.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(b, []byte("<svg")) {
		t.Errorf("%s: %d %q %.40q", m[1], svg.StatusCode, svg.Header.Get("Content-Type"), b)
	}
	if cc := svg.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
		t.Errorf("%s Cache-Control %q", m[1], cc)
	}
}

// Every example that declares variables comes with a value for each one
// that has neither a default nor a nullable type, so it runs as shown.
func TestExamplesCarryTheirVariables(t *testing.T) {
	tabs := web.Examples([]string{"tmefeed_news", "emoji_party"})
	declared := 0
	for i, tab := range tabs {
		doc, err := parser.ParseQuery(&ast.Source{Input: tab.Query})
		if err != nil {
			t.Fatalf("tab %d: %v", i, err)
		}
		vars := map[string]json.RawMessage{}
		if tab.Variables != "" {
			if err := json.Unmarshal([]byte(tab.Variables), &vars); err != nil {
				t.Fatalf("tab %d variables %q: %v", i, tab.Variables, err)
			}
		}
		for _, op := range doc.Operations {
			for _, v := range op.VariableDefinitions {
				declared++
				if v.Type.NonNull && v.DefaultValue == nil {
					if raw, ok := vars[v.Variable]; !ok || string(raw) == "null" {
						t.Errorf("tab %d (%s): no value for $%s", i, op.Name, v.Variable)
					}
				}
			}
		}
	}
	if declared == 0 {
		t.Error("no example declares a variable; the check checks nothing")
	}
}
