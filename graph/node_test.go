package graph_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/graph/ids"
)

// A normalized client cache (Apollo, urql's graphcache, Relay) stores every
// object that has an id under __typename + id. Paging a feed over channels
// whose message numbers fully overlap (tmefeed_news and two copies of it),
// no two distinct objects may share that key, or the cache shows one
// channel's post under another's header.
func TestGlobalIDsKeepNormalizedCachesApart(t *testing.T) {
	e := newEnv(t, envOptions{synthetic: 2, syntheticSource: "tmefeed_news"})
	channels := []string{"tmefeed_news", "loadchan001", "loadchan002"}
	const q = `query($channels: [String!]!, $after: String) {
		feed(channels: $channels, first: 7, after: $after, order: NEWEST) {
			__typename totalCount
			pageInfo { __typename hasNextPage endCursor }
			edges { __typename cursor node { __typename score
				channel { __typename id username title counters { __typename subscribers } }
				post { __typename id messageId channel date
					text { __typename plain entities { __typename kind offset } }
					media { __typename kind url } poll { __typename question options { __typename text } }
					location { __typename address } inlineButtons { __typename text url }
					reply { __typename toMessage } linkPreview { __typename url title }
					reactions { __typename kind emoji count } forwardedFrom { __typename name url }
					service { __typename type }
				}
			} }
		}
	}`
	store := map[string]string{} // __typename:id → the object's natural identity
	keyed := 0
	var posts []walkedPost
	vars := map[string]any{"channels": channels}
	for page := 0; ; page++ {
		r := e.query(t, q, vars)
		if len(r.Errors) > 0 {
			t.Fatalf("page %d: %+v", page, r.Errors)
		}
		var doc any
		if err := json.Unmarshal(r.Data, &doc); err != nil {
			t.Fatal(err)
		}
		walkObjects(doc, func(obj map[string]any) {
			typ, _ := obj["__typename"].(string)
			if typ == "" {
				t.Fatalf("an object without __typename: %v", obj)
			}
			id, has := obj["id"]
			if !has {
				return
			}
			keyed++
			var identity string
			switch typ {
			case "Post":
				identity = fmt.Sprintf("%v/%v", obj["channel"], obj["messageId"])
				posts = append(posts, walkedPost{id: id.(string), identity: identity, text: textOf(obj)})
			case "Channel":
				identity = fmt.Sprint(obj["username"])
			default:
				t.Errorf("%s carries an id but is not a Node: %v", typ, obj)
				return
			}
			key := typ + ":" + fmt.Sprint(id)
			if prev, ok := store[key]; ok && prev != identity {
				t.Errorf("%s names both %s and %s", key, prev, identity)
			}
			store[key] = identity
		})
		var d feedData
		r.decode(t, &d)
		if !d.Feed.PageInfo.HasNextPage {
			break
		}
		if page > 50 {
			t.Fatal("paging does not end")
		}
		vars["after"] = *d.Feed.PageInfo.EndCursor
	}

	// The fixtures must make the old failure possible: the same message
	// numbers in every channel.
	byNumber := map[string]map[string]bool{}
	for _, p := range posts {
		ch, num, _ := strings.Cut(p.identity, "/")
		if byNumber[num] == nil {
			byNumber[num] = map[string]bool{}
		}
		byNumber[num][ch] = true
	}
	shared := 0
	for _, chs := range byNumber {
		if len(chs) == len(channels) {
			shared++
		}
	}
	if shared < 10 || len(posts) < 3*shared {
		t.Fatalf("only %d message numbers appear in all %d channels (%d posts)", shared, len(channels), len(posts))
	}
	if want := len(posts) + len(channels); len(store) != want {
		t.Errorf("%d distinct keys for %d posts and %d channels", len(store), len(posts), len(channels))
	}
	t.Logf("%d keyed objects, %d distinct; %d message numbers shared by all channels", keyed, len(store), shared)

	// Refetching by id gives back each post, one by one and all at once.
	const nodeQ = `query($id: ID!) { node(id: $id) { __typename id ... on Post { messageId channel text { plain } } } }`
	idList := make([]string, len(posts))
	for i, p := range posts {
		idList[i] = p.id
		var d struct{ Node map[string]any }
		e.query(t, nodeQ, map[string]any{"id": p.id}).decode(t, &d)
		if d.Node == nil || d.Node["__typename"] != "Post" || d.Node["id"] != p.id ||
			fmt.Sprintf("%v/%v", d.Node["channel"], d.Node["messageId"]) != p.identity || textOf(d.Node) != p.text {
			t.Errorf("node(%s) = %v, want %s", p.id, d.Node, p.identity)
		}
	}
	var all struct{ Nodes []map[string]any }
	e.query(t, `query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Post { messageId channel text { plain } } } }`,
		map[string]any{"ids": idList}).decode(t, &all)
	if len(all.Nodes) != len(posts) {
		t.Fatalf("nodes gave %d of %d", len(all.Nodes), len(posts))
	}
	for i, n := range all.Nodes {
		if n == nil || n["id"] != posts[i].id || fmt.Sprintf("%v/%v", n["channel"], n["messageId"]) != posts[i].identity || textOf(n) != posts[i].text {
			t.Errorf("nodes[%d] = %v, want %s", i, n, posts[i].identity)
		}
	}
}

