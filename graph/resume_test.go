package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/graph"
)

const resumeQuery = `subscription($channels: [String!]!, $after: String) {
  feedUpdates(channels: $channels, after: $after) {
    kind
    channel { username title }
    post { messageId text { plain } edited }
  }
}`

// frame is one event of an event stream with its id: line.
type frame struct {
	name, id string
	data     []byte
}

// frame reads the next event with its id ("" none); a zero frame at the
// end of the stream.
func (s *sse) frame() frame {
	s.t.Helper()
	var f frame
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if f.name != "" {
				return f
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			f.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			f.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			f.data = append(f.data, strings.TrimPrefix(line, "data: ")...)
		}
	}
	return f
}

// idUpdate is an update with the id its payload carries and the id: line
// of its frame, which must agree.
type idUpdate struct {
	update
	id     string
	missed bool
}

func (s *sse) idUpdates(n int) []idUpdate {
	s.t.Helper()
	var out []idUpdate
	for len(out) < n {
		f := s.frame()
		if f.name != "next" {
			s.t.Fatalf("waiting for events: %q %s", f.name, f.data)
		}
		u := payloadUpdate(s.t, f.data)
		if u.id == "" || f.id != u.id {
			s.t.Fatalf("event %s: id: line %q, extensions.eventId %q", f.data, f.id, u.id)
		}
		out = append(out, u)
	}
	return out
}

func payloadUpdate(t testing.TB, payload []byte) idUpdate {
	t.Helper()
	var ext struct {
		Extensions struct {
			EventID      string `json:"eventId"`
			MissedEvents bool   `json:"missedEvents"`
		}
	}
	if err := json.Unmarshal(payload, &ext); err != nil {
		t.Fatalf("event %s: %v", payload, err)
	}
	return idUpdate{update: decodeUpdate(t, payload), id: ext.Extensions.EventID, missed: ext.Extensions.MissedEvents}
}

func (c *wsClient) idUpdates(id string, n int) []idUpdate {
	c.t.Helper()
	var out []idUpdate
	for len(out) < n {
		m := c.next()
		if m.ID != id || m.Type != "next" {
			c.t.Fatalf("waiting for events of %s: %s %s %s", id, m.Type, m.ID, m.Payload)
		}
		out = append(out, payloadUpdate(c.t, m.Payload))
	}
	return out
}

// getSSEHeader opens a GET event stream with extra headers, and returns
// it with the response's status.
func (e *env) getSSEHeader(t testing.TB, query string, vars map[string]any, header ...string) (*sse, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	t.Cleanup(cancel)
	hr, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+getURL(query, vars, nil), nil)
	hr.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		hr.Header.Set(header[i], header[i+1])
	}
	resp, err := e.srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &sse{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}, resp.StatusCode
}

func strs(us []idUpdate) (texts, ids []string) {
	for _, u := range us {
		texts, ids = append(texts, u.String()), append(ids, u.id)
	}
	return texts, ids
}

