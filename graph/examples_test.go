package graph_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/web"
)

// The playground's example queries run against this schema without
// errors; the subscription receives a post published meanwhile.
func TestPlaygroundExamplesRun(t *testing.T) {
	e, hub := newLiveEnv(t, envOptions{refresh: liveRefresh})
	subscriptions := 0
	for i, tab := range web.Examples(recorded) {
		var vars map[string]any
		if tab.Variables != "" {
			if err := json.Unmarshal([]byte(tab.Variables), &vars); err != nil {
				t.Fatalf("tab %d: variables %q: %v", i, tab.Variables, err)
			}
		}
		if !strings.Contains(tab.Query, "\nsubscription ") {
			r := e.query(t, tab.Query, vars)
			if len(r.Errors) > 0 || len(r.Data) < 20 {
				t.Errorf("tab %d: %s %+v\n%s", i, r.Data, r.Errors, tab.Query)
			}
			continue
		}
		subscriptions++
		c := e.connect(t)
		c.subscribe("tab", tab.Query, vars)
		waitSubscribers(t, hub, 1)
		id := e.origin.PublishPost(recorded[0], "published while the playground watches")
		m := c.next()
		var r struct {
			Data struct {
				FeedUpdates struct {
					Kind    string
					Channel struct{ Username string }
					Post    struct{ MessageID int }
				}
			}
			Errors []gqlError
		}
		if err := json.Unmarshal(m.Payload, &r); err != nil || m.Type != "next" || len(r.Errors) > 0 {
			t.Fatalf("tab %d: %+v %v", i, m, err)
		}
		if u := r.Data.FeedUpdates; u.Kind != "NEW" || u.Channel.Username != recorded[0] || u.Post.MessageID != id {
			t.Errorf("tab %d: %s, want NEW %s/%d", i, m.Payload, recorded[0], id)
		}
	}
	if subscriptions != 1 {
		t.Errorf("%d subscription examples, want 1", subscriptions)
	}
}
