package parser

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// viewFacts reads a message's data-view attribute: base64 (t.me writes the
// URL-safe alphabet without padding; the standard one is accepted too) of
// a small JSON object whose "p" is the message number ("123", or "123g"
// for an album, which spans ids from 123) and "t" the time t.me served the
// page, in Unix seconds. Either is 0 when the attribute does not hold it.
// It runs only for a post the page leaves unnamed or undated.
func viewFacts(view string) (post int, served int64) {
	view = strings.TrimRight(strings.TrimSpace(view), "=")
	if view == "" || len(view) > 1024 {
		return 0, 0
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.NewReplacer("+", "-", "/", "_").Replace(view))
	if err != nil {
		return 0, 0
	}
	var v struct{ P, T json.RawMessage }
	if json.Unmarshal(raw, &v) != nil {
		return 0, 0
	}
	post = parseInt(strings.TrimSuffix(strings.Trim(string(v.P), `"`), "g"))
	if t, err := strconv.ParseInt(strings.Trim(string(v.T), `"`), 10, 64); err == nil && t > 0 {
		served = t
	}
	return post, served
}

// estimateDates gives each post of a page without a date of its own (an
// empty or unparseable datetime) an estimate, marked Estimated, so that
// it is ordered and filtered beside its neighbours instead of as a post of
// 1970:
//
//   - the newest post of the channel's newest page: the time t.me served
//     the page (data-view "t"), when it is not before the older neighbour's
//     date. t.me leaves the date out of a post being published, so it is
//     as new as the page.
//   - otherwise the date of the nearest older post the page dates: it was
//     published after that one, and ordering ties between the two go by
//     message number; without one, the nearest newer post's date.
//
// A post with neither neighbour nor capture time keeps an unknown date.
// posts are oldest first, as t.me lists them.
func estimateDates(posts []Post, newest bool) {
	written := func(i int) bool { return posts[i].Footer.Date.String != "" && !posts[i].Footer.Date.Estimated }
	for i := range posts {
		if posts[i].Footer.Date.String != "" {
			continue
		}
		var older, newer int64
		for j := i - 1; j >= 0 && older == 0; j-- {
			if written(j) {
				older = posts[j].Footer.Date.Unix
			}
		}
		for j := i + 1; j < len(posts) && newer == 0; j++ {
			if written(j) {
				newer = posts[j].Footer.Date.Unix
			}
		}
		est := int64(0)
		if newest && i == len(posts)-1 {
			if _, served := viewFacts(posts[i].View); served >= older {
				est = served
			}
		}
		if est == 0 {
			est = older
		}
		if est == 0 {
			est = newer
		}
		if est == 0 {
			continue
		}
		posts[i].Footer.Date = Date{
			String:    time.Unix(est, 0).UTC().Format("2006-01-02T15:04:05+00:00"),
			Unix:      est,
			Estimated: true,
		}
	}
}

// UnnamedKey names a post t.me gives no number (ID 0) where a number would
// be used as its identity: a global id, a feed entry's id, a DOM id. It is
// a hash of what the post shows that does not change from one capture of
// the page to the next (channel, the date the page writes, text, media
// files), so the same post keeps the same key; an edit of its text gives
// it a new one. "" for a post that has a number.
func (p *Post) UnnamedKey() string {
	if p.ID != 0 {
		return ""
	}
	h := fnv.New64a()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(p.Channel)
	if !p.Footer.Date.Estimated {
		w(p.Footer.Date.String)
	}
	if p.Content.Text != nil {
		w(p.Content.Text.String)
	}
	for _, m := range p.Content.Media {
		w(m.URL)
		w(m.Thumb)
	}
	if p.Service != nil {
		w(p.Service.Text)
	}
	return strconv.FormatUint(h.Sum64(), 16)
}
