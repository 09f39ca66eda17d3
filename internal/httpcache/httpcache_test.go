package httpcache_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/internal/httpcache/httpcachetest"
)

func TestNegotiate(t *testing.T) {
	cases := []struct {
		field string
		want  httpcache.Coding
	}{
		{"", httpcache.Identity},
		{"identity", httpcache.Identity},
		{"gzip", httpcache.Gzip},
		{"GZIP", httpcache.Gzip},
		{"x-gzip", httpcache.Gzip},
		{"zstd", httpcache.Zstd},
		{"gzip, deflate, br, zstd", httpcache.Zstd}, // what browsers send: zstd first at equal weight
		{"gzip;q=1.0, zstd;q=0.5", httpcache.Gzip},
		{"zstd;q=0.2, gzip;q=0.1", httpcache.Zstd},
		{"zstd;q=0, gzip", httpcache.Gzip},
		{"gzip;q=0", httpcache.Identity},
		{"gzip;q=0, zstd;q=0", httpcache.Identity},
		{"*", httpcache.Zstd},
		{"*;q=0.5, zstd;q=0", httpcache.Gzip},
		{"gzip;q=0.8, *;q=0", httpcache.Gzip},
		{"br", httpcache.Identity},
		{"identity;q=0", httpcache.Identity}, // nothing else acceptable: identity rather than 406
		{"gzip;q=banana", httpcache.Identity},
		{"gzip;q=2", httpcache.Identity},
		{" gzip ; q=0.5 , zstd ; q=0.4", httpcache.Gzip},
	}
	for _, c := range cases {
		if got := httpcache.Negotiate(c.field); got != c.want {
			t.Errorf("Negotiate(%q) = %v, want %v", c.field, got, c.want)
		}
	}
}

func TestNoneMatch(t *testing.T) {
	const tag = `"abc"`
	cases := []struct {
		field string
		want  bool
	}{
		{"", false},
		{`"abc"`, true},
		{`W/"abc"`, true}, // weak comparison: a weak tag of the same content matches
		{`"xyz"`, false},
		{`"xyz", "abc"`, true},
		{`"xyz",W/"abc"`, true},
		{`"a,b", "abc"`, true}, // a comma inside a tag does not split it
		{`"a,b"`, false},
		{`*`, true},
		{`abc`, false}, // unquoted: not an entity tag
		{`"abc`, false},
		{`"ab"`, false},
		{`"abcd"`, false},
	}
	for _, c := range cases {
		if got := httpcache.NoneMatch(c.field, tag); got != c.want {
			t.Errorf("NoneMatch(%q, %s) = %v, want %v", c.field, tag, got, c.want)
		}
	}
	if !httpcache.NoneMatch(`"abc"`, `W/"abc"`) {
		t.Error("a strong tag in the field does not match the weak tag of the answer")
	}
}

func TestETag(t *testing.T) {
	a, b := httpcache.ETag([]byte("hello")), httpcache.ETag([]byte("hellO"))
	if a == b || !strings.HasPrefix(a, `"`) || !strings.HasSuffix(a, `"`) || len(a) != 34 {
		t.Errorf("tags %s %s", a, b)
	}
	if httpcache.ETag([]byte("hel"), []byte("lo")) != a {
		t.Error("the tag depends on how the bytes are split")
	}
	if httpcache.Weak(a) != "W/"+a || httpcache.Weak(httpcache.Weak(a)) != "W/"+a {
		t.Error("Weak")
	}
}

