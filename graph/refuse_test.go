package graph_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
)

// failedChannel is one entry of feed's failedChannels, and of a refused
// subscription's extensions.failedChannels.
type failedChannel struct {
	Username, Code, Reason string
}

// feedFailures is what the feed query says of each failing channel.
func (e *env) feedFailures(t *testing.T, channels ...string) map[string]failedChannel {
	t.Helper()
	var d struct {
		Feed struct{ FailedChannels []failedChannel }
	}
	e.query(t, `query($c: [String!]!) { feed(channels: $c) { failedChannels { username code reason } } }`, map[string]any{"c": channels}).decode(t, &d)
	out := map[string]failedChannel{}
	for _, f := range d.Feed.FailedChannels {
		out[f.Username] = f
	}
	return out
}

// refusal reads the next message, which must be the graphql-transport-ws
// error message of subscription id, and returns its errors.
func (c *wsClient) refusal(id string) []gqlError {
	c.t.Helper()
	m := c.next()
	if m.Type != "error" || m.ID != id {
		c.t.Fatalf("waiting for the error of %s: %s %s %s", id, m.Type, m.ID, m.Payload)
	}
	var errs []gqlError
	if err := json.Unmarshal(m.Payload, &errs); err != nil {
		c.t.Fatalf("error payload %s: %v", m.Payload, err)
	}
	return errs
}

// checkRefusal checks that errs is one NOT_FOUND error naming exactly the
// channels of want, each with feed's code and reason for it.
func checkRefusal(t *testing.T, name string, errs []gqlError, want map[string]failedChannel) {
	t.Helper()
	if len(errs) != 1 || errs[0].code() != "NOT_FOUND" {
		t.Errorf("%s: errors %+v, want one NOT_FOUND", name, errs)
		return
	}
	raw, _ := json.Marshal(errs[0].Extensions["failedChannels"])
	var got []failedChannel
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != len(want) {
		t.Errorf("%s: extensions.failedChannels %s (%v), want %+v", name, raw, err, want)
		return
	}
	for _, f := range got {
		if w, ok := want[f.Username]; !ok || f != w {
			t.Errorf("%s: failedChannels has %+v; feed says %+v", name, f, w)
		}
		if !strings.Contains(errs[0].Message, f.Username+": "+f.Reason) {
			t.Errorf("%s: message %q does not name %s with its reason %q", name, errs[0].Message, f.Username, f.Reason)
		}
	}
	if p := fmt.Sprint(errs[0].Path); p != "[feedUpdates]" {
		t.Errorf("%s: path %s, want [feedUpdates]", name, p)
	}
}

// TestSubscriptionToMissingChannelIsRefused: a subscription to a channel
// that does not exist, or to a user account, is refused at once with the
// code and reason feed gives for it (over WebSocket an error message, on an
// event stream the last payload), naming every such channel when some of
// those asked for are fine; the connection goes on serving.
func TestSubscriptionToMissingChannelIsRefused(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{})
	feedSays := e.feedFailures(t, "nobody_at_all_here", "jane_doe_writer", "tmefeed_news")
	if len(feedSays) != 2 || feedSays["nobody_at_all_here"].Code != "NOT_FOUND" || feedSays["jane_doe_writer"].Code != "NOT_FOUND" {
		t.Fatalf("feed's failedChannels: %+v", feedSays)
	}
	c := e.connect(t)
	cases := []struct {
		name     string
		channels []string
		bad      []string
	}{
		{"unknown channel", []string{"nobody_at_all_here"}, []string{"nobody_at_all_here"}},
		{"a user account", []string{"@Jane_Doe_Writer"}, []string{"jane_doe_writer"}},
		{"good and bad", []string{"tmefeed_news", "nobody_at_all_here", "emoji_party", "jane_doe_writer"}, []string{"nobody_at_all_here", "jane_doe_writer"}},
	}
	for i, tc := range cases {
		id := fmt.Sprint(i)
		c.subscribe(id, updatesQuery, map[string]any{"channels": tc.channels})
		want := map[string]failedChannel{}
		for _, ch := range tc.bad {
			want[ch] = feedSays[ch]
		}
		checkRefusal(t, tc.name, c.refusal(id), want)
	}
	// Nothing is left open or watched, and the connection serves on.
	e.waitOpen(t, 0)
	waitSubscribers(t, hub, 0)
	c.subscribe("good", updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}})
	waitSubscribers(t, hub, 1)

	t.Run("event stream", func(t *testing.T) {
		s := e.postSSE(t, request{Query: updatesQuery, Variables: map[string]any{"channels": []string{"tmefeed_news", "nobody_at_all_here"}}})
		name, data := s.event()
		var r response
		if err := json.Unmarshal(data, &r); name != "next" || err != nil {
			t.Fatalf("event %q %s: %v", name, data, err)
		}
		if string(r.Data) != "null" {
			t.Errorf("data %s, want null", r.Data)
		}
		checkRefusal(t, "event stream", r.Errors, map[string]failedChannel{"nobody_at_all_here": feedSays["nobody_at_all_here"]})
		if name, _ := s.event(); name != "complete" {
			t.Errorf("after the error: %q, want complete", name)
		}
		if name, _ := s.event(); name != "" {
			t.Errorf("the stream goes on after complete: %q", name)
		}
	})
	waitSubscribers(t, hub, 1)
}

