package graph

import (
	"math"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/graph/model"
)

// The fast path's writer: the answer of a feed query written straight from
// the feed page's values, walking the operation's validated selection,
// instead of running the executor, which resolves every field of every
// post as a value of its own (a goroutine per list element, a field set
// per object): for a 2,000-post feed that was most of a rebuild's time.
//
// It writes exactly the bytes the executor writes (TestWriterMatchesExecutor):
// fields are collected by gqlgen's own CollectFields (fragments, @skip and
// @include, merged aliases, in the executor's order), values come from the
// same model methods the generated resolvers call, and DateTime, Float and
// enum values are marshaled by the same functions. Whatever it does not
// write, a field it does not know (one with a resolver of its own, such as
// Post.inChannel or Channel.posts), a deferred fragment, a directive other
// than @skip and @include, a null where the schema forbids one, makes it
// give up: the executor answers instead.

// selection is a selection set collected for one object type: the fields
// of the answer's object, in order.
type selection struct {
	fields []selectedField
}

type selectedField struct {
	key   string     // `"alias":`, with the comma before it for all but the first
	write fieldWrite // writes the value
	sub   *selection // the value's own selection, for an object or a list of them
}

// fieldWrite writes one field's value of obj, an object of the type the
// field belongs to.
type fieldWrite func(w *answerWriter, obj any, sub *selection)

// answerWriter accumulates the answer. It is an io.Writer for the
// marshalers it shares with the executor.
type answerWriter struct {
	b     []byte
	texts *Texts // Text.html kept per parse
	// failed is set by a value the writer cannot write as the executor
	// would (a null for a non-null field, a float that is not finite).
	failed bool
}

func (w *answerWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *answerWriter) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

// writeFeedAnswer writes the answer of rc's operation, whose root fields
// are feed fields (their pages in read, by response key) and __typename,
// as the executor writes it: {"data":{…}}. ok is false when the selection
// holds something it does not write.
func writeFeedAnswer(schema *ast.Schema, rc *graphql.OperationContext, read map[string]*feed.Page, texts *Texts) (b []byte, ok bool) {
	c := compiler{schema: schema, rc: rc}
	w := &answerWriter{texts: texts}
	w.b = append(w.b, `{"data":{`...)
	for i, fld := range graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{"Query"}) {
		if fld.IsDeferred() || !onlySkipInclude(fld.Directives) {
			return nil, false
		}
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(fld.Alias)
		w.b = append(w.b, ':')
		switch fld.Name {
		case "__typename":
			w.str("Query")
		case "feed":
			p := read[fld.Alias]
			if p == nil || fld.Definition == nil {
				return nil, false
			}
			sel, ok := c.compile(fld.Selections, fld.Definition.Type.Name())
			if !ok {
				return nil, false
			}
			w.object(sel, feedConnection(p))
		default:
			return nil, false
		}
	}
	w.b = append(w.b, "}}"...)
	if w.failed {
		return nil, false
	}
	return w.b, true
}

// compiler collects the selections of one operation.
type compiler struct {
	schema *ast.Schema
	rc     *graphql.OperationContext
}

// compile collects sel for objects of type typ, reporting whether the
// writer writes every field in it.
func (c *compiler) compile(sel ast.SelectionSet, typ string) (*selection, bool) {
	def := c.schema.Types[typ]
	if def == nil || def.Kind != ast.Object {
		return nil, false
	}
	// The type and its interfaces, as the generated code's implementors:
	// a fragment on Node applies to a Post.
	satisfies := append([]string{typ}, def.Interfaces...)
	fields := graphql.CollectFields(c.rc, sel, satisfies)
	out := &selection{fields: make([]selectedField, 0, len(fields))}
	for i, fld := range fields {
		if fld.IsDeferred() || len(fld.Arguments) > 0 || !onlySkipInclude(fld.Directives) {
			return nil, false
		}
		var write fieldWrite
		if fld.Name == "__typename" {
			write = typename(typ)
		} else {
			if fld.Definition == nil {
				return nil, false
			}
			write = fieldWriter(typ, fld.Name, fld.Definition.Type.NonNull)
		}
		if write == nil {
			return nil, false
		}
		f := selectedField{write: write}
		if len(fld.Selections) > 0 {
			var ok bool
			if f.sub, ok = c.compile(fld.Selections, fld.Definition.Type.Name()); !ok {
				return nil, false
			}
		}
		key := make([]byte, 0, len(fld.Alias)+4)
		if i > 0 {
			key = append(key, ',')
		}
		key = appendQuoted(key, fld.Alias)
		f.key = string(append(key, ':'))
		out.fields = append(out.fields, f)
	}
	return out, true
}

