package server

import (
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feed/feedquery"
	"github.com/tmefeed/tmefeed/feedformat"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/tme"
)

// DefaultFormatLimit is the number of posts a feed-reader document holds
// when the request gives no limit: readers poll often and keep what they
// saw, so a document need not hold the whole merged feed. The posts are
// the newest ones unless the request asks for order=ranked: a reader polls
// for what is new, and a ranked window may leave out what was just posted.
const DefaultFormatLimit = 100

// FailedChannelsHeader lists, on a feed-reader document, the channels that
// could not be read as "name=code" pairs ("durov=not_found, x=upstream_error").
// Readers show no error a document could carry, so the document itself
// holds the channels that could be read and this header says what is missing.
const FailedChannelsHeader = "Tmefeed-Failed-Channels"

// GET /v1/rss, /v1/atom, /v1/jsonfeed ?channels=a,b[&order=…&limit=N&filter fields]:
// the feed POST /v1/feed answers, from the same builds, as a document feed
// readers subscribe to. A 304 answers a reader whose copy is current.
func (h *handler) syndication(f feedformat.Format) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, err := h.formatQuery(r.URL.RawQuery)
		if err != nil {
			h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: err.Error()})
			return
		}
		req := q.Request
		req.Who = h.who(r, requestInfo(r.Context()))
		p, err := h.feeds.Feed(r.Context(), req)
		if err != nil {
			h.failErr(w, r, err)
			return
		}
		channels := distinctChannels(req.Channels)
		if len(p.Items) == 0 && len(p.Failed) > 0 && len(p.Failed) >= channels.count {
			h.fail(w, r, allFailed(p.Failed, h))
			return
		}
		base := h.baseURL(r)
		self := base + r.URL.Path + "?" + canonicalQuery(q)
		opts := feedformat.Options{
			Channels:  channels.valid,
			Order:     req.Order,
			SelfURL:   self,
			HomeURL:   h.homeURL(base, channels.valid),
			MediaBase: h.publicURL,
			Headers:   p.Channels,
			Checked:   p.NewestFetchedAt,
		}
		// The key holds every input of the document besides the page:
		// its address (channels, order, filter, limit) and media links.
		key := "feedformat:v1:" + f.String() + "\x00" + self + "\x00" + h.publicURL
		b, err := h.feeds.Rendered(p, key, func() ([]byte, error) { return feedformat.Render(f, p.Items, opts) })
		if err != nil {
			h.failErr(w, r, err)
			return
		}
		failed, transient := failedChannels(p.Failed)
		hd := w.Header()
		hd.Set("Content-Type", f.ContentType())
		if failed != "" {
			hd.Set(FailedChannelsHeader, failed)
		}
		if transient {
			// A feed missing channels for a passing reason is not kept downstream.
			hd.Set("Cache-Control", "no-store")
		} else {
			hd.Set("Cache-Control", h.cacheControl(p.RefreshAt, p.Stale))
		}
		tag := etag(b, failed)
		h.writeDocument(w, r, p, key, b, tag, h.docDates.modified(key, tag, p, feedformat.Updated(p.Items)))
	}
}

// homeURL is the web page of a feed of several channels, which readers
// link as its site: the widget showing them when it is served, else the
// first channel's page on t.me. (A one-channel feed links its channel.)
func (h *handler) homeURL(base string, channels []string) string {
	if h.widget != nil && len(channels) > 0 {
		return base + "/embed?" + url.Values{"channels": {strings.Join(channels, ",")}}.Encode()
	}
	if len(channels) > 0 {
		return "https://t.me/s/" + channels[0]
	}
	return base + "/"
}

// writeDocument sends a feed-reader document kept for build p under key,
// in the coding Accept-Encoding picks (a compressed form is made once per
// build and kept beside the document, its ETag the weak form of the
// document's), or 304 as its validators say. A HEAD gets the headers of
// the same GET. Range is not served: a document is made whole per build
// and readers fetch it whole, so a range request gets the whole answer
// (200), in the same coding and with the same headers as any GET.
func (h *handler) writeDocument(w http.ResponseWriter, r *http.Request, p *feed.Page, key string, body []byte, etag string, modified time.Time) {
	// A compressed form is made once per build and kept beside the
	// document.
	f, err := h.enc.Choose(header(r.Header, "Accept-Encoding"), body, etag, func(c httpcache.Coding) ([]byte, error) {
		return h.feeds.Rendered(p, key+"\x00"+c.String(), func() ([]byte, error) { return h.enc.Compress(c, body), nil })
	})
	if err != nil { // the compression cannot fail; Rendered's contract can
		h.failErr(w, r, err)
		return
	}
	hd := w.Header()
	httpcache.WriteValidators(hd, f, "")
	etag = f.ETag
	if !modified.IsZero() {
		hd.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	}
	if status := preconditions(r, etag, modified); status != 0 {
		// A 304 carries the validators and caching headers, not the
		// representation's (RFC 9110 §15.4.5); Last-Modified is left out
		// beside an ETag, and a 412 has no body, as net/http's ServeContent
		// answered them before.
		hd.Del("Content-Type")
		hd.Del("Last-Modified")
		w.WriteHeader(status)
		return
	}
	httpcache.Send(w, r, http.StatusOK, f, "")
}

