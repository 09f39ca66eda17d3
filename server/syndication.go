package server

import (
	"bytes"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feedformat"
	"github.com/tmefeed/tmefeed/pages"
)

// DefaultFormatLimit is the number of posts a feed-reader document holds
// when the request gives no limit: readers poll often and keep what they
// saw, so a document need not hold the whole merged feed.
const DefaultFormatLimit = 100

// FailedChannelsHeader lists, on a feed-reader document, the channels that
// could not be read as "name=code" pairs ("durov=not_found, x=upstream_error").
// Readers show no error a document could carry, so the document itself
// holds the channels that could be read and this header says what is missing.
const FailedChannelsHeader = "Tmefeed-Failed-Channels"

// The query parameters of the feed-reader routes: the fields of POST
// /v1/feed's body (without "after": a reader does not page) and of its
// filter. Lists may be given comma-separated, repeated, or both.
var (
	formatListParams   = []string{"channels", "media_kinds", "hashtags"}
	formatSingleParams = []string{"order", "limit", "query", "since", "until", "exclude_forwarded", "exclude_replies", "exclude_service"}
)

// GET /v1/rss, /v1/atom, /v1/jsonfeed ?channels=a,b[&order=…&limit=N&filter fields]:
// the feed POST /v1/feed answers, from the same builds, as a document feed
// readers subscribe to. A 304 answers a reader whose copy is current.
func (h *handler) syndication(f feedformat.Format) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, e := formatQuery(r.URL.RawQuery)
		if e != nil {
			h.fail(w, r, *e)
			return
		}
		req, e := h.feedRequest(in, DefaultFormatLimit)
		if e != nil {
			h.fail(w, r, *e)
			return
		}
		p, err := h.feeds.Feed(r.Context(), req)
		if err != nil {
			h.failErr(w, r, err)
			return
		}
		channels := distinctChannels(in.Channels)
		if len(p.Items) == 0 && len(p.Failed) > 0 && len(p.Failed) >= channels.count {
			h.fail(w, r, allFailed(p.Failed, h))
			return
		}
		base := h.baseURL(r)
		self := base + r.URL.Path + "?" + canonicalQuery(in)
		opts := feedformat.Options{
			Channels:  channels.valid,
			Order:     req.Order,
			SelfURL:   self,
			HomeURL:   base + "/",
			MediaBase: h.publicURL,
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
		hd.Set("ETag", etag(b, failed))
		if failed != "" {
			hd.Set(FailedChannelsHeader, failed)
		}
		if transient {
			// A feed missing channels for a passing reason is not kept downstream.
			hd.Set("Cache-Control", "no-store")
		} else {
			hd.Set("Cache-Control", h.cacheControl(p.RefreshAt, p.Stale))
		}
		// ServeContent answers If-None-Match and If-Modified-Since (the
		// former wins when both are sent, as RFC 9110 says), HEAD and ranges.
		http.ServeContent(w, r, "", feedformat.Updated(p.Items), bytes.NewReader(b))
	}
}

// formatQuery reads a feed-reader route's query string. Unknown or
// repeated single parameters are refused, as unknown fields of a body
// are, so that a typo is not silently ignored.
func formatQuery(raw string) (FeedRequest, *apiError) {
	var in FeedRequest
	bad := func(msg string) (FeedRequest, *apiError) {
		return in, &apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: msg}
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return bad("the query string is malformed: " + clip(err.Error()))
	}
	var f FeedFilter
	for name, vals := range q {
		if slices.Contains(formatListParams, name) {
			var list []string
			for _, v := range vals {
				for item := range strings.SplitSeq(v, ",") {
					if item = strings.TrimSpace(item); item != "" {
						list = append(list, item)
					}
				}
			}
			switch name {
			case "channels":
				in.Channels = list
			case "media_kinds":
				f.MediaKinds = list
			case "hashtags":
				f.Hashtags = list
			}
			continue
		}
		if !slices.Contains(formatSingleParams, name) {
			return bad("unknown parameter " + strconv.Quote(clip(name)) + "; want channels, " + strings.Join(formatListParams[1:], ", ") + ", " + strings.Join(formatSingleParams, ", "))
		}
		if len(vals) > 1 {
			return bad(strconv.Quote(name) + " must be given once")
		}
		v := vals[0]
		switch name {
		case "order":
			in.Order = v
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil {
				return bad(`"limit" must be a whole number, not ` + strconv.Quote(clip(v)))
			}
			in.Limit = &n
		case "query":
			f.Query = v
		case "since":
			f.Since = v
		case "until":
			f.Until = v
		default: // the exclude_* flags: present without a value means true
			b := true
			if v != "" {
				if b, err = strconv.ParseBool(v); err != nil {
					return bad(strconv.Quote(name) + " must be true or false, not " + strconv.Quote(clip(v)))
				}
			}
			switch name {
			case "exclude_forwarded":
				f.ExcludeForwarded = b
			case "exclude_replies":
				f.ExcludeReplies = b
			case "exclude_service":
				f.ExcludeService = b
			}
		}
	}
	in.Filter = &f // an empty filter keeps every post
	return in, nil
}

// canonicalQuery writes in back as a query string, the same for every
// spelling of the same request, for the document's own address.
func canonicalQuery(in FeedRequest) string {
	q := url.Values{}
	q.Set("channels", strings.Join(in.Channels, ","))
	if in.Order != "" {
		q.Set("order", strings.ToLower(in.Order))
	}
	if in.Limit != nil {
		q.Set("limit", strconv.Itoa(*in.Limit))
	}
	if f := in.Filter; f != nil {
		set := func(k, v string) {
			if v != "" {
				q.Set(k, v)
			}
		}
		set("media_kinds", strings.Join(f.MediaKinds, ","))
		set("hashtags", strings.Join(f.Hashtags, ","))
		set("query", f.Query)
		set("since", f.Since)
		set("until", f.Until)
		for _, b := range []struct {
			k string
			v bool
		}{{"exclude_forwarded", f.ExcludeForwarded}, {"exclude_replies", f.ExcludeReplies}, {"exclude_service", f.ExcludeService}} {
			if b.v {
				q.Set(b.k, "true")
			}
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
		name, err := pages.NormalizeUsername(raw)
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
