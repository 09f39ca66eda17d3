package graph_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph"
)

// dashboardQuery is a dashboard's feed of a few channels with everything
// it shows of each post.
const dashboardQuery = `query Dashboard($channels: [String!]!, $first: Int) {
  feed(channels: $channels, first: $first) {
    edges { cursor node { score channel { id username title }
      post { id messageId url date edited views text { plain html } media { kind url thumb duration available } } } }
    pageInfo { endCursor hasNextPage }
  }
}`

func dashboardVars(first int) map[string]any {
	return map[string]any{"channels": []string{"tmefeed_news", "kanal_novostei", "emoji_party"}, "first": first}
}

// kept sends req to the kept answers alone: ok reports that one answered.
func kept(t *testing.T, e *env, req *http.Request) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	rec := httptest.NewRecorder()
	return rec, graph.ServeKept(e.gql, rec, req)
}

// sameJSON reports whether a and b hold the same JSON value. The
// executor's answers escape <, > and & as json.Marshal does; the kept
// bytes are the executor's data as it wrote them.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func keptPOST(body string, header ...string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

func keptGET(target string, header ...string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// A repeated query is answered from its kept answer, which is byte for
// byte what the executor answers, over POST, GET and a persisted query's
// GET alike; variables and the media type asked for tell answers apart.
func TestKeptAnswers(t *testing.T) {
	clk := newClock()
	e := newEnv(t, envOptions{now: clk.now, encoder: true})
	slow := newEnv(t, envOptions{now: clk.now, disableFastPath: true})

	post := postBody(dashboardQuery, dashboardVars(20), nil)
	get := getURL(dashboardQuery, dashboardVars(20), nil)
	want := slow.send(t, http.MethodPost, "/graphql", post, "Content-Type", "application/json")
	if want.status != 200 || bytes.Contains(want.body, []byte(`"errors"`)) || len(want.body) < 20_000 {
		t.Fatalf("executor: %d, %d bytes: %.300s", want.status, len(want.body), want.body)
	}
	if _, ok := kept(t, e, keptPOST(post)); ok {
		t.Fatal("an answer was kept before the query was asked")
	}
	first := e.send(t, http.MethodPost, "/graphql", post, "Content-Type", "application/json")
	if first.status != 200 || !sameJSON(first.body, want.body) {
		t.Fatalf("first POST: %d, %d bytes, want the executor's %d", first.status, len(first.body), len(want.body))
	}
	rec, ok := kept(t, e, keptPOST(post))
	if !ok {
		t.Fatal("a repeated POST was not answered from its kept answer")
	}
	if rec.Code != 200 || !sameJSON(rec.Body.Bytes(), want.body) || !bytes.Equal(rec.Body.Bytes(), first.body) {
		t.Fatalf("kept POST: %d, %d bytes, want the executor's %d", rec.Code, rec.Body.Len(), len(want.body))
	}
	if cc, ct := rec.Header().Get("Cache-Control"), rec.Header().Get("Content-Type"); cc != "no-store" || ct != "application/json; charset=utf-8" || rec.Header().Get("ETag") != "" {
		t.Errorf("kept POST: Cache-Control %q Content-Type %q ETag %q, want no-store, JSON and no tag", cc, ct, rec.Header().Get("ETag"))
	}

	// GET: cacheable downstream, with an ETag If-None-Match matches.
	// (Go's client asks for gzip unless told otherwise.)
	firstGET := e.send(t, http.MethodGet, get, "", "Accept-Encoding", "identity")
	if firstGET.status != 200 || !sameJSON(firstGET.body, want.body) {
		t.Fatalf("first GET: %d, %d bytes", firstGET.status, len(firstGET.body))
	}
	etag := firstGET.header.Get("ETag")
	rec, ok = kept(t, e, keptGET(get))
	if !ok || !sameJSON(rec.Body.Bytes(), want.body) {
		t.Fatalf("kept GET: answered %v, %d bytes", ok, rec.Body.Len())
	}
	if rec.Header().Get("ETag") != etag || maxAge(t, rec.Header().Get("Cache-Control")) != 3600 {
		t.Errorf("kept GET: ETag %q Cache-Control %q, want %q as the first GET's and max-age=3600", rec.Header().Get("ETag"), rec.Header().Get("Cache-Control"), etag)
	}
	clk.advance(10 * time.Minute)
	if rec, ok = kept(t, e, keptGET(get)); !ok || maxAge(t, rec.Header().Get("Cache-Control")) != 3000 {
		t.Errorf("kept GET ten minutes on: answered %v, Cache-Control %q, want max-age=3000", ok, rec.Header().Get("Cache-Control"))
	}
	if rec, ok = kept(t, e, keptGET(get, "If-None-Match", etag)); !ok || rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("kept GET with If-None-Match: answered %v, %d, %d bytes, want 304", ok, rec.Code, rec.Body.Len())
	}

	// The compressed forms are kept beside the answer.
	rec, ok = kept(t, e, keptGET(get, "Accept-Encoding", "gzip"))
	if !ok || rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("ETag") != "W/"+etag {
		t.Fatalf("kept GET, gzip: answered %v, Content-Encoding %q ETag %q", ok, rec.Header().Get("Content-Encoding"), rec.Header().Get("ETag"))
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || !sameJSON(b, want.body) {
		t.Errorf("kept GET, gzip: %v, %d bytes once decompressed, want the executor's %d", err, len(b), len(want.body))
	}
	if rec, ok = kept(t, e, keptGET(get, "Accept-Encoding", "zstd")); !ok || rec.Header().Get("Content-Encoding") != "zstd" || rec.Body.Len() >= len(want.body)/2 {
		t.Errorf("kept GET, zstd: answered %v, Content-Encoding %q, %d bytes", ok, rec.Header().Get("Content-Encoding"), rec.Body.Len())
	}
	// Over the wire, through the server's compression middleware.
	if r := e.send(t, http.MethodGet, get, "", "Accept-Encoding", "gzip"); r.status != 200 || r.header.Get("Content-Encoding") != "gzip" || !strings.Contains(strings.Join(r.header.Values("Vary"), ","), "Accept-Encoding") {
		t.Errorf("GET, gzip, over HTTP: %d, Content-Encoding %q, Vary %q", r.status, r.header.Get("Content-Encoding"), r.header.Values("Vary"))
	}

	// Other variables: another answer, kept apart.
	post5 := postBody(dashboardQuery, dashboardVars(5), nil)
	if _, ok := kept(t, e, keptPOST(post5)); ok {
		t.Fatal("a request with other variables was answered from another's kept answer")
	}
	want5 := slow.send(t, http.MethodPost, "/graphql", post5, "Content-Type", "application/json")
	if r := e.send(t, http.MethodPost, "/graphql", post5, "Content-Type", "application/json"); !sameJSON(r.body, want5.body) {
		t.Fatalf("first: %d bytes, want %d", len(r.body), len(want5.body))
	}
	var five struct {
		Data struct {
			Feed struct{ Edges []json.RawMessage }
		}
	}
	if rec, ok = kept(t, e, keptPOST(post5)); !ok || !sameJSON(rec.Body.Bytes(), want5.body) || json.Unmarshal(rec.Body.Bytes(), &five) != nil || len(five.Data.Feed.Edges) != 5 {
		t.Fatalf("kept, first 5: answered %v, %d edges", ok, len(five.Data.Feed.Edges))
	}
	if rec, ok = kept(t, e, keptPOST(post)); !ok || !sameJSON(rec.Body.Bytes(), want.body) {
		t.Errorf("kept, first 20, after first 5: answered %v, %d bytes", ok, rec.Body.Len())
	}

	// The GraphQL response type is another representation.
	strict := []string{"Accept", "application/graphql-response+json", "Accept-Encoding", "identity"}
	if _, ok := kept(t, e, keptGET(get, strict...)); ok {
		t.Fatal("the JSON answer was kept for the GraphQL response type")
	}
	s := e.send(t, http.MethodGet, get, "", strict...)
	if rec, ok = kept(t, e, keptGET(get, strict...)); !ok || rec.Header().Get("Content-Type") != "application/graphql-response+json; charset=utf-8" || rec.Header().Get("ETag") == etag || rec.Header().Get("ETag") != s.header.Get("ETag") {
		t.Errorf("kept GET as graphql-response+json: answered %v, Content-Type %q ETag %q (JSON's %q, first %q)", ok, rec.Header().Get("Content-Type"), rec.Header().Get("ETag"), etag, s.header.Get("ETag"))
	}

	// A persisted query's GET, by hash alone once registered.
	ext := apqExt(dashboardQuery)
	if r := e.send(t, http.MethodGet, getURL(dashboardQuery, dashboardVars(20), ext), ""); r.status != 200 {
		t.Fatalf("registering: %d %s", r.status, r.body)
	}
	byHash := getURL("", dashboardVars(20), ext)
	if r := e.send(t, http.MethodGet, byHash, ""); r.status != 200 || !sameJSON(r.body, want.body) {
		t.Fatalf("by hash: %d %.200s", r.status, r.body)
	}
	if rec, ok = kept(t, e, keptGET(byHash)); !ok || !sameJSON(rec.Body.Bytes(), want.body) || rec.Header().Get("ETag") != etag {
		t.Errorf("kept GET by hash: answered %v, %d bytes, ETag %q", ok, rec.Body.Len(), rec.Header().Get("ETag"))
	}
	// HEAD: the GET's headers.
	head := keptGET(get)
	head.Method = http.MethodHead
	if rec, ok = kept(t, e, head); !ok || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "" {
		t.Errorf("kept HEAD: answered %v, %d bytes, Content-Length %q", ok, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
}

// A kept answer is never served once a page it was built from may have
// changed: past the refresh point of its pages the request goes the
// regular way, which reads what the origin holds now; a change the
// updater reports (feed.Service.Changed) ends it at once.
func TestKeptAnswersFollowTheOrigin(t *testing.T) {
	clk := newClock()
	e := newEnv(t, envOptions{now: clk.now, encoder: true, refresh: time.Minute, feedRefresh: time.Minute})
	q := `query($channels: [String!]!) { feed(channels: $channels, first: 5, order: NEWEST) { totalCount edges { node { post { text { plain } } } } } }`
	post := postBody(q, map[string]any{"channels": dashboardVars(0)["channels"]}, nil)
	send := func() string {
		t.Helper()
		r := e.send(t, http.MethodPost, "/graphql", post, "Content-Type", "application/json")
		if r.status != 200 || bytes.Contains(r.body, []byte(`"errors"`)) {
			t.Fatalf("%d %.300s", r.status, r.body)
		}
		return string(r.body)
	}
	before := send()
	if _, ok := kept(t, e, keptPOST(post)); !ok {
		t.Fatal("not kept")
	}
	e.origin.PublishPost("tmefeed_news", "published after the answer was kept")
	clk.advance(61 * time.Second)
	if rec, ok := kept(t, e, keptPOST(post)); ok {
		t.Fatalf("a kept answer was served past its pages' refresh point: %.200s", rec.Body)
	}
	if strings.Contains(before, "published after") {
		t.Fatal("the post is in the answer before it was published")
	}
	// The first read past the refresh point may be answered from the
	// stale copy while the page is fetched again.
	after := send()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(after, "published after the answer was kept"); after = send() {
		if _, ok := kept(t, e, keptPOST(post)); ok {
			t.Fatal("an answer from the stale copy was kept as current")
		}
		if time.Now().After(deadline) {
			t.Fatal("the new post is not in the answer after the refresh point")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The other channels' pages are fetched again beside it and may still
	// be stale copies when the new post first shows; the answer is kept
	// once every page it reads is current again.
	rec, ok := kept(t, e, keptPOST(post))
	for deadline := time.Now().Add(10 * time.Second); !ok; rec, ok = kept(t, e, keptPOST(post)) {
		if time.Now().After(deadline) {
			t.Fatal("the new answer is not kept once its pages are current")
		}
		time.Sleep(10 * time.Millisecond)
		after = send()
	}
	if rec.Body.String() != after || !strings.Contains(after, "published after the answer was kept") {
		t.Fatalf("the kept answer is not the current one: %.300s", rec.Body)
	}

	// The updater's news ends the kept answer before the refresh point.
	e.feed.Changed("emoji_party")
	if _, ok := kept(t, e, keptPOST(post)); ok {
		t.Fatal("a kept answer was served after one of its channels changed")
	}
	if send() != after {
		t.Error("the answer changed with no page changed")
	}
	if _, ok := kept(t, e, keptPOST(post)); !ok {
		t.Error("the confirmed answer is not kept again")
	}
}

// Only clean answers of queries are kept: errors, answers built from a
// read that failed for a reason that may pass, and anything other than
// feed queries go the regular way every time.
func TestKeptAnswersOnlyClean(t *testing.T) {
	e := newEnv(t, envOptions{encoder: true})
	e.origin.SetFault("/s/emoji_party", fixtures.Fault{Status: http.StatusServiceUnavailable})
	e.origin.SetFault("/emoji_party", fixtures.Fault{Status: http.StatusServiceUnavailable})
	for _, c := range []struct{ name, query string }{
		{"field error", `{ channel(username: "nobody_at_all_here") { title } }`},
		{"request error", `{ nope }`},
		{"not a feed", `{ channel(username: "tmefeed_news") { title } }`},
		{"feed with a channel failing upstream", `{ feed(channels: ["tmefeed_news", "emoji_party"]) { totalCount failedChannels { code } } }`},
		{"feed with an error", `{ feed(channels: ["tmefeed_news"], first: -1) { totalCount } }`},
		{"subscription", `subscription { feedUpdates(channels: ["tmefeed_news"]) { __typename } }`},
	} {
		body := postBody(c.query, nil, nil)
		for range 2 {
			e.send(t, http.MethodPost, "/graphql", body, "Content-Type", "application/json")
			e.send(t, http.MethodGet, getURL(c.query, nil, nil), "")
		}
		if _, ok := kept(t, e, keptPOST(body)); ok {
			t.Errorf("%s: POST answer kept", c.name)
		}
		if _, ok := kept(t, e, keptGET(getURL(c.query, nil, nil))); ok {
			t.Errorf("%s: GET answer kept", c.name)
		}
	}
	// A feed whose channels all answered is kept.
	q := `{ feed(channels: ["tmefeed_news", "nobody_at_all_here"]) { totalCount failedChannels { code } } }`
	e.send(t, http.MethodPost, "/graphql", postBody(q, nil, nil), "Content-Type", "application/json")
	if _, ok := kept(t, e, keptPOST(postBody(q, nil, nil))); !ok {
		t.Error("a feed with a lasting failure (an unknown name) was not kept")
	}
}

// Concurrent repeated requests share kept answers (and the header values
// kept with them) while the updater's news ends them now and then: every
// answer is the same, whichever way it was served.
func TestKeptAnswersConcurrent(t *testing.T) {
	e := newEnv(t, envOptions{encoder: true})
	post := postBody(dashboardQuery, dashboardVars(20), nil)
	get := getURL(dashboardQuery, dashboardVars(20), nil)
	want := e.send(t, http.MethodPost, "/graphql", post, "Content-Type", "application/json")
	if want.status != 200 {
		t.Fatalf("%d %.200s", want.status, want.body)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				e.feed.Changed("tmefeed_news")
				runtime.Gosched()
			}
		}
	})
	var readers sync.WaitGroup
	for i := range 6 {
		readers.Go(func() {
			for range 30 {
				var r reply
				switch i % 3 {
				case 0:
					r = e.send(t, http.MethodPost, "/graphql", post, "Content-Type", "application/json", "Accept-Encoding", "identity")
				case 1:
					r = e.send(t, http.MethodGet, get, "", "Accept-Encoding", "identity")
				default:
					r = e.send(t, http.MethodGet, get, "") // gzip, decompressed by the client
				}
				if r.status != 200 || !bytes.Equal(r.body, want.body) {
					t.Errorf("reader %d: %d, %d bytes, want the first answer's %d", i, r.status, len(r.body), len(want.body))
					return
				}
			}
		})
	}
	readers.Wait()
	close(done)
	wg.Wait()
}