// TestSubscriptionStartsWhileTelegramFails: a channel that Telegram fails
// to serve for now (a server error, no answer in time) is not refused:
// the subscription starts and delivers the channel's changes once
// Telegram answers again.
func TestSubscriptionStartsWhileTelegramFails(t *testing.T) {
	cases := []struct {
		name  string
		fault fixtures.Fault
		opts  envOptions
	}{
		// Twice: the subscription's look-up and the updater's first load
		// (if they do not share one) both fail.
		{"server error", fixtures.Fault{Status: http.StatusInternalServerError, Times: 2}, envOptions{}},
		// The look-up gives up at the operation's timeout, long before
		// the origin client does.
		{"no answer in time", fixtures.Fault{Hang: true, Times: 1}, envOptions{timeout: 200 * time.Millisecond, upstreamTimeout: 2 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.refresh = liveRefresh
			e, hub := newLiveEnv(t, tc.opts)
			e.origin.SetFault("/s/tmefeed_news", tc.fault)
			c := e.connect(t)
			c.subscribe("1", updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}})
			waitSubscribers(t, hub, 1)
			deadline := time.Now().Add(waitLimit)
			for e.origin.Requests("/s/tmefeed_news") < int64(max(tc.fault.Times, 1)) {
				if time.Now().After(deadline) {
					t.Fatal("the origin was not asked for the channel")
				}
				time.Sleep(5 * time.Millisecond)
			}
			// Telegram answers again: the page as it is now, then a post.
			for e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil).Errors != nil {
				if time.Now().After(deadline) {
					t.Fatal("the channel did not come back")
				}
				time.Sleep(20 * time.Millisecond)
			}
			id := e.origin.PublishPost("tmefeed_news", "back again")
			if got, want := c.updates("1", 1)[0], fmt.Sprintf(`NEW tmefeed_news/%d "back again"`, id); got != want {
				t.Fatalf("after Telegram recovered: %s, want %s", got, want)
			}
		})
	}
}

// TestSubscriptionLookupDoesNotHoldOthers: while Telegram does not answer
// for one subscription's channel, the connection's other subscriptions
// are served (here: refused at once).
func TestSubscriptionLookupDoesNotHoldOthers(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{timeout: time.Minute, upstreamTimeout: time.Minute})
	e.origin.SetFault("/s/retro_channel", fixtures.Fault{Hang: true})
	t.Cleanup(e.originSrv.CloseClientConnections)
	c := e.connect(t)
	c.subscribe("stuck", updatesQuery, map[string]any{"channels": []string{"retro_channel"}})
	waitSubscribers(t, hub, 1)
	// The stuck subscription registers before it looks its channel up:
	// the look-up must be hanging at the origin before the other starts.
	deadline := time.Now().Add(waitLimit)
	for e.origin.Requests("/s/retro_channel") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the origin was not asked for the stuck channel")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.subscribe("other", updatesQuery, map[string]any{"channels": []string{"nobody_at_all_here"}})
	if errs := c.refusal("other"); len(errs) != 1 || errs[0].code() != "NOT_FOUND" {
		t.Fatalf("the other subscription: %+v", errs)
	}
	if n := e.origin.InFlight(); n != 1 {
		t.Fatalf("%d origin requests in flight, want the stuck one", n)
	}
}

// TestSubscriptionsShareOneLookup: many subscriptions to one channel not
// yet cached, opened together, cost Telegram one request, whether the
// channel exists or not (a name it does not know is remembered for a
// moment, as by default: the updater, woken by the subscriptions, may try
// it again before they are refused).
func TestSubscriptionsShareOneLookup(t *testing.T) {
	const n = 50
	e, hub := newLiveEnv(t, envOptions{subsPerConn: 2 * n, maxSubs: 4 * n, negativeTTL: time.Minute})
	// The origin answers slowly, so that every subscription's look-up
	// starts while the first one's request is out.
	e.origin.SetLatency(time.Second)
	c := e.connect(t)
	for i := range n {
		c.subscribe(fmt.Sprint("missing", i), updatesQuery, map[string]any{"channels": []string{"nobody_at_all_here"}})
	}
	refused := map[string]bool{}
	for len(refused) < n {
		m := c.next()
		var errs []gqlError
		if m.Type != "error" || json.Unmarshal(m.Payload, &errs) != nil || len(errs) != 1 || errs[0].code() != "NOT_FOUND" {
			t.Fatalf("%s %s %s, want NOT_FOUND", m.Type, m.ID, m.Payload)
		}
		refused[m.ID] = true
	}
	if got := e.origin.Requests("/s/nobody_at_all_here"); got != 1 {
		t.Errorf("%d subscriptions to a missing channel asked the origin %d times, want 1", n, got)
	}

	for i := range n {
		c.subscribe(fmt.Sprint("news", i), updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}})
	}
	waitSubscribers(t, hub, n)
	e.waitOpen(t, n)
	// The look-ups still running end with the one request's answer.
	for e.origin.InFlight() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.origin.Requests("/s/tmefeed_news"); got != 1 {
		t.Errorf("%d subscriptions to a channel asked the origin %d times, want 1", n, got)
	}
}
