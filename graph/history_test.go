package graph_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/fixtures"
)

// Channel.posts(first: 200) walks ten pages and returns every post once,
// newest first, with the cursor to go on from; 201 is refused.
func TestChannelPosts200(t *testing.T) {
	const total = 450
	e := newEnv(t, envOptions{deepHistory: total})
	q := `query($first: Int) { channel(username: "` + fixtures.DeepChannel + `") { posts(first: $first) { edges { cursor node { messageId } } pageInfo { hasNextPage endCursor } } } }`
	var out struct {
		Channel struct {
			Posts struct {
				Edges []struct {
					Cursor string
					Node   struct{ MessageID int }
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
	}
	e.query(t, q, map[string]any{"first": 200}).decode(t, &out)
	var got []int
	for _, ed := range out.Channel.Posts.Edges {
		got = append(got, ed.Node.MessageID)
	}
	want := make([]int, 200)
	for i := range want {
		want[i] = total - i
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d posts %v…, want %d..%d", len(got), got[:min(5, len(got))], total, total-199)
	}
	if pi := out.Channel.Posts.PageInfo; !pi.HasNextPage || pi.EndCursor != strconv.Itoa(total-199) {
		t.Errorf("pageInfo %+v", pi)
	}
	if n := e.origin.Total(); n != 10 {
		t.Errorf("origin requests %d, want 10 pages", n)
	}
	if codes := e.query(t, q, map[string]any{"first": 201}).codes(); !slices.Equal(codes, []string{"BAD_USER_INPUT"}) {
		t.Errorf("first 201: codes %v, want BAD_USER_INPUT", codes)
	}
}

// A feed with since may walk HISTORY_MAX_PAGES pages of each channel, and
// is priced so: a feed the complexity limit admits without since is
// refused with it once its channels' walks would cost too much.
func TestFeedSinceIsPriced(t *testing.T) {
	e := newEnv(t, envOptions{synthetic: 30})
	names := make([]string, 30)
	for i := range names {
		names[i] = fmt.Sprintf(`"loadchan%03d"`, i+1)
	}
	feedQ := func(filter string) string {
		return `{ feed(channels: [` + strings.Join(names, ",") + `], first: 5` + filter + `) { totalCount } }`
	}
	if r := e.query(t, feedQ(""), nil); len(r.Errors) > 0 {
		t.Fatalf("30 channels without since: %v", r.Errors)
	}
	r := e.query(t, feedQ(`, filter: {since: "2020-01-01T00:00:00Z"}`), nil)
	if codes := r.codes(); !slices.Equal(codes, []string{"COMPLEXITY_LIMIT_EXCEEDED"}) {
		t.Fatalf("30 channels with since: codes %v, want COMPLEXITY_LIMIT_EXCEEDED", codes)
	}
	// Within the limit, since reads older pages and answers.
	r = e.query(t, `{ feed(channels: [`+strings.Join(names[:5], ",")+`], first: 5, filter: {since: "2020-01-01T00:00:00Z"}) { totalCount } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatalf("5 channels with since: %v", r.Errors)
	}
}
