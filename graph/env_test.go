package graph_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/cache"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/origin"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/server"
	"github.com/tmefeed/tmefeed/web"
)

// env is the whole service on loopback: the fixture origin, the origin
// client, the embedded cache, the page service, the feed service, the
// GraphQL handler and the REST server, as cmd/tmefeed wires them.
type env struct {
	t      *testing.T
	origin *fixtures.Origin
	cache  cache.Cache
	pages  *pages.Service
	feed   *feed.Service
	gql    *graph.Handler // the GraphQL handler alone
	srv    *httptest.Server
	// originSrv serves the fixture origin.
	originSrv *httptest.Server
}

type envOptions struct {
	synthetic       int
	syntheticSource string
	deepHistory     int // posts of fixtures.DeepChannel
	originLatency   time.Duration
	disableFastPath bool
	noIntrospection bool
	complexityLimit int
	maxDepth        int
	corsOrigins     []string
	shared          cache.Cache // another replica's cache
	apq             graph.KV    // shared persisted queries
	feedRefresh     time.Duration
	timeout         time.Duration
	maxExpensive    int
	onParse         func(query string) // see graph.SetParseHook
	upstreamTimeout time.Duration
	maxResponse     int
	maxValues       int              // HandlerConfig.MaxExecutingValues
	now             func() time.Time // the clock of the cache, feeds and handler
	// live builds the hub subscriptions read; nil serves none.
	live func(t testing.TB, ps *pages.Service, refresh time.Duration) graph.LiveHub
	// refresh is the cache's refresh point; zero means an hour.
	refresh time.Duration
	// negativeTTL turns on negative caching, as NEGATIVE_CACHE_TTL does.
	negativeTTL time.Duration
	subsPerConn int
	maxSubs     int
	initTimeout time.Duration
	keepAlive   time.Duration
	// encoder compresses answers, as COMPRESSION does: the server's
	// middleware and the kept answers' forms.
	encoder bool
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	fo := fixtures.NewOrigin(fixtures.OriginOptions{Synthetic: o.synthetic, SyntheticSource: o.syntheticSource, Latency: o.originLatency, DeepHistory: o.deepHistory})
	originSrv := httptest.NewServer(fo)
	t.Cleanup(originSrv.Close)
	upstreamTimeout := o.upstreamTimeout
	if upstreamTimeout == 0 {
		upstreamTimeout = 5 * time.Second
	}
	client, err := origin.New(origin.Config{BaseURL: originSrv.URL, RequestTimeout: upstreamTimeout, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	store := o.shared
	if store == nil {
		mc := cache.MemoryConfig{Refresh: cmp.Or(o.refresh, time.Hour), MaxBytes: 256 << 20, Now: o.now}
		if o.negativeTTL > 0 {
			mc.Failures, mc.NegativeTTL = origin.Failures{}, o.negativeTTL
		}
		mem, err := cache.NewMemory(mc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mem.Close() })
		store = mem
	}
	ps := pages.New(pages.Config{Cache: store, Origin: client, ParsedBytes: 64 << 20, Refresh: o.refresh})
	refresh := o.feedRefresh
	if refresh == 0 {
		refresh = time.Hour
	}
	fs, err := feed.New(feed.Config{Pages: ps, Refresh: refresh, Now: o.now})
	if err != nil {
		t.Fatal(err)
	}
	cfg := graph.HandlerConfig{
		Pages:                ps,
		Feed:                 fs,
		APQ:                  o.apq,
		DisableFastPath:      o.disableFastPath,
		DisableIntrospection: o.noIntrospection,
		ComplexityLimit:      o.complexityLimit,
		MaxDepth:             o.maxDepth,
		Timeout:              o.timeout,
		MaxExpensive:         o.maxExpensive,
		MaxResponseBytes:     o.maxResponse,
		MaxExecutingValues:   o.maxValues,
		Refresh:              time.Hour,
		Now:                  o.now,
		Origins:              o.corsOrigins,

		SubscriptionsPerConnection: o.subsPerConn,
		MaxSubscriptions:           o.maxSubs,
		InitTimeout:                o.initTimeout,
		KeepAlive:                  o.keepAlive,
	}
	if o.live != nil {
		cfg.Live = o.live(t, ps, cmp.Or(o.refresh, time.Hour))
	}
	var enc *httpcache.Encoder
	if o.encoder {
		if enc, err = httpcache.New(httpcache.Config{}); err != nil {
			t.Fatal(err)
		}
		cfg.Encoder = enc
	}
	graph.SetParseHook(&cfg, o.onParse)
	gh, err := graph.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := web.Handler(web.Config{Channels: []string{"tmefeed_news"}})
	if err != nil {
		t.Fatal(err)
	}
	// Share off: these tests send many requests at once as one client to
	// test the GraphQL handler's own gates, which the server's share of
	// the cores (tested in server) would otherwise run one at a time.
	h := server.New(server.Config{Pages: ps, Feed: fs, GraphQL: gh, Playground: pg, Refresh: time.Hour, CORSOrigins: o.corsOrigins, Encoder: enc, Share: server.ShareConfig{PerClient: -1}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e := &env{origin: fo, cache: store, pages: ps, feed: fs, gql: gh, srv: srv, originSrv: originSrv}
	if tt, ok := t.(*testing.T); ok {
		e.t = tt
	}
	return e
}

// gqlError is one entry of a response's errors.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

func (g gqlError) code() string { c, _ := g.Extensions["code"].(string); return c }

// response is a GraphQL response with its HTTP status and raw bytes.
type response struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
	status int
	raw    []byte
}

// codes lists the extensions.code of every error.
func (r response) codes() []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, e.code())
	}
	return out
}

// decode unmarshals data into v, failing the test on errors.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("data %s: %v", r.Data, err)
	}
}

type request struct {
	Query         string         `json:"query,omitempty"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
	Extensions    map[string]any `json:"extensions,omitempty"`
}

func (e *env) post(t *testing.T, req request) response {
	t.Helper()
	body, _ := json.Marshal(req)
	return e.do(t, http.MethodPost, "/graphql", body)
}

func (e *env) query(t *testing.T, q string, vars map[string]any) response {
	t.Helper()
	return e.post(t, request{Query: q, Variables: vars})
}

func (e *env) get(t *testing.T, req request) response {
	t.Helper()
	v := url.Values{}
	if req.Query != "" {
		v.Set("query", req.Query)
	}
	if req.Variables != nil {
		b, _ := json.Marshal(req.Variables)
		v.Set("variables", string(b))
	}
	if req.Extensions != nil {
		b, _ := json.Marshal(req.Extensions)
		v.Set("extensions", string(b))
	}
	return e.do(t, http.MethodGet, "/graphql?"+v.Encode(), nil)
}

func (e *env) do(t *testing.T, method, path string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := response{status: resp.StatusCode, raw: raw}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
	}
	return out
}

// stallOrigin makes the origin hold every request for a minute, and lets
// the held ones go when the test ends (cache loads run detached from the
// requests that started them and would keep the origin busy).
func (e *env) stallOrigin(t *testing.T) {
	e.origin.SetLatency(time.Minute)
	t.Cleanup(e.originSrv.CloseClientConnections)
}

func httptestServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
