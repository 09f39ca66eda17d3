// Package widget is the embeddable live feed: GET /embed?channels=a,b is a
// self-contained HTML page showing the channels' merged feed, for
// dashboards and pages to drop in with an iframe, and GET /embed/new helps
// write that iframe.
//
// The widget is a face over feed, like GraphQL and REST: its posts come
// from feed.Service.Feed and its HTML is rendered once per feed build with
// feed.Service.Rendered, so a thousand open widgets of one feed cost one
// build and one render. The page keeps itself current by subscribing to
// its channels' updates (GraphQL feedUpdates over server-sent events) and,
// on each burst of them, asking for its posts again (GET /embed/posts,
// answered 304 while the build is unchanged) and updating in place; it
// polls the same address when the stream cannot be had, and slowly
// besides, as a safety net.
//
// Safe by construction: post HTML goes through package sanitize; every
// answer carries a Content-Security-Policy that allows no inline script or
// style and images only from Telegram's CDN; the page's CSS and JavaScript
// are tmefeed's own, served under content-hashed names.
package widget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/internal/httpcache"
)

// FeedService builds feeds; *feed.Service is one.
type FeedService interface {
	Feed(ctx context.Context, req feed.Request) (*feed.Page, error)
	Rendered(p *feed.Page, key string, render func() ([]byte, error)) ([]byte, error)
	MaxChannels() int
}

// Defaults for the zero values of Config.
const (
	DefaultPollInterval = 15 * time.Second
	DefaultMaxLimit     = 100
)

// ImageHosts are the hosts a widget loads images from: Telegram's CDN,
// where t.me's pages point avatars, photos, thumbnails and emoji.
var ImageHosts = []string{"https://telegram.org", "https://t.me", "https://*.telesco.pe", "https://*.telegram-cdn.org", "https://*.cdn-telegram.org"}

// Config configures a Handler.
type Config struct {
	Feed FeedService // required
	// Client names a request's client as the server's per-client limits
	// do (server.ClientKey): a feed built for a widget is charged to its
	// share of the origin budget. nil: nobody's.
	Client func(r *http.Request) string
	// FrameAncestors are the pages allowed to embed the widget, as
	// Content-Security-Policy frame-ancestors sources ("*",
	// "https://dash.example.com", "'self'"). Empty means "*". 'self' is
	// added unless the list is "*" or 'none', for the snippet page's
	// preview.
	FrameAncestors []string
	// PollInterval is how often an open widget asks whether its feed
	// changed (DefaultPollInterval).
	PollInterval time.Duration
	// MaxLimit bounds the posts one widget shows (DefaultMaxLimit).
	MaxLimit int
	// Subscribe is the path of the GraphQL endpoint serving the
	// feedUpdates subscription as an event stream ("/graphql"); the page
	// subscribes there and refetches its posts on each burst of updates.
	// Empty: the page polls only (no background updater would send them).
	Subscribe string
	// PublicURL is where clients reach the service (PUBLIC_URL): when
	// set, the posts' pictures and files are linked through its /media
	// redirects, which outlive Telegram's CDN links, and the policy lets
	// the page load images from it. Empty links Telegram's URLs.
	PublicURL string
	// ExampleChannels are the channels the snippet page suggests (its
	// placeholder); empty: durov, telegram. The demo names its own.
	ExampleChannels []string
	// ImageOrigins are origins ("http://127.0.0.1:8081") the page may
	// load images from besides Telegram's CDN (ImageHosts): the demo's
	// fixture origin, which serves the pages' pictures itself.
	ImageOrigins []string
	// Encoder compresses the page and its posts (the service's one, as
	// for every face); their compressed forms are kept beside the render
	// of each feed build, so an unchanged feed costs no compression. Nil
	// sends them as they are.
	Encoder *httpcache.Encoder
	// Logger receives render failures; nil discards.
	Logger *slog.Logger
	// MintKey, when set (API keys on), makes the snippet page ask for an
	// API key and mint from it a read-only widget key for the chosen
	// channels (lower-cased names), which the widget's address carries:
	// a dashboard's page source then holds a key that reads those
	// channels only. It reads the API key from r (X-API-Key).
	MintKey func(r *http.Request, channels []string) (string, error)
}

// Handler serves /embed, /embed/posts, /embed/new and /embed/assets/.
type Handler struct {
	feeds    FeedService
	poll     time.Duration
	maxLimit int
	mint     func(*http.Request, []string) (string, error)
	sub      string
	base     string // PublicURL without a trailing slash
	img      imageHosts
	examples string // ExampleChannels as the placeholder writes them
	enc      *httpcache.Encoder
	csp      string
	assets   *assets
	log      *slog.Logger
	client   func(*http.Request) string // Config.Client
}