type walkedPost struct{ id, identity, text string }

func textOf(obj map[string]any) string {
	if t, ok := obj["text"].(map[string]any); ok {
		return fmt.Sprint(t["plain"])
	}
	return ""
}

// walkObjects calls f for every JSON object in v.
func walkObjects(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["__typename"]; ok {
			f(v)
		}
		for _, c := range v {
			walkObjects(c, f)
		}
	case []any:
		for _, c := range v {
			walkObjects(c, f)
		}
	}
}

// Every object type that has an id field has an ID! id, a Node's or one
// of the keys only normalized caches use (FeedItem, Text, the parts of
// posts and channels: ids in the same opaque form); so a client
// normalizing by __typename + id never meets a per-channel number.
func TestSchemaIDsAreGlobal(t *testing.T) {
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
				Interfaces    []struct{ Name string }
				PossibleTypes []struct{ Name string }
			}
		} `json:"__schema"`
	}
	e.query(t, `{ __schema { types { kind name fields { name type { kind ofType { name } } } interfaces { name } possibleTypes { name } } } }`, nil).decode(t, &d)
	nodes := map[string]bool{}
	for _, ty := range d.Schema.Types {
		if ty.Name == "Node" {
			for _, p := range ty.PossibleTypes {
				nodes[p.Name] = true
			}
		}
	}
	if !nodes["Post"] || !nodes["Channel"] {
		t.Fatalf("Node is implemented by %v", nodes)
	}
	for _, ty := range d.Schema.Types {
		if ty.Kind != "OBJECT" || strings.HasPrefix(ty.Name, "__") {
			continue
		}
		for _, f := range ty.Fields {
			if f.Name != "id" && f.Name != "_id" {
				continue
			}
			if f.Name != "id" || f.Type.Kind != "NON_NULL" || f.Type.OfType == nil || f.Type.OfType.Name != "ID" {
				t.Errorf("%s.%s is not a Node id", ty.Name, f.Name)
			}
		}
	}
}

