package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/internal/httpcache/httpcachetest"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

func itoa(n int) string { return strconv.Itoa(n) }

func newEncoder(t *testing.T) *httpcache.Encoder {
	t.Helper()
	enc, err := httpcache.New(httpcache.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// uncompress undoes the answer's Content-Encoding.
func uncompress(t *testing.T, rec *httptest.ResponseRecorder) []byte {
	t.Helper()
	return httpcachetest.Decode(t, rec.Header().Get("Content-Encoding"), rec.Body.Bytes())
}

// Every REST GET answers in the coding Accept-Encoding picks, whether the
// answer comes from the hot store (compressed forms kept) or not (CACHE_MODE
// off: compressed per request), and decodes to the identity answer.
func TestRESTCompressionNegotiation(t *testing.T) {
	for _, mode := range []struct {
		name    string
		refresh time.Duration
	}{{"hot store", 10 * time.Second}, {"cache off", 0}} {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t, envOptions{refresh: mode.refresh, encoder: newEncoder(t)})
			for _, target := range []string{"/v1/body/" + demoChannel, "/v1/more/" + demoChannel + "/before/32"} {
				plain := e.get(target)
				if plain.Code != http.StatusOK || plain.Header().Get("Content-Encoding") != "" {
					t.Fatalf("%s without Accept-Encoding: %d, %q", target, plain.Code, plain.Header().Get("Content-Encoding"))
				}
				identity := plain.Body.Bytes()
				if len(identity) < httpcache.DefaultMinBytes {
					t.Fatalf("%s: answer of %d bytes is below the compression minimum; pick a larger one", target, len(identity))
				}
				for _, c := range []struct{ ae, want string }{
					{"gzip", "gzip"},
					{"zstd", "zstd"},
					{"gzip, deflate, br, zstd", "zstd"},
					{"zstd;q=0.5, gzip", "gzip"},
					{"zstd;q=0, gzip;q=0", ""},
					{"identity", ""},
					{"br", ""},
					{"*", "zstd"},
				} {
					for range 2 { // the second from the hot store when it is on
						rec := e.send(http.MethodGet, target, "", "Accept-Encoding", c.ae)
						h := rec.Header()
						if rec.Code != http.StatusOK || h.Get("Content-Encoding") != c.want || h.Get("Vary") != "Accept-Encoding" {
							t.Fatalf("%s AE %q: %d, Content-Encoding %q, Vary %q", target, c.ae, rec.Code, h.Get("Content-Encoding"), h.Get("Vary"))
						}
						if h.Get("Content-Length") != itoa(rec.Body.Len()) {
							t.Errorf("%s AE %q: Content-Length %s for %d bytes", target, c.ae, h.Get("Content-Length"), rec.Body.Len())
						}
						if !bytes.Equal(uncompress(t, rec), identity) {
							t.Errorf("%s AE %q: does not decode to the identity answer", target, c.ae)
						}
						if c.want != "" && rec.Body.Len() >= len(identity)/2 {
							t.Errorf("%s AE %q: %d bytes compressed from %d", target, c.ae, rec.Body.Len(), len(identity))
						}
						wantTag := plain.Header().Get("ETag")
						if c.want != "" {
							wantTag = "W/" + wantTag // same content, other bytes
						}
						if h.Get("ETag") != wantTag {
							t.Errorf("%s AE %q: ETag %q, want %q", target, c.ae, h.Get("ETag"), wantTag)
						}
					}
				}
				// HEAD: the headers a GET with the same Accept-Encoding
				// gets (RFC 9110 §9.3.2), and no body.
				for _, ae := range []string{"zstd", "gzip", ""} {
					get := e.send(http.MethodGet, target, "", "Accept-Encoding", ae)
					head := e.send(http.MethodHead, target, "", "Accept-Encoding", ae)
					for _, k := range []string{"Content-Encoding", "Etag", "Vary", "Content-Length", "Content-Type"} {
						if head.Header().Get(k) != get.Header().Get(k) {
							t.Errorf("HEAD %s AE %q: %s %q, GET has %q", target, ae, k, head.Header().Get(k), get.Header().Get(k))
						}
					}
					if head.Code != http.StatusOK || head.Body.Len() != 0 {
						t.Errorf("HEAD %s AE %q: %d with %d body bytes", target, ae, head.Code, head.Body.Len())
					}
				}
			}
		})
	}
}