// A frame-ancestors source: a keyword or a scheme/host source without the
// characters that would end the directive or the header.
var ancestorSource = regexp.MustCompile(`^(\*|'self'|'none'|[a-zA-Z][a-zA-Z0-9+.-]*:|([a-zA-Z][a-zA-Z0-9+.-]*://)?(\*\.)?[a-zA-Z0-9.-]+(:(\d{1,5}|\*))?(/[^\s;,']*)?)$`)

// CheckFrameAncestors reports the first source that cannot be used in a
// frame-ancestors directive.
func CheckFrameAncestors(sources []string) error {
	for _, s := range sources {
		if !ancestorSource.MatchString(s) {
			return fmt.Errorf("%q is not a frame-ancestors source; want *, 'self', 'none', a scheme such as https: or an origin such as https://dash.example.com", s)
		}
		if s == "'none'" && len(sources) > 1 {
			return errors.New("'none' cannot be combined with other frame-ancestors sources")
		}
	}
	return nil
}

// withSelf adds 'self' to frame-ancestors sources that do not allow it:
// the snippet page (/embed/new) shows the widget in a frame of its own
// origin. "*" allows it already; 'none' is kept as the operator's choice,
// and blocks that preview too.
func withSelf(anc []string) []string {
	if slices.Contains(anc, "*") || slices.Contains(anc, "'self'") || slices.Contains(anc, "'none'") {
		return anc
	}
	return append([]string{"'self'"}, anc...)
}

// New returns the widget's handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Feed == nil {
		return nil, errors.New("widget: Config.Feed is required")
	}
	anc := cfg.FrameAncestors
	if len(anc) == 0 {
		anc = []string{"*"}
	}
	if err := CheckFrameAncestors(anc); err != nil {
		return nil, fmt.Errorf("widget: %w", err)
	}
	anc = withSelf(anc)
	if cfg.Subscribe != "" && !strings.HasPrefix(cfg.Subscribe, "/") {
		return nil, fmt.Errorf("widget: Config.Subscribe %q is not a path on this server", cfg.Subscribe)
	}
	imgSrc := append([]string{"'self'"}, ImageHosts...)
	base := strings.TrimRight(cfg.PublicURL, "/")
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("widget: Config.PublicURL %q is not an http(s) address such as https://feeds.example.com", cfg.PublicURL)
		}
		// The media links' origin; they redirect to ImageHosts.
		imgSrc = append(imgSrc, u.Scheme+"://"+u.Host)
	}
	var img imageHosts
	for _, o := range cfg.ImageOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("widget: Config.ImageOrigins: %q is not an origin such as http://127.0.0.1:8081", o)
		}
		origin := u.Scheme + "://" + strings.ToLower(u.Host)
		img = append(img, origin)
		imgSrc = append(imgSrc, origin)
	}
	examples := "durov, telegram"
	if len(cfg.ExampleChannels) > 0 {
		examples = strings.Join(cfg.ExampleChannels, ", ")
	}
	h := &Handler{img: img, examples: examples, feeds: cfg.Feed, poll: cfg.PollInterval, maxLimit: cfg.MaxLimit, mint: cfg.MintKey, sub: cfg.Subscribe, base: base, enc: cfg.Encoder, log: cfg.Logger, client: cfg.Client}
	if h.poll <= 0 {
		h.poll = DefaultPollInterval
	}
	if h.maxLimit <= 0 {
		h.maxLimit = DefaultMaxLimit
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	a, err := loadAssets(h.enc)
	if err != nil {
		return nil, fmt.Errorf("widget: %w", err)
	}
	h.assets = a
	// One policy for every answer, pages and errors alike. frame-src is
	// for the snippet page's preview of the widget itself.
	h.csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src " + strings.Join(imgSrc, " ") +
		"; connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors " + strings.Join(anc, " ")
	return h, nil
}

// ServeHTTP routes the widget's paths; it is mounted at /embed and /embed/*.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.secure(w)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.errorPage(w, http.StatusMethodNotAllowed, r.Method+" is not served here; use GET")
		return
	}
	switch p := r.URL.Path; {
	case p == "/embed" || p == "/embed/":
		h.page(w, r)
	case p == "/embed/posts":
		h.fragment(w, r)
	case p == "/embed/new":
		h.snippet(w, r)
	case strings.HasPrefix(p, "/embed/assets/"):
		h.asset(w, r, strings.TrimPrefix(p, "/embed/assets/"))
	default:
		h.errorPage(w, http.StatusNotFound, "no such page: "+clip(p)+"; the widget is at /embed?channels=name and its snippet page at /embed/new")
	}
}