func newEncoder(t *testing.T, min int) *httpcache.Encoder {
	t.Helper()
	e, err := httpcache.New(httpcache.Config{MinBytes: min})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSelectKeptAndMadeForms(t *testing.T) {
	e := newEncoder(t, 100)
	body := bytes.Repeat([]byte(`{"text":"a post"},`), 100)
	for _, kept := range []bool{true, false} {
		rep := e.NewRep(body, kept)
		if rep.Kept() != kept {
			t.Errorf("kept %v: Kept() = %v", kept, rep.Kept())
		}
		for _, c := range []httpcache.Coding{httpcache.Zstd, httpcache.Gzip} {
			b, got, tag, vary := e.Select(rep, c.String())
			if got != c || !vary || tag != "W/"+rep.ETag || len(b) >= len(body)/4 {
				t.Errorf("kept %v, %v: coding %v, tag %s, vary %v, %d bytes", kept, c, got, tag, vary, len(b))
			}
			if !bytes.Equal(httpcachetest.Decode(t, c.String(), b), body) {
				t.Errorf("kept %v, %v: does not decode to the body", kept, c)
			}
			checkContentLength(t, rep, c, b, kept)
		}
		b, got, tag, vary := e.Select(rep, "")
		if got != httpcache.Identity || tag != rep.ETag || !vary || !bytes.Equal(b, body) {
			t.Errorf("identity: %v %s %v", got, tag, vary)
		}
		checkContentLength(t, rep, got, b, kept)
	}
	small := e.NewRep([]byte(`{"small":true}`), true)
	if b, got, _, vary := e.Select(small, "gzip"); got != httpcache.Identity || vary || string(b) != `{"small":true}` || small.Kept() {
		t.Errorf("small answer: %v, vary %v", got, vary)
	}
	var off *httpcache.Encoder
	if _, got, _, vary := off.Select(off.NewRep(body, true), "zstd"); got != httpcache.Identity || vary {
		t.Errorf("no encoder: %v, vary %v", got, vary)
	}
}

// checkContentLength: a kept form's Content-Length is the length of the
// bytes Select gave; a form not kept has none ready.
func checkContentLength(t *testing.T, rep *httpcache.Rep, c httpcache.Coding, b []byte, kept bool) {
	t.Helper()
	want := ""
	if kept {
		want = strconv.Itoa(len(b))
	}
	if got := rep.ContentLength(c); got != want {
		t.Errorf("kept %v, %v: ContentLength %q, want %q", kept, c, got, want)
	}
}

func TestHandler(t *testing.T) {
	e := newEncoder(t, 100)
	big := strings.Repeat(`{"data":"x"}`, 50)
	h := e.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := big
		switch r.URL.Path {
		case "/small":
			body = `{"data":1}`
		case "/304":
			w.Header().Set("ETag", `"t"`)
			w.WriteHeader(http.StatusNotModified)
			return
		case "/400":
			w.WriteHeader(http.StatusBadRequest)
		case "/unknown-length":
			w.Header().Set("ETag", `"t"`)
			_, _ = io.WriteString(w, body[:10])
			_, _ = io.WriteString(w, body[10:])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}))
	cases := []struct {
		method, path, ae string
		wantCE           string
		wantVary         bool
		status           int
	}{
		{"GET", "/", "gzip", "gzip", true, 200},
		{"POST", "/", "zstd, gzip", "zstd", true, 200},
		{"GET", "/", "", "", true, 200},
		{"GET", "/", "zstd;q=0", "", true, 200},
		{"GET", "/unknown-length", "gzip", "gzip", true, 200},
		{"HEAD", "/unknown-length", "zstd", "zstd", true, 200},
		{"HEAD", "/", "", "", true, 200},
		{"HEAD", "/", "gzip", "gzip", true, 200}, // the headers of the GET
		{"GET", "/small", "gzip", "", false, 200},
		{"GET", "/304", "gzip", "", false, 304},
		{"GET", "/400", "gzip", "", false, 400},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.ae != "" {
			req.Header.Set("Accept-Encoding", c.ae)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		ce := rec.Header().Get("Content-Encoding")
		vary := rec.Header().Get("Vary") == "Accept-Encoding"
		if rec.Code != c.status || ce != c.wantCE || vary != c.wantVary {
			t.Errorf("%s %s AE %q: status %d, Content-Encoding %q, Vary %q", c.method, c.path, c.ae, rec.Code, ce, rec.Header().Get("Vary"))
			continue
		}
		if c.method == "HEAD" {
			// The GET's length, and no compressed body (an identity one
			// passes on to net/http, which leaves it out of a HEAD).
			get := httptest.NewRequest(http.MethodGet, c.path, nil)
			get.Header.Set("Accept-Encoding", c.ae)
			grec := httptest.NewRecorder()
			h.ServeHTTP(grec, get)
			if rec.Header().Get("Content-Length") != grec.Header().Get("Content-Length") || rec.Header().Get("ETag") != grec.Header().Get("ETag") || ce != "" && rec.Body.Len() != 0 {
				t.Errorf("HEAD %s AE %q: Content-Length %q ETag %q, %d body bytes; GET has %q %q", c.path, c.ae, rec.Header().Get("Content-Length"), rec.Header().Get("ETag"), rec.Body.Len(), grec.Header().Get("Content-Length"), grec.Header().Get("ETag"))
			}
			continue
		}
		if c.status != 200 {
			continue
		}
		if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
			t.Errorf("%s %s AE %q: Content-Length %s for %d bytes", c.method, c.path, c.ae, cl, rec.Body.Len())
		}
		want := big
		if c.path == "/small" {
			want = `{"data":1}`
		}
		if got := httpcachetest.Decode(t, ce, rec.Body.Bytes()); string(got) != want {
			t.Errorf("%s %s AE %q: body does not decode to the answer", c.method, c.path, c.ae)
		}
		if c.path == "/unknown-length" && ce != "" && rec.Header().Get("ETag") != `W/"t"` {
			t.Errorf("compressed answer keeps a strong ETag %q", rec.Header().Get("ETag"))
		}
	}
}