// onlySkipInclude reports whether a field carries no directive but @skip
// and @include, which CollectFields has applied.
func onlySkipInclude(ds ast.DirectiveList) bool {
	for _, d := range ds {
		if d.Name != "skip" && d.Name != "include" {
			return false
		}
	}
	return true
}

func (w *answerWriter) object(sel *selection, obj any) {
	w.b = append(w.b, '{')
	for i := range sel.fields {
		f := &sel.fields[i]
		w.b = append(w.b, f.key...)
		f.write(w, obj, f.sub)
	}
	w.b = append(w.b, '}')
}

func (w *answerWriter) null() { w.b = append(w.b, "null"...) }

func (w *answerWriter) str(s string) { w.b = appendQuoted(w.b, s) }

// appendQuoted appends s as a JSON string as gqlgen's MarshalString writes
// it: only control characters, the quote and the backslash are escaped,
// and bytes that are not UTF-8 are copied as they are.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		case '\n':
			b = append(b, `\n`...)
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		default:
			b = append(b, `\u00`...)
			b = append(b, hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// float appends f as gqlgen's MarshalFloatContext writes it (fmt's %g,
// which is strconv's shortest 'g'), without its allocations.
func (w *answerWriter) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		w.failed = true // the executor answers an error
		return
	}
	w.b = strconv.AppendFloat(w.b, f, 'g', -1, 64)
}

// Field writers by kind of value. get is the model's accessor, the one
// the generated resolver calls.

func typename(typ string) fieldWrite {
	return func(w *answerWriter, _ any, _ *selection) { w.str(typ) }
}

func stringField[T any](get func(T) string) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) { w.str(get(obj.(T))) }
}

func optStringField[T any](get func(T) *string, nonNull bool) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) {
		if s := get(obj.(T)); s != nil {
			w.str(*s)
		} else {
			w.nullValue(nonNull)
		}
	}
}

func boolField[T any](get func(T) bool) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) { w.b = strconv.AppendBool(w.b, get(obj.(T))) }
}

func intField[T any, N int | int64](get func(T) N) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) { w.b = strconv.AppendInt(w.b, int64(get(obj.(T))), 10) }
}

func optIntField[T any, N int | int64](get func(T) *N, nonNull bool) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) {
		if n := get(obj.(T)); n != nil {
			w.b = strconv.AppendInt(w.b, int64(*n), 10)
		} else {
			w.nullValue(nonNull)
		}
	}
}

func floatField[T any](get func(T) float64) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) { w.float(get(obj.(T))) }
}

func optFloatField[T any](get func(T) *float64, nonNull bool) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) {
		if f := get(obj.(T)); f != nil {
			w.float(*f)
		} else {
			w.nullValue(nonNull)
		}
	}
}

// enumField writes an enum value with its own MarshalGQL, as the executor
// does.
func enumField[T any, E graphql.Marshaler](get func(T) E) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) { get(obj.(T)).MarshalGQL(w) }
}

func dateTimeField[T any](get func(T) *time.Time, nonNull bool) fieldWrite {
	return func(w *answerWriter, obj any, _ *selection) {
		if t := get(obj.(T)); t != nil {
			model.MarshalDateTime(*t).MarshalGQL(w)
		} else {
			w.nullValue(nonNull)
		}
	}
}

func objectField[T any, O any](get func(T) *O, nonNull bool) fieldWrite {
	return func(w *answerWriter, obj any, sub *selection) {
		if o := get(obj.(T)); o != nil {
			w.object(sub, o)
		} else {
			w.nullValue(nonNull)
		}
	}
}

