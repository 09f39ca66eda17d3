package graph_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/live"
)

// liveRefresh is a short refresh point, so that changes at the origin
// reach subscribers quickly.
const liveRefresh = 300 * time.Millisecond

// update is one feedUpdates event as updatesQuery selects it.
type update struct {
	Kind    string
	Channel struct{ Username, Title string }
	Post    struct {
		MessageID int
		Text      *struct{ Plain string }
		Edited    bool
	}
}

func (u update) String() string {
	text := ""
	if u.Post.Text != nil {
		text = u.Post.Text.Plain
	}
	return fmt.Sprintf("%s %s/%d %q", u.Kind, u.Channel.Username, u.Post.MessageID, text)
}

func decodeUpdate(t testing.TB, payload []byte) update {
	t.Helper()
	var r struct {
		Data   struct{ FeedUpdates update }
		Errors []gqlError
	}
	if err := json.Unmarshal(payload, &r); err != nil || len(r.Errors) > 0 {
		t.Fatalf("event %s: %v", payload, err)
	}
	return r.Data.FeedUpdates
}

// updates reads n events of subscription id.
func (c *wsClient) updates(id string, n int) []string {
	c.t.Helper()
	var out []string
	for len(out) < n {
		m := c.next()
		if m.ID != id || m.Type != "next" {
			c.t.Fatalf("waiting for events of %s: %s %s %s", id, m.Type, m.ID, m.Payload)
		}
		out = append(out, decodeUpdate(c.t, m.Payload).String())
	}
	return out
}

// sseUpdates reads n events of an event stream.
func (s *sse) updates(n int) []string {
	s.t.Helper()
	var out []string
	for len(out) < n {
		name, data := s.event()
		if name != "next" {
			s.t.Fatalf("waiting for events: %q %s", name, data)
		}
		out = append(out, decodeUpdate(s.t, data).String())
	}
	return out
}

// waitSubscribers waits until the hub delivers to n subscriptions.
func waitSubscribers(t testing.TB, h *live.Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for h.Stats().Subscribers != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers, want %d", h.Stats().Subscribers, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFeedUpdates: posts published, edited and removed at the origin reach
// subscribers over WebSocket and event streams as NEW, EDITED and REMOVED,
// each subscription's filter keeping what feed's would.
func TestFeedUpdates(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{refresh: liveRefresh})
	// The page as it is now, so that what follows is a change of it.
	e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil)

	c := e.connect(t)
	c.subscribe("all", updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}})
	c.subscribe("keyword", updatesQuery, map[string]any{"channels": []string{"@TmeFeed_News"}, "filter": map[string]any{"query": "LAUNCH"}})
	c.subscribe("other", updatesQuery, map[string]any{"channels": []string{"emoji_party"}})
	s := e.postSSE(t, request{Query: updatesQuery, Variables: map[string]any{"channels": []string{"tmefeed_news"}}})
	waitSubscribers(t, hub, 4)

	plain := e.origin.PublishPost("tmefeed_news", "a plain post")
	launch := e.origin.PublishPost("tmefeed_news", "we launch today")
	want := []string{
		fmt.Sprintf(`NEW tmefeed_news/%d "a plain post"`, plain),
		fmt.Sprintf(`NEW tmefeed_news/%d "we launch today"`, launch),
	}
	// Events of different subscriptions interleave on the connection.
	got := map[string][]string{}
	for len(got["all"]) < 2 || len(got["keyword"]) < 1 {
		m := c.next()
		if m.Type != "next" {
			t.Fatalf("%+v", m)
		}
		got[m.ID] = append(got[m.ID], decodeUpdate(t, m.Payload).String())
	}
	if !slices.Equal(got["all"], want) || !slices.Equal(got["keyword"], want[1:]) || got["other"] != nil {
		t.Fatalf("events %q, want all %q and keyword %q", got, want, want[1:])
	}
	if ev := s.updates(2); !slices.Equal(ev, want) {
		t.Fatalf("event stream: %q, want %q", ev, want)
	}

	e.origin.EditPost("tmefeed_news", plain, "a plain post, corrected")
	wantEdit := fmt.Sprintf(`EDITED tmefeed_news/%d "a plain post, corrected"`, plain)
	if ev := c.updates("all", 1); ev[0] != wantEdit {
		t.Fatalf("after the edit: %q, want %q", ev, wantEdit)
	}
	if ev := s.updates(1); ev[0] != wantEdit {
		t.Fatalf("event stream after the edit: %q, want %q", ev, wantEdit)
	}

	e.origin.RemovePost("tmefeed_news", launch)
	wantRemoved := fmt.Sprintf(`REMOVED tmefeed_news/%d "we launch today"`, launch)
	got = map[string][]string{}
	for len(got["all"]) < 1 || len(got["keyword"]) < 1 {
		m := c.next()
		got[m.ID] = append(got[m.ID], decodeUpdate(t, m.Payload).String())
	}
	// The filtered subscription saw no edit (its post does not match) but
	// sees the removal of the post it was sent.
	if !slices.Equal(got["all"], []string{wantRemoved}) || !slices.Equal(got["keyword"], []string{wantRemoved}) {
		t.Fatalf("after the removal: %q, want %q for both", got, wantRemoved)
	}
}

// TestSlowSubscriberIsTold: a subscriber that leaves more events unread
// than the hub holds for it is ended with SLOW_SUBSCRIBER, after the
// events it was sent, and its connection stays open.
func TestSlowSubscriberIsTold(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{refresh: liveRefresh}, 2)
	e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil)
	c := e.connect(t)
	c.subscribe("slow", updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}})
	waitSubscribers(t, hub, 1)

	// Many posts at once: one refresh finds them all, and the hub hands
	// them over faster than any client reads them.
	for i := range 60 {
		e.origin.PublishPost("tmefeed_news", fmt.Sprintf("post %d of a burst", i))
	}
	var events int
	for {
		m := c.next()
		if m.ID != "slow" {
			t.Fatalf("%+v", m)
		}
		r := m.result(t)
		if len(r.Errors) == 0 {
			events++
			continue
		}
		if r.Errors[0].code() != "SLOW_SUBSCRIBER" || !strings.Contains(r.Errors[0].Message, "faster than this client read") {
			t.Fatalf("the stream ended with %+v", r.Errors)
		}
		break
	}
	if m := c.next(); m.Type != "complete" || m.ID != "slow" {
		t.Fatalf("after the error: %+v, want complete", m)
	}
	if events >= 60 || hub.Stats().SlowClosed != 1 {
		t.Fatalf("%d events before the end, %d closed as slow", events, hub.Stats().SlowClosed)
	}
	t.Logf("%d events sent before the subscriber was ended", events)
	// The connection serves a new subscription.
	c.subscribe("again", updatesQuery, map[string]any{"channels": []string{"tmefeed_news"}})
	waitSubscribers(t, hub, 1)
}
