package ids

import (
	"encoding/base64"
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, r := range []Ref{
		{Type: TypePost, Channel: "tmefeed_news", MessageID: 52},
		{Type: TypePost, Channel: "durov", MessageID: 1<<31 - 1},
		{Type: TypeChannel, Channel: "kanal_novostei"},
	} {
		got, err := Parse(r.String())
		if err != nil || got != r {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
	if Post("TmeFeed_News", 4) != Post("tmefeed_news", 4) || Channel("Durov") != Channel("durov") {
		t.Error("ids depend on the username's case")
	}
	// Objects that share a natural key with another type or channel do not
	// share an id.
	distinct := []string{Post("alpha", 4), Post("bravo", 4), Post("alpha", 40), Channel("alpha"), Channel("bravo")}
	seen := map[string]bool{}
	for _, id := range distinct {
		if seen[id] {
			t.Errorf("id %q given to two objects", id)
		}
		seen[id] = true
	}
}

func TestParseRefusesForeignForms(t *testing.T) {
	b := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, id := range []string{
		"",
		"52",
		"not base64!",
		b("Post:tmefeed_news"),
		b("Post:tmefeed_news/0"),
		b("Post:tmefeed_news/052"),
		b("Post:tmefeed_news/+52"),
		b("Post:tmefeed_news/2147483648"),
		b("Post:TmeFeed_News/52"),
		b("Post:/52"),
		b("Channel:no"),
		b("Channel:tmefeed_news/52"),
		b("Media:tmefeed_news/52"),
		b("tmefeed_news"),
		base64.StdEncoding.EncodeToString([]byte("Channel:durov")), // padded
	} {
		if r, err := Parse(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrInvalid", id, r, err)
		}
	}
}

// Parts are keyed by owner and place, never two places one id, and keep
// the form earlier releases gave texts and feed items, so caches persisted
// by clients stay valid.
func TestPartIDs(t *testing.T) {
	b := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	p4, p41 := Post("alpha", 4), Post("alpha", 41)
	if Text(p4) != b("Text:"+p4) || FeedItem(35, p4) != b("FeedItem:z/"+p4) {
		t.Errorf("Text %s, FeedItem %s: the form changed", Text(p4), FeedItem(35, p4))
	}
	seen := map[string]bool{}
	for _, id := range []string{
		Part("Media", p4, Index(1)), Part("Media", p4, Index(11)), Part("Media", p41, Index(1)), Part("Media", p4, ""),
		Part("Reaction", p4, Index(1)), Part("Poll", p4, ""), Part("PollOption", Part("Poll", p4, ""), Index(1)),
		Part("FailedChannel", Feed(1), "alpha"), Part("FailedChannel", Feed(2), "alpha"), Part("FailedChannel", Feed(1), "Alpha"),
		p4, Text(p4),
	} {
		if seen[id] {
			t.Errorf("id %s given to two places", id)
		}
		seen[id] = true
		if _, err := Parse(id); err == nil && id != p4 {
			t.Errorf("Parse took the part id %s", id)
		}
	}
}