// listField writes a list of objects; the schema's lists of objects here
// are all [T!]!.
func listField[T any, O any](get func(T) []*O) fieldWrite {
	return func(w *answerWriter, obj any, sub *selection) {
		w.b = append(w.b, '[')
		list := get(obj.(T))
		for i, o := range list {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if o == nil {
				w.failed = true
				return
			}
			start := len(w.b)
			w.object(sub, o)
			if i == 0 {
				w.reserve((len(w.b) - start + 1) * (len(list) - 1))
			}
		}
		w.b = append(w.b, ']')
	}
}

// reserve makes room for about n more bytes once, when a list's first
// element tells how large the list will be: a 2,000-post answer of
// megabytes grows the buffer once rather than doubling it a dozen times.
// A little over the estimate, so that the answer is not cut short of it
// by a few larger elements.
func (w *answerWriter) reserve(n int) {
	if n <= cap(w.b)-len(w.b) {
		return
	}
	n += n / 8
	b := make([]byte, len(w.b), len(w.b)+n)
	copy(b, w.b)
	w.b = b
}

func (w *answerWriter) nullValue(nonNull bool) {
	if nonNull {
		w.failed = true
		return
	}
	w.null()
}

// fieldWriter returns the writer of field name of type typ, nil for one
// the writer leaves to the executor. nonNull is the field's type's.
func fieldWriter(typ, name string, nonNull bool) fieldWrite {
	switch typ {
	case "FeedConnection":
		switch name {
		case "edges":
			return listField(func(c *model.FeedConnection) []*model.FeedEdge { return c.Edges })
		case "pageInfo":
			return objectField(func(c *model.FeedConnection) *model.PageInfo { return c.PageInfo }, nonNull)
		case "totalCount":
			return intField(func(c *model.FeedConnection) int { return c.TotalCount })
		case "failedChannels":
			return listField(func(c *model.FeedConnection) []*model.FailedChannel { return c.FailedChannels })
		}
	case "FeedEdge":
		switch name {
		case "cursor":
			return stringField(func(e *model.FeedEdge) string { return e.Cursor })
		case "node":
			return objectField(func(e *model.FeedEdge) *model.FeedItem { return e.Node }, nonNull)
		}
	case "FeedItem":
		switch name {
		case "id":
			return stringField((*model.FeedItem).ID)
		case "post":
			return objectField((*model.FeedItem).Post, nonNull)
		case "channel":
			return objectField((*model.FeedItem).Channel, nonNull)
		case "score":
			return floatField((*model.FeedItem).Score)
		}
	case "FailedChannel":
		switch name {
		case "id":
			return stringField((*model.FailedChannel).ID)
		case "username":
			return stringField(func(f *model.FailedChannel) string { return f.Username })
		case "code":
			return enumField(func(f *model.FailedChannel) model.ChannelErrorCode { return f.Code })
		case "reason":
			return stringField(func(f *model.FailedChannel) string { return f.Reason })
		}
	case "PageInfo":
		switch name {
		case "hasNextPage":
			return boolField(func(p *model.PageInfo) bool { return p.HasNextPage })
		case "hasPreviousPage":
			return boolField(func(p *model.PageInfo) bool { return p.HasPreviousPage })
		case "startCursor":
			return optStringField(func(p *model.PageInfo) *string { return p.StartCursor }, nonNull)
		case "endCursor":
			return optStringField(func(p *model.PageInfo) *string { return p.EndCursor }, nonNull)
		}
	case "Channel":
		return channelField(name, nonNull)
	case "Counters":
		return countersField(name, nonNull)
	case "Post":
		return postField(name, nonNull)
	default:
		return partField(typ, name, nonNull)
	}
	return nil
}

func channelField(name string, nonNull bool) fieldWrite {
	switch name {
	case "id":
		return stringField((*model.Channel).GlobalID)
	case "username":
		return stringField((*model.Channel).Username)
	case "title":
		return stringField((*model.Channel).Title)
	case "titleHTML":
		return stringField((*model.Channel).TitleHTML)
	case "description":
		return optStringField((*model.Channel).Description, nonNull)
	case "descriptionHTML":
		return optStringField((*model.Channel).DescriptionHTML, nonNull)
	case "avatar":
		return optStringField((*model.Channel).Avatar, nonNull)
	case "counters":
		return objectField((*model.Channel).Counters, nonNull)
	case "verified":
		return boolField((*model.Channel).Verified)
	case "url":
		return stringField((*model.Channel).URL)
	}
	return nil // posts and search read pages of their own
}

