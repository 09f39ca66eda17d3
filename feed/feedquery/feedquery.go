// Package feedquery reads a feed request from a URL query string, for the
// faces that take one: the feed-reader documents (GET /v1/rss, /v1/atom,
// /v1/jsonfeed) and the embeddable widget (GET /embed). Both read the same
// fields with the same rules — lists comma-separated, every other
// parameter given once, unknown parameters refused rather than ignored,
// media kinds, orders, dates and flags spelled one way — and both say
// what is wrong in messages written here. Each face keeps its own
// spelling of the parameter names (REST's snake_case, the widget's
// GraphQL field names), so links already out in the world keep working.
package feedquery

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/parser"
)

// Names spells a face's parameters.
type Names struct {
	Channels, Order, Limit, MediaKinds, Hashtags, Query, Since, Until,
	ExcludeForwarded, ExcludeReplies, ExcludeService string
}

// The faces' spellings.
var (
	// RESTNames are the fields of POST /v1/feed's body and filter.
	RESTNames = Names{"channels", "order", "limit", "media_kinds", "hashtags", "query", "since", "until",
		"exclude_forwarded", "exclude_replies", "exclude_service"}
	// GraphQLNames are the feed field's arguments and FeedFilter's fields.
	GraphQLNames = Names{"channels", "order", "limit", "mediaKinds", "hashtags", "query", "since", "until",
		"excludeForwarded", "excludeReplies", "excludeService"}
)

// List is every name, channels first.
func (n Names) List() []string { return n.all() }

func (n Names) all() []string {
	return []string{n.Channels, n.Limit, n.Order, n.MediaKinds, n.Hashtags, n.Query, n.Since, n.Until,
		n.ExcludeForwarded, n.ExcludeReplies, n.ExcludeService}
}

func (n Names) lists() []string { return []string{n.Channels, n.MediaKinds, n.Hashtags} }

// Style is the wording of a face's messages: REST's quotes the name as a
// JSON field ("limit" must be …), the widget's reads as a form's hint
// (limit: want …).
type Style int

const (
	StyleREST Style = iota
	StyleWidget
)

// Options says how a face reads its query.
type Options struct {
	Names Names
	Style Style
	// Extra are parameters the face reads itself (the widget's theme):
	// accepted, checked for repeats, and returned in Query.Extra.
	Extra []string
	// RepeatLists lets a list parameter be given more than once, its
	// values joined (channels=a&channels=b,c), as feed readers' URL
	// builders write them. Without it every parameter is given once.
	RepeatLists bool
	// Limits of the limit parameter, and its value when not given.
	MinLimit, MaxLimit, DefaultLimit int
	// DefaultOrder is the order when none is given ("" is feed's).
	DefaultOrder feed.Order
}

// Query is a parsed query string.
type Query struct {
	// Request is the feed asked for; Channels are as given (trimmed,
	// empty ones dropped): feed checks and normalizes them.
	Request feed.Request
	// Given holds each feed parameter present, by the face's name, as
	// written (lists joined with commas), for a face echoing its address.
	Given map[string]string
	// Extra holds the values of Options.Extra present.
	Extra map[string]string
}

// Problem is what is wrong with a parameter.
type Problem int

const (
	Malformed  Problem = iota // the query string does not parse
	Unknown                   // a parameter no face reads
	Repeated                  // a single parameter given more than once
	Missing                   // no channels
	NotNumber                 // limit is not a whole number
	OutOfRange                // limit is outside MinLimit..MaxLimit
	BadOrder
	BadMediaKind
	BadTime
	BadBool
)

// Error is a parameter the face cannot answer; its text says what to fix,
// in the face's wording. It matches feed.ErrBadRequest.
type Error struct {
	Param   string // the parameter as the face names it ("" for Malformed)
	Problem Problem
	Got     string // the offending value, clipped
	Count   int    // for Repeated: how many times it was given
	opts    *Options
}

func (e *Error) Unwrap() error { return feed.ErrBadRequest }

func (e *Error) Error() string {
	o := e.opts
	q := strconv.Quote
	rest := o.Style == StyleREST
	switch e.Problem {
	case Malformed:
		return "the query string is malformed: " + e.Got
	case Unknown:
		if rest {
			return "unknown parameter " + q(e.Got) + "; want " + strings.Join(o.known(), ", ")
		}
		return "unknown parameter " + q(e.Got) + "; known: " + strings.Join(o.known(), ", ")
	case Repeated:
		if rest {
			return q(e.Param) + " must be given once"
		}
		return fmt.Sprintf("%q is given %d times; give it once (lists are comma-separated)", e.Param, e.Count)
	case Missing:
		if rest {
			return q(e.Param) + " must list at least one name"
		}
		return e.Param + ": list at least one channel, e.g. ?channels=durov,telegram"
	case NotNumber, OutOfRange:
		if rest {
			if e.Problem == NotNumber {
				return q(e.Param) + " must be a whole number, not " + q(e.Got)
			}
			return fmt.Sprintf("%q must be from %d to %d", e.Param, o.MinLimit, o.MaxLimit)
		}
		return fmt.Sprintf("%s: want a whole number from %d to %d, got %q", e.Param, o.MinLimit, o.MaxLimit, e.Got)
	case BadOrder:
		var names []string
		for _, ord := range feed.Orders() {
			names = append(names, strings.ToLower(string(ord)))
		}
		if rest {
			for i := range names {
				names[i] = q(names[i])
			}
			return q(e.Param) + " must be one of " + strings.Join(names, ", ")
		}
		return e.Param + ": want " + strings.Join(names, " or ") + ", got " + q(e.Got)
	case BadMediaKind:
		var names []string
		for _, k := range parser.MediaKinds() {
			if rest {
				names = append(names, q(string(k)))
			} else {
				names = append(names, string(k))
			}
		}
		if rest {
			return q(e.Param) + " must list kinds among " + strings.Join(names, ", ") + ", not " + q(e.Got)
		}
		return e.Param + ": unknown kind " + q(e.Got) + "; known: " + strings.Join(names, ", ")
	case BadTime:
		if rest {
			return q(e.Param) + " must be an RFC 3339 date such as 2024-05-01T12:30:00Z, not " + q(e.Got)
		}
		return e.Param + ": want an RFC 3339 date-time such as 2026-03-01T00:00:00Z, got " + q(e.Got)
	case BadBool:
		if rest {
			return q(e.Param) + " must be true or false, not " + q(e.Got)
		}
		return e.Param + ": want true or false, got " + q(e.Got)
	}
	return "bad parameter " + q(e.Param)
}

