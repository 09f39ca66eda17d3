package graph_test

import (
	"slices"
	"strings"
	"testing"
)

func TestChannelSearch(t *testing.T) {
	e := newEnv(t, envOptions{})
	q := `query($q: String!, $first: Int) { channel(username: "retro_channel") { search(query: $q, first: $first) { edges { node { messageId text { plain } } } pageInfo { hasNextPage } } } }`
	type result struct {
		Channel struct {
			Search struct {
				Edges []struct {
					Node struct {
						MessageID int
						Text      struct{ Plain string }
					}
				}
				PageInfo struct{ HasNextPage bool }
			}
		}
	}
	var got result
	e.query(t, q, map[string]any{"q": "kb"}).decode(t, &got)
	edges := got.Channel.Search.Edges
	if len(edges) == 0 {
		t.Fatal("no posts found")
	}
	for i, ed := range edges {
		if !strings.Contains(strings.ToLower(ed.Node.Text.Plain), "kb") {
			t.Errorf("post %d does not hold the query", ed.Node.MessageID)
		}
		if i > 0 && ed.Node.MessageID >= edges[i-1].Node.MessageID {
			t.Error("not newest first")
		}
	}
	before := e.origin.Total()
	var none result
	e.query(t, q, map[string]any{"q": "nothing matches this"}).decode(t, &none)
	if len(none.Channel.Search.Edges) != 0 || none.Channel.Search.PageInfo.HasNextPage {
		t.Errorf("no-match search: %+v", none.Channel.Search)
	}
	e.query(t, q, map[string]any{"q": "kb"}).decode(t, &got)
	if n := e.origin.Total(); n != before+1 {
		t.Errorf("origin requests %d, want %d: the repeated search is cached", n, before+1)
	}
	for _, vars := range []map[string]any{{"q": ""}, {"q": strings.Repeat("y", 129)}, {"q": "kb", "first": 21}, {"q": "kb", "first": -1}} {
		if codes := e.query(t, q, vars).codes(); !slices.Equal(codes, []string{"BAD_USER_INPUT"}) {
			t.Errorf("%v: codes %v, want BAD_USER_INPUT", vars, codes)
		}
	}
}
