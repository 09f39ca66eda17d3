package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
)

// searchJSON is the part of a /v1/search answer the tests read.
type searchJSON struct {
	Content struct {
		Posts []struct {
			ID      int `json:"id"`
			Content struct {
				Text struct {
					String string `json:"string"`
				} `json:"text"`
			} `json:"content"`
		} `json:"posts"`
	} `json:"content"`
}

func TestSearchREST(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second})
	const ch = "retro_channel"
	var b searchJSON
	wantOK(t, e.get("/v1/search/"+ch+"?q="+url.QueryEscape("KB")), &b)
	if len(b.Content.Posts) == 0 {
		t.Fatal("no posts found")
	}
	for _, p := range b.Content.Posts {
		if !strings.Contains(strings.ToLower(p.Content.Text.String), "kb") {
			t.Errorf("post %d does not hold the query: %q", p.ID, p.Content.Text.String)
		}
	}
	wantOK(t, e.get("/v1/search/"+ch+"?q=KB"), nil)
	if n := e.origin.Requests("/s/" + ch + "?q=KB"); n != 1 {
		t.Errorf("origin requests %d for a repeated search, want 1", n)
	}

	var none searchJSON
	wantOK(t, e.get("/v1/search/"+ch+"?q="+url.QueryEscape("no such words")), &none)
	if none.Content.Posts == nil || len(none.Content.Posts) != 0 {
		t.Errorf("no-match search: posts %v, want []", none.Content.Posts)
	}

	for _, c := range []struct {
		target string
		code   string
	}{
		{"/v1/search/" + ch, "bad_request"},
		{"/v1/search/" + ch + "?q=", "bad_request"},
		{"/v1/search/" + ch + "?q=%20%20", "bad_request"},
		{"/v1/search/" + ch + "?q=a&q=b", "bad_request"},
		{"/v1/search/" + ch + "?q=" + strings.Repeat("x", 129), "bad_request"},
		{"/v1/search/" + ch + "?q=a%00b", "bad_request"},
		{"/v1/search/no?q=a", "invalid_username"},
	} {
		wantError(t, e.get(c.target), http.StatusBadRequest, c.code)
	}
}

// POST /v1/feed's since reaches past each channel's newest page.
func TestFeedSinceREST(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, feed: true, deepHistory: 300})
	since := fixtures.DeepPostDate(201).Format(time.RFC3339)
	var out struct {
		Result []struct {
			ID int `json:"id"`
		} `json:"result"`
	}
	wantOK(t, e.do(http.MethodPost, "/v1/feed", []byte(`{"channels": ["`+fixtures.DeepChannel+`"], "order": "newest", "since": "`+since+`"}`)), &out)
	if len(out.Result) != 100 || out.Result[0].ID != 300 || out.Result[99].ID != 201 {
		t.Fatalf("%d posts, want posts 300..201", len(out.Result))
	}
	wantError(t, e.do(http.MethodPost, "/v1/feed", []byte(`{"channels": ["`+fixtures.DeepChannel+`"], "since": "yesterday"}`)), http.StatusBadRequest, "bad_request")
}
