package feed

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/tmefeed/tmefeed/parser"
)

// filter is a validated Filter with a canonical key.
type filter struct {
	Filter
	media    map[parser.MediaKind]bool
	hashtags []string // lower case, without '#'
	query    string   // lower case
	key      string   // the same for filters that keep the same posts
}

// Matcher is a compiled Filter: it keeps the posts a feed with that
// filter keeps. Faces that see posts one at a time (live updates) use it
// so that their filters mean exactly what feed's do.
type Matcher struct{ f filter }

// CompileFilter checks f as Service.Feed does; a bad filter is an error
// wrapping ErrBadRequest.
func CompileFilter(f Filter) (Matcher, error) {
	nf, err := newFilter(f)
	if err != nil {
		return Matcher{}, err
	}
	return Matcher{nf}, nil
}

// Match reports whether p passes every condition of the filter.
func (m *Matcher) Match(p *parser.Post) bool { return m.f.match(p) }

// Key is the same for filters that keep the same posts.
func (m *Matcher) Key() string { return m.f.key }

// maxFilterValues bounds the lists of a filter.
const maxFilterValues = 100

func newFilter(f Filter) (filter, error) {
	out := filter{Filter: f}
	if len(f.MediaKinds) > maxFilterValues || len(f.Hashtags) > maxFilterValues {
		return out, fmt.Errorf("%w: at most %d media kinds and %d hashtags", ErrBadRequest, maxFilterValues, maxFilterValues)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return out, fmt.Errorf("%w: since must be before until", ErrBadRequest)
	}
	var kinds []string
	for _, k := range f.MediaKinds {
		if !slices.Contains(parser.MediaKinds(), k) {
			return out, fmt.Errorf("%w: unknown media kind %q", ErrBadRequest, k)
		}
		if out.media == nil {
			out.media = make(map[parser.MediaKind]bool)
		}
		if !out.media[k] {
			out.media[k] = true
			kinds = append(kinds, string(k))
		}
	}
	for _, t := range f.Hashtags {
		t = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(t), "#"))
		if t == "" {
			return out, fmt.Errorf("%w: empty hashtag", ErrBadRequest)
		}
		if !slices.Contains(out.hashtags, t) {
			out.hashtags = append(out.hashtags, t)
		}
	}
	out.query = strings.ToLower(strings.TrimSpace(f.Query))
	slices.Sort(kinds)
	slices.Sort(out.hashtags)

	var k strings.Builder
	k.WriteString(strings.Join(kinds, ","))
	k.WriteString(";" + strings.Join(out.hashtags, ","))
	k.WriteString(";" + strconv.Quote(out.query))
	if !f.Since.IsZero() {
		k.WriteString(";s" + strconv.FormatInt(f.Since.Unix(), 10))
	}
	if !f.Until.IsZero() {
		k.WriteString(";u" + strconv.FormatInt(f.Until.Unix(), 10))
	}
	for _, b := range []bool{f.ExcludeForwarded, f.ExcludeReplies, f.ExcludeService} {
		k.WriteString(";" + strconv.FormatBool(b))
	}
	out.key = k.String()
	return out, nil
}

// match reports whether p passes every condition of f.
func (f *filter) match(p *parser.Post) bool {
	if f.ExcludeForwarded && p.Forwarded != nil {
		return false
	}
	if f.ExcludeReplies && p.Content.Reply != nil {
		return false
	}
	if f.ExcludeService && p.Service != nil {
		return false
	}
	date := p.Footer.Date.Unix
	if !f.Since.IsZero() && date < f.Since.Unix() {
		return false
	}
	if !f.Until.IsZero() && date >= f.Until.Unix() {
		return false
	}
	if len(f.media) > 0 && !slices.ContainsFunc(p.Content.Media, func(m parser.Media) bool { return f.media[m.Type] }) {
		return false
	}
	if len(f.hashtags) > 0 && !f.hasHashtag(p) {
		return false
	}
	if f.query != "" && !f.contains(p) {
		return false
	}
	return true
}

func (f *filter) hasHashtag(p *parser.Post) bool {
	t := p.Content.Text
	if t == nil {
		return false
	}
	for _, e := range t.Entities {
		if e.Type != parser.EntityHashtag {
			continue
		}
		tag := strings.ToLower(strings.TrimPrefix(utf16Slice(t.String, e.Offset, e.Length), "#"))
		if slices.Contains(f.hashtags, tag) {
			return true
		}
	}
	return false
}

func (f *filter) contains(p *parser.Post) bool {
	c := &p.Content
	if c.Text != nil && containsFold(c.Text.String, f.query) {
		return true
	}
	if c.Poll != nil && containsFold(c.Poll.Question, f.query) {
		return true
	}
	if l := c.PreviewLink; l != nil {
		if containsFold(l.Title, f.query) || l.Description != nil && containsFold(l.Description.String, f.query) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case needle, ignoring case.
func containsFold(s, needle string) bool {
	return strings.Contains(strings.ToLower(s), needle)
}

// utf16Slice returns the part of s at offset and length counted in UTF-16
// code units, as entity offsets are; "" when they fall outside s.
func utf16Slice(s string, offset, length int) string {
	start, end := -1, -1
	units := 0
	for i, r := range s {
		if units == offset {
			start = i
		}
		if units == offset+length {
			end = i
			break
		}
		units += utf16.RuneLen(r)
	}
	if start < 0 {
		if units != offset {
			return ""
		}
		start = len(s)
	}
	if end < 0 {
		end = len(s)
	}
	return s[start:end]
}
