package graph_test

import (
	"encoding/json"
	"testing"
)

// The schema says which subscriber count is rounded: the channel page's
// counter is the abbreviation's value, the preview card's is exact. Over
// every recorded channel the two agree to the three significant digits
// the page shows, and at least one channel tells them apart.
func TestSubscriberCountsRoundedAndExact(t *testing.T) {
	e := newEnv(t, envOptions{})
	differ := 0
	for _, name := range recorded {
		r := e.query(t, `query($n: String!) {
			channel(username: $n) { counters { subscribers subscribersText } }
			previews(usernames: [$n]) { preview { subscribers subscribersText } }
		}`, map[string]any{"n": name})
		var out struct {
			Channel struct {
				Counters struct {
					Subscribers     *int64
					SubscribersText *string
				}
			}
			Previews []struct {
				Preview *struct {
					Subscribers     *int64
					SubscribersText *string
				}
			}
		}
		if err := json.Unmarshal(r.Data, &out); err != nil || len(r.Errors) > 0 {
			t.Fatalf("%s: %v %+v", name, err, r.Errors)
		}
		c := out.Channel.Counters
		if len(out.Previews) != 1 || out.Previews[0].Preview == nil || out.Previews[0].Preview.Subscribers == nil || c.Subscribers == nil {
			continue // not every recorded page shows both
		}
		rounded, exact := *c.Subscribers, *out.Previews[0].Preview.Subscribers
		if exact < 1000 && rounded != exact {
			t.Errorf("%s: %d subscribers on the page, %d on the card; below 1000 both are exact", name, rounded, exact)
		}
		// Three significant digits: off by less than one unit of the third.
		unit := int64(1)
		for v := exact; v >= 1000; v /= 10 {
			unit *= 10
		}
		if d := rounded - exact; d <= -unit || d >= unit {
			t.Errorf("%s: page %d (%q), card %d: more than the abbreviation's rounding apart", name, rounded, *c.SubscribersText, exact)
		}
		if rounded != exact {
			differ++
		}
	}
	if differ == 0 {
		t.Error("no recorded channel shows a rounded count beside an exact one")
	}
}
