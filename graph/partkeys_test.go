package graph_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/graph/ids"
	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/parser"
)

// keyless are the object types urql's graphcache keys by their place
// (Relay connections, edges and PageInfo) instead of warning that they
// have no key; Apollo's relayStylePagination handles the same.
var keyless = regexp.MustCompile(`^__|PageInfo|(Connection|Edge)$`)

// TestEveryObjectHasACacheKey: a normalized cache with no type policies
// (graphcache warns "Invalid key" for any object without id, Apollo stores
// such objects inside their parents) finds an id: ID! on every object type
// but the roots, connections, edges and PageInfo.
func TestEveryObjectHasACacheKey(t *testing.T) {
	e := newEnv(t, envOptions{})
	var d struct {
		Schema struct {
			Types []struct {
				Kind, Name string
				Fields     []struct {
					Name string
					Type struct {
						Kind   string
						OfType *struct{ Name string }
					}
				}
			}
		} `json:"__schema"`
	}
	e.query(t, `{ __schema { types { kind name fields { name type { kind ofType { name } } } } } }`, nil).decode(t, &d)
	checked := 0
	for _, ty := range d.Schema.Types {
		if ty.Kind != "OBJECT" || ty.Name == "Query" || ty.Name == "Subscription" || keyless.MatchString(ty.Name) {
			continue
		}
		checked++
		ok := false
		for _, f := range ty.Fields {
			if f.Name == "id" && f.Type.Kind == "NON_NULL" && f.Type.OfType != nil && f.Type.OfType.Name == "ID" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s has no id: ID!", ty.Name)
		}
	}
	if checked < 20 {
		t.Errorf("only %d object types checked", checked)
	}
}

// fullPost selects every field of a post, with id and __typename on every
// object, as a client whose cache normalizes everything does.
const fullPost = `fragment P on Post { __typename id messageId url date dateEstimated edited views viewsText author isService
  inChannel { ...C }
  text { __typename id plain html htmlAsServed entities { __typename id kind offset length url language emojiId } }
  media { __typename id kind url thumb waves duration durationText title extra available }
  poll { __typename id question type votes votesText options { __typename id text percent } }
  location { __typename id latitude longitude address url map }
  inlineButtons { __typename id text url }
  reply { __typename id toMessage name nameHTML text textHTML cover }
  linkPreview { __typename id url title siteName description descriptionHTML thumb }
  reactions { __typename id kind emoji emojiId emojiImage count countText }
  forwardedFrom { __typename id name nameHTML url }
  service { __typename id kind text }
}
fragment C on Channel { __typename id username title counters { __typename id subscribers subscribersText photos videos files links } }`

const fullFeedQuery = `query($channels: [String!]!, $first: Int, $after: String, $order: FeedOrder) {
  feed(channels: $channels, first: $first, after: $after, order: $order) {
    __typename totalCount
    pageInfo { __typename hasNextPage endCursor }
    failedChannels { __typename id username code reason }
    edges { __typename cursor node { __typename id score channel { ...C } post { ...P } } }
  }
}` + fullPost

