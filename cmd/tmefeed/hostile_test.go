package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"

	"github.com/tmefeed/tmefeed/fixtures"
)

// hostilePages are the recorded pages with tmefeed_news's post 33 made
// hostile, as a channel owner or a broken origin could: its picture URL
// is javascript:, its text carries a javascript: link with an onclick
// handler, and bytes that are not UTF-8.
func hostilePages(t *testing.T) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(fixtures.Pages(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fixtures.Pages(), path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(path, "s/tmefeed_news") {
			b = bytes.ReplaceAll(b, []byte("background-image:url('https://cdn4.telesco.pe/file/qOnhOtiJ"), []byte("background-image:url('javascript:alert(1)//"))
			b = bytes.ReplaceAll(b, []byte(`dir="auto">Sunset over the data centre`), []byte(`dir="auto">Sunset `+"\xff\xfe"+` over <a href="javascript:alert(2)" onclick="alert(3)" onmouseover="alert(4)">the</a> <a href=" JaVaScRiPt:alert(5)">data</a> centre`+"\xc3"))
		}
		out[path] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	javascriptURL = regexp.MustCompile(`(?i)javascript:`)
	onAttribute   = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
)

// TestAbuseHostileOriginBytes: a fixture page with a javascript: picture URL,
// a javascript: link with on* handlers and invalid UTF-8. /media never
// redirects to the picture (502, saying why); the GraphQL answer and the
// /embed page are valid UTF-8; GraphQL's html holds no javascript: and no
// on* attribute (htmlAsServed keeps the page's markup, as documented),
// and entity URLs that are not http, https or tg are null.
func TestAbuseHostileOriginBytes(t *testing.T) {
	s := startLiveWith(t, fixtures.OriginOptions{Pages: hostilePages(t)}, nil)
	// Redirects are read, never followed: nothing leaves the loopback.
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	status, h, body := s.do(t, http.MethodGet, "/media/tmefeed_news/33/0", "")
	if status != http.StatusBadGateway || h.Get("Location") != "" || !strings.Contains(body, "not an https URL on Telegram's hosts") {
		t.Errorf("/media to a javascript: picture: %d Location %q %s; want 502 saying why", status, h.Get("Location"), body)
	}
	// A picture on Telegram's CDN still redirects.
	if status, h, _ := s.do(t, http.MethodGet, "/media/tmefeed_news/35/0", ""); status != http.StatusFound || !strings.HasPrefix(h.Get("Location"), "https://cdn4.telesco.pe/") {
		t.Errorf("/media to Telegram's CDN: %d Location %q", status, h.Get("Location"))
	}

	q, _ := json.Marshal(map[string]string{"query": `{ channel(username: "tmefeed_news") { posts(around: 33, first: 5) { edges { node { messageId media { url } text { plain html htmlAsServed entities { kind url } } } } } } }`})
	status, _, body = s.do(t, http.MethodPost, "/graphql", string(q))
	if status != http.StatusOK || !utf8.ValidString(body) {
		t.Fatalf("GraphQL: %d, valid UTF-8 %v: %.300s", status, utf8.ValidString(body), body)
	}
	var r struct {
		Data struct {
			Channel struct {
				Posts struct {
					Edges []struct {
						Node struct {
							MessageID int
							Media     []struct{ URL *string }
							Text      struct {
								Plain, HTML, HTMLAsServed string
								Entities                  []struct {
									Kind string
									URL  *string
								}
							}
						}
					}
				}
			}
		}
		Errors []any
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Errors) > 0 {
		t.Fatalf("GraphQL: %v %v", err, r.Errors)
	}
	found := false
	for _, e := range r.Data.Channel.Posts.Edges {
		n := e.Node
		if n.MessageID != 33 {
			continue
		}
		found = true
		if !strings.Contains(n.Text.Plain, "Sunset \uFFFD over the data centre\uFFFD") {
			t.Errorf("plain %q, want each invalid run as one U+FFFD", n.Text.Plain)
		}
		if javascriptURL.MatchString(n.Text.HTML) || onAttribute.MatchString(n.Text.HTML) || !strings.Contains(n.Text.HTML, "the") {
			t.Errorf("html %q: want the text without javascript: or on* attributes", n.Text.HTML)
		}
		if !javascriptURL.MatchString(n.Text.HTMLAsServed) || !onAttribute.MatchString(n.Text.HTMLAsServed) {
			t.Errorf("htmlAsServed %q: want the page's markup as served", n.Text.HTMLAsServed)
		}
		links := 0
		for _, en := range n.Text.Entities {
			if en.Kind == "TEXT_LINK" {
				links++
				if en.URL != nil {
					t.Errorf("entity URL %q, want null for a javascript: link", *en.URL)
				}
			}
		}
		if links != 2 {
			t.Errorf("entities %+v, want the two links (with null URLs)", n.Text.Entities)
		}
		if len(n.Media) != 1 || n.Media[0].URL != nil {
			t.Errorf("media %+v, want the picture without its javascript: URL", n.Media)
		}
	}
	if !found {
		t.Fatalf("post 33 not in %s", body)
	}

	status, _, body = s.do(t, http.MethodGet, "/embed?channels=tmefeed_news", "")
	if status != http.StatusOK || !utf8.ValidString(body) || !strings.Contains(body, "Sunset") {
		t.Errorf("/embed: %d, valid UTF-8 %v", status, utf8.ValidString(body))
	}
	if javascriptURL.MatchString(body) {
		t.Errorf("/embed carries a javascript: URL")
	}
	t.Logf("FIGURE: origin | page with a javascript: picture URL, a javascript: link with on* handlers and invalid UTF-8: /media answer | 502 (no Location)")
	t.Logf("FIGURE: origin | same page: GraphQL and /embed answers valid UTF-8, javascript: or on* in GraphQL text.html | yes, none")
}