// Streams reach the client as they are written, whatever Accept-Encoding
// says: an event stream is never held for compression, and a handler that
// flushes gets what it wrote so far onto the wire uncompressed.
func TestHandlerStreams(t *testing.T) {
	e := newEncoder(t, 1)
	first := make(chan struct{})
	release := make(chan struct{})
	h := e.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events" {
			w.Header().Set("Content-Type", "text/event-stream")
		}
		_, _ = io.WriteString(w, strings.Repeat("event: next\ndata: {}\n\n", 10))
		_ = http.NewResponseController(w).Flush()
		close(first)
		<-release
		_, _ = io.WriteString(w, "event: complete\n\n")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, path := range []string{"/events", "/flushed"} {
		first, release = make(chan struct{}), make(chan struct{})
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip, zstd")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		<-first
		buf := make([]byte, 12)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "event: next\n" {
			t.Errorf("%s: the first event did not arrive before the stream ended: %q, %v", path, buf, err)
		}
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("%s: Content-Encoding %q on a stream", path, ce)
		}
		close(release)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// TestHandlerPassesEventStreams: an event stream reaches the client as it
// is written and flushed, uncompressed, whatever Accept-Encoding says;
// holding it for compression would hold every event until the stream ends.
func TestHandlerPassesEventStreams(t *testing.T) {
	e := newEncoder(t, 1)
	first := make(chan struct{})
	release := make(chan struct{})
	h := e.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ":\n\nevent: next\ndata: {\"data\":{}}\n\n")
		_ = http.NewResponseController(w).Flush()
		close(first)
		<-release
	}))
	ts := httptest.NewServer(h)
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := ts.Client().Transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	defer close(release)
	<-first
	if ce := res.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("an event stream coded %q", ce)
	}
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(res.Body, buf, len(":\n\nevent: next"))
	if err != nil || !strings.HasPrefix(string(buf[:n]), ":\n\nevent: next") {
		t.Fatalf("read %q, %v; want the first event while the stream is open", buf[:n], err)
	}
}

// The one Cache-Control builder: fresh answers are kept downstream until
// their pages' refresh point, at most a window, then served stale for a
// window; private with API keys; no-store when nothing is cached.
func TestCacheControl(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := httpcache.NewCacheControl(120*time.Second, false)
	for _, tc := range []struct {
		refreshAt time.Time
		stale     bool
		want      string
	}{
		{now.Add(30 * time.Second), false, "public, max-age=30, stale-while-revalidate=120"},
		{now.Add(30*time.Second + 900*time.Millisecond), false, "public, max-age=30, stale-while-revalidate=120"},
		{now.Add(time.Hour), false, "public, max-age=120, stale-while-revalidate=120"}, // refreshed ahead: a window at most
		{now.Add(-time.Second), false, "public, max-age=0, stale-while-revalidate=120"},
		{now.Add(30 * time.Second), true, "public, max-age=0, stale-while-revalidate=120"},
	} {
		if got := c.At(now, tc.refreshAt, tc.stale); got != tc.want {
			t.Errorf("At(%v, stale %v) = %q, want %q", tc.refreshAt.Sub(now), tc.stale, got, tc.want)
		}
	}
	if got := c.Value(5000); got != "public, max-age=5000, stale-while-revalidate=120" {
		t.Errorf("an age beyond those made: %q", got)
	}
	if h := c.Header(7); len(h) != 1 || cap(h) != 1 || h[0] != c.Value(7) {
		t.Errorf("Header(7) = %q (cap %d)", h, cap(h))
	}
	if got := httpcache.NewCacheControl(10*time.Second, true).Value(3); got != "private, max-age=3, stale-while-revalidate=10" {
		t.Errorf("private: %q", got)
	}
	var none *httpcache.CacheControl
	for _, off := range []*httpcache.CacheControl{httpcache.NewCacheControl(0, false), none} {
		if got := off.At(now, now.Add(time.Minute), false); got != httpcache.NoStore {
			t.Errorf("no refresh window: %q", got)
		}
	}
}