// TestPartKeys: the ids of the objects that belong to a post, a channel,
// a feed or a requested name are derived from their owner and their place
// in it: the same in every answer (pages read forwards, the same feed
// again, another feed holding the same posts), and never one id for two
// places, across channels that share message numbers. Failures are keyed
// per feed, as feed items are.
func TestPartKeys(t *testing.T) {
	e := newEnv(t, envOptions{synthetic: 1, syntheticSource: "tmefeed_news"})
	// place: __typename:id → where the object sits (its owner's key, the
	// field and the index); a cache merging two places would show one
	// post's media, reactions or poll under another.
	place := map[string]string{}
	seen := map[string]int{} // objects per type
	walk := func(t *testing.T, data json.RawMessage, root string) {
		t.Helper()
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var visit func(v any, owner, where string)
		visit = func(v any, owner, where string) {
			switch v := v.(type) {
			case []any:
				for i, c := range v {
					visit(c, owner, fmt.Sprintf("%s[%d]", where, i))
				}
			case map[string]any:
				typ, _ := v["__typename"].(string)
				key := owner
				if typ != "" && !keyless.MatchString(typ) {
					id, _ := v["id"].(string)
					if id == "" {
						t.Fatalf("%s: a %s without id", where, typ)
					}
					seen[typ]++
					key = typ + ":" + id
					at := where
					switch typ {
					case "Post", "Channel", "FeedItem", "ChannelPreview": // keys of their own, whichever way they are reached
						at = key
					}
					if prev, ok := place[key]; ok && prev != at {
						t.Errorf("%s names both %s and %s", key, prev, at)
					}
					place[key] = at
				}
				for f, c := range v {
					visit(c, key, key+"."+f)
				}
			}
		}
		visit(doc, root, root)
	}
	feedPages := func(t *testing.T, vars map[string]any) {
		t.Helper()
		root := fmt.Sprintf("feed(%v %v)", vars["channels"], vars["order"])
		for n := 0; ; n++ {
			r := e.query(t, fullFeedQuery, vars)
			if len(r.Errors) > 0 {
				t.Fatalf("%v: %+v", vars, r.Errors)
			}
			walk(t, r.Data, root)
			var d feedData
			r.decode(t, &d)
			if !d.Feed.PageInfo.HasNextPage {
				return
			}
			if n > 100 {
				t.Fatal("paging does not end")
			}
			vars["after"] = *d.Feed.PageInfo.EndCursor
		}
	}
	all := []string{"tmefeed_news", "loadchan001", "emoji_party", "hadashot_today", "just_launched", "kanal_novostei",
		"late_edition", "nameless_notes", "retro_channel", "video_desk", "nobody_here_404"}
	feedPages(t, map[string]any{"channels": all, "first": 25, "order": "NEWEST"})
	before := len(place)
	// The same posts in other feeds and pages: no new places for the same
	// ids, no id for two places.
	feedPages(t, map[string]any{"channels": all, "first": 40, "order": "NEWEST"})
	feedPages(t, map[string]any{"channels": []string{"tmefeed_news", "loadchan001", "emoji_party", "nobody_here_404"}, "first": 9, "order": "RANKED"})
	// Feed items and failures are per feed: the new ones are those.
	newKeys := map[string]int{}
	for k := range place {
		newKeys[strings.SplitN(k, ":", 2)[0]]++
	}
	t.Logf("objects per type %v; keys per type %v (%d after the first feed)", seen, newKeys, before)

	// Every kind of part appears, so none escapes the checks above.
	for _, typ := range []string{"Counters", "Text", "TextEntity", "Media", "Poll", "PollOption", "Location", "InlineButton",
		"Reply", "LinkPreview", "Reaction", "Forward", "ServiceMessage", "FailedChannel"} {
		if seen[typ] == 0 {
			t.Errorf("the fixtures show no %s", typ)
		}
	}
	// One feed's failure is not another's: two feeds failing the same
	// channel give two keys.
	failed := 0
	for k := range place {
		if strings.HasPrefix(k, "FailedChannel:") {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("%d FailedChannel keys for nobody_here_404 in two feeds, want 2", failed)
	}

	// previews: the result per requested name, its card per channel, its
	// error per result.
	const pq = `query($names: [String!]!) { previews(usernames: $names) { __typename id username
	  preview { __typename id username title subscribers }
	  error { __typename id code message } } }`
	names := []string{"tmefeed_news", "TmeFeed_News", "nobody_here_404", "no"}
	r := e.query(t, pq, map[string]any{"names": names})
	walk(t, r.Data, "previews")
	var p struct {
		Previews []struct {
			ID      string
			Preview *struct{ ID string }
			Error   *struct{ ID string }
		}
	}
	r.decode(t, &p)
	if len(p.Previews) != 4 || p.Previews[0].Preview == nil || p.Previews[1].Preview == nil || p.Previews[2].Error == nil || p.Previews[3].Error == nil {
		t.Fatalf("previews: %s", r.Data)
	}
	if p.Previews[0].ID == p.Previews[1].ID || p.Previews[0].Preview.ID != p.Previews[1].Preview.ID || p.Previews[2].Error.ID == p.Previews[3].Error.ID {
		t.Errorf("previews' keys: %s", r.Data)
	}
	again := e.query(t, pq, map[string]any{"names": names})
	if string(again.Data) != string(r.Data) {
		t.Errorf("previews asked again:\n%s\nbefore\n%s", again.Data, r.Data)
	}

	// None of these is a Node id.
	for k := range place {
		typ, id, _ := strings.Cut(k, ":")
		if _, err := ids.Parse(id); (err == nil) != (typ == "Post" || typ == "Channel") {
			t.Errorf("ids.Parse(%s's id %s): %v", typ, id, err)
		}
	}
}

// A subscription's update is keyed by its post and its kind: a second
// edit of a post is the same object anew, never another post's.
func TestFeedUpdateKeys(t *testing.T) {
	ch := &parser.Channel{Username: "alpha"}
	post := func(channel string, id int) *parser.Post { return &parser.Post{Channel: channel, ID: id} }
	a := model.UpdateOf(model.FeedUpdateKindEdited, ch, post("alpha", 4)).ID()
	if a != model.UpdateOf(model.FeedUpdateKindEdited, ch, post("alpha", 4)).ID() {
		t.Error("the same update has two ids")
	}
	distinct := map[string]bool{a: true}
	for _, id := range []string{
		model.UpdateOf(model.FeedUpdateKindNew, ch, post("alpha", 4)).ID(),
		model.UpdateOf(model.FeedUpdateKindEdited, ch, post("bravo", 4)).ID(),
		model.UpdateOf(model.FeedUpdateKindEdited, ch, post("alpha", 40)).ID(),
		ids.Post("alpha", 4),
	} {
		if distinct[id] {
			t.Errorf("id %s given twice", id)
		}
		distinct[id] = true
	}
}
