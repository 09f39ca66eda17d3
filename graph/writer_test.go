package graph_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/parser"
)

// every channel of the fixtures, and a name that is no channel.
var writerChannels = []string{"emoji_party", "hadashot_today", "just_launched", "kanal_novostei", "late_edition", "nameless_notes", "retro_channel", "tmefeed_news", "video_desk", "nobody_at_all_here"}

// writerPair is two GraphQL handlers over one page service: one answers
// feeds with the writer, the other renders them with the executor. Each
// has its own feed service on the same fixed clock, so that both build
// the same feeds (scores and all), and counts the executor's runs.
type writerPair struct {
	written, executed http.Handler
	writtenRuns       atomic.Int64
	executedRuns      atomic.Int64
}

func newWriterPair(t *testing.T) *writerPair {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEnv(t, envOptions{now: clock})
	p := &writerPair{}
	for _, side := range []struct {
		h        *http.Handler
		runs     *atomic.Int64
		executor bool
	}{{&p.written, &p.writtenRuns, false}, {&p.executed, &p.executedRuns, true}} {
		fs, err := feed.New(feed.Config{Pages: e.pages, Refresh: time.Hour, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		cfg := graph.HandlerConfig{Pages: e.pages, Feed: fs, Now: clock}
		runs := side.runs
		graph.SetExecuteHook(&cfg, func() { runs.Add(1) })
		if side.executor {
			graph.RenderWithExecutor(&cfg)
		}
		h, err := graph.NewHandler(cfg)
		if err != nil {
			t.Fatal(err)
		}
		*side.h = h
	}
	return p
}

func postTo(t *testing.T, h http.Handler, q string, vars map[string]any) []byte {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(postBody(q, vars, nil)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %.500s", rec.Code, rec.Body.Bytes())
	}
	return rec.Body.Bytes()
}

// allFields selects every field of every type a feed reaches that the
// writer writes, with __typename on each.
const allFields = `
fragment conn on FeedConnection {
	__typename totalCount
	pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor }
	failedChannels { __typename id username code reason }
	edges { __typename cursor node {
		__typename id score
		channel { __typename id username title titleHTML description descriptionHTML avatar verified url
			counters { __typename id subscribers subscribersText photos videos files links } }
		post { ...post }
	} }
}
fragment post on Post {
	__typename id messageId url channel date dateEstimated edited views viewsText author isService
	text { __typename id plain html htmlAsServed entities { __typename id kind offset length url language emojiId } }
	media { __typename id kind url thumb waves duration durationText title extra available }
	poll { __typename id question type votes votesText options { __typename id text percent } }
	location { __typename id latitude longitude address url map }
	inlineButtons { __typename id text url }
	reply { __typename id toMessage name nameHTML text textHTML cover }
	linkPreview { __typename id url title siteName description descriptionHTML thumb }
	reactions { __typename id kind emoji emojiId emojiImage count countText }
	forwardedFrom { __typename id name nameHTML url }
	service { __typename id type kind text }
}`

// The writer answers feed queries byte for byte as the executor does,
// over every fixture channel: every field, aliases, fragments on the
// types and on Node, inline fragments, @include and @skip by variables,
// merged fields, nulls, an empty feed, several feeds in one operation;
// and it does so without running the executor.
func TestWriterMatchesExecutor(t *testing.T) {
	p := newWriterPair(t)
	cases := []struct {
		name  string
		query string
		vars  map[string]any
	}{
		{"every field, ranked", `query($c: [String!]!) { feed(channels: $c, first: 500) { ...conn } }` + allFields, nil},
		{"every field, newest", `query($c: [String!]!) { feed(channels: $c, first: 500, order: NEWEST) { ...conn } }` + allFields, nil},
		{"aliases and several feeds", `query($c: [String!]!) {
			__typename
			a: feed(channels: $c, first: 3) { n: totalCount es: edges { c: cursor p: node { q: post { i: id u: url } } } }
			b: feed(channels: ["tmefeed_news"], first: 2, order: NEWEST) { edges { node { post { id } } } kind: __typename }
			t: __typename
		}`, nil},
		{"fragments and directives", `query($c: [String!]!, $yes: Boolean!, $no: Boolean!) {
			feed(channels: $c, first: 50) {
				... on FeedConnection { totalCount }
				...pi @include(if: $yes)
				edges @skip(if: $no) { node {
					post {
						... on Node { id }
						... on Post { url text @include(if: $no) { plain } }
						media @skip(if: $yes) { kind }
						reactions @include(if: $yes) { count }
					}
					post { messageId date }
					channel @skip(if: $yes) { title }
					score @include(if: $no)
				} }
			}
		}
		fragment pi on FeedConnection { pageInfo { endCursor } }`, map[string]any{"yes": true, "no": false}},
		{"the directives turned", `query($c: [String!]!, $yes: Boolean!, $no: Boolean!) {
			feed(channels: $c, first: 50) {
				edges @skip(if: $no) { node { post { text @include(if: $yes) { plain html } media @skip(if: $no) { kind url } } } }
			}
		}`, map[string]any{"yes": true, "no": false}},
		{"an empty feed", `query($c: [String!]!) { feed(channels: $c, filter: { query: "no post says this" }) { ...conn } }` + allFields, nil},
		{"only a name that is no channel", `{ feed(channels: ["nobody_at_all_here"]) { ...conn } }` + allFields, nil},
	}
	for _, c := range cases {
		vars := map[string]any{"c": writerChannels}
		for k, v := range c.vars {
			vars[k] = v
		}
		if !strings.Contains(c.query, "$c") {
			vars = nil
		}
		wantRuns := p.executedRuns.Load() + 1
		want := postTo(t, p.executed, c.query, vars)
		got := postTo(t, p.written, c.query, vars)
		if p.executedRuns.Load() != wantRuns {
			t.Errorf("%s: the executor side ran %d times, want once", c.name, p.executedRuns.Load()-wantRuns+1)
		}
		if bytes.Contains(want, []byte(`"errors"`)) {
			t.Errorf("%s: errors: %.500s", c.name, want)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: the answers differ at byte %d of %d/%d:\nwriter:   %.300s\nexecutor: %.300s", c.name, i, len(got), len(want), got[max(i-100, 0):], want[max(i-100, 0):])
		}
	}
	if n := p.writtenRuns.Load(); n != 0 {
		t.Errorf("the writer's side ran the executor %d times", n)
	}

	// What the full answer covered: every media kind the parser knows,
	// escaped text, text beyond ASCII, nulls.
	full := string(postTo(t, p.written, cases[0].query, map[string]any{"c": writerChannels}))
	for _, k := range parser.MediaKinds() {
		if s := `"kind":"` + string(model.MediaKindOf(k)) + `"`; !strings.Contains(full, s) {
			t.Errorf("no media of kind %s in the fixtures' feed", model.MediaKindOf(k))
		}
	}
	for _, s := range []string{`\n`, `\"`, "שלום", "Канал новостей", "😀", `"description":null`, `"code":"NOT_FOUND"`, `"poll":{`, `"forwardedFrom":{`, `"reply":{`, `"linkPreview":{`, `"location":{`, `"service":{`} {
		if !strings.Contains(full, s) {
			t.Errorf("the full answer holds no %q", s)
		}
	}
}

// What the writer does not write goes to the executor, which runs once
// and answers as it would without the fast path; an answer with errors is
// the executor's, and the operation is not run a second time.
func TestWriterFallsBackOnce(t *testing.T) {
	p := newWriterPair(t)
	for _, c := range []struct{ name, query string }{
		{"a field with a resolver of its own", `{ feed(channels: ["tmefeed_news", "emoji_party"], first: 5) { edges { node { post { id inChannel { username title } } } } } }`},
		{"a field reading more pages", `{ feed(channels: ["tmefeed_news"], first: 2) { edges { node { channel { posts { edges { cursor } } } } } } }`},
		{"a field with arguments", `{ feed(channels: ["tmefeed_news"], first: 2) { edges { node { channel { posts(first: 1) { edges { cursor } } } } } } }`},
		{"an argument out of range", `{ feed(channels: ["tmefeed_news"], first: -1) { totalCount } }`},
		{"a bad cursor", `{ feed(channels: ["tmefeed_news"], after: "nope") { totalCount } }`},
		{"a root field besides feed", `{ feed(channels: ["tmefeed_news"], first: 1) { totalCount } channel(username: "tmefeed_news") { title } }`},
	} {
		before := p.writtenRuns.Load()
		got := postTo(t, p.written, c.query, nil)
		if n := p.writtenRuns.Load() - before; n != 1 {
			t.Errorf("%s: the executor ran %d times, want once", c.name, n)
		}
		want := postTo(t, p.executed, c.query, nil)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: answers differ:\nwriter side:   %.400s\nexecutor side: %.400s", c.name, got, want)
		}
	}
}

// A feed rebuilt from unchanged pages reuses their parses: the posts are
// the very values the first build read.
func TestRebuildReusesParses(t *testing.T) {
	e := newEnv(t, envOptions{})
	var first []*parser.Post
	for i := range 2 {
		fs, err := feed.New(feed.Config{Pages: e.pages, Refresh: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		p, err := fs.Feed(t.Context(), feed.Request{Channels: recorded, First: 2000})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) < 50 {
			t.Fatalf("%d items", len(p.Items))
		}
		for j, it := range p.Items {
			if i == 0 {
				first = append(first, it.Post)
			} else if it.Post != first[j] {
				t.Fatalf("post %d of the rebuilt feed is a new parse", j)
			}
		}
	}
	if e.origin.Total() != int64(len(recorded)) {
		t.Errorf("%d origin requests, want %d", e.origin.Total(), len(recorded))
	}
}
