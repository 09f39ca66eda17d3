package origin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/tme"
)

// The client against the fixture origin: both sides must agree on t.me's
// paths, methods and answers.
func TestClientAgainstFixtureOrigin(t *testing.T) {
	pages := fstest.MapFS{
		"s/tmefeed_news.html":              {Data: []byte(`<div data-post="tmefeed_news/100"></div>`)},
		"s/tmefeed_news/90.html":           {Data: []byte(`<div data-post="tmefeed_news/90"></div>`)},
		"more/tmefeed_news/before-99.json": {Data: []byte(`"<div data-post=\"tmefeed_news\/98\"><\/div>"`)},
		"more/tmefeed_news/after-90.json":  {Data: []byte(`"<div data-post=\"tmefeed_news\/91\"><\/div>"`)},
		"preview/tmefeed_news.html":        {Data: []byte(`<div class="tgme_page_title">tmefeed</div>`)},
		"preview/some_group.html":          {Data: []byte(`<div class="tgme_page_title">group</div>`)},
		"embed/tmefeed_news/100.html":      {Data: []byte(`<div class="tgme_widget_message" data-post="tmefeed_news/100"></div>`)},
	}
	o := fixtures.NewOrigin(fixtures.OriginOptions{Pages: pages})
	s := httptest.NewServer(o)
	t.Cleanup(s.Close)
	c := newClient(t, Config{BaseURL: s.URL})
	ctx := context.Background()

	for _, tt := range []struct {
		r    tme.Request
		want string
	}{
		{tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news"}, "tmefeed_news/100"},
		{tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news", Position: 90}, "tmefeed_news/90"},
		{tme.Request{Kind: tme.KindMore, Channel: "tmefeed_news", Position: 99}, `tmefeed_news\/98`},
		{tme.Request{Kind: tme.KindMore, Channel: "tmefeed_news", Position: 90, After: true}, `tmefeed_news\/91`},
		{tme.Request{Kind: tme.KindMore, Channel: "tmefeed_news", Position: 5}, `""`}, // no posts there: an empty chunk
		{tme.Request{Kind: tme.KindPreview, Channel: "tmefeed_news"}, "tgme_page_title"},
		{tme.Request{Kind: tme.KindPreview, Channel: "nobody_here"}, "Contact @nobody_here"},
		{tme.Request{Kind: tme.KindEmbed, Channel: "tmefeed_news", Position: 100}, `data-post="tmefeed_news/100"`},
		{tme.Request{Kind: tme.KindEmbed, Channel: "tmefeed_news", Position: 7}, "Post not found"},
	} {
		b, err := c.Fetch(ctx, tt.r)
		if err != nil || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %q, %v; want it to contain %q", tt.r.Path(), b, err, tt.want)
		}
		if n := o.Requests(tt.r.Path()); n != 1 {
			t.Errorf("%s reached the fixture origin %d times, want 1", tt.r.Path(), n)
		}
	}

	for _, r := range []tme.Request{
		{Kind: tme.KindBody, Channel: "some_group"}, // 302 to /some_group
		{Kind: tme.KindBody, Channel: "nobody_here"},
	} {
		if _, err := c.Fetch(ctx, r); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", r.Path(), err)
		}
	}
	if n := o.Requests("/some_group"); n != 0 {
		t.Errorf("redirect followed: /some_group requested %d times", n)
	}

	// A truncated body and a 503 are retried; the third attempt succeeds.
	o.Reset()
	o.SetFault("/s/tmefeed_news", fixtures.Fault{Truncate: true, Times: 1})
	o.SetFault("/s/tmefeed_news/90", fixtures.Fault{Status: http.StatusServiceUnavailable, Times: 2})
	if _, err := c.Fetch(ctx, tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news"}); err != nil {
		t.Errorf("after one truncated body: %v", err)
	}
	if _, err := c.Fetch(ctx, tme.Request{Kind: tme.KindBody, Channel: "tmefeed_news", Position: 90}); err != nil {
		t.Errorf("after two 503s: %v", err)
	}
	if a, b := o.Requests("/s/tmefeed_news"), o.Requests("/s/tmefeed_news/90"); a != 2 || b != 3 {
		t.Errorf("requests %d and %d, want 2 and 3", a, b)
	}

	// 429 from the fixture: the client stops asking until Retry-After.
	o.Reset()
	o.SetFault("", fixtures.Fault{Status: http.StatusTooManyRequests, RetryAfter: "600"})
	for range 3 {
		if _, err := c.Fetch(ctx, tme.Request{Kind: tme.KindPreview, Channel: "tmefeed_news"}); !errors.Is(err, ErrRateLimited) {
			t.Fatalf("err = %v, want ErrRateLimited", err)
		}
	}
	if n := o.Total(); n != 1 {
		t.Errorf("%d requests reached the rate-limited origin, want 1", n)
	}
}
