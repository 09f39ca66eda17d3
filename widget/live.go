package widget

import (
	"encoding/json"
	"slices"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/feed/feedquery"
)

// liveDocument is the subscription a widget page opens. It asks only for
// what the page acts on: the kind of change and which post (to take a
// removed post away at once); the posts themselves come from the
// fragment, rendered and sanitized by the server, never from the event.
const liveDocument = `subscription WidgetUpdates($channels: [String!]!, $filter: FeedFilter) {
  feedUpdates(channels: $channels, filter: $filter) { kind post { channel messageId } }
}`

// liveFilter is the schema's FeedFilter input; unset fields are left out.
type liveFilter struct {
	MediaKinds       []string `json:"mediaKinds,omitempty"`
	Hashtags         []string `json:"hashtags,omitempty"`
	Query            string   `json:"query,omitempty"`
	Since            string   `json:"since,omitempty"`
	Until            string   `json:"until,omitempty"`
	ExcludeForwarded bool     `json:"excludeForwarded,omitempty"`
	ExcludeReplies   bool     `json:"excludeReplies,omitempty"`
	ExcludeService   bool     `json:"excludeService,omitempty"`
}

// liveRequest is the body the page POSTs to subscribe to the updates of
// v's feed: its channels and exactly its filter, so the page hears of the
// posts its feed keeps and of no others. Order and limit are not the
// subscription's: the refetch the page makes on an update applies them.
// Channels the feed page p found missing (no such channel, or not a
// channel) are left out, since the server refuses a subscription naming
// any (the page says they could not be shown); with none left, the page
// polls only.
func (h *Handler) liveRequest(v view, p *feed.Page) string {
	if h.sub == "" {
		return ""
	}
	missing := map[string]bool{}
	for _, f := range p.Failed {
		if k := fault.Classify(f.Err).Kind; k == fault.NotFound || k == fault.NotAChannel {
			missing[f.Username] = true
		}
	}
	channels := slices.DeleteFunc(slices.Clone(v.req.Channels), func(ch string) bool { return missing[ch] })
	if len(channels) == 0 {
		return ""
	}
	// Written back by the reader that read it, as the schema spells it.
	f := feedquery.FieldsOf(v.req, true)
	lf := liveFilter{MediaKinds: f.MediaKinds, Hashtags: f.Hashtags, Query: f.Query, Since: f.Since, Until: f.Until,
		ExcludeForwarded: f.ExcludeForwarded, ExcludeReplies: f.ExcludeReplies, ExcludeService: f.ExcludeService}
	body := struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}{Query: liveDocument, OperationName: "WidgetUpdates", Variables: map[string]any{"channels": channels, "filter": lf}}
	b, err := json.Marshal(body)
	if err != nil {
		return "" // plain strings and lists; cannot happen, and the page still polls
	}
	return string(b)
}