// secure sets the headers every answer carries.
func (h *Handler) secure(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
}

// load answers the feed of the request's query, or writes the error page.
func (h *Handler) load(w http.ResponseWriter, r *http.Request) (view, *feed.Page, bool) {
	v, err := parseView(r.URL.RawQuery, h.feeds.MaxChannels(), h.maxLimit)
	if err != nil {
		h.errorPage(w, http.StatusBadRequest, err.Error())
		return v, nil, false
	}
	req := v.req
	if h.client != nil {
		req.Client = h.client(r)
	}
	p, err := h.feeds.Feed(r.Context(), req)
	if err != nil {
		h.failFeed(w, err)
		return v, nil, false
	}
	return v, p, true
}

// posts returns the feed's articles and notes, rendered once per build.
func (h *Handler) posts(p *feed.Page) ([]byte, error) {
	return h.feeds.Rendered(p, h.postsKey(), func() ([]byte, error) { return renderPosts(p, h.base, h.img) })
}

func (h *Handler) postsKey() string {
	return "widget:" + renderVersion + "\x00" + h.base + "\x00" + strings.Join(h.img, " ")
}

// GET /embed?channels=…: the widget page, rendered once per build and
// query (its ETag names both).
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	v, p, ok := h.load(w, r)
	if !ok {
		return
	}
	// With API keys on, the page's own key (its address's ?key=, which
	// the server moved to X-API-Key) goes on to the posts it reloads and
	// the stream it opens, which a frame cannot send headers with. It is
	// part of the tag, so a page rendered for one key is never another's.
	src, live := "/embed/posts?"+v.query, h.sub
	if k := r.Header.Get("X-Api-Key"); k != "" {
		src += "&key=" + url.QueryEscape(k)
		if live != "" {
			live += "?key=" + url.QueryEscape(k)
		}
	}
	etag := tag(p.Key, renderVersion, h.base, h.assets.version, v.query, v.theme, strconv.FormatInt(int64(h.poll), 10), live, src)
	key := "widget-page:" + etag
	out, err := h.feeds.Rendered(p, key, func() ([]byte, error) {
		body, err := h.posts(p)
		if err != nil {
			return nil, err
		}
		return renderPage(pageData{
			Theme:    v.theme,
			Title:    "Telegram: @" + strings.Join(v.req.Channels, ", @"),
			Channels: v.req.Channels,
			Source:   src,
			Poll:     h.poll.Milliseconds(),
			Live:     live,
			LiveBody: h.liveRequest(v, p),
			ETag:     h.fragmentTag(p),
			Posts:    body,
			CSS:      h.assets.url("widget.css"),
			JS:       h.assets.url("widget.js"),
		})
	})
	if err != nil {
		h.failFeed(w, err)
		return
	}
	h.send(w, r, p, key, etag, out)
}

// GET /embed/posts?…: the articles alone, for the page's refresh; 304
// while the feed's build is the same.
func (h *Handler) fragment(w http.ResponseWriter, r *http.Request) {
	_, p, ok := h.load(w, r)
	if !ok {
		return
	}
	body, err := h.posts(p)
	if err != nil {
		h.failFeed(w, err)
		return
	}
	h.send(w, r, p, h.postsKey(), h.fragmentTag(p), body)
}

func (h *Handler) fragmentTag(p *feed.Page) string { return tag(p.Key, renderVersion, h.base) }

// send writes body (kept for build p under key) in the coding the
// request's Accept-Encoding picks, or 304 when If-None-Match holds its
// tag. A compressed form is made once per build and kept beside body, so
// a widget's refresh costs a lookup; its ETag is the weak form of body's,
// which If-None-Match still matches (the weak comparison). A HEAD gets
// the headers of the same GET.
func (h *Handler) send(w http.ResponseWriter, r *http.Request, p *feed.Page, key, etag string, body []byte) {
	f, err := h.enc.Choose(r.Header.Get("Accept-Encoding"), body, etag, func(c httpcache.Coding) ([]byte, error) {
		return h.feeds.Rendered(p, key+"\x00"+c.String(), func() ([]byte, error) { return h.enc.Compress(c, body), nil })
	})
	if err != nil { // the compression cannot fail; Rendered's contract can
		h.failFeed(w, err)
		return
	}
	// Pages are revalidated on every use: their posts change.
	httpcache.Write(w, r, http.StatusOK, f, htmlType, "no-cache")
}