// preconditions evaluates a GET's conditional fields in RFC 9110's order
// (§13.2.2): If-Match, else If-Unmodified-Since (412 when false); then
// If-None-Match, else If-Modified-Since (304 when false). It returns 0
// when the document is to be sent. HTTP dates have whole seconds.
func preconditions(r *http.Request, etag string, modified time.Time) int {
	modified = modified.Truncate(time.Second)
	if im := header(r.Header, "If-Match"); im != "" {
		if !strongMatch(im, etag) {
			return http.StatusPreconditionFailed
		}
	} else if ius, err := http.ParseTime(header(r.Header, "If-Unmodified-Since")); err == nil && !modified.IsZero() && modified.After(ius) {
		return http.StatusPreconditionFailed
	}
	if inm := header(r.Header, "If-None-Match"); inm != "" {
		if httpcache.NoneMatch(inm, etag) {
			return http.StatusNotModified
		}
		return 0
	}
	if ims, err := http.ParseTime(header(r.Header, "If-Modified-Since")); err == nil && !modified.IsZero() && !modified.After(ims) {
		return http.StatusNotModified
	}
	return 0
}

// strongMatch reports whether an If-Match field holds etag by the strong
// comparison (§8.8.3.2): "*", or the same tag with neither side weak.
func strongMatch(field, etag string) bool {
	if strings.TrimSpace(field) == "*" {
		return true
	}
	if strings.HasPrefix(etag, "W/") {
		return false
	}
	for _, t := range strings.Split(field, ",") {
		if strings.TrimSpace(t) == etag {
			return true
		}
	}
	return false
}

// formatQuery reads a feed-reader route's query string: the fields of
// POST /v1/feed's body (without "after": a reader does not page) and of
// its filter, by their REST names. Lists may be given comma-separated,
// repeated, or both; unknown or repeated single parameters are refused, as
// unknown fields of a body are, so that a typo is not silently ignored.
func (h *handler) formatQuery(raw string) (feedquery.Query, error) {
	return feedquery.Parse(raw, feedquery.Options{
		Names:        feedquery.RESTNames,
		Style:        feedquery.StyleREST,
		RepeatLists:  true,
		MaxLimit:     h.feeds.MaxFirst(),
		DefaultLimit: min(DefaultFormatLimit, h.feeds.MaxFirst()),
		DefaultOrder: feed.Newest,
	})
}

// canonicalQuery writes q back as a query string, the same for every
// spelling of the same request, for the document's own address.
func canonicalQuery(in feedquery.Query) string {
	q := url.Values{}
	n := feedquery.RESTNames
	f := in.Request.Filter
	q.Set(n.Channels, strings.Join(in.Request.Channels, ","))
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set(n.Order, strings.ToLower(in.Given[n.Order]))
	if _, ok := in.Given[n.Limit]; ok {
		q.Set(n.Limit, strconv.Itoa(in.Request.First))
	}
	var kinds []string
	for _, k := range strings.Split(in.Given[n.MediaKinds], ",") {
		if k = strings.TrimSpace(k); k != "" {
			kinds = append(kinds, k)
		}
	}
	set(n.MediaKinds, strings.Join(kinds, ","))
	set(n.Hashtags, strings.Join(f.Hashtags, ","))
	set(n.Query, f.Query)
	set(n.Since, in.Given[n.Since])
	set(n.Until, in.Given[n.Until])
	for _, b := range []struct {
		k string
		v bool
	}{{n.ExcludeForwarded, f.ExcludeForwarded}, {n.ExcludeReplies, f.ExcludeReplies}, {n.ExcludeService, f.ExcludeService}} {
		if b.v {
			q.Set(b.k, "true")
		}
	}
	return q.Encode()
}

// channelSet is a feed's channel list as the feed reads it: the distinct
// valid names in the order given, and how many distinct names (valid or
// not) there are.
type channelSet struct {
	valid []string
	count int
}