func (o *Options) known() []string { return append(o.Names.all(), o.Extra...) }

// Parse reads a raw query string (r.URL.RawQuery) as o says.
func Parse(raw string, o Options) (Query, error) {
	fail := func(p Problem, param, got string) (Query, error) {
		return Query{}, &Error{Param: param, Problem: p, Got: Clip(got), opts: &o}
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return fail(Malformed, "", err.Error())
	}
	n := o.Names
	known, lists := o.known(), n.lists()
	for _, name := range sortedKeys(vals) {
		if !slices.Contains(known, name) {
			return fail(Unknown, "", name)
		}
		if c := len(vals[name]); c > 1 && !(o.RepeatLists && slices.Contains(lists, name)) {
			return Query{}, &Error{Param: name, Problem: Repeated, Count: c, opts: &o}
		}
	}
	out := Query{Given: map[string]string{}, Extra: map[string]string{}}
	for _, name := range o.Extra {
		if vals.Has(name) {
			out.Extra[name] = vals.Get(name)
		}
	}
	for _, name := range n.all() {
		if vals.Has(name) {
			out.Given[name] = strings.Join(vals[name], ",")
		}
	}
	list := func(name string) []string {
		var l []string
		for _, v := range vals[name] {
			for item := range strings.SplitSeq(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					l = append(l, item)
				}
			}
		}
		return l
	}
	req := &out.Request
	req.Order = o.DefaultOrder
	req.First = o.DefaultLimit
	if req.Channels = list(n.Channels); len(req.Channels) == 0 {
		return fail(Missing, n.Channels, "")
	}
	if s := vals.Get(n.Limit); vals.Has(n.Limit) {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fail(NotNumber, n.Limit, s)
		}
		if v < o.MinLimit || v > o.MaxLimit {
			return fail(OutOfRange, n.Limit, s)
		}
		req.First = v
	}
	if s := vals.Get(n.Order); s != "" {
		ord, ok := OrderOf(s)
		if !ok {
			return fail(BadOrder, n.Order, s)
		}
		req.Order = ord
	}
	f := &req.Filter
	for _, s := range list(n.MediaKinds) {
		k, ok := MediaKindOf(s)
		if !ok {
			return fail(BadMediaKind, n.MediaKinds, s)
		}
		if !slices.Contains(f.MediaKinds, k) {
			f.MediaKinds = append(f.MediaKinds, k)
		}
	}
	f.Hashtags = list(n.Hashtags)
	f.Query = strings.TrimSpace(vals.Get(n.Query))
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{n.Since, &f.Since}, {n.Until, &f.Until}} {
		if s := vals.Get(t.name); s != "" {
			v, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return fail(BadTime, t.name, s)
			}
			*t.dst = v
		}
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{n.ExcludeForwarded, &f.ExcludeForwarded}, {n.ExcludeReplies, &f.ExcludeReplies}, {n.ExcludeService, &f.ExcludeService}} {
		if !vals.Has(b.name) {
			continue
		}
		// Present without a value (?exclude_service) means true.
		v, s := true, vals.Get(b.name)
		if s != "" {
			if v, err = strconv.ParseBool(s); err != nil {
				return fail(BadBool, b.name, s)
			}
		}
		*b.dst = v
	}
	return out, nil
}

// OrderOf reads a feed order by its name, case-insensitively ("newest",
// "RANKED").
func OrderOf(s string) (feed.Order, bool) {
	for _, o := range feed.Orders() {
		if strings.EqualFold(s, string(o)) {
			return o, true
		}
	}
	return "", false
}

// MediaKindOf reads a media kind as the parser ("image", "roundvideo") or
// GraphQL ("IMAGE", "ROUND_VIDEO") spells it.
func MediaKindOf(s string) (parser.MediaKind, bool) {
	norm := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	for _, k := range parser.MediaKinds() {
		if norm == string(k) {
			return k, true
		}
	}
	return "", false
}

// Clip shortens what a client sent before it is shown back.
func Clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + "…"
}

// sortedKeys makes the first problem reported the same for the same query.
func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
