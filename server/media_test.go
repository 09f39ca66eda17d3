package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// postMedia reads a post's media list as /v1/post answers it.
func postMedia(t *testing.T, e *env, ch string, id int) []struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Thumb string `json:"thumb"`
} {
	t.Helper()
	var p struct {
		Content struct {
			Media []struct {
				Type  string `json:"type"`
				URL   string `json:"url"`
				Thumb string `json:"thumb"`
			} `json:"media"`
		} `json:"content"`
	}
	wantOK(t, e.get("/v1/post/"+ch+"/"+strconv.Itoa(id)), &p)
	return p.Content.Media
}

func wantRedirect(t *testing.T, rec interface {
	Result() *http.Response
}, to string) {
	t.Helper()
	res := rec.Result()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want 302", res.StatusCode)
	}
	if loc := res.Header.Get("Location"); loc != to {
		t.Fatalf("Location %q, want %q", loc, to)
	}
}

// A media link redirects to the URL the cached page holds while the page
// is fresh, and once the page is past its refresh point re-reads it — one
// origin fetch — and redirects to the URL Telegram gives now.
func TestMediaRedirectFollowsRefreshedURL(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, media: true})
	const id = 42 // a video with a thumbnail, on the channel page
	media := postMedia(t, e, demoChannel, id)
	if len(media) == 0 || media[0].URL == "" || media[0].Thumb == "" {
		t.Fatalf("post %d: media %+v, want a video with URL and thumbnail", id, media)
	}
	page := "/s/" + demoChannel + "/" + strconv.Itoa(id)
	fetches := e.origin.Requests(page)

	target := "/media/" + demoChannel + "/" + strconv.Itoa(id) + "/0"
	rec := e.get(target)
	wantRedirect(t, rec, media[0].URL)
	if age := maxAgeOf(t, rec.Header().Get("Cache-Control")); age > 10 {
		t.Errorf("max-age %d outlives the page's refresh point", age)
	}
	wantRedirect(t, e.get(target+"?thumb=1"), media[0].Thumb)

	// Telegram now signs the file differently.
	fresh := media[0].URL + "-resigned"
	e.origin.SetRewrite(page, media[0].URL, fresh)
	wantRedirect(t, e.get(target), media[0].URL) // the page is fresh: no fetch
	if n := e.origin.Requests(page); n != fetches {
		t.Fatalf("origin fetches %d while the page is fresh, want %d", n, fetches)
	}

	e.clock.Advance(11 * time.Second)
	wantRedirect(t, e.get(target), fresh)
	if n := e.origin.Requests(page); n != fetches+1 {
		t.Fatalf("origin fetches %d after the refresh point, want one more than %d", n, fetches)
	}
	wantRedirect(t, e.get(target), fresh)
	wantRedirect(t, e.get(target+"?thumb=1"), media[0].Thumb)
	if n := e.origin.Requests(page); n != fetches+1 {
		t.Fatalf("origin fetches %d after the re-read, want %d", n, fetches+1)
	}
}

func maxAgeOf(t *testing.T, cc string) int {
	t.Helper()
	_, v, ok := strings.Cut(cc, "max-age=")
	if !ok {
		t.Fatalf("Cache-Control %q has no max-age", cc)
	}
	v, _, _ = strings.Cut(v, ",")
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("Cache-Control %q: %v", cc, err)
	}
	return n
}

// Every attachment of an album has its own index, in the post's order.
func TestMediaAlbumIndexes(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, media: true})
	const id = 35 // an album of 4 photos
	media := postMedia(t, e, demoChannel, id)
	if len(media) < 2 {
		t.Fatalf("post %d: %d attachments, want an album", id, len(media))
	}
	for i, m := range media {
		wantRedirect(t, e.get("/media/"+demoChannel+"/"+strconv.Itoa(id)+"/"+strconv.Itoa(i)), m.URL)
	}
	wantError(t, e.get("/media/"+demoChannel+"/"+strconv.Itoa(id)+"/"+strconv.Itoa(len(media))), http.StatusNotFound, "media_not_found")
}

func TestMediaErrors(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, media: true})
	if m := postMedia(t, e, demoChannel, 44); len(m) != 0 {
		t.Fatalf("post 44 has media %+v; the test needs a post without", m)
	}
	for _, c := range []struct {
		target string
		status int
		code   string
	}{
		{"/media/" + demoChannel + "/44/0", http.StatusNotFound, "media_not_found"},         // a post without media
		{"/media/" + demoChannel + "/33/0?thumb=1", http.StatusNotFound, "media_not_found"}, // a photo has no thumbnail
		{"/media/" + demoChannel + "/42/1", http.StatusNotFound, "media_not_found"},         // past the list
		{"/media/" + demoChannel + "/999999/0", http.StatusNotFound, "post_not_found"},
		{"/media/" + demoChannel + "/42/x", http.StatusBadRequest, "bad_request"},
		{"/media/" + demoChannel + "/42/-1", http.StatusBadRequest, "bad_request"},
		{"/media/" + demoChannel + "/42/01", http.StatusBadRequest, "bad_request"},
		{"/media/" + demoChannel + "/42/100", http.StatusBadRequest, "bad_request"},
		{"/media/" + demoChannel + "/42/0?thumb=yes", http.StatusBadRequest, "bad_request"},
		{"/media/" + demoChannel + "/42/0?thumb=1&thumb=0", http.StatusBadRequest, "bad_request"},
		{"/media/" + demoChannel + "/0/0", http.StatusBadRequest, "invalid_position"},
		{"/media/" + demoChannel + "/abc/0", http.StatusBadRequest, "invalid_position"},
		{"/media/no/42/0", http.StatusBadRequest, "invalid_username"},
	} {
		t.Run(c.target, func(t *testing.T) {
			wantError(t, e.get(c.target), c.status, c.code)
		})
	}
}
