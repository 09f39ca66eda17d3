package feed

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/tmefeed/tmefeed/parser"
)

// channelPage is the newest page of one channel and, for a filter with
// since, the older pages read back to it (newest first).
type channelPage struct {
	name    string
	channel *parser.Channel
	page    *parser.Page
	older   []*parser.Page
}

// pages calls f with each page, newest first.
func (cp *channelPage) each(f func(*parser.Page)) {
	f(cp.page)
	for _, p := range cp.older {
		f(p)
	}
}

// pageOf returns the page whose posts hold post, or nil.
func (cp *channelPage) pageOf(post *parser.Post) *parser.Page {
	// Posts are elements of their page's slice: the one whose backing
	// array holds the pointer is the page.
	at := uintptr(unsafe.Pointer(post))
	var found *parser.Page
	cp.each(func(p *parser.Page) {
		posts := p.Content.Posts
		if found == nil && len(posts) > 0 && at >= uintptr(unsafe.Pointer(&posts[0])) && at <= uintptr(unsafe.Pointer(&posts[len(posts)-1])) {
			found = p
		}
	})
	return found
}

// sortKey orders items: higher score first (always 0 under NEWEST), then
// newer date, then channel name, then newer id. Every item has a distinct
// key, so the order is total and a cursor names one place in it.
type sortKey struct {
	score   float64
	date    int64
	channel string
	id      int
}

func (a sortKey) before(b sortKey) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	if a.date != b.date {
		return a.date > b.date
	}
	if a.channel != b.channel {
		return a.channel < b.channel
	}
	return a.id > b.id
}

func keyOf(it Item, o Order) sortKey {
	k := sortKey{date: it.Post.Footer.Date.Unix, channel: it.Channel.Username, id: it.Post.ID}
	if o == Ranked {
		k.score = it.Score
	}
	return k
}

// candidate is an item with the identity used to de-duplicate it.
type candidate struct {
	item      Item
	identity  string // "channel/id" of the post, or of the original it forwards
	forwarded bool
}

// merge de-duplicates, filters and orders the posts of pages as of now,
// giving each item its cursor from cw.
func merge(pages []channelPage, f filter, o Order, now time.Time, cw *cursorWriter) []Item {
	n := 0
	for i := range pages {
		pages[i].each(func(p *parser.Page) { n += len(p.Content.Posts) })
	}
	cands := make([]candidate, 0, n)
	index := make(map[string]int, n)
	for _, cp := range pages {
		subs := cp.channel.Counters.SubscribersCount
		cp.each(func(page *parser.Page) {
			posts := page.Content.Posts
			for i := range posts {
				p := &posts[i]
				if !f.match(p) {
					continue
				}
				c := candidate{
					item:     Item{Post: p, Channel: cp.channel, Score: Rank(p, subs, now).Total},
					identity: cp.name + "/" + strconv.Itoa(p.ID),
				}
				if orig, ok := forwardedPost(p); ok {
					c.identity, c.forwarded = orig, true
				} else if p.ID == 0 {
					// t.me names this post nowhere: it is no copy of
					// another one, and "channel/0" would make it one.
					cands = append(cands, c)
					continue
				}
				j, seen := index[c.identity]
				if !seen {
					index[c.identity] = len(cands)
					cands = append(cands, c)
					continue
				}
				if preferred(c, cands[j]) {
					cands[j] = c
				}
			}
		})
	}
	items := make([]Item, len(cands))
	for i, c := range cands {
		items[i] = c.item
	}
	slices.SortFunc(items, func(a, b Item) int {
		ka, kb := keyOf(a, o), keyOf(b, o)
		switch {
		case ka == kb:
			return 0
		case ka.before(kb):
			return -1
		}
		return 1
	})
	for i := range items {
		items[i].Cursor = cw.cursor(keyOf(items[i], o))
	}
	return items
}

// preferred reports whether c should replace d, which shows the same post:
// the original beats a forward of it, then the earlier copy, then the
// copy that sorts first by channel and id.
func preferred(c, d candidate) bool {
	if c.forwarded != d.forwarded {
		return !c.forwarded
	}
	cd, dd := c.item.Post.Footer.Date.Unix, d.item.Post.Footer.Date.Unix
	if cd != dd {
		return cd < dd
	}
	if r := cmp.Compare(c.item.Channel.Username, d.item.Channel.Username); r != 0 {
		return r < 0
	}
	return c.item.Post.ID < d.item.Post.ID
}

// forwardedPost returns "channel/id" of the post p forwards, when its
// source link names a public post (https://t.me/<channel>/<id>).
func forwardedPost(p *parser.Post) (string, bool) {
	if p.Forwarded == nil || p.Forwarded.URL == "" {
		return "", false
	}
	u, err := url.Parse(p.Forwarded.URL)
	if err != nil || (u.Host != "t.me" && u.Host != "telegram.me" && u.Host != "www.t.me") {
		return "", false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) == 3 && parts[0] == "s" {
		parts = parts[1:]
	}
	if len(parts) != 2 || parts[0] == "" || parts[0] == "c" {
		return "", false
	}
	id, err := strconv.Atoi(parts[1])
	if err != nil || id <= 0 {
		return "", false
	}
	return strings.ToLower(parts[0]) + "/" + strconv.Itoa(id), true
}
