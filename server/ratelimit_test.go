package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// RATE_LIMIT_RPM counts what reads feeds and pages (/v1, /graphql, /media,
// the widget's page and posts); the widget's assets, named by their hash
// and kept for a year, and its snippet page do not count, so that a
// dashboard of many widgets behind one address spends its budget on their
// posts. A widget over the limit gets the widget's own HTML page under its
// security headers, saying when to retry (and, for the page shown in a
// frame, reloading itself then), not the API's JSON.
func TestRateLimitCountsWorkNotAssets(t *testing.T) {
	const rpm = 4
	e := newEnv(t, envOptions{refresh: 10 * time.Second, feed: true, media: true, widget: true, rateLimitRPM: rpm})
	const page = "/embed?channels=" + demoChannel
	first := e.get(page) // 1
	if first.Code != http.StatusOK {
		t.Fatalf("%s: %d", page, first.Code)
	}
	var assets []string
	for _, p := range []string{first.Body.String(), e.get("/embed/new").Body.String()} {
		doc, err := html.Parse(strings.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range findAll(doc, func(n *html.Node) bool { return n.Data == "link" || n.Data == "script" }) {
			for _, a := range n.Attr {
				if a.Key == "href" || a.Key == "src" {
					assets = append(assets, a.Val)
				}
			}
		}
	}
	if len(assets) < 3 {
		t.Fatalf("assets %q", assets)
	}
	// Many widgets' assets and snippet pages: none counts.
	free := append(assets, "/embed/new", "/embed/new?channels="+demoChannel)
	for range 3 * rpm {
		for _, target := range free {
			if rec := e.get(target); rec.Code != http.StatusOK {
				t.Fatalf("%s: %d, want 200: not limited", target, rec.Code)
			}
		}
	}
	// The budget is what is left after the one page: the posts, a media
	// link and the API.
	for i, target := range []string{"/embed/posts?channels=" + demoChannel, "/media/" + demoChannel + "/33/0", "/v1/preview/" + demoChannel} {
		if rec := e.get(target); rec.Code == http.StatusTooManyRequests {
			t.Fatalf("request %d (%s) of %d: 429", i+2, target, rpm)
		}
	}
	for _, target := range []string{page, "/embed/posts?channels=" + demoChannel} {
		rec := e.get(target)
		h := rec.Header()
		retry, err := strconv.Atoi(h.Get("Retry-After"))
		if rec.Code != http.StatusTooManyRequests || err != nil {
			t.Fatalf("%s over the limit: %d, Retry-After %q", target, rec.Code, h.Get("Retry-After"))
		}
		// The budget was spent at once (the test's clock stands still):
		// the next request is admitted when one comes back, a minute/rpm
		// later.
		if want := 60 / rpm; retry != want {
			t.Errorf("%s over the limit: Retry-After %d, want %d (when the next request is admitted)", target, retry, want)
		}
		b := rec.Body.String()
		if h.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors ") ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s over the limit: headers %v", target, h)
		}
		if !strings.Contains(b, "429 Too Many Requests") || !strings.Contains(b, strconv.Itoa(retry)+" second") {
			t.Errorf("%s over the limit: the page does not say when to retry: %s", target, b)
		}
		refresh := strings.Contains(b, `<meta http-equiv="refresh" content="`)
		if refresh != (target == page) {
			t.Errorf("%s over the limit: reloads itself %v: %s", target, refresh, b)
		}
	}
	for _, target := range []string{"/media/" + demoChannel + "/33/0", "/v1/preview/" + demoChannel} {
		if rec := e.get(target); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"rate_limited"`) {
			t.Errorf("%s over the limit: %d %s", target, rec.Code, rec.Body)
		}
	}
	for _, target := range free {
		if rec := e.get(target); rec.Code != http.StatusOK {
			t.Errorf("%s after the budget is spent: %d, want 200", target, rec.Code)
		}
	}
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, findAll(c, match)...)
	}
	return out
}
