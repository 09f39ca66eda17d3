package pages_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// Search reads Telegram's search page through the cache: the matching
// posts newest first, none for a query nothing matches, and a repeat costs
// no origin fetch.
func TestSearch(t *testing.T) {
	tiers(t, func(t *testing.T, valkey bool) {
		e := newFaultEnv(t, faultOptions{valkey: valkey})
		ctx := pageCtx(t)
		const ch, q = "retro_channel", "Floppy"
		found, err := e.svc.Search(ctx, ch, "  "+q+" ", 20, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(found.List) == 0 {
			t.Fatal("no posts found")
		}
		for i, p := range found.List {
			if p.Content.Text == nil || !strings.Contains(strings.ToLower(p.Content.Text.String), strings.ToLower(q)) {
				t.Errorf("post %d does not hold %q", p.ID, q)
			}
			if i > 0 && p.ID >= found.List[i-1].ID {
				t.Errorf("posts not newest first: %d after %d", p.ID, found.List[i-1].ID)
			}
		}
		if found.Channel == nil || found.Channel.Username != ch {
			t.Errorf("channel header %+v", found.Channel)
		}
		path := "/s/" + ch + "?q=" + url.QueryEscape(q)
		if n := e.origin.Requests(path); n != 1 {
			t.Fatalf("origin requests for %s: %d, want 1", path, n)
		}
		again, err := e.svc.Search(ctx, ch, q, 1, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(again.List) != 1 || again.List[0].ID != found.List[0].ID || again.HasMore != (len(found.List) > 1) {
			t.Errorf("first 1: %d posts, HasMore %v", len(again.List), again.HasMore)
		}
		if n := e.origin.Requests(path); n != 1 {
			t.Errorf("a repeated search fetched again: %d requests", n)
		}

		none, err := e.svc.Search(ctx, ch, "no such words anywhere", 20, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(none.List) != 0 || none.HasMore {
			t.Errorf("no-match search: %d posts, HasMore %v", len(none.List), none.HasMore)
		}
	})
}

func TestSearchRefusesBadQueries(t *testing.T) {
	e := newFaultEnv(t, faultOptions{})
	for _, q := range []string{"", "   ", strings.Repeat("x", tme.MaxSearchQuery+1), "a\x00b", "\xff\xfe"} {
		if _, err := e.svc.Search(pageCtx(t), "retro_channel", q, 20, ""); !errors.Is(err, pages.ErrBadRequest) {
			t.Errorf("query %q: %v, want ErrBadRequest", q, err)
		}
	}
	if n := e.origin.Total(); n != 0 {
		t.Errorf("bad queries reached the origin %d times", n)
	}
}