// TestResumeOverEventStream: an event stream opened as EventSource opens
// one carries each update's id in its id: line and its payload; one that
// reconnects with Last-Event-ID receives exactly the updates published
// while it was away, in order, then the live ones.
func TestResumeOverEventStream(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{refresh: liveRefresh})
	e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil)
	vars := map[string]any{"channels": []string{"tmefeed_news"}}

	// A witness stays subscribed throughout: it sees every update, and
	// keeps the channel refreshed while the other is away.
	witness, _ := e.getSSEHeader(t, resumeQuery, vars)
	s, _ := e.getSSEHeader(t, resumeQuery, vars)
	waitSubscribers(t, hub, 2)
	first := e.origin.PublishPost("tmefeed_news", "before the blip")
	got := s.idUpdates(1)
	if want := fmt.Sprintf(`NEW tmefeed_news/%d "before the blip"`, first); got[0].String() != want {
		t.Fatalf("first update %s, want %s", got[0], want)
	}
	if w := witness.idUpdates(1); w[0].id != got[0].id {
		t.Fatalf("the same update has ids %s and %s", w[0].id, got[0].id)
	}
	s.resp.Body.Close()
	waitSubscribers(t, hub, 1)

	var missed []string
	for _, text := range []string{"while away 1", "while away 2", "while away 3"} {
		n := e.origin.PublishPost("tmefeed_news", text)
		missed = append(missed, fmt.Sprintf(`NEW tmefeed_news/%d %q`, n, text))
	}
	seen, seenIDs := strs(witness.idUpdates(3))
	if !slices.Equal(seen, missed) {
		t.Fatalf("witness: %q, want %q", seen, missed)
	}

	back, status := e.getSSEHeader(t, resumeQuery, vars, "Last-Event-ID", got[0].id)
	if status != http.StatusOK {
		t.Fatalf("resuming: %d", status)
	}
	replayed := back.idUpdates(3)
	if texts, ids := strs(replayed); !slices.Equal(texts, missed) || !slices.Equal(ids, seenIDs) {
		t.Fatalf("replayed %q %q, want %q %q", texts, ids, missed, seenIDs)
	}
	if replayed[0].missed {
		t.Error("a resume within the backlog says events were missed")
	}
	waitSubscribers(t, hub, 2)
	live := e.origin.PublishPost("tmefeed_news", "after the return")
	want := fmt.Sprintf(`NEW tmefeed_news/%d "after the return"`, live)
	if u := back.idUpdates(1); u[0].String() != want || slices.Contains(seenIDs, u[0].id) {
		t.Fatalf("live after the replay: %s %s, want %s after %s", u[0], u[0].id, want, seenIDs[2])
	}

	// A POST resumes the same way.
	body, _ := json.Marshal(request{Query: resumeQuery, Variables: vars})
	hr, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.srv.URL+"/graphql", bytes.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("Last-Event-ID", seenIDs[0])
	resp, err := e.srv.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	posted := &sse{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}
	if texts, _ := strs(posted.idUpdates(3)); !slices.Equal(texts, append(missed[1:], want)) {
		t.Fatalf("POST resuming after %s: %q, want %q", seenIDs[0], texts, append(missed[1:], want))
	}

	// A Last-Event-ID that is not an id is refused before the stream.
	bad, status := e.getSSEHeader(t, resumeQuery, vars, "Last-Event-ID", "yesterday")
	var r response
	if err := json.NewDecoder(bad.resp.Body).Decode(&r); status != http.StatusBadRequest || err != nil ||
		len(r.Errors) != 1 || r.Errors[0].code() != graph.CodeBadRequest || !strings.Contains(r.Errors[0].Message, "Last-Event-ID") {
		t.Errorf("a malformed Last-Event-ID: %d %+v %v", status, r, err)
	}
}

// TestResumeOverWebSocket: feedUpdates' after argument resumes as
// Last-Event-ID does; an id older than the backlog replays what is held
// and marks the first update; a malformed one is BAD_USER_INPUT.
func TestResumeOverWebSocket(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{refresh: liveRefresh})
	e.query(t, `{ channel(username: "tmefeed_news") { title } }`, nil)
	vars := map[string]any{"channels": []string{"tmefeed_news"}}

	c := e.connect(t)
	c.subscribe("witness", resumeQuery, vars)
	c.subscribe("away", resumeQuery, vars)
	waitSubscribers(t, hub, 2)
	e.origin.PublishPost("tmefeed_news", "before")
	var last string
	for got := 0; got < 2; {
		m := c.next()
		u := payloadUpdate(t, m.Payload)
		if u.id == "" {
			t.Fatalf("an update without extensions.eventId: %s", m.Payload)
		}
		if m.ID == "away" {
			last = u.id
		}
		got++
	}
	c.send(wsMsg{Type: "complete", ID: "away"})
	if m := c.next(); m.Type != "complete" || m.ID != "away" {
		t.Fatalf("after complete: %s %s %s", m.Type, m.ID, m.Payload)
	}
	waitSubscribers(t, hub, 1)

	var missed []string
	for _, text := range []string{"gone 1", "gone 2", "gone 3"} {
		n := e.origin.PublishPost("tmefeed_news", text)
		missed = append(missed, fmt.Sprintf(`NEW tmefeed_news/%d %q`, n, text))
	}
	seen, seenIDs := strs(c.idUpdates("witness", 3))

	c.subscribe("back", resumeQuery, map[string]any{"channels": []string{"tmefeed_news"}, "after": last})
	if texts, ids := strs(c.idUpdates("back", 3)); !slices.Equal(texts, missed) || !slices.Equal(ids, seenIDs) || !slices.Equal(seen, missed) {
		t.Fatalf("resumed with after: %q %q, want %q %q", texts, ids, missed, seenIDs)
	}

	// An id from before anything held: what is held comes, the first
	// update saying some may be missing.
	c.subscribe("old", resumeQuery, map[string]any{"channels": []string{"tmefeed_news"}, "after": "1-0"})
	old := c.idUpdates("old", 4)
	if !old[0].missed || old[1].missed || old[0].String() == "" {
		t.Errorf("an id older than the backlog: first update missedEvents=%v, second %v", old[0].missed, old[1].missed)
	}

	c.subscribe("bad", resumeQuery, map[string]any{"channels": []string{"tmefeed_news"}, "after": "last tuesday"})
	if errs := c.errorsOf("bad"); len(errs) != 1 || errs[0].code() != graph.CodeBadUserInput || !strings.Contains(errs[0].Message, "after") {
		t.Errorf("a malformed after: %+v", errs)
	}
}