func distinctChannels(names []string) channelSet {
	var s channelSet
	seen := make(map[string]bool, len(names))
	for _, raw := range names {
		name, err := tme.NormalizeUsername(raw)
		if err != nil {
			name = "!" + raw // counted as feed counts it: once per spelling
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		s.count++
		if err == nil {
			s.valid = append(s.valid, name)
		}
	}
	return s
}

// allFailed is the answer when no channel of a feed could be read: the
// status of the failure with the highest one, so that Telegram's trouble
// (429, 5xx: worth retrying) wins over a bad name, and every failure named.
func allFailed(fs []feed.Failure, h *handler) apiError {
	e := classify(fs[0].Err, h.now())
	for _, f := range fs[1:] {
		if c := classify(f.Err, h.now()); c.Status > e.Status {
			e = c
		}
	}
	msgs := make([]string, 0, len(fs))
	for _, f := range fs {
		msgs = append(msgs, clip(f.Username)+": "+fault.Classify(f.Err).Message)
	}
	e.Message = "no channel of the feed could be read: " + strings.Join(msgs, "; ")
	return e
}

// failedChannels is the value of FailedChannelsHeader, and whether any
// failure is one that passes (Telegram's trouble rather than a bad name).
func failedChannels(fs []feed.Failure) (string, bool) {
	if len(fs) == 0 {
		return "", false
	}
	var b strings.Builder
	transient := false
	for i, f := range fs {
		info, status := errorInfo(f.Err)
		transient = transient || status >= 429
		if i > 0 {
			b.WriteString(", ")
		}
		// Names in a header: only what a username may hold survives.
		b.WriteString(headerSafe(f.Username) + "=" + info.Code)
	}
	return b.String(), transient
}

// headerSafe keeps the characters of s a username may have (and '@'),
// so that a bad name cannot break the header it is reported in.
func headerSafe(s string) string {
	s = clip(s)
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '@' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '?'
	}, s)
}

// etag is a strong validator of the document and the failures reported
// beside it: equal feeds give equal bytes, whichever process renders them.
func etag(body []byte, failed string) string {
	h := xxh3.New()
	_, _ = h.Write(body)
	_, _ = h.WriteString(failed)
	sum := h.Sum128().Bytes()
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// baseURL is where clients reach the service: PUBLIC_URL when set, else
// the request's Host with http (https on a TLS connection). Forwarding
// headers (X-Forwarded-Host, Forwarded) are not read: anyone can send
// them; behind a proxy, PUBLIC_URL says the address.
func (h *handler) baseURL(r *http.Request) string {
	if h.publicURL != "" {
		return h.publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if host == "" { // HTTP/1.0 without Host: the address the request came to
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			host = a.String()
		} else {
			host = "localhost"
		}
	}
	return scheme + "://" + host
}

// maxDocDates bounds the documents whose dates a process remembers; past
// it, it starts afresh (a forgotten document's date is worked out again).
const maxDocDates = 4096

// docDates are the Last-Modified dates of the feed-reader documents:
// when each document's content last changed, so that a reader sending
// only If-Modified-Since sees an edit or a removal, which the newest
// post's date would hide. A document keeps its date while its ETag stays
// the same (rebuilds from refetched, unchanged pages do not move it); a
// new ETag gets the newest fetch time of the pages it was built from, and
// always a date later than the one the document had, so a reader's
// earlier date never matches newer content. Dates are remembered per
// process: another process works them out from the same page fetch times
// (kept in the shared cache), so it usually gives the same date, and at
// worst a later one for unchanged content, which costs that reader one
// full answer, never a missed change.
type docDates struct {
	mu    sync.Mutex
	dates map[string]docDate
}

type docDate struct {
	etag string
	at   time.Time
}

func newDocDates() *docDates { return &docDates{dates: make(map[string]docDate)} }

// modified is document key's Last-Modified now that its ETag is etag,
// built from feed page p whose newest post is dated newestPost.
// An empty document has none: nothing in it can be newer than a date.
func (d *docDates) modified(key, etag string, p *feed.Page, newestPost time.Time) time.Time {
	if newestPost.IsZero() {
		return time.Time{}
	}
	// HTTP dates have whole seconds; If-Modified-Since compares them so.
	at := p.NewestFetchedAt
	if newestPost.After(at) { // a clock behind Telegram's
		at = newestPost
	}
	at = at.UTC().Truncate(time.Second)
	d.mu.Lock()
	defer d.mu.Unlock()
	prev, ok := d.dates[key]
	switch {
	case ok && prev.etag == etag:
		return prev.at
	case ok && !at.After(prev.at):
		at = prev.at.Add(time.Second)
	case !ok && len(d.dates) >= maxDocDates:
		clear(d.dates)
	}
	d.dates[key] = docDate{etag: etag, at: at}
	return at
}