// tag makes a strong ETag of the parts an answer depends on.
func tag(parts ...string) string {
	hs := xxh3.New()
	for _, s := range parts {
		_, _ = hs.WriteString(s)
		_, _ = hs.Write([]byte{0})
	}
	return `"` + strconv.FormatUint(hs.Sum64(), 36) + `"`
}

// writeOnce writes a page made for this request alone (nothing to keep
// beside a build), compressed now in the coding Accept-Encoding picks; a
// HEAD gets the headers of the same GET.
func (h *Handler) writeOnce(w http.ResponseWriter, r *http.Request, status int, b []byte) {
	f, _ := h.enc.Choose(r.Header.Get("Accept-Encoding"), b, "", nil) // compressed now: no error
	httpcache.WriteValidators(w.Header(), f, "")
	httpcache.Send(w, r, status, f, htmlType)
}

const htmlType = "text/html; charset=utf-8"

// failFeed writes a failure of the feed as the error page, with the status
// every face gives its fault kind.
func (h *Handler) failFeed(w http.ResponseWriter, err error) {
	f := fault.Classify(err)
	status := http.StatusInternalServerError
	switch f.Kind {
	case fault.InvalidUsername, fault.InvalidPosition, fault.BadRequest:
		status = http.StatusBadRequest
	case fault.NotFound, fault.NotAChannel, fault.PostNotFound:
		status = http.StatusNotFound
	case fault.RateLimited, fault.ClientOverBudget:
		status = http.StatusTooManyRequests
	case fault.OverBudget:
		status = http.StatusServiceUnavailable
	case fault.Upstream:
		status = http.StatusBadGateway
	case fault.Unavailable:
		status = http.StatusServiceUnavailable
	case fault.Timeout:
		status = http.StatusGatewayTimeout
	case fault.Canceled:
		status = 499 // the client went away; nobody reads this
	case fault.Internal:
		h.log.Error("widget", "err", err)
	}
	if s, ok := f.RetryAfterSeconds(time.Now()); ok {
		w.Header().Set("Retry-After", strconv.Itoa(s))
	}
	h.errorPage(w, status, f.Message)
}

// RateLimited answers a request over its client's rate limit (the
// server's RATE_LIMIT_RPM) with a small page under the widget's headers,
// saying when to retry. The widget page, shown in someone's frame, reloads
// itself then, a few seconds apart from other widgets of the same
// dashboard (which share its budget); the page's script reads
// Retry-After on its refreshes and waits as long.
func (h *Handler) RateLimited(w http.ResponseWriter, r *http.Request, retryAfter int) {
	h.secure(w)
	retryAfter = max(retryAfter, 1)
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	d := errorData{Status: http.StatusTooManyRequests, Message: "Too many requests came from your network for this feed in the last minute. It can be shown again in " + seconds(retryAfter) + "."}
	if p := r.URL.Path; p == "/embed" || p == "/embed/" {
		d.Message = "Too many requests came from your network for this feed in the last minute. It reloads by itself in about " + seconds(retryAfter) + "."
		d.Refresh = retryAfter + 1 + rand.IntN(max(retryAfter/4, 5))
	}
	h.writeError(w, d)
}

// Refused answers a widget request that API keys refuse: 401 when it
// has no valid key, 403 when its widget key is for other channels. The
// page says so without the details an embedding site's visitors cannot
// act on; msg goes to the page's owner in the same words as the API's.
func (h *Handler) Refused(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.secure(w)
	intro := "This feed needs a valid key in its address."
	if status == http.StatusForbidden {
		intro = "This feed's key does not allow these channels."
	}
	h.writeError(w, errorData{Status: status, Message: intro + " " + msg})
}

func seconds(n int) string {
	if n == 1 {
		return "1 second"
	}
	return strconv.Itoa(n) + " seconds"
}

// errorPage writes a small HTML page saying what went wrong.
func (h *Handler) errorPage(w http.ResponseWriter, status int, msg string) {
	h.writeError(w, errorData{Status: status, Message: msg})
}

func (h *Handler) writeError(w http.ResponseWriter, d errorData) {
	status, msg := d.Status, d.Message
	d.StatusText, d.CSS = http.StatusText(status), h.assets.url("widget.css")
	b, err := renderError(d)
	hd := w.Header()
	hd.Del("ETag")
	hd.Set("Cache-Control", "no-store")
	if err != nil {
		hd.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = fmt.Fprintln(w, msg)
		return
	}
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
