package web_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/web"
)

// An asset is cached for good only under the version the page links: a
// URL naming another version (the page of another release, during a
// rolling deploy) must not pin this release's bytes under it.
func TestAssetsImmutableOnlyAtTheirVersion(t *testing.T) {
	h, err := web.Handler(web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	page := serve(t, h, "/")
	b, err := io.ReadAll(page.Body)
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`"(/playground/assets/[^"?]+)\?v=([0-9a-f]+)"`).FindAllStringSubmatch(string(b), -1)
	if len(links) < 4 {
		t.Fatalf("the page links %d versioned assets", len(links))
	}
	for _, l := range links {
		if r := serve(t, h, l[1]+"?v="+l[2]); r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s?v=%s: %d %q, want immutable", l[1], l[2], r.StatusCode, r.Header.Get("Cache-Control"))
		}
		for _, v := range []string{"0000000000000000", "", l[2] + "x"} {
			if r := serve(t, h, l[1]+"?v="+v); strings.Contains(r.Header.Get("Cache-Control"), "immutable") {
				t.Errorf("%s?v=%s: Cache-Control %q, want it revalidated", l[1], v, r.Header.Get("Cache-Control"))
			}
		}
	}
}

// An asset is sent gzip-compressed only when Accept-Encoding allows gzip.
func TestAssetGzipFollowsAcceptEncoding(t *testing.T) {
	h, err := web.Handler(web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		accept string
		gzip   bool
	}{
		{"gzip", true},
		{"br, gzip;q=0.5", true},
		{"GZIP", true},
		{"*", true},
		{"gzip;q=0", false},
		{"gzip; q=0.0, br", false},
		{"*, gzip;q=0", false},
		{"identity", false},
		{"", false},
	} {
		r := serve(t, h, "/playground/assets/graphiql.min.js", "Accept-Encoding", c.accept)
		if got := r.Header.Get("Content-Encoding") == "gzip"; got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.accept, got, c.gzip)
		}
	}
}
