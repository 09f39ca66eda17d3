package pages_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

func ids(list []*parser.Post) []int {
	out := make([]int, len(list))
	for i, p := range list {
		out[i] = p.ID
	}
	return out
}

func intp(n int) *int { return &n }

// walkOlder pages a channel from its newest post with After windows of
// size n and returns every id seen, checking the paging flags on the way.
func walkOlder(t *testing.T, svc *pages.Service, channel string, n int) []int {
	t.Helper()
	ctx := context.Background()
	var all []int
	w := pages.Window{First: n}
	for i := 0; ; i++ {
		p, err := svc.Posts(ctx, channel, w)
		if err != nil {
			t.Fatal(err)
		}
		if p.HasNewer != (i > 0) {
			t.Errorf("window %d of %d: HasNewer = %v", i, n, p.HasNewer)
		}
		if len(p.List) == 0 {
			t.Fatalf("window %d of %d: no posts, HasOlder %v", i, n, p.HasOlder)
		}
		all = append(all, ids(p.List)...)
		if !p.HasOlder {
			return all
		}
		if i > 100 {
			t.Fatal("no end")
		}
		w = pages.Window{First: n, After: intp(p.List[len(p.List)-1].ID)}
	}
}

// Walking older with After crosses t.me's chunks, gives every post once,
// newest first, whatever the window size; Before gives the posts just
// newer than its post, crossing chunks the other way; Around is centred
// on its post.
func TestPostsWindows(t *testing.T) {
	e := newFaultEnv(t, faultOptions{})
	const channel = "tmefeed_news"
	small := walkOlder(t, e.svc, channel, 7)
	if len(small) <= pages.PostsPerPage {
		t.Fatalf("walked %d posts; the walk must cross into older chunks", len(small))
	}
	for i := 1; i < len(small); i++ {
		if small[i] >= small[i-1] {
			t.Fatalf("ids not strictly descending: %v", small)
		}
	}
	if large := walkOlder(t, e.svc, channel, 50); !slices.Equal(large, small) {
		t.Errorf("windows of 50 walk %v,\nwindows of 7 walk %v", large, small)
	}

	// Back up from a post, newer and newer. The fixtures record the page
	// around one older post only (t.me answers the page around any id).
	const anchor = 14
	at := slices.Index(small, anchor)
	if at < 1 {
		t.Fatalf("post %d not walked: %v", anchor, small)
	}
	ctx := context.Background()
	p, err := e.svc.Posts(ctx, channel, pages.Window{First: at + 5, Before: intp(anchor)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(p.List); !slices.Equal(got, small[:at]) || !p.HasOlder || p.HasNewer {
		t.Errorf("before %d: %v older %v newer %v,\nwant %v older true newer false", anchor, got, p.HasOlder, p.HasNewer, small[:at])
	}
	p, err = e.svc.Posts(ctx, channel, pages.Window{First: 4, Before: intp(anchor)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(p.List); !slices.Equal(got, small[at-4:at]) || !p.HasOlder || !p.HasNewer {
		t.Errorf("4 before %d: %v older %v newer %v, want %v", anchor, got, p.HasOlder, p.HasNewer, small[at-4:at])
	}

	// Around: the post, with the neighbours the walk found beside it.
	p, err = e.svc.Posts(ctx, channel, pages.Window{First: 3, Around: intp(anchor)})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(p.List); !slices.Equal(got, small[at-1:at+2]) || !p.HasOlder || !p.HasNewer {
		t.Errorf("around %d: %v older %v newer %v, want %v", anchor, got, p.HasOlder, p.HasNewer, small[at-1:at+2])
	}
}

// The newest window reads the page the caller already holds.
func TestPostsNewestFromCaller(t *testing.T) {
	e := newFaultEnv(t, faultOptions{})
	held := &parser.Page{Content: parser.Content{Posts: []parser.Post{{ID: 3}, {ID: 4}, {ID: 5}}}}
	p, err := e.svc.Posts(context.Background(), "tmefeed_news", pages.Window{First: 2, Newest: held})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(p.List); !slices.Equal(got, []int{5, 4}) || !p.HasOlder || p.HasNewer {
		t.Errorf("got %v older %v newer %v, want [5 4] from the held page", got, p.HasOlder, p.HasNewer)
	}
	if n := e.origin.Total(); n != 0 {
		t.Errorf("%d origin requests, want none", n)
	}
}

// Bad windows fail before anything is read.
func TestPostsBadWindows(t *testing.T) {
	e := newFaultEnv(t, faultOptions{})
	for _, tt := range []struct {
		name string
		w    pages.Window
		want error
	}{
		{"negative first", pages.Window{First: -1}, pages.ErrBadRequest},
		{"before and after", pages.Window{First: 1, Before: intp(50), After: intp(40)}, pages.ErrBadRequest},
		{"after and around", pages.Window{First: 1, After: intp(50), Around: intp(40)}, pages.ErrBadRequest},
		{"around 0", pages.Window{First: 1, Around: intp(0)}, tme.ErrInvalidPosition},
		{"before past int32", pages.Window{First: 1, Before: intp(tme.MaxPosition + 1)}, tme.ErrInvalidPosition},
		{"after negative", pages.Window{First: 1, After: intp(-3)}, tme.ErrInvalidPosition},
	} {
		if _, err := e.svc.Posts(context.Background(), "tmefeed_news", tt.w); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if n := e.origin.Total(); n != 0 {
		t.Errorf("%d origin requests, want none", n)
	}
}