// node answers null for an object that does not exist, BAD_USER_INPUT for
// a string that is not an id, and resolves channels too.
func TestNodeResolution(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.origin.SetFault("/s/emoji_party", fixtures.Fault{Status: http.StatusServiceUnavailable})
	const q = `query($id: ID!) { node(id: $id) { __typename id ... on Channel { username title } ... on Post { messageId } } }`

	var ch struct{ Node map[string]any }
	e.query(t, q, map[string]any{"id": ids.Channel("tmefeed_news")}).decode(t, &ch)
	if ch.Node["__typename"] != "Channel" || ch.Node["username"] != "tmefeed_news" || ch.Node["id"] != ids.Channel("tmefeed_news") {
		t.Errorf("channel node = %v", ch.Node)
	}

	for _, gone := range []string{ids.Post("tmefeed_news", 36), ids.Channel("nobody_at_all_here"), ids.Post("nobody_at_all_here", 1)} {
		r := e.query(t, q, map[string]any{"id": gone})
		if len(r.Errors) > 0 || string(r.Data) != `{"node":null}` {
			t.Errorf("node(%s) = %s %+v, want null without an error", gone, r.Data, r.Errors)
		}
	}

	b := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, bad := range []string{"52", "", b("Post:tmefeed_news/052"), b("Media:tmefeed_news/52"), b("Channel:TmeFeed_News")} {
		r := e.query(t, q, map[string]any{"id": bad})
		if !slices.Equal(r.codes(), []string{"BAD_USER_INPUT"}) || !strings.Contains(r.Errors[0].Message, "id: ") || !strings.Contains(r.Errors[0].Message, "pass back a Post.id or Channel.id") {
			t.Errorf("node(%q): %+v", bad, r.Errors)
		}
	}

	// nodes: an entry per id; a failed read nulls its entry alone.
	r := e.query(t, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": []string{
		ids.Post("tmefeed_news", 52), ids.Channel("emoji_party"), ids.Post("tmefeed_news", 36), ids.Channel("tmefeed_news"),
	}})
	var d struct{ Nodes []map[string]any }
	if err := json.Unmarshal(r.Data, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Nodes) != 4 || d.Nodes[0]["id"] != ids.Post("tmefeed_news", 52) || d.Nodes[1] != nil || d.Nodes[2] != nil || d.Nodes[3]["id"] != ids.Channel("tmefeed_news") {
		t.Errorf("nodes = %s", r.Data)
	}
	if !slices.Equal(r.codes(), []string{"UPSTREAM_UNAVAILABLE"}) || fmt.Sprint(r.Errors[0].Path) != "[nodes 1]" {
		t.Errorf("nodes errors = %+v", r.Errors)
	}

	r = e.query(t, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": []string{ids.Channel("tmefeed_news"), "nope"}})
	if !slices.Equal(r.codes(), []string{"BAD_USER_INPUT"}) || !strings.Contains(r.Errors[0].Message, "ids[1]: ") {
		t.Errorf("nodes with a bad id: %+v", r.Errors)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = ids.Post("tmefeed_news", i+1)
	}
	r = e.query(t, `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": many})
	if !slices.Equal(r.codes(), []string{"BAD_USER_INPUT"}) || !strings.Contains(r.Errors[0].Message, "at most 100") {
		t.Errorf("101 ids: %+v", r.Errors)
	}
	if n := e.origin.Total(); n > 10 {
		t.Errorf("the refused queries reached the origin: %d requests in all", n)
	}
}

// node and nodes are priced per id, like the fields that fetch pages.
func TestNodeComplexity(t *testing.T) {
	e := newEnv(t, envOptions{complexityLimit: 5_500})
	five := make([]string, 5)
	six := make([]string, 6)
	for i := range six {
		six[i] = ids.Post("tmefeed_news", 40+i)
		if i < 5 {
			five[i] = six[i]
		}
	}
	q := `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
	if r := e.query(t, q, map[string]any{"ids": five}); len(r.Errors) > 0 {
		t.Errorf("5 ids: %+v", r.Errors)
	}
	if r := e.query(t, q, map[string]any{"ids": six}); !slices.Equal(r.codes(), []string{"COMPLEXITY_LIMIT_EXCEEDED"}) {
		t.Errorf("6 ids: %+v", r.Errors)
	}
	aliased := `{ a: node(id: "` + six[0] + `") { id } b: node(id: "` + six[1] + `") { id } c: node(id: "` + six[2] + `") { id }
		d: node(id: "` + six[3] + `") { id } e: node(id: "` + six[4] + `") { id } f: node(id: "` + six[5] + `") { id } }`
	if r := e.query(t, aliased, nil); !slices.Equal(r.codes(), []string{"COMPLEXITY_LIMIT_EXCEEDED"}) {
		t.Errorf("6 nodes: %+v", r.Errors)
	}
}
