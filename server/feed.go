package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/parser"
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
	Channels []string `json:"channels"`
	Order    string   `json:"order,omitempty"` // a feed.Order, case-insensitive: "ranked" (default) or "newest"
	Limit    *int     `json:"limit,omitempty"` // default: the whole feed, up to the server's maximum
	After    string   `json:"after,omitempty"` // "next" of an earlier answer
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

// FeedFailure is a channel that could not be read.
type FeedFailure struct {
	Channel string    `json:"channel"`
	Error   ErrorInfo `json:"error"`
}

// POST /v1/feed {"channels": [...]}: the channels' newest posts merged,
// de-duplicated and ordered, from the same feed builds GraphQL serves.
func (h *handler) feed(w http.ResponseWriter, r *http.Request) {
	var in FeedRequest
	if !h.decodeJSON(w, r, &in, `{"channels": ["name", ...], "order"?: "ranked" | "newest", "limit"?: N, "after"?: "cursor", "since"?: "RFC 3339 time"}`) {
		return
	}
	if len(in.Channels) == 0 {
		h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: `"channels" must list at least one name`})
		return
	}
	req := feed.Request{Channels: in.Channels, First: h.feeds.MaxFirst(), After: in.After}
	if in.Limit != nil {
		// Checked here so the message names the REST field, not the feed's.
		if *in.Limit < 0 || *in.Limit > req.First {
			h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: `"limit" must be from 0 to ` + strconv.Itoa(req.First)})
			return
		}
		req.First = *in.Limit
	}
	if in.Since != "" {
		t, err := time.Parse(time.RFC3339, in.Since)
		if err != nil {
			h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: `"since" must be an RFC 3339 time such as 2024-05-01T12:30:00Z`})
			return
		}
		req.Filter.Since = t
	}
	if in.Order != "" {
		o, ok := restOrder(in.Order)
		if !ok {
			h.fail(w, r, apiError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: `"order" must be one of ` + restOrders()})
			return
		}
		req.Order = o
	}
	p, err := h.feeds.Feed(r.Context(), req)
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	b, err := h.feeds.Rendered(p, "rest:v1", func() ([]byte, error) { return renderFeed(p) })
	if err != nil {
		h.failErr(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	hd.Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// restOrder reads a feed order as REST spells it: the feed's own names,
// case-insensitively ("ranked", "newest").
func restOrder(s string) (feed.Order, bool) {
	for _, o := range feed.Orders() {
		if strings.EqualFold(s, string(o)) {
			return o, true
		}
	}
	return "", false
}

func restOrders() string {
	var names []string
	for _, o := range feed.Orders() {
		names = append(names, strconv.Quote(strings.ToLower(string(o))))
	}
	return strings.Join(names, ", ")
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
