package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/tme"
)

// causeOrigin fails each channel with the error set for it.
type causeOrigin map[string]error

func (o causeOrigin) Fetch(_ context.Context, r tme.Request) ([]byte, error) {
	if err, ok := o[r.Channel]; ok {
		return nil, err
	}
	return nil, fmt.Errorf("%s: %w", r.Path(), origin.ErrNotFound)
}

// facesEnv is REST and GraphQL over one page service whose origin fails
// as told, on a fixed clock so that both faces round the same instant.
func facesEnv(t *testing.T, o causeOrigin, now time.Time) *facesServer {
	t.Helper()
	mem, err := cache.NewMemory(cache.MemoryConfig{MaxBytes: 8 << 20, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	ps := pages.New(pages.Config{Cache: mem, Origin: o})
	fs, err := feed.New(feed.Config{Pages: ps})
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return now }
	quiet := slog.New(slog.DiscardHandler)
	gh, err := graph.NewHandler(graph.HandlerConfig{Pages: ps, Feed: fs, Now: clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptestServer(t, server.New(server.Config{Pages: ps, Feed: fs, GraphQL: gh, Refresh: time.Hour, Now: clock, Logger: quiet}))
	return &facesServer{t: t, url: srv.URL, client: srv.Client()}
}

// facesServer is the service on loopback, as both faces' clients see it.
type facesServer struct {
	t      *testing.T
	url    string
	client *http.Client
}

// call sends a request and returns the status, the Retry-After header and
// the body.
func (s *facesServer) call(method, path, body string) (int, string, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

func (s *facesServer) graphql(query string, vars map[string]any) response {
	s.t.Helper()
	b, _ := json.Marshal(request{Query: query, Variables: vars})
	_, _, raw := s.call(http.MethodPost, "/graphql", string(b))
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		s.t.Fatalf("graphql: %s: %v", raw, err)
	}
	return r
}

type restError struct {
	Error struct{ Code, Message string } `json:"error"`
}

// Each kind of failure is told the same way by REST and GraphQL: the
// status and code each face maps the kind to, the same message, and the
// same retry time. This is the table README's "Errors" section documents.
func TestFacesAgreeOnErrors(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(6200 * time.Millisecond) // 7 s, rounded up
	wrap := func(kind error) error { return fmt.Errorf("%w: GET https://t.me/s/x: details", kind) }
	type want struct {
		status  int
		code    string // REST
		gqlCode string
		message string // "" = any, but the same in both faces
		retry   string // Retry-After and extensions.retryAfter; "" = none
	}
	causes := []struct {
		err  error
		want want
	}{
		{fmt.Errorf("%w: no channel", origin.ErrInvalidRequest), want{400, "bad_request", "BAD_USER_INPUT", "", ""}},
		{errors.New("something nobody foresaw"), want{500, "internal", "INTERNAL_SERVER_ERROR", "internal error", ""}},
		{wrap(origin.ErrNotFound), want{404, "not_found", "NOT_FOUND", "no public channel with this name", ""}},
		{parser.ErrNotChannel, want{404, "not_a_channel", "NOT_FOUND", "not a public channel: a user, group, bot or unknown name", ""}},
		{&origin.RateLimitError{RetryAfter: later, Host: "t.me"}, want{429, "rate_limited", "RATE_LIMITED", "Telegram is rate-limiting requests and no cached copy is held; retry later", "7"}},
		{origin.ErrRateLimited, want{429, "rate_limited", "RATE_LIMITED", "Telegram is rate-limiting requests and no cached copy is held; retry later", "1"}},
		{&origin.UnavailableError{RetryAfter: later, Host: "t.me", Last: origin.ErrServerError}, want{503, "upstream_unavailable", "UPSTREAM_UNAVAILABLE", "Telegram keeps failing, so it is not being asked for now, and no cached copy is held; retry later", "7"}},
		{wrap(origin.ErrTimeout), want{504, "upstream_timeout", "UPSTREAM_UNAVAILABLE", "Telegram did not answer in time", ""}},
		{origin.Failures{}.Error("timeout", later), want{504, "upstream_timeout", "UPSTREAM_UNAVAILABLE", "Telegram did not answer in time", "7"}},
		{wrap(origin.ErrRefused), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram refused the connection", ""}},
		{origin.Failures{}.Error("refused", later), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram refused the connection", "7"}},
		{wrap(origin.ErrUnreachable), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram could not be reached", ""}},
		{wrap(origin.ErrReset), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram dropped the connection without answering", ""}},
		{wrap(origin.ErrTruncated), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram's answer was cut off", ""}},
		{wrap(origin.ErrServerError), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram answered with a server error", ""}},
		{fmt.Errorf("%w: %w: big", origin.ErrUpstream, origin.ErrTooLarge), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram answered with a page too large to read", ""}},
		{fmt.Errorf("%w: %w", origin.ErrUpstream, parser.ErrNotPage), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram answered with something that is not the expected page", ""}},
		{wrap(origin.ErrUpstream), want{502, "upstream_error", "UPSTREAM_UNAVAILABLE", "Telegram answered with an error or an unreadable page", ""}},
	}
	o := causeOrigin{}
	names := make([]string, len(causes))
	for i, c := range causes {
		names[i] = fmt.Sprintf("cause_%02d", i)
		o[names[i]] = c.err
	}
	s := facesEnv(t, o, now)

	// One failing name as the whole answer: GET /v1/body and Query.channel.
	for i, c := range causes {
		status, retry, body := s.call(http.MethodGet, "/v1/body/"+names[i], "")
		var rest restError
		if err := json.Unmarshal(body, &rest); err != nil {
			t.Fatalf("%v: REST body %s", c.err, body)
		}
		r := s.graphql(`query($n: String!) { channel(username: $n) { title } }`, map[string]any{"n": names[i]})
		if len(r.Errors) != 1 {
			t.Errorf("%v: GraphQL errors %+v", c.err, r.Errors)
			continue
		}
		g := r.Errors[0]
		gRetry := ""
		if v, ok := g.Extensions["retryAfter"].(float64); ok {
			gRetry = strconv.Itoa(int(v))
		}
		w := c.want
		if status != w.status || rest.Error.Code != w.code || g.code() != w.gqlCode {
			t.Errorf("%v: REST %d %s, GraphQL %s; want %d %s, %s", c.err, status, rest.Error.Code, g.code(), w.status, w.code, w.gqlCode)
		}
		if rest.Error.Message != g.Message || w.message != "" && g.Message != w.message {
			t.Errorf("%v: REST says %q, GraphQL %q; want %q", c.err, rest.Error.Message, g.Message, w.message)
		}
		if retry != gRetry || retry != w.retry {
			t.Errorf("%v: Retry-After %q, retryAfter %q; want %q", c.err, retry, gRetry, w.retry)
		}
	}

	// Every name failing inside one answer: POST /v1/previews and
	// Query.previews, and the failed channels of both feeds.
	list, _ := json.Marshal(names)
	status, _, body := s.call(http.MethodPost, "/v1/previews", `{"channels": `+string(list)+`}`)
	var restPreviews map[string]restError
	if err := json.Unmarshal(body, &restPreviews); err != nil || status != http.StatusOK {
		t.Fatalf("previews: %d %s", status, body)
	}
	var gqlPreviews struct {
		Previews []struct {
			Username string
			Error    struct{ Code, Message string }
		}
	}
	s.graphql(`query($n: [String!]!) { previews(usernames: $n) { username error { code message } } }`, map[string]any{"n": names}).decode(t, &gqlPreviews)

	status, _, body = s.call(http.MethodPost, "/v1/feed", `{"channels": `+string(list)+`}`)
	var restFeed struct {
		Failed []struct {
			Channel string
			Error   struct{ Code, Message string }
		} `json:"failed_channels"`
	}
	if err := json.Unmarshal(body, &restFeed); err != nil || status != http.StatusOK {
		t.Fatalf("feed: %d %s", status, body)
	}
	var gqlFeed struct {
		Feed struct {
			FailedChannels []struct{ Username, Code, Reason string }
		}
	}
	s.graphql(`query($n: [String!]!) { feed(channels: $n) { failedChannels { username code reason } } }`, map[string]any{"n": names}).decode(t, &gqlFeed)
	if len(gqlPreviews.Previews) != len(names) || len(restFeed.Failed) != len(names) || len(gqlFeed.Feed.FailedChannels) != len(names) {
		t.Fatalf("%d GraphQL previews, %d REST and %d GraphQL failed feed channels, want %d of each",
			len(gqlPreviews.Previews), len(restFeed.Failed), len(gqlFeed.Feed.FailedChannels), len(names))
	}
	gqlFailed := map[string]int{}
	for i, f := range gqlFeed.Feed.FailedChannels {
		gqlFailed[f.Username] = i
	}
	for i, f := range restFeed.Failed {
		gi, ok := gqlFailed[f.Channel]
		if !ok {
			t.Errorf("%s failed in the REST feed only", f.Channel)
			continue
		}
		g := gqlFeed.Feed.FailedChannels[gi]
		ci := slices.Index(names, f.Channel)
		w := causes[ci].want
		if f.Error.Code != w.code || g.Code != w.gqlCode || f.Error.Message != g.Reason || w.message != "" && g.Reason != w.message {
			t.Errorf("feed %d, %s: REST %s %q, GraphQL %s %q; want %s, %s %q", i, f.Channel, f.Error.Code, f.Error.Message, g.Code, g.Reason, w.code, w.gqlCode, w.message)
		}
	}
	for i, c := range causes {
		rp, gp := restPreviews[names[i]], gqlPreviews.Previews[i]
		if gp.Username != names[i] || rp.Error.Code != c.want.code || gp.Error.Code != c.want.gqlCode ||
			rp.Error.Message != gp.Error.Message || c.want.message != "" && gp.Error.Message != c.want.message {
			t.Errorf("previews, %v: REST %+v, GraphQL %+v; want %s, %s %q", c.err, rp.Error, gp, c.want.code, c.want.gqlCode, c.want.message)
		}
	}
}

// Input the faces pass on unchanged is judged once, so both answer it
// with the same message.
func TestFacesAgreeOnInput(t *testing.T) {
	s := facesEnv(t, causeOrigin{}, time.Now())
	for _, c := range []struct {
		name       string
		method     string
		path, body string
		query      string
		status     int
		code       string
	}{
		{"not a username", http.MethodGet, "/v1/body/a!", "", `{ channel(username: "a!") { title } }`, 400, "invalid_username"},
		{"'@' alone", http.MethodGet, "/v1/preview/@", "", `{ channel(username: "@") { title } }`, 400, "invalid_username"},
		{"a cursor of no feed", http.MethodPost, "/v1/feed", `{"channels": ["tmefeed_news"], "after": "nope"}`,
			`{ feed(channels: ["tmefeed_news"], after: "nope") { totalCount } }`, 400, "bad_request"},
	} {
		status, _, body := s.call(c.method, c.path, c.body)
		var rest restError
		_ = json.Unmarshal(body, &rest)
		r := s.graphql(c.query, nil)
		if status != c.status || rest.Error.Code != c.code || len(r.Errors) != 1 || r.Errors[0].code() != "BAD_USER_INPUT" {
			t.Errorf("%s: REST %d %s, GraphQL %+v", c.name, status, body, r.Errors)
			continue
		}
		if rest.Error.Message != r.Errors[0].Message || rest.Error.Message == "" {
			t.Errorf("%s: REST says %q, GraphQL %q", c.name, rest.Error.Message, r.Errors[0].Message)
		}
	}
}

// "@name" is the channel name on every face: REST paths, POST /v1/previews
// (which answered invalid_username for it), POST /v1/feed and GraphQL.
func TestAtNameEverywhere(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.do(t, http.MethodPost, "/v1/previews", []byte(`{"channels": ["@tmefeed_news", "TmeFeed_News"]}`))
	var previews map[string]struct {
		Channel *struct{ Username string } `json:"channel"`
		Error   *struct{ Code string }     `json:"error"`
	}
	if err := json.Unmarshal(r.raw, &previews); err != nil || r.status != http.StatusOK {
		t.Fatalf("previews: %d %s", r.status, r.raw)
	}
	for _, key := range []string{"@tmefeed_news", "tmefeed_news"} {
		if p := previews[key]; p.Channel == nil || p.Channel.Username != "tmefeed_news" || p.Error != nil {
			t.Errorf("previews[%q] = %+v, want tmefeed_news's preview", key, p)
		}
	}
	if n := e.origin.Requests("/tmefeed_news"); n != 1 {
		t.Errorf("preview fetched %d times for two spellings, want once", n)
	}

	if r := e.do(t, http.MethodGet, "/v1/preview/@tmefeed_news", nil); r.status != http.StatusOK || !bytes.Contains(r.raw, []byte(`"username":"tmefeed_news"`)) {
		t.Errorf("GET /v1/preview/@tmefeed_news: %d %.200s", r.status, r.raw)
	}

	r = e.do(t, http.MethodPost, "/v1/feed", []byte(`{"channels": ["@tmefeed_news"], "limit": 3}`))
	var f struct {
		Result []struct {
			Channel struct{ Username string } `json:"channel"`
		} `json:"result"`
		Failed []json.RawMessage `json:"failed_channels"`
	}
	if err := json.Unmarshal(r.raw, &f); err != nil || r.status != http.StatusOK || len(f.Result) != 3 || len(f.Failed) != 0 || f.Result[0].Channel.Username != "tmefeed_news" {
		t.Errorf("feed of @tmefeed_news: %d %.300s", r.status, r.raw)
	}

	var g struct {
		Previews []struct {
			Username string
			Preview  *struct{ Username string }
			Error    *struct{ Code string }
		}
	}
	e.query(t, `{ previews(usernames: ["@tmefeed_news"]) { username preview { username } error { code } } }`, nil).decode(t, &g)
	if len(g.Previews) != 1 || g.Previews[0].Preview == nil || g.Previews[0].Preview.Username != "tmefeed_news" || g.Previews[0].Username != "@tmefeed_news" {
		t.Errorf("GraphQL previews of @tmefeed_news = %+v", g.Previews)
	}
}
