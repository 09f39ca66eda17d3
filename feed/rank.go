package feed

import (
	"math"
	"time"
	"unicode/utf8"

	"github.com/tmefeed/tmefeed/parser"
)

// Weights of the RANKED order; docs/ranking.md explains them.
const (
	weightEngagement = 0.4
	weightContent    = 0.2
	weightEdited     = 0.02
	freshnessFloor   = 0.1 // added to freshness so old posts keep a share of their score
	maxScore         = 10
)

// negative reports the emoji counted against a post; every other reaction
// (custom emoji and paid stars included) counts for it.
func negative(emoji string) bool {
	switch emoji {
	case "👎", "💩", "🤮", "🤬", "😡", "🤡":
		return true
	}
	return false
}

// Score is a post's RANKED score with its parts.
type Score struct {
	Engagement float64 // 0..3.5/3: views, reactions and comments per subscriber
	Content    float64 // 0..3: media counts and text length
	Freshness  float64 // 0.001..1: decays with the post's age
	Edited     float64 // 1 when the post was edited
	Total      float64 // min((0.4·E + 0.2·C + 0.02·edited)·(F + 0.1), 10), at least 0
}

// Rank scores a post of a channel with the given subscriber count as of now.
// It follows telegram-me's scoring; docs/ranking.md has the formula and a
// worked example.
func Rank(p *parser.Post, subscribers int64, now time.Time) Score {
	var s Score
	s.Engagement = engagement(p, subscribers)
	s.Content = content(p)
	s.Freshness = freshness(now.Sub(time.Unix(p.Footer.Date.Unix, 0)))
	if p.Footer.Edited {
		s.Edited = 1
	}
	s.Total = math.Min((weightEngagement*s.Engagement+weightContent*s.Content+weightEdited*s.Edited)*(s.Freshness+freshnessFloor), maxScore)
	// Many negative reactions on a small channel can take the sum below
	// zero; the score's range is 0 to 10, so such posts tie at 0 (and are
	// then ordered by date).
	s.Total = math.Max(s.Total, 0)
	return s
}

// engagement is (min(views/subs, 10) + min((pos−neg)/subs, 1) + min(comments/subs, 0.5)) / 3.
// Web preview pages show no comment counts, so that term is zero; a channel
// that hides its subscriber count gets no engagement credit.
func engagement(p *parser.Post, subscribers int64) float64 {
	if subscribers <= 0 {
		return 0
	}
	subs := float64(subscribers)
	var pos, neg int64
	for _, r := range p.Content.Reacts {
		if r.Type == parser.ReactEmoji && negative(r.Emoji) {
			neg += r.CountValue
		} else {
			pos += r.CountValue
		}
	}
	const comments = 0
	views := math.Min(float64(p.Footer.ViewsCount)/subs, 10)
	reactions := math.Min(float64(pos-neg)/subs, 1)
	replies := math.Min(comments/subs, 0.5)
	return (views + reactions + replies) / 3
}

// content is min(Σ min(count, 10)·weight + min(len(text)/500, 2)·0.1, 3),
// with weights photos 0.3, videos 0.5, GIFs 0.2, a poll 0.3; len counts
// Unicode code points of the plain text.
func content(p *parser.Post) float64 {
	var photos, videos, gifs, polls float64
	for _, m := range p.Content.Media {
		switch m.Type {
		case parser.MediaImage:
			photos++
		case parser.MediaVideo, parser.MediaRoundVideo:
			videos++
		case parser.MediaGIF:
			gifs++
		}
	}
	if p.Content.Poll != nil {
		polls = 1
	}
	media := math.Min(photos, 10)*0.3 + math.Min(videos, 10)*0.5 + math.Min(gifs, 10)*0.2 + math.Min(polls, 10)*0.3
	var chars float64
	if p.Content.Text != nil {
		chars = float64(utf8.RuneCountInString(p.Content.Text.String))
	}
	return math.Min(media+math.Min(chars/500, 2)*0.1, 3)
}

// freshness decays with age h (hours): linearly from 1 to 0.8 over the first
// day, then 0.8·e^(−0.8(d−1)) with d in days up to a week, then
// max(0.001, 0.1·e^(−2(w−1))) with w in weeks. Posts dated in the future
// count as brand new.
func freshness(age time.Duration) float64 {
	h := age.Hours()
	switch {
	case h <= 0:
		return 1
	case h <= 24:
		return 1 - 0.2*h/24
	case h <= 168:
		d := h / 24
		return 0.8 * math.Exp(-0.8*(d-1))
	default:
		w := h / 168
		return math.Max(0.001, 0.1*math.Exp(-2*(w-1)))
	}
}
