package graph_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// keyedFeed is a feed page as a normalized cache keys it.
type keyedFeed struct {
	Feed struct {
		Edges []struct {
			Cursor string
			Node   struct {
				ID    string
				Score float64
				Post  struct {
					ID        string
					MessageID int
					Channel   string
					InChannel struct{ ID, Username string }
					Text      *struct{ ID, Plain string }
					Service   *struct{ Type, Kind string }
				}
				Channel struct{ ID, Username string }
			}
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       string
		}
		FailedChannels []struct{ Username, Code string }
	}
}

const keyedFeedQuery = `query($channels: [String!]!, $first: Int, $after: String, $last: Int, $before: String, $order: FeedOrder) {
  feed(channels: $channels, first: $first, after: $after, last: $last, before: $before, order: $order) {
    edges { cursor node { id score post { id messageId channel inChannel { id username } text { id plain } service { type kind } } channel { id username } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    failedChannels { username code }
  }
}`

// TestNormalizedCacheKeys: a feed item's id is unique per feed and post,
// the same however the feed is paged, and never the id of the same post
// in another feed, whose score may differ; a text's id follows its post;
// a post's channel is the same Channel object as its item's.
func TestNormalizedCacheKeys(t *testing.T) {
	e := newEnv(t, envOptions{})
	page := func(vars map[string]any) keyedFeed {
		t.Helper()
		var d keyedFeed
		e.query(t, keyedFeedQuery, vars).decode(t, &d)
		return d
	}
	one := []string{"tmefeed_news"}
	all := page(map[string]any{"channels": one, "first": 2000})
	n := len(all.Feed.Edges)
	if n < 10 {
		t.Fatalf("the fixture feed has %d posts", n)
	}
	ids := map[string]string{} // item id → post id
	texts := map[string]string{}
	for _, ed := range all.Feed.Edges {
		it := ed.Node
		if it.ID == "" || ids[it.ID] != "" {
			t.Fatalf("item id %q empty or repeated", it.ID)
		}
		ids[it.ID] = it.Post.ID
		if it.Post.InChannel != it.Channel || it.Channel.Username != it.Post.Channel {
			t.Errorf("post %s: inChannel %+v, item channel %+v, channel %q", it.Post.ID, it.Post.InChannel, it.Channel, it.Post.Channel)
		}
		if tx := it.Post.Text; tx != nil {
			if tx.ID == "" || tx.ID == it.Post.ID || tx.ID == it.ID || texts[tx.ID] != "" {
				t.Fatalf("post %s: text id %q empty, repeated or another object's", it.Post.ID, tx.ID)
			}
			texts[tx.ID] = it.Post.ID
		}
	}

	// Forwards in pages of 7, then backwards from the end in pages of 5:
	// every item comes back with the id it had.
	var forward, backward []string
	for after := ""; ; {
		vars := map[string]any{"channels": one, "first": 7}
		if after != "" {
			vars["after"] = after
		}
		p := page(vars)
		for _, ed := range p.Feed.Edges {
			forward = append(forward, ed.Node.ID)
		}
		if !p.Feed.PageInfo.HasNextPage {
			break
		}
		after = p.Feed.PageInfo.EndCursor
	}
	for before := ""; ; {
		vars := map[string]any{"channels": one, "last": 5}
		if before != "" {
			vars["before"] = before
		}
		p := page(vars)
		var ids []string
		for _, ed := range p.Feed.Edges {
			ids = append(ids, ed.Node.ID)
		}
		backward = append(ids, backward...)
		if !p.Feed.PageInfo.HasPreviousPage {
			break
		}
		before = p.Feed.PageInfo.StartCursor
	}
	var whole []string
	for _, ed := range all.Feed.Edges {
		whole = append(whole, ed.Node.ID)
	}
	if !slices.Equal(forward, whole) || !slices.Equal(backward, whole) {
		t.Errorf("paging changed the ids:\nwhole    %v\nforward  %v\nbackward %v", whole, forward, backward)
	}

	// Another feed holding the same posts (another channel set, another
	// order) keys them apart; the posts and texts keep theirs.
	for _, vars := range []map[string]any{
		{"channels": []string{"tmefeed_news", "retro_channel"}, "first": 2000},
		{"channels": one, "first": 2000, "order": "NEWEST"},
	} {
		other := page(vars)
		shared := 0
		for _, ed := range other.Feed.Edges {
			it := ed.Node
			if _, ok := ids[it.ID]; ok {
				t.Errorf("%v: item id %s is also an item of the feed of %v", vars, it.ID, one)
			}
			if it.Post.Channel != "tmefeed_news" {
				continue
			}
			shared++
			if tx := it.Post.Text; tx != nil && texts[tx.ID] != it.Post.ID {
				t.Errorf("%v: post %s has text id %s, elsewhere %s's", vars, it.Post.ID, tx.ID, texts[tx.ID])
			}
		}
		if shared != n {
			t.Errorf("%v: %d posts of tmefeed_news, want %d", vars, shared, n)
		}
	}
	// The same feed asked again has the same ids.
	again := page(map[string]any{"channels": one, "first": 2000})
	for i, ed := range again.Feed.Edges {
		if ed.Node.ID != whole[i] {
			t.Fatalf("item %d: id %s, before %s", i, ed.Node.ID, whole[i])
		}
	}

	// Cache keys are not Node ids.
	r := e.query(t, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": whole[0]})
	if !slices.Equal(r.codes(), []string{"BAD_USER_INPUT"}) {
		t.Errorf("node(FeedItem.id): %+v", r.Errors)
	}
}

// TestSchemaTypesForClients: what typed clients read from the schema:
// DateTime's specification, closed sets as enums, the deprecated fields
// with their replacements.
func TestSchemaTypesForClients(t *testing.T) {
	e := newEnv(t, envOptions{})
	var d struct {
		DateTime struct{ SpecifiedByURL string }
		Failed   struct{ Fields []field }
		Preview  struct{ Fields []field }
		Service  struct{ Fields []field }
		Post     struct{ Fields []field }
		Codes    struct{ EnumValues []struct{ Name string } }
	}
	e.query(t, `{
  DateTime: __type(name: "DateTime") { specifiedByURL }
  Failed: __type(name: "FailedChannel") { fields { name isDeprecated deprecationReason type { kind name ofType { kind name } } } }
  Preview: __type(name: "PreviewError") { fields { name isDeprecated deprecationReason type { kind name ofType { kind name } } } }
  Service: __type(name: "ServiceMessage") { fields(includeDeprecated: true) { name isDeprecated deprecationReason type { kind name ofType { kind name } } } }
  Post: __type(name: "Post") { fields(includeDeprecated: true) { name isDeprecated deprecationReason type { kind name ofType { kind name } } } }
  Codes: __type(name: "ChannelErrorCode") { enumValues { name } }
}`, nil).decode(t, &d)
	if d.DateTime.SpecifiedByURL != "https://www.rfc-editor.org/rfc/rfc3339" {
		t.Errorf("DateTime specifiedByURL %q", d.DateTime.SpecifiedByURL)
	}
	want := []struct {
		fields     []field
		name, typ  string // typ: the named type under NON_NULL
		deprecated bool
	}{
		{d.Failed.Fields, "code", "ENUM ChannelErrorCode", false},
		{d.Preview.Fields, "code", "ENUM ChannelErrorCode", false},
		{d.Service.Fields, "kind", "ENUM ServiceMessageKind", false},
		{d.Service.Fields, "type", "SCALAR String", true},
		{d.Post.Fields, "inChannel", "OBJECT Channel", false},
		{d.Post.Fields, "channel", "SCALAR String", true},
	}
	for _, w := range want {
		i := slices.IndexFunc(w.fields, func(f field) bool { return f.Name == w.name })
		if i < 0 {
			t.Errorf("no field %s", w.name)
			continue
		}
		f := w.fields[i]
		if got := f.Type.OfType.Kind + " " + f.Type.OfType.Name; f.Type.Kind != "NON_NULL" || got != w.typ {
			t.Errorf("%s: %s %s, want %s!", w.name, f.Type.Kind, got, w.typ)
		}
		if f.IsDeprecated != w.deprecated || (w.deprecated && !strings.Contains(f.DeprecationReason, "Use `")) {
			t.Errorf("%s: deprecated %v (%q), want %v with what to use", w.name, f.IsDeprecated, f.DeprecationReason, w.deprecated)
		}
	}
	var codes []string
	for _, v := range d.Codes.EnumValues {
		codes = append(codes, v.Name)
	}
	if !slices.Equal(codes, []string{"NOT_FOUND", "BAD_USER_INPUT", "UPSTREAM_UNAVAILABLE", "RATE_LIMITED", "INTERNAL_SERVER_ERROR"}) {
		t.Errorf("ChannelErrorCode %v", codes)
	}

	// The enums carry the values the strings did.
	var f keyedFeed
	e.query(t, keyedFeedQuery, map[string]any{"channels": append(slices.Clone(recorded), "nobody_at_all_here", "a!"), "first": 2000}).decode(t, &f)
	failed := map[string]string{}
	for _, fc := range f.Feed.FailedChannels {
		failed[fc.Username] = fc.Code
	}
	if failed["nobody_at_all_here"] != "NOT_FOUND" || failed["a!"] != "BAD_USER_INPUT" {
		t.Errorf("failedChannels %v", failed)
	}
	services := 0
	for _, ed := range f.Feed.Edges {
		if s := ed.Node.Post.Service; s != nil {
			services++
			if s.Kind != strings.ToUpper(s.Type) && (s.Kind != "OTHER" || s.Type == "") {
				t.Errorf("service %s: kind %s", s.Type, s.Kind)
			}
		}
	}
	if services == 0 {
		t.Error("the fixtures have no service message")
	}
	var p struct {
		Previews []struct {
			Username string
			Error    *struct{ Code string }
		}
	}
	e.query(t, `{ previews(usernames: ["tmefeed_news", "nobody_at_all_here"]) { username error { code } } }`, nil).decode(t, &p)
	if len(p.Previews) != 2 || p.Previews[0].Error != nil || p.Previews[1].Error == nil || p.Previews[1].Error.Code != "NOT_FOUND" {
		t.Errorf("previews %s", fmt.Sprint(p.Previews))
	}
}

type field struct {
	Name              string
	IsDeprecated      bool
	DeprecationReason string
	Type              struct {
		Kind   string
		Name   string
		OfType struct{ Kind, Name string }
	}
}