func countersField(name string, nonNull bool) fieldWrite {
	switch name {
	case "id":
		return stringField((*model.Counters).ID)
	case "subscribers":
		return optIntField((*model.Counters).Subscribers, nonNull)
	case "subscribersText":
		return optStringField((*model.Counters).SubscribersText, nonNull)
	case "photos":
		return optIntField((*model.Counters).Photos, nonNull)
	case "videos":
		return optIntField((*model.Counters).Videos, nonNull)
	case "files":
		return optIntField((*model.Counters).Files, nonNull)
	case "links":
		return optIntField((*model.Counters).Links, nonNull)
	}
	return nil
}

func postField(name string, nonNull bool) fieldWrite {
	switch name {
	case "id":
		return stringField((*model.Post).GlobalID)
	case "messageId":
		return optIntField((*model.Post).MessageID, nonNull)
	case "url":
		return stringField((*model.Post).URL)
	case "channel":
		return stringField(func(p *model.Post) string { return p.Channel })
	case "date":
		return dateTimeField((*model.Post).Date, nonNull)
	case "dateEstimated":
		return boolField((*model.Post).DateEstimated)
	case "edited":
		return boolField((*model.Post).Edited)
	case "views":
		return optIntField((*model.Post).Views, nonNull)
	case "viewsText":
		return optStringField((*model.Post).ViewsText, nonNull)
	case "author":
		return optStringField((*model.Post).Author, nonNull)
	case "text":
		return objectField((*model.Post).Text, nonNull)
	case "media":
		return listField((*model.Post).Media)
	case "poll":
		return objectField((*model.Post).Poll, nonNull)
	case "location":
		return objectField((*model.Post).Location, nonNull)
	case "inlineButtons":
		return listField((*model.Post).InlineButtons)
	case "reply":
		return objectField((*model.Post).Reply, nonNull)
	case "linkPreview":
		return objectField((*model.Post).LinkPreview, nonNull)
	case "reactions":
		return listField((*model.Post).Reactions)
	case "forwardedFrom":
		return objectField((*model.Post).ForwardedFrom, nonNull)
	case "isService":
		return boolField((*model.Post).IsService)
	case "service":
		return objectField((*model.Post).ServiceMessage, nonNull)
	}
	return nil // inChannel reads the channel's page
}

