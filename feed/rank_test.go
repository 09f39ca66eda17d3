package feed

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/parser"
)

// TestRankWorkedExample reproduces the worked example of docs/ranking.md.
func TestRankWorkedExample(t *testing.T) {
	now := time.Date(2024, 5, 2, 18, 0, 0, 0, time.UTC)
	p := &parser.Post{
		ID: 1,
		Content: parser.PostContent{
			Text: &parser.Text{String: strings.Repeat("a", 740)},
			Media: []parser.Media{
				{Type: parser.MediaImage}, {Type: parser.MediaImage}, {Type: parser.MediaVideo},
			},
			Reacts: []parser.React{
				{Type: parser.ReactEmoji, Emoji: "👍", CountValue: 150},
				{Type: parser.ReactEmoji, Emoji: "❤", CountValue: 40},
				{Type: parser.ReactEmoji, Emoji: "👎", CountValue: 10},
			},
		},
		Footer: parser.Footer{
			Views: "12K", ViewsCount: 12000, Edited: true,
			Date: parser.Date{Unix: now.Add(-30 * time.Hour).Unix()},
		},
	}
	s := Rank(p, 10000, now)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"E", s.Engagement, 0.406},
		{"C", s.Content, 1.248},
		{"F", s.Freshness, 0.654985},
		{"edited", s.Edited, 1},
		{"score", s.Total, 0.326153},
	} {
		if math.Abs(c.got-c.want) > 5e-7 {
			t.Errorf("%s = %.7f, want %.6f", c.name, c.got, c.want)
		}
	}
}

func TestFreshnessCurve(t *testing.T) {
	for _, c := range []struct {
		hours float64
		want  float64
	}{
		{-5, 1}, {0, 1}, {12, 0.9}, {24, 0.8}, {48, 0.359463}, {168, 0.006584},
		{169, 0.098817}, {336, 0.013534}, {1000, 0.001},
	} {
		got := freshness(time.Duration(c.hours * float64(time.Hour)))
		if math.Abs(got-c.want) > 5e-7 {
			t.Errorf("freshness(%vh) = %.6f, want %.6f", c.hours, got, c.want)
		}
	}
}

func TestRankCaps(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	media := make([]parser.Media, 30)
	for i := range media {
		media[i].Type = parser.MediaVideo
	}
	p := &parser.Post{
		Content: parser.PostContent{
			Text:   &parser.Text{String: strings.Repeat("é", 5000)},
			Media:  media,
			Poll:   &parser.Poll{Question: "?"},
			Reacts: []parser.React{{Type: parser.ReactCustomEmoji, CountValue: 1 << 40}},
		},
		Footer: parser.Footer{ViewsCount: 1 << 50, Date: parser.Date{Unix: now.Unix()}},
	}
	s := Rank(p, 10, now)
	if s.Engagement != (10+1+0)/3.0 {
		t.Errorf("engagement = %v, want capped at 11/3", s.Engagement)
	}
	if s.Content != 3 {
		t.Errorf("content = %v, want capped at 3", s.Content)
	}
	if hidden := Rank(p, 0, now); hidden.Engagement != 0 {
		t.Errorf("engagement without a subscriber count = %v, want 0", hidden.Engagement)
	}
	neg := &parser.Post{
		Content: parser.PostContent{Reacts: []parser.React{{Type: parser.ReactEmoji, Emoji: "💩", CountValue: 100}}},
		Footer:  parser.Footer{Date: parser.Date{Unix: now.Unix()}},
	}
	if s := Rank(neg, 100, now); s.Engagement >= 0 {
		t.Errorf("engagement of a post with only negative reactions = %v, want < 0", s.Engagement)
	}
	// A small channel's post buried in negative reactions: the sum is far
	// below zero, the score stays in its 0..10 range.
	buried := &parser.Post{
		Content: parser.PostContent{Reacts: []parser.React{{Type: parser.ReactEmoji, Emoji: "👎", CountValue: 1 << 40}}},
		Footer:  parser.Footer{Date: parser.Date{Unix: now.Unix()}},
	}
	if s := Rank(buried, 10, now); s.Engagement >= 0 || s.Total != 0 {
		t.Errorf("buried post: engagement %v, total %v; want engagement < 0 and total 0", s.Engagement, s.Total)
	}
}