// A small answer is sent as it is, and does not vary by Accept-Encoding;
// errors are never compressed.
func TestRESTSmallAnswersAndErrorsUncompressed(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, encoder: newEncoder(t)})
	rec := e.send(http.MethodGet, "/v1/post/"+demoChannel+"/1", "", "Accept-Encoding", "gzip")
	if rec.Code == http.StatusOK && rec.Body.Len() < httpcache.DefaultMinBytes {
		if rec.Header().Get("Content-Encoding") != "" || rec.Header().Get("Vary") != "" {
			t.Errorf("small answer (%d bytes): Content-Encoding %q, Vary %q", rec.Body.Len(), rec.Header().Get("Content-Encoding"), rec.Header().Get("Vary"))
		}
	}
	rec = e.send(http.MethodGet, "/v1/body/no_such_channel_here", "", "Accept-Encoding", "gzip")
	if rec.Code < 400 || rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("error: %d, Content-Encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
	}
}

// Without an Encoder (COMPRESSION=off) nothing is compressed and nothing
// varies, but ETags and 304s still work.
func TestRESTCompressionOff(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second})
	rec := e.send(http.MethodGet, "/v1/body/"+demoChannel, "", "Accept-Encoding", "gzip, zstd")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "" || rec.Header().Get("Vary") != "" || rec.Header().Get("ETag") == "" {
		t.Fatalf("%d, Content-Encoding %q, Vary %q, ETag %q", rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Vary"), rec.Header().Get("ETag"))
	}
	again := e.send(http.MethodGet, "/v1/body/"+demoChannel, "", "If-None-Match", rec.Header().Get("ETag"))
	if again.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d", again.Code)
	}
}

// Every cacheable REST answer has an ETag; If-None-Match holding it (in
// any coding's form, in a list, or *) gets 304 with no body, its caching
// headers and no compression; a changed page gets 200 with a new tag.
func TestRESTRevalidation(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, encoder: newEncoder(t)})
	for _, target := range []string{"/v1/body/" + demoChannel, "/v1/preview/" + demoChannel, "/v1/more/" + demoChannel + "/before/32", "/v1/post/" + demoChannel + "/33"} {
		first := e.get(target)
		if first.Code != http.StatusOK {
			t.Fatalf("%s: %d", target, first.Code)
		}
		tag := first.Header().Get("ETag")
		if !strings.HasPrefix(tag, `"`) {
			t.Fatalf("%s: ETag %q", target, tag)
		}
		for _, c := range []struct {
			inm, ae string
			want    int
		}{
			{tag, "", http.StatusNotModified},
			{tag, "gzip", http.StatusNotModified},
			{"W/" + tag, "", http.StatusNotModified},
			{`"other", ` + tag, "zstd", http.StatusNotModified},
			{"*", "", http.StatusNotModified},
			{`"other"`, "", http.StatusOK},
			{`W/"other"`, "gzip", http.StatusOK},
			{tag[:len(tag)-2] + `"`, "", http.StatusOK},
		} {
			rec := e.send(http.MethodGet, target, "", "If-None-Match", c.inm, "Accept-Encoding", c.ae)
			if rec.Code != c.want {
				t.Errorf("%s If-None-Match %s: %d, want %d", target, c.inm, rec.Code, c.want)
				continue
			}
			if c.want != http.StatusNotModified {
				continue
			}
			h := rec.Header()
			if rec.Body.Len() != 0 || h.Get("Content-Encoding") != "" || h.Get("Content-Length") != "" || !strings.HasPrefix(h.Get("Cache-Control"), "public, max-age=") || !strings.Contains(h.Get("ETag"), tag) {
				t.Errorf("%s If-None-Match %s: 304 with %d body bytes, headers %v", target, c.inm, rec.Body.Len(), h)
			}
		}
	}

}

// changingPages answers every route with the bytes it is given.
type changingPages struct{ value atomic.Pointer[[]byte] }

func (p *changingPages) RenderedRepFor(context.Context, string, tme.Request, pages.ClientNamer, func(pages.Result) ([]byte, error)) (pages.Rendered, pages.Representation, error) {
	return pages.Rendered{Value: *p.value.Load(), FetchedAt: time.Now()}, nil, nil
}

