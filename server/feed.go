package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feed/feedquery"
	"github.com/tmefeed/tmefeed/internal/httpcache"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/server/restjson"
)

// FeedService builds multi-channel feeds; *feed.Service is one. GraphQL's
// feed field and POST /v1/feed share it, and so share builds.
type FeedService interface {
	Feed(ctx context.Context, req feed.Request) (*feed.Page, error)
	Rendered(p *feed.Page, key string, render func() ([]byte, error)) ([]byte, error)
	MaxFirst() int
}

// FeedRequest is the body of POST /v1/feed. Only channels is required.
type FeedRequest struct {
	Channels []string    `json:"channels"`
	Order    string      `json:"order,omitempty"` // a feed.Order, case-insensitive: "ranked" (default) or "newest"
	Limit    *int        `json:"limit,omitempty"` // default: the whole feed, up to the server's maximum
	After    string      `json:"after,omitempty"` // "next" of an earlier answer
	Filter   *FeedFilter `json:"filter,omitempty"`
	// Since keeps posts dated at or after this RFC 3339 instant, reading
	// each channel's older pages back to it (at most HISTORY_MAX_PAGES).
	Since string `json:"since,omitempty"`
}

// FeedResponse is the answer of POST /v1/feed: telegram-me's
// {"result": [...]}, each post carrying its channel, plus the channels that
// could not be read and the cursor of the next page when there is one.
type FeedResponse struct {
	Result []FeedPost    `json:"result"`
	Failed []FeedFailure `json:"failed_channels,omitempty"`
	Next   string        `json:"next,omitempty"`
}

// FeedPost is a post with the header of its channel.
type FeedPost struct {
	*parser.Post
	Channel *parser.Channel `json:"channel"`
}

// MarshalJSON writes the post's keys, as /v1/post does, then channel:
// without it the post's own MarshalJSON, promoted, would write the post
// alone.
func (f FeedPost) MarshalJSON() ([]byte, error) {
	b := restjson.AppendPost(make([]byte, 0, 1536), f.Post)
	b = append(b[:len(b)-1], `,"channel":`...)
	if f.Channel == nil {
		b = append(b, "null"...)
	} else {
		b = restjson.AppendChannel(b, f.Channel)
	}
	return append(b, '}'), nil
}

// FeedFailure is a channel that could not be read.
type FeedFailure struct {
	Channel string    `json:"channel"`
	Error   ErrorInfo `json:"error"`
}

// FeedFilter keeps the posts matching every condition given, as GraphQL's
// FeedFilter does. Within media_kinds and hashtags any one value is enough.
type FeedFilter struct {
	MediaKinds       []string `json:"media_kinds,omitempty"` // parser media kinds ("image", "video", ...), case-insensitive
	Hashtags         []string `json:"hashtags,omitempty"`    // with or without '#', case-insensitive
	Query            string   `json:"query,omitempty"`       // text of the post, poll or link preview, case-insensitive
	Since            string   `json:"since,omitempty"`       // RFC 3339; posts dated at or after it
	Until            string   `json:"until,omitempty"`       // RFC 3339; posts dated before it
	ExcludeForwarded bool     `json:"exclude_forwarded,omitempty"`
	ExcludeReplies   bool     `json:"exclude_replies,omitempty"`
	ExcludeService   bool     `json:"exclude_service,omitempty"`
}

// POST /v1/feed {"channels": [...]}: the channels' newest posts merged,
// de-duplicated and ordered, from the same feed builds GraphQL serves.
func (h *handler) feed(w http.ResponseWriter, r *http.Request) {
	var in FeedRequest
	if !h.decodeJSON(w, r, &in, `{"channels": ["name", ...], "order"?: "ranked" | "newest", "limit"?: N, "after"?: "cursor", "since"?: "RFC 3339 time", "filter"?: {...}}`) {
		return
	}
	req, e := h.feedRequest(in, h.feeds.MaxFirst())
	if e != nil {
		h.fail(w, r, *e)
		return
	}
	req.Who = h.who(r, requestInfo(r.Context()))
	p, err := h.feeds.Feed(r.Context(), req)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	for _, f := range p.Failed {
		if overBudget(fault.Classify(f.Err).Kind) {
			NoteRefused(r.Context())
			break
		}
	}
	b, err := h.feeds.Rendered(p, "rest:v1", func() ([]byte, error) { return renderFeed(p) })
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	// The compressed form is kept beside the build like the identity
	// bytes, so the next client with the same query compresses nothing.
	f, err := h.enc.Choose(r.Header.Get("Accept-Encoding"), b, "", func(c httpcache.Coding) ([]byte, error) {
		return h.feeds.Rendered(p, feedRenderKey(c), func() ([]byte, error) { return h.enc.Compress(c, b), nil })
	})
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	httpcache.Write(w, r, http.StatusOK, f, "application/json; charset=utf-8", httpcache.NoStore)
}

// feedRequest checks POST /v1/feed's body with the rules every face's
// feed request passes (feedquery.Read) and makes it a feed.Request; a
// missing limit is defaultLimit. Messages name the fields as REST spells
// them.
func (h *handler) feedRequest(in FeedRequest, defaultLimit int) (feed.Request, *apiError) {
	bad := func(msg string) (feed.Request, *apiError) {
		return feed.Request{}, &apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: msg}
	}
	f := feedquery.Fields{Channels: in.Channels, First: in.Limit, After: in.After, Order: in.Order, Since: in.Since}
	if flt := in.Filter; flt != nil {
		f.MediaKinds, f.Hashtags, f.Query = flt.MediaKinds, flt.Hashtags, flt.Query
		if flt.Since != "" {
			f.Since = flt.Since
		}
		f.Until = flt.Until
		f.ExcludeForwarded, f.ExcludeReplies, f.ExcludeService = flt.ExcludeForwarded, flt.ExcludeReplies, flt.ExcludeService
	}
	req, err := feedquery.Read(f, feedquery.Options{
		Names:        feedquery.RESTNames,
		Style:        feedquery.StyleREST,
		MaxLimit:     h.feeds.MaxFirst(),
		DefaultLimit: min(defaultLimit, h.feeds.MaxFirst()),
	})
	if err != nil {
		return bad(err.Error())
	}
	// A top-level "since" is the filter's since, for clients that page
	// back in time without a filter object.
	if in.Since != "" && in.Filter != nil && in.Filter.Since != "" {
		return bad(`give "since" once: at the top level or in "filter"`)
	}
	return req, nil
}

// feedRenderKey names a coding's form of the REST feed answer.
func feedRenderKey(c httpcache.Coding) string {
	if c == httpcache.Zstd {
		return "rest:v1:zstd"
	}
	return "rest:v1:gzip"
}

func renderFeed(p *feed.Page) ([]byte, error) {
	out := FeedResponse{Result: make([]FeedPost, len(p.Items))}
	for i, it := range p.Items {
		out.Result[i] = FeedPost{Post: it.Post, Channel: it.Channel}
	}
	for _, f := range p.Failed {
		info, _ := errorInfo(f.Err)
		out.Failed = append(out.Failed, FeedFailure{Channel: f.Username, Error: info})
	}
	if p.HasNextPage && len(p.Items) > 0 {
		out.Next = p.Items[len(p.Items)-1].Cursor
	}
	var buf bytes.Buffer
	buf.Grow(2048 * len(p.Items))
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