// Choose and Write: the form Accept-Encoding picks, got from where the
// caller keeps it (made once), its weak tag, Vary, and a 304 that matches
// either form's tag and carries no representation headers.
func TestChooseAndWrite(t *testing.T) {
	e := newEncoder(t, 100)
	body := []byte(strings.Repeat(`{"data":"x"}`, 50))
	const tag = `"t1"`
	kept := map[httpcache.Coding][]byte{}
	keep := func(c httpcache.Coding) ([]byte, error) {
		if b, ok := kept[c]; ok {
			return b, nil
		}
		kept[c] = e.Compress(c, body)
		return kept[c], nil
	}
	for _, c := range []struct {
		ae, inm         string
		status          int
		ce, etag, cache string
	}{
		{"", "", 200, "", tag, "no-cache"},
		{"gzip", "", 200, "gzip", `W/"t1"`, "no-cache"},
		{"zstd, gzip", "", 200, "zstd", `W/"t1"`, "no-cache"},
		{"zstd", `"t1"`, 304, "", `W/"t1"`, "no-cache"}, // the weak comparison
		{"", `W/"t1"`, 304, "", tag, "no-cache"},
		{"gzip", `"other"`, 200, "gzip", `W/"t1"`, "no-cache"},
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			f, err := e.Choose(c.ae, body, tag, keep)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(method, "/", nil)
			if c.inm != "" {
				req.Header.Set("If-None-Match", c.inm)
			}
			rec := httptest.NewRecorder()
			httpcache.Write(rec, req, http.StatusOK, f, "application/json", c.cache)
			hd := rec.Header()
			if rec.Code != c.status || hd.Get("Content-Encoding") != c.ce || hd.Get("ETag") != c.etag ||
				hd.Get("Cache-Control") != c.cache || hd.Get("Vary") != "Accept-Encoding" {
				t.Errorf("%s AE %q INM %q: %d %q", method, c.ae, c.inm, rec.Code, hd)
				continue
			}
			if c.status == 304 {
				if hd.Get("Content-Type") != "" || hd.Get("Content-Length") != "" || rec.Body.Len() != 0 {
					t.Errorf("%s AE %q: a 304 with a representation: %q, %d bytes", method, c.ae, hd, rec.Body.Len())
				}
				continue
			}
			if method == http.MethodHead {
				if rec.Body.Len() != 0 || hd.Get("Content-Length") != strconv.Itoa(len(f.Body)) {
					t.Errorf("HEAD AE %q: %d bytes, Content-Length %s", c.ae, rec.Body.Len(), hd.Get("Content-Length"))
				}
				continue
			}
			if got := httpcachetest.Decode(t, c.ce, rec.Body.Bytes()); !bytes.Equal(got, body) || hd.Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("AE %q: the body does not decode to the answer, or its length is wrong", c.ae)
			}
		}
	}
	if len(kept) != 2 {
		t.Errorf("%d forms kept, want gzip and zstd", len(kept))
	}
	// Small answers, and no tag: as they are, with no ETag and no Vary.
	f, _ := e.Choose("gzip", []byte("{}"), "", nil)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("If-None-Match", "*")
	httpcache.Write(rec, req, http.StatusCreated, f, "", "")
	if rec.Code != http.StatusCreated || rec.Header().Get("ETag") != "" || rec.Header().Get("Vary") != "" || rec.Body.String() != "{}" {
		t.Errorf("small answer: %d %q %q", rec.Code, rec.Header(), rec.Body.String())
	}
	// A kept Rep: its forms and their lengths made ahead.
	rep := e.NewRep(body, true)
	if f := e.ChooseRep(rep, "gzip"); f.Coding != httpcache.Gzip || f.Length != strconv.Itoa(len(f.Body)) || f.ETag != httpcache.Weak(rep.ETag) {
		t.Errorf("ChooseRep: %v %q %q", f.Coding, f.Length, f.ETag)
	}
}
