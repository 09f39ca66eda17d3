// Package feedquery is the one reader of feed requests: every face that
// takes a feed (POST /v1/feed's body, GraphQL's feed arguments, the
// feed-reader documents' query strings, the widget's) gathers what it
// received in Fields and has Read check it and make it a feed.Request,
// with the same rules — channels required, limits, orders, media kinds
// and dates spelled one way — and messages written here. Parse reads a
// URL query string into Fields first (lists comma-separated, every other
// parameter given once, unknown parameters refused rather than ignored),
// and FieldsOf writes a request back, for a face that passes it on (the
// widget's subscription and its canonical address). Each face keeps its
// own spelling of the parameter names (REST's snake_case, GraphQL's field
// names) and its wording, so links and clients already out in the world
// keep working.
package feedquery

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tmefeed/tmefeed/feed"
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
// (limit: want …); GraphQL's says what feed would (no channels given)
// and is otherwise the widget's, since its schema's types leave it no
// other problem to word.
type Style int

const (
	StyleREST Style = iota
	StyleWidget
	StyleGraphQL
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
	// Limits of the limit parameter, and its value when not given. A
	// MaxLimit of 0 leaves the range to feed, which checks it anyway.
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
	BothEnds // both first and last (GraphQL): Relay's spec discourages it
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
	case BothEnds:
		return "give first or last, not both: first pages forwards from after, last backwards from before"
	case Missing:
		if o.Style == StyleGraphQL {
			return "no channels given" // as feed says it
		}
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
		for _, k := range feed.MediaKindNames() {
			if rest {
				names = append(names, q(string(k.Kind)))
			} else {
				names = append(names, string(k.Kind))
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
	f := Fields{
		Channels:   list(n.Channels),
		Order:      vals.Get(n.Order),
		MediaKinds: list(n.MediaKinds),
		Hashtags:   list(n.Hashtags),
		Query:      strings.TrimSpace(vals.Get(n.Query)),
		Since:      vals.Get(n.Since),
		Until:      vals.Get(n.Until),
	}
	if len(f.Channels) == 0 {
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
		f.First = &v
	}
	// The flags are read last, as before the other fields were checked
	// by Read: the first problem reported stays the same.
	var badBool *Error
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
			if v, err = strconv.ParseBool(s); err != nil && badBool == nil {
				badBool = &Error{Param: b.name, Problem: BadBool, Got: Clip(s), opts: &o}
			}
		}
		*b.dst = v
	}
	if out.Request, err = Read(f, o); err != nil {
		return Query{}, err
	}
	if badBool != nil {
		return Query{}, badBool
	}
	return out, nil
}

// Fields is a feed request as a face received it, before it is checked:
// a query string's parameters, POST /v1/feed's body, GraphQL's arguments.
type Fields struct {
	Channels    []string
	First, Last *int // nil: not given (Last is GraphQL's only)
	After       string
	Before      string
	Order       string   // a feed.Order's name, in any case; "" for the default
	MediaKinds  []string // as REST or GraphQL spells them (feed.MediaKindOf)
	Hashtags    []string
	Query       string
	// Since and Until are RFC 3339 dates; "" for none.
	Since, Until string

	ExcludeForwarded, ExcludeReplies, ExcludeService bool
}

// Read checks a face's feed request as o says and makes it a
// feed.Request. feed checks the rest (channel names and counts, cursors,
// since before until) with its own messages.
func Read(f Fields, o Options) (feed.Request, error) {
	n := &o.Names
	fail := func(p Problem, param, got string) (feed.Request, error) {
		return feed.Request{}, newError(p, param, got, o)
	}
	if f.First != nil && f.Last != nil {
		return fail(BothEnds, "", "")
	}
	if len(f.Channels) == 0 {
		return fail(Missing, n.Channels, "")
	}
	req := feed.Request{Channels: f.Channels, First: o.DefaultLimit, Order: o.DefaultOrder, After: f.After, Before: f.Before}
	switch {
	case f.First != nil:
		if o.MaxLimit > 0 && (*f.First < o.MinLimit || *f.First > o.MaxLimit) {
			return fail(OutOfRange, n.Limit, strconv.Itoa(*f.First))
		}
		req.First = *f.First
	case f.Last != nil:
		req.Last = f.Last
	}
	if f.Order != "" {
		ord, ok := feed.OrderOf(f.Order)
		if !ok {
			return fail(BadOrder, n.Order, f.Order)
		}
		req.Order = ord
	}
	flt := &req.Filter
	for _, s := range f.MediaKinds {
		k, ok := feed.MediaKindOf(s)
		if !ok {
			return fail(BadMediaKind, n.MediaKinds, s)
		}
		if !slices.Contains(flt.MediaKinds, k) {
			flt.MediaKinds = append(flt.MediaKinds, k)
		}
	}
	flt.Hashtags = f.Hashtags
	flt.Query = f.Query
	var ok bool
	if flt.Since, ok = readTime(f.Since); !ok {
		return fail(BadTime, n.Since, f.Since)
	}
	if flt.Until, ok = readTime(f.Until); !ok {
		return fail(BadTime, n.Until, f.Until)
	}
	flt.ExcludeForwarded = f.ExcludeForwarded
	flt.ExcludeReplies = f.ExcludeReplies
	flt.ExcludeService = f.ExcludeService
	return req, nil
}

// newError is an Error with its own copy of o, so that a request read
// without a problem does not move its Options to the heap.
func newError(p Problem, param, got string, o Options) *Error {
	return &Error{Param: param, Problem: p, Got: Clip(got), opts: &o}
}

// readTime reads an RFC 3339 date; "" is the zero time.
func readTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// FieldsOf writes req back as Fields, for a face that passes a request
// on: media kinds spelled as GraphQL's enum when graphQL is set, else as
// REST spells them; dates in RFC 3339 (to the nanosecond, so that Read
// gives the same instant back); First always set, Last when set.
func FieldsOf(req feed.Request, graphQL bool) Fields {
	flt := req.Filter
	f := Fields{
		Channels: req.Channels, First: &req.First, Last: req.Last, After: req.After, Before: req.Before,
		Order: string(req.Order), Hashtags: flt.Hashtags, Query: flt.Query,
		ExcludeForwarded: flt.ExcludeForwarded, ExcludeReplies: flt.ExcludeReplies, ExcludeService: flt.ExcludeService,
	}
	for _, k := range flt.MediaKinds {
		if graphQL {
			f.MediaKinds = append(f.MediaKinds, feed.NameOfMediaKind(k).GraphQL)
		} else {
			f.MediaKinds = append(f.MediaKinds, string(k))
		}
	}
	if !flt.Since.IsZero() {
		f.Since = flt.Since.Format(time.RFC3339Nano)
	}
	if !flt.Until.IsZero() {
		f.Until = flt.Until.Format(time.RFC3339Nano)
	}
	return f
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