// partField writes the fields of the objects a post is made of.
func partField(typ, name string, nonNull bool) fieldWrite {
	switch typ + "." + name {
	case "Text.id":
		return stringField((*model.Text).ID)
	case "Text.plain":
		return stringField((*model.Text).Plain)
	case "Text.html":
		// (*model.Text).HTML, sanitized once per parse.
		return func(w *answerWriter, obj any, _ *selection) { w.str(w.texts.html(obj.(*model.Text))) }
	case "Text.htmlAsServed":
		return stringField((*model.Text).HTMLAsServed)
	case "Text.entities":
		return listField((*model.Text).Entities)

	case "TextEntity.id":
		return stringField((*model.TextEntity).ID)
	case "TextEntity.kind":
		return enumField((*model.TextEntity).Kind)
	case "TextEntity.offset":
		return intField((*model.TextEntity).Offset)
	case "TextEntity.length":
		return intField((*model.TextEntity).Length)
	case "TextEntity.url":
		return optStringField((*model.TextEntity).URL, nonNull)
	case "TextEntity.language":
		return optStringField((*model.TextEntity).Language, nonNull)
	case "TextEntity.emojiId":
		return optStringField((*model.TextEntity).EmojiID, nonNull)

	case "Media.id":
		return stringField((*model.Media).ID)
	case "Media.kind":
		return enumField((*model.Media).Kind)
	case "Media.url":
		return optStringField((*model.Media).URL, nonNull)
	case "Media.thumb":
		return optStringField((*model.Media).Thumb, nonNull)
	case "Media.waves":
		return optStringField((*model.Media).Waves, nonNull)
	case "Media.duration":
		return optIntField((*model.Media).Duration, nonNull)
	case "Media.durationText":
		return optStringField((*model.Media).DurationText, nonNull)
	case "Media.title":
		return optStringField((*model.Media).Title, nonNull)
	case "Media.extra":
		return optStringField((*model.Media).Extra, nonNull)
	case "Media.available":
		return boolField((*model.Media).Available)

	case "Poll.id":
		return stringField((*model.Poll).ID)
	case "Poll.question":
		return stringField((*model.Poll).Question)
	case "Poll.type":
		return optStringField((*model.Poll).Type, nonNull)
	case "Poll.votes":
		return optIntField((*model.Poll).Votes, nonNull)
	case "Poll.votesText":
		return stringField((*model.Poll).VotesText)
	case "Poll.options":
		return listField((*model.Poll).Options)

	case "PollOption.id":
		return stringField((*model.PollOption).ID)
	case "PollOption.text":
		return stringField(func(o *model.PollOption) string { return o.Text })
	case "PollOption.percent":
		return intField(func(o *model.PollOption) int { return o.Percent })

	case "Location.id":
		return stringField((*model.Location).ID)
	case "Location.latitude":
		return optFloatField((*model.Location).Latitude, nonNull)
	case "Location.longitude":
		return optFloatField((*model.Location).Longitude, nonNull)
	case "Location.address":
		return optStringField((*model.Location).Address, nonNull)
	case "Location.url":
		return optStringField((*model.Location).URL, nonNull)
	case "Location.map":
		return optStringField((*model.Location).Map, nonNull)

	case "InlineButton.id":
		return stringField((*model.InlineButton).ID)
	case "InlineButton.text":
		return stringField(func(b *model.InlineButton) string { return b.Text })
	case "InlineButton.url":
		return stringField(func(b *model.InlineButton) string { return b.URL })

	case "Reply.id":
		return stringField((*model.Reply).ID)
	case "Reply.toMessage":
		return optIntField((*model.Reply).ToMessage, nonNull)
	case "Reply.name":
		return stringField((*model.Reply).Name)
	case "Reply.nameHTML":
		return stringField((*model.Reply).NameHTML)
	case "Reply.text":
		return stringField((*model.Reply).Text)
	case "Reply.textHTML":
		return stringField((*model.Reply).TextHTML)
	case "Reply.cover":
		return optStringField((*model.Reply).Cover, nonNull)

	case "LinkPreview.id":
		return stringField((*model.LinkPreview).ID)
	case "LinkPreview.url":
		return stringField((*model.LinkPreview).URL)
	case "LinkPreview.title":
		return optStringField((*model.LinkPreview).Title, nonNull)
	case "LinkPreview.siteName":
		return optStringField((*model.LinkPreview).SiteName, nonNull)
	case "LinkPreview.description":
		return optStringField((*model.LinkPreview).Description, nonNull)
	case "LinkPreview.descriptionHTML":
		return optStringField((*model.LinkPreview).DescriptionHTML, nonNull)
	case "LinkPreview.thumb":
		return optStringField((*model.LinkPreview).Thumb, nonNull)

	case "Reaction.id":
		return stringField((*model.Reaction).ID)
	case "Reaction.kind":
		return enumField((*model.Reaction).Kind)
	case "Reaction.emoji":
		return optStringField((*model.Reaction).Emoji, nonNull)
	case "Reaction.emojiId":
		return optStringField((*model.Reaction).EmojiID, nonNull)
	case "Reaction.emojiImage":
		return optStringField((*model.Reaction).EmojiImage, nonNull)
	case "Reaction.count":
		return intField((*model.Reaction).Count)
	case "Reaction.countText":
		return stringField((*model.Reaction).CountText)

	case "Forward.id":
		return stringField((*model.Forward).ID)
	case "Forward.name":
		return stringField((*model.Forward).Name)
	case "Forward.nameHTML":
		return stringField((*model.Forward).NameHTML)
	case "Forward.url":
		return optStringField((*model.Forward).URL, nonNull)

	case "ServiceMessage.id":
		return stringField((*model.ServiceMessage).ID)
	case "ServiceMessage.type":
		return stringField(func(s *model.ServiceMessage) string { return s.Type })
	case "ServiceMessage.kind":
		return enumField((*model.ServiceMessage).Kind)
	case "ServiceMessage.text":
		return stringField(func(s *model.ServiceMessage) string { return s.Text })
	}
	return nil
}