// When the answer changes, the tag a client holds no longer matches.
func TestRESTRevalidationAfterChange(t *testing.T) {
	p := &changingPages{}
	v1, v2 := []byte(`{"v":1}`), []byte(`{"v":2}`)
	p.value.Store(&v1)
	e := newEnv(t, envOptions{refresh: 10 * time.Second, pages: p, encoder: newEncoder(t)})
	target := "/v1/body/" + demoChannel
	tag := e.get(target).Header().Get("ETag")
	if rec := e.send(http.MethodGet, target, "", "If-None-Match", tag); rec.Code != http.StatusNotModified {
		t.Fatalf("unchanged: %d", rec.Code)
	}
	p.value.Store(&v2)
	rec := e.send(http.MethodGet, target, "", "If-None-Match", tag)
	if rec.Code != http.StatusOK || rec.Header().Get("ETag") == tag || rec.Body.String() != `{"v":2}` {
		t.Errorf("changed: %d, ETag %q (was %q), body %q", rec.Code, rec.Header().Get("ETag"), tag, rec.Body)
	}
}

// POST /v1/feed keeps its compressed forms beside the build: the second
// identical request compresses nothing and gets the same bytes.
func TestFeedCompression(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, feed: true, encoder: newEncoder(t)})
	body := `{"channels": ["` + demoChannel + `", "kanal_novostei"]}`
	plain := e.send(http.MethodPost, "/v1/feed", body, "Content-Type", "application/json")
	if plain.Code != http.StatusOK {
		t.Fatalf("%d %s", plain.Code, plain.Body)
	}
	for _, ae := range []string{"gzip", "zstd"} {
		a := e.send(http.MethodPost, "/v1/feed", body, "Content-Type", "application/json", "Accept-Encoding", ae)
		b := e.send(http.MethodPost, "/v1/feed", body, "Content-Type", "application/json", "Accept-Encoding", ae)
		if a.Code != http.StatusOK || a.Header().Get("Content-Encoding") != ae || a.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s: %d, Content-Encoding %q, Vary %q", ae, a.Code, a.Header().Get("Content-Encoding"), a.Header().Get("Vary"))
		}
		if !bytes.Equal(uncompress(t, a), plain.Body.Bytes()) {
			t.Errorf("%s: does not decode to the identity answer", ae)
		}
		if !bytes.Equal(a.Body.Bytes(), b.Body.Bytes()) {
			t.Errorf("%s: two requests got different compressed bytes", ae)
		}
	}
}

// GraphQL answers go through the same negotiation.
func TestGraphQLCompressed(t *testing.T) {
	big := strings.Repeat(`{"data":{"x":1}}`, 200)
	mount := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", itoa(len(big)))
		_, _ = io.WriteString(w, big)
	})
	e := newEnv(t, envOptions{refresh: 10 * time.Second, graphQL: mount, encoder: newEncoder(t)})
	rec := e.send(http.MethodGet, "/graphql?query={x}", "", "Accept-Encoding", "gzip")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" || string(uncompress(t, rec)) != big {
		t.Errorf("%d, Content-Encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
	}
}

// Feed-reader documents are compressed as Accept-Encoding asks, like every
// other REST answer: readers poll them often and they are large. The 304
// still answers either tag.
func TestFormatsCompressed(t *testing.T) {
	e := newEnv(t, envOptions{refresh: 10 * time.Second, feed: true, encoder: newEncoder(t)})
	for _, f := range []string{"rss", "atom", "jsonfeed"} {
		target := "/v1/" + f + "?channels=" + demoChannel + ",kanal_novostei"
		plain := e.send(http.MethodGet, target, "")
		if plain.Code != http.StatusOK || plain.Header().Get("Content-Encoding") != "" {
			t.Fatalf("%s: %d, Content-Encoding %q", f, plain.Code, plain.Header().Get("Content-Encoding"))
		}
		for _, ae := range []string{"gzip", "zstd"} {
			rec := e.send(http.MethodGet, target, "", "Accept-Encoding", ae)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != ae || rec.Header().Get("Vary") != "Accept-Encoding" {
				t.Fatalf("%s %s: %d, Content-Encoding %q, Vary %q", f, ae, rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Vary"))
			}
			if !bytes.Equal(uncompress(t, rec), plain.Body.Bytes()) {
				t.Errorf("%s %s: does not decode to the identity document", f, ae)
			}
			if rec.Body.Len() >= plain.Body.Len() {
				t.Errorf("%s %s: %d bytes, identity %d", f, ae, rec.Body.Len(), plain.Body.Len())
			}
			for _, tag := range []string{rec.Header().Get("ETag"), plain.Header().Get("ETag")} {
				if nm := e.send(http.MethodGet, target, "", "Accept-Encoding", ae, "If-None-Match", tag); nm.Code != http.StatusNotModified || nm.Header().Get("Content-Encoding") != "" {
					t.Errorf("%s %s If-None-Match %s: %d, Content-Encoding %q", f, ae, tag, nm.Code, nm.Header().Get("Content-Encoding"))
				}
			}
		}
	}
}

// A HEAD of a feed-reader document gets exactly the headers of the GET
// with the same Accept-Encoding (coding, length, ETag, Vary), and a Range
// is not served: the whole document, in the same coding, with the same
// headers, as any GET. Likewise for the REST routes, the widget's page and
// posts and GraphQL's GET, none of which serves ranges.
func TestHeadAndRangeAnswerAsGet(t *testing.T) {
	big := strings.Repeat(`{"data":{"x":1}}`, 200)
	gql := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // as package graph answers
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", itoa(len(big)))
		_, _ = io.WriteString(w, big)
	})
	e := newEnv(t, envOptions{refresh: 10 * time.Second, feed: true, widget: true, graphQL: gql, encoder: newEncoder(t)})
	// Over a real connection: net/http leaves out a HEAD's body and
	// measures an answer written without a length.
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	send := func(method, target string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+target, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i+1] != "" {
				req.Header.Set(hdr[i], hdr[i+1])
			}
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, b
	}
	targets := []string{"/v1/body/" + demoChannel, "/v1/more/" + demoChannel + "/before/32", "/embed/posts?channels=" + demoChannel, "/embed?channels=" + demoChannel, "/graphql?query={x}"}
	for _, f := range []string{"rss", "atom", "jsonfeed"} {
		targets = append(targets, "/v1/"+f+"?channels="+demoChannel+",kanal_novostei")
	}
	same := []string{"Content-Type", "Content-Encoding", "Content-Length", "Etag", "Vary", "Last-Modified", "Cache-Control", "Accept-Ranges", "Content-Range"}
	for _, target := range targets {
		for _, ae := range []string{"", "gzip", "zstd", "gzip, deflate, br, zstd"} {
			get, body := send(http.MethodGet, target, "Accept-Encoding", ae)
			if get.StatusCode != http.StatusOK || get.Header.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("GET %s AE %q: %d, Vary %q", target, ae, get.StatusCode, get.Header.Get("Vary"))
			}
			if cl := get.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
				t.Errorf("GET %s AE %q: Content-Length %s for %d bytes", target, ae, cl, len(body))
			}
			head, headBody := send(http.MethodHead, target, "Accept-Encoding", ae)
			ranged, rangedBody := send(http.MethodGet, target, "Accept-Encoding", ae, "Range", "bytes=0-99")
			for _, k := range same {
				if head.Header.Get(k) != get.Header.Get(k) {
					t.Errorf("HEAD %s AE %q: %s %q, GET has %q", target, ae, k, head.Header.Get(k), get.Header.Get(k))
				}
				if ranged.Header.Get(k) != get.Header.Get(k) {
					t.Errorf("GET %s AE %q Range: %s %q, GET has %q", target, ae, k, ranged.Header.Get(k), get.Header.Get(k))
				}
			}
			if head.StatusCode != http.StatusOK || len(headBody) != 0 {
				t.Errorf("HEAD %s AE %q: %d with %d body bytes", target, ae, head.StatusCode, len(headBody))
			}
			if ranged.StatusCode != http.StatusOK || !bytes.Equal(rangedBody, body) {
				t.Errorf("GET %s AE %q Range: %d, %d bytes; want 200 and the whole answer", target, ae, ranged.StatusCode, len(rangedBody))
			}
		}
	}
}
