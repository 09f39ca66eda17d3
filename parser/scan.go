package parser

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// role is what an element means to the parser. An element gets at most one
// role, chosen from its class names and its context.
type role uint8

const (
	roleNone role = iota
	rolePost
	roleText
	rolePhoto
	roleVideo
	roleVideoThumb
	roleVideoTag
	roleDuration
	roleVoice
	roleVoiceTag
	roleRound
	roleRoundTag
	roleRoundThumb
	roleSticker
	roleDocument
	roleDocTitle
	roleDocExtra
	roleLocation
	roleLocationMap
	roleVenueTitle
	roleVenueAddress
	roleLinkPreview
	roleLPSite
	roleLPTitle
	roleLPDesc
	roleLPImage
	rolePoll
	rolePollQuestion
	rolePollType
	rolePollOption
	rolePollPercent
	rolePollText
	roleVoters
	roleInlineButton
	roleReply
	roleReplyThumb
	roleReplyName
	roleReplyText
	roleForwarded
	roleForwardedName
	roleReactions
	roleReaction
	roleEmoji
	roleCustomEmoji
	roleViews
	roleFromAuthor
	roleMeta
	roleDate
	roleError
	roleMore
	roleChannelHeader
	roleChannelTitle
	roleChannelUsername
	roleChannelDesc
	roleCounter
	roleCounterValue
	roleCounterType
	roleLabels
	roleLabelIcon
	rolePageTitle
	rolePageExtra
	rolePageDesc
	rolePageContext
	roleUnsupportedLabel
	roleFallback // media_not_supported_cont: what t.me shows only where the rest fails
	roleEntity   // formatting tag inside message text
)

// modifier classes that change how a role is read.
type mods uint8

const (
	modNotSupported mods = 1 << iota
	modPaid
	modAudio
	modService
	modStickerMedia
	modVerified
	modUserIcon
	modSupportedCont
)

// customTag tells apart the elements atom.Lookup does not know (their atom is 0).
type customTag uint8

const (
	customNone    customTag = iota // a known HTML element
	customEmoji                    // <tg-emoji>
	customSpoiler                  // <tg-spoiler>
	customOther                    // any other unknown element
)

// entityLink is the provisional entity type of an <a> in the post text; it
// becomes a text link, URL, mention, hashtag or cashtag when the link closes.
const entityLink EntityKind = "a"

const (
	// resolvePrefix starts the app link on preview pages that names the channel.
	resolvePrefix = "tg://resolve?domain="
	// serviceLabel is what an embed of a service message shows (not localized).
	serviceLabel = "Service message"
)

// maxDepth bounds the open-element stack.
const maxDepth = 256

type frame struct {
	tag     atom.Atom
	custom  customTag
	role    role
	wrap    uint8  // index+1 of the wrapper this element may be in a capture
	wrapTmp bool   // that capture is tmp, not text
	ent     int32  // index+1 of the entity this element opened in the text capture
	wrapGen uint32 // the capture's generation when the wrapper opened
	cap     *capture
	start   int // byte offset in the text capture's plain text where the element began
	href    string
}

// attrs are the attributes the parser reads; the rest are never copied.
// Values stay []byte until a field is kept, so a tag whose class list means
// nothing to the parser costs no string allocation.
type attrs struct {
	class, href, style, src, srcset                    []byte
	dataPost, dataView, dataBefore, dataAfter, dataWav []byte
	datetime, rel, property, content, emojiID          []byte
	dataWebp                                           []byte
	autoplay, loop                                     bool
}

type scanner struct {
	z     *html.Tokenizer
	stack []frame

	channel  Channel
	hasTitle bool
	preview  Preview
	posts    []Post

	post                      *Post // the post being read, nil outside posts
	media                     int   // index+1 in post.Content.Media of the media element being read
	react                     *React
	option                    *PollOption
	counterValue, counterType string

	// scan state
	inHead          bool
	inHeader        int // depth of channel info header, for the avatar
	inLinkPreview   int
	inReply         int
	inReactions     int
	inTitleLabels   bool
	inEmoji         int
	inCustomEmoji   int
	inPageTitle     int
	inLabelIcon     int
	inFallback      int
	stickerExpected bool
	supportedCont   bool // the post has a media_supported_cont block
	fallbackLabel   bool // the post has an 'open Telegram' label inside a fallback block

	text    capture // the post text; the only capture that collects entities
	tmp     capture // small fields (views, names, titles); one at a time
	textSet bool

	errorPage                bool
	userIcon                 bool
	contextLink              string
	resolveDomain            string
	ogTitle, ogDesc, ogImage string
	prev, next, canonical    string
	moreBefore, moreAfter    int
	pageAvatar               string
	undated                  bool // a post has no date the page writes: estimateDates has work
}

func newScanner(b []byte) *scanner {
	// Bytes become text here, once: a page that is not valid UTF-8 has
	// each invalid run replaced with U+FFFD before it is read, so no text,
	// HTML or URL of the model, and no face that writes one, can carry
	// invalid UTF-8 (strict JSON decoders refuse it). utf8.Valid runs at
	// memory speed; only a broken page pays for the copy.
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	s := &scanner{z: html.NewTokenizer(bytes.NewReader(b))}
	s.z.SetMaxBuf(0)
	s.stack = make([]frame, 0, 64)
	s.posts = make([]Post, 0, 24)
	return s
}

// run walks every token once. It never loops: each iteration consumes input
// and the tokenizer reports io.EOF (or another error) at the end.
func (s *scanner) run() {
	for {
		tt := s.z.Next()
		switch tt {
		case html.ErrorToken:
			for len(s.stack) > 0 {
				s.pop()
			}
			s.endPost()
			return
		case html.TextToken:
			s.onText()
		case html.StartTagToken:
			s.onStart(false)
		case html.SelfClosingTagToken:
			s.onStart(true)
		case html.EndTagToken:
			s.onEnd()
		}
	}
}

func isVoid(a atom.Atom) bool {
	switch a {
	case atom.Br, atom.Img, atom.Input, atom.Meta, atom.Link, atom.Source, atom.Hr, atom.Wbr,
		atom.Area, atom.Base, atom.Col, atom.Embed, atom.Param, atom.Track:
		return true
	}
	return false
}

// skipAttrs lists tags whose attributes never matter: the bubble tails and
// icons are SVG with long path data.
func skipAttrs(a atom.Atom, name []byte) bool {
	switch a {
	case atom.Svg, atom.Script, atom.Style, atom.Noscript:
		return true
	case 0:
		switch string(name) {
		case "path", "g", "line", "circle", "rect", "polygon", "stop", "use", "defs", "lineargradient", "ellipse", "polyline":
			return true
		}
	}
	return false
}

func (s *scanner) readAttrs(a *attrs) {
	for more := true; more; {
		var k, v []byte
		k, v, more = s.z.TagAttr()
		switch string(k) {
		case "class":
			a.class = v
		case "href":
			a.href = v
		case "style":
			a.style = v
		case "src":
			a.src = v
		case "srcset":
			a.srcset = v
		case "data-post":
			a.dataPost = v
		case "data-view":
			a.dataView = v
		case "data-before":
			a.dataBefore = v
		case "data-after":
			a.dataAfter = v
		case "data-waveform":
			a.dataWav = v
		case "datetime":
			a.datetime = v
		case "rel":
			a.rel = v
		case "property":
			a.property = v
		case "content":
			a.content = v
		case "emoji-id":
			a.emojiID = v
		case "data-webp":
			a.dataWebp = v
		case "autoplay":
			a.autoplay = true
		case "loop":
			a.loop = true
		}
	}
}

// tagName reads the element name from the raw tag bytes ("<div class=…>",
// "</div>") without the copy TagName makes, lower-cased into buf.
func tagName(raw []byte, buf *[32]byte) []byte {
	i := 1
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '>' || c == '/' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			break
		}
		if n == len(buf) {
			return buf[:0] // longer than any element we know
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func lookupTag(name []byte) (atom.Atom, customTag) {
	tag := atom.Lookup(name)
	if tag != 0 {
		return tag, customNone
	}
	switch string(name) {
	case "tg-emoji":
		return 0, customEmoji
	case "tg-spoiler":
		return 0, customSpoiler
	}
	return 0, customOther
}

// classRole maps the element's class list to a role and modifiers.
func classRole(class []byte) (r role, m mods) {
	for len(class) > 0 {
		i := 0
		for i < len(class) && !isSpace(class[i]) {
			i++
		}
		c := class[:i]
		if i < len(class) {
			class = class[i+1:]
		} else {
			class = nil
		}
		if len(c) == 0 {
			continue
		}
		nr := roleNone
		switch string(c) {
		case "tgme_widget_message":
			nr = rolePost
		case "service_message":
			m |= modService
		case "sticker_media":
			m |= modStickerMedia
		case "not_supported":
			m |= modNotSupported
		case "tgme_reaction_paid":
			m |= modPaid
		case "audio":
			m |= modAudio
		case "verified-icon":
			m |= modVerified
			nr = roleLabelIcon
		case "scam-icon", "fake-icon":
			nr = roleLabelIcon
		case "media_supported_cont":
			m |= modSupportedCont
		case "media_not_supported_cont":
			nr = roleFallback
		case "tgme_icon_user":
			m |= modUserIcon
		case "tgme_widget_message_text":
			nr = roleText
		case "tgme_widget_message_photo_wrap":
			nr = rolePhoto
		case "tgme_widget_message_video_player":
			nr = roleVideo
		case "tgme_widget_message_video_thumb":
			nr = roleVideoThumb
		case "tgme_widget_message_video":
			nr = roleVideoTag
		case "message_video_duration":
			nr = roleDuration
		case "tgme_widget_message_voice_player":
			nr = roleVoice
		case "tgme_widget_message_voice":
			nr = roleVoiceTag
		case "tgme_widget_message_voice_duration", "tgme_widget_message_roundvideo_duration":
			nr = roleDuration
		case "tgme_widget_message_roundvideo_player":
			nr = roleRound
		case "tgme_widget_message_roundvideo":
			nr = roleRoundTag
		case "tgme_widget_message_roundvideo_thumb":
			nr = roleRoundThumb
		case "tgme_widget_message_sticker_wrap":
			nr = roleSticker
		case "tgme_widget_message_document_wrap":
			nr = roleDocument
		case "tgme_widget_message_document_title":
			nr = roleDocTitle
		case "tgme_widget_message_document_extra":
			nr = roleDocExtra
		case "tgme_widget_message_location_wrap":
			nr = roleLocation
		case "tgme_widget_message_location":
			nr = roleLocationMap
		case "tgme_widget_message_venue_title", "tgme_widget_message_location_title":
			nr = roleVenueTitle
		case "tgme_widget_message_venue_address", "tgme_widget_message_location_address":
			nr = roleVenueAddress
		case "tgme_widget_message_link_preview":
			nr = roleLinkPreview
		case "link_preview_site_name":
			nr = roleLPSite
		case "link_preview_title":
			nr = roleLPTitle
		case "link_preview_description":
			nr = roleLPDesc
		case "link_preview_image", "link_preview_right_image", "link_preview_video_thumb":
			nr = roleLPImage
		case "tgme_widget_message_poll":
			nr = rolePoll
		case "tgme_widget_message_poll_question":
			nr = rolePollQuestion
		case "tgme_widget_message_poll_type":
			nr = rolePollType
		case "tgme_widget_message_poll_option":
			nr = rolePollOption
		case "tgme_widget_message_poll_option_percent":
			nr = rolePollPercent
		case "tgme_widget_message_poll_option_text":
			nr = rolePollText
		case "tgme_widget_message_voters":
			nr = roleVoters
		case "tgme_widget_message_inline_button":
			nr = roleInlineButton
		case "tgme_widget_message_reply":
			nr = roleReply
		case "tgme_widget_message_reply_thumb":
			nr = roleReplyThumb
		case "tgme_widget_message_author_name":
			nr = roleReplyName
		case "tgme_widget_message_metatext":
			nr = roleReplyText
		case "tgme_widget_message_forwarded_from":
			nr = roleForwarded
		case "tgme_widget_message_forwarded_from_name":
			nr = roleForwardedName
		case "tgme_widget_message_reactions":
			nr = roleReactions
		case "tgme_reaction":
			nr = roleReaction
		case "emoji":
			nr = roleEmoji
		case "tgme_widget_message_views":
			nr = roleViews
		case "tgme_widget_message_from_author":
			nr = roleFromAuthor
		case "tgme_widget_message_meta":
			nr = roleMeta
		case "tgme_widget_message_date":
			nr = roleDate
		case "message_media_not_supported_label":
			nr = roleUnsupportedLabel
		case "tgme_widget_message_error":
			nr = roleError
		case "tme_messages_more":
			nr = roleMore
		case "tgme_channel_info_header":
			nr = roleChannelHeader
		case "tgme_channel_info_header_title":
			nr = roleChannelTitle
		case "tgme_channel_info_header_username":
			nr = roleChannelUsername
		case "tgme_channel_info_description":
			nr = roleChannelDesc
		case "tgme_channel_info_counter":
			nr = roleCounter
		case "counter_value":
			nr = roleCounterValue
		case "counter_type":
			nr = roleCounterType
		case "tgme_channel_info_header_labels", "tgme_header_labels":
			nr = roleLabels
		case "tgme_page_title":
			nr = rolePageTitle
		case "tgme_page_extra":
			nr = rolePageExtra
		case "tgme_page_description":
			nr = rolePageDesc
		case "tgme_page_context_link":
			nr = rolePageContext
		}
		if nr != roleNone && (r == roleNone || r == roleLabelIcon) {
			r = nr
		}
	}
	return r, m
}

func (s *scanner) onStart(selfClosing bool) {
	var nameBuf [32]byte
	name := tagName(s.z.Raw(), &nameBuf)
	tag, custom := lookupTag(name)
	if s.text.depth > 0 && s.text.withHTML {
		s.text.html = append(s.text.html, s.z.Raw()...)
	}
	if s.tmp.depth > 0 && s.tmp.withHTML {
		s.tmp.html = append(s.tmp.html, s.z.Raw()...)
	}
	var a attrs // on the stack: no write barriers for the attribute slices
	if !skipAttrs(tag, name) {
		s.readAttrs(&a)
	}
	// Past maxDepth an element is treated as empty: real pages nest about 20
	// deep, and the bound keeps end-tag matching linear on hostile markup.
	void := selfClosing || isVoid(tag) || len(s.stack) >= maxDepth

	if tag == atom.Head {
		s.inHead = true
	}
	if tag == atom.Br {
		if s.text.depth > 0 {
			s.text.lineBreak()
		}
		if s.tmp.depth > 0 {
			s.tmp.lineBreak()
		}
		return
	}
	if s.inHead || tag == atom.Meta || tag == atom.Link {
		s.onHeadTag(&a, tag)
	}

	r, m := roleNone, mods(0)
	if len(a.class) > 0 {
		r, m = classRole(a.class)
	}
	if custom == customEmoji {
		r = roleCustomEmoji
	}
	if m&modUserIcon != 0 {
		s.userIcon = true
	}
	f := frame{tag: tag, custom: custom}
	f.role = s.begin(&a, tag, custom, r, m, &f)
	if s.text.leading || s.tmp.leading {
		s.noteStart(&f, tag, a.class, void)
	}
	if void {
		s.end(&f)
		return
	}
	s.stack = append(s.stack, f)
}

// noteStart tells the open HTML captures that an element started in them.
// While a capture holds only whitespace, a div or span of Telegram's own (a
// tgme_ class, or no class at all like the dir="auto" spans) may turn out to
// wrap all of it; anything else ends the capture's leading run.
func (s *scanner) noteStart(f *frame, tag atom.Atom, class []byte, void bool) {
	eligible := !void && f.cap == nil && f.role != roleEntity && (tag == atom.Div || tag == atom.Span) &&
		(len(class) == 0 || bytes.Contains(class, []byte("tgme_")))
	for _, c := range [2]*capture{&s.text, &s.tmp} {
		if c.depth == 0 || !c.leading || f.cap == c {
			continue
		}
		// An element can wrap one capture only; the other, if open, now has content.
		if i := c.openWrapper(eligible && f.wrap == 0); i > 0 {
			f.wrap, f.wrapTmp, f.wrapGen = i, c == &s.tmp, c.gen
		}
	}
}

func (s *scanner) onHeadTag(a *attrs, tag atom.Atom) {
	switch tag {
	case atom.Link:
		switch string(a.rel) {
		case "prev":
			s.prev = string(a.href)
		case "next":
			s.next = string(a.href)
		case "canonical":
			s.canonical = string(a.href)
		}
	case atom.Meta:
		switch string(a.property) {
		case "og:title":
			s.ogTitle = string(a.content)
		case "og:description":
			s.ogDesc = string(a.content)
		case "og:image":
			s.ogImage = string(a.content)
		}
	}
}

func (s *scanner) videoTag(a *attrs) {
	md := &s.post.Content.Media[s.media-1]
	if md.Type == MediaSticker {
		setDefault(&md.URL, absURL(string(a.src)))
		return
	}
	if len(a.src) > 0 {
		md.URL = absURL(string(a.src))
	}
	if md.Type == MediaVideo && a.autoplay && a.loop {
		md.Type = MediaGIF
	}
}

func (s *scanner) onText() {
	if s.inLabelIcon > 0 {
		return // the check mark glyph is not part of a title
	}
	if s.text.depth == 0 && s.tmp.depth == 0 {
		// Text outside captures only matters for the "edited" mark.
		if n := len(s.stack); n > 0 && s.stack[n-1].role == roleMeta && s.post != nil {
			if bytes.Contains(s.z.Raw(), []byte("edited")) {
				s.post.Footer.Edited = true
			}
		}
		return
	}
	raw := s.z.Raw()
	if s.text.leading && !isBlank(raw) {
		s.text.leading = false
	}
	if s.tmp.leading && !isBlank(raw) {
		s.tmp.leading = false
	}
	if s.text.depth > 0 {
		if s.text.withHTML {
			s.text.html = append(s.text.html, raw...)
		}
		s.text.addRaw(raw)
	}
	if s.tmp.depth > 0 {
		if s.tmp.withHTML {
			s.tmp.html = append(s.tmp.html, raw...)
		}
		// A reaction's emoji is read from its own element; the text is the count.
		if s.react != nil && s.inEmoji > 0 {
			s.react.Emoji += strings.TrimSpace(unescape(raw))
			return
		}
		s.tmp.addRaw(raw)
	}
	if n := len(s.stack); n > 0 && s.stack[n-1].role == roleMeta && s.post != nil {
		if bytes.Contains(raw, []byte("edited")) {
			s.post.Footer.Edited = true
		}
	}
}

func (s *scanner) onEnd() {
	var nameBuf [32]byte
	tag, custom := lookupTag(tagName(s.z.Raw(), &nameBuf))
	if tag == atom.Head {
		s.inHead = false
	}
	// A capture's leading run holds start tags only.
	s.text.leading, s.tmp.leading = false, false
	// Find the matching open element; stray end tags are ignored.
	i := len(s.stack) - 1
	for ; i >= 0; i-- {
		if s.stack[i].tag == tag && (tag != 0 || s.stack[i].custom == custom) {
			break
		}
	}
	if i < 0 {
		if s.text.depth > 0 && s.text.withHTML {
			s.text.html = append(s.text.html, s.z.Raw()...)
		}
		return
	}
	w, wTmp, wGen := s.stack[i].wrap, s.stack[i].wrapTmp, s.stack[i].wrapGen
	for len(s.stack) > i+1 {
		s.pop()
	}
	s.pop()
	// The closing tag belongs to the inner HTML of any capture still open.
	if s.text.depth > 0 && s.text.withHTML {
		s.text.html = append(s.text.html, s.z.Raw()...)
	}
	if s.tmp.depth > 0 && s.tmp.withHTML {
		s.tmp.html = append(s.tmp.html, s.z.Raw()...)
	}
	if w > 0 {
		if wTmp {
			s.tmp.endTagAppended(w, wGen)
		} else {
			s.text.endTagAppended(w, wGen)
		}
	}
}

func (s *scanner) pop() {
	f := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	s.end(&f)
}

func (s *scanner) setCounter() {
	if s.counterValue == "" || s.counterType == "" {
		return
	}
	n, _ := ParseCount(s.counterValue)
	c := &s.channel.Counters
	switch strings.ToLower(s.counterType) {
	case "subscribers", "subscriber", "members", "member":
		c.Subscribers, c.SubscribersCount = s.counterValue, n
	case "photos", "photo":
		c.Photos, c.PhotosCount = s.counterValue, n
	case "videos", "video":
		c.Videos, c.VideosCount = s.counterValue, n
	case "files", "file":
		c.Files, c.FilesCount = s.counterValue, n
	case "links", "link":
		c.Links, c.LinksCount = s.counterValue, n
	}
	s.counterValue, s.counterType = "", ""
}

func (s *scanner) addLabel(label string) {
	for _, l := range s.channel.Labels {
		if l == label {
			return
		}
	}
	s.channel.Labels = append(s.channel.Labels, label)
}

func (s *scanner) startPost(a *attrs, m mods) {
	s.endPost()
	s.posts = append(s.posts, Post{})
	p := &s.posts[len(s.posts)-1]
	p.View = string(a.dataView)
	if ch, id, ok := strings.Cut(string(a.dataPost), "/"); ok {
		p.Channel = strings.ToLower(ch)
		p.ID = parseInt(id)
	}
	if m&modService != 0 {
		p.Service = &Service{Type: "other"}
	}
	if m&modStickerMedia != 0 {
		// A sticker Telegram cannot show on the web has no sticker element;
		// endPost adds an unavailable sticker if none was read.
		p.Content.Media = []Media{}
	}
	s.post = p
	s.media = 0
	s.react = nil
	s.option = nil
	s.textSet = false
	s.text.depth = 0
	s.tmp.depth = 0
	s.stickerExpected = m&modStickerMedia != 0
	s.supportedCont = false
	s.fallbackLabel = false
}

func (s *scanner) endPost() {
	p := s.post
	if p == nil {
		return
	}
	s.post = nil
	s.media = 0
	s.react = nil
	s.text.depth = 0
	s.tmp.depth = 0
	if s.stickerExpected {
		has := false
		for _, m := range p.Content.Media {
			if m.Type == MediaSticker {
				has = true
			}
		}
		if !has {
			p.Content.Media = append(p.Content.Media, Media{Type: MediaSticker, Available: false})
		}
	}
	if s.fallbackLabel && !s.supportedCont && len(p.Content.Media) == 0 && p.Service == nil && p.Content.Text == nil && p.Content.Poll == nil {
		// A fallback block beside a media_supported_cont stays hidden; alone,
		// in a post with nothing else, it is all the web shows.
		p.Content.Media = append(p.Content.Media, Media{Type: MediaUnsupported, Available: false})
	}
	if len(p.Content.Media) == 0 {
		p.Content.Media = nil
	}
	if len(p.Content.Reacts) == 0 {
		p.Content.Reacts = nil // a reactions block with none read is no reactions
	}
	if p.Service != nil {
		if p.Content.Text != nil {
			p.Service.Text = p.Content.Text.String
		}
		p.Service.Type = serviceType(p.Service.Text)
	}
	if p.ID == 0 {
		// t.me sometimes writes data-post="<channel>/" and a date link
		// without the number; data-view still names the message. Decoded
		// only here, so posts that carry their number pay nothing for it.
		p.ID, _ = viewFacts(p.View)
	}
	if p.ID == 0 && p.Footer.Date.Unix == 0 && p.Content.Text == nil && len(p.Content.Media) == 0 {
		// an empty shell (e.g. a widget template): drop it
		s.posts = s.posts[:len(s.posts)-1]
		return
	}
	if p.Footer.Date.String == "" {
		s.undated = true
	}
}

func (s *scanner) setDate(dt string) {
	t, err := time.Parse(time.RFC3339, dt)
	if err != nil {
		return
	}
	if s.post.Footer.Date.Unix != 0 {
		return
	}
	// The string is the page's own, offset included ("+00:00"), as
	// telegram-me passes it on; Unix is the instant it names.
	s.post.Footer.Date = Date{String: dt, Unix: t.Unix()}
}

func serviceType(text string) string {
	t := strings.ToLower(text)
	switch {
	case strings.Contains(t, "pinned"):
		return "pinned"
	case strings.Contains(t, "created"):
		return "channel_created"
	case strings.Contains(t, "name was changed") || strings.Contains(t, "title") || strings.Contains(t, "renamed"):
		return "title_changed"
	case strings.Contains(t, "photo") && strings.Contains(t, "removed"):
		return "photo_removed"
	case strings.Contains(t, "photo"):
		return "photo_changed"
	case strings.Contains(t, "video"):
		return "video_changed"
	}
	return "other"
}

func entityType(tag atom.Atom, custom customTag, class []byte) EntityKind {
	switch tag {
	case atom.B, atom.Strong:
		return EntityBold
	case atom.I, atom.Em:
		return EntityItalic
	case atom.U, atom.Ins:
		return EntityUnderline
	case atom.S, atom.Strike, atom.Del:
		return EntityStrikethrough
	case atom.Code:
		return EntityCode
	case atom.Pre:
		return EntityPre
	case atom.Blockquote:
		return EntityBlockquote
	case atom.A:
		return entityLink // classified when it closes, from its text
	case atom.Span:
		if bytes.Contains(class, []byte("tg-spoiler")) {
			return EntitySpoiler
		}
	}
	if custom == customSpoiler {
		return EntitySpoiler
	}
	return ""
}

func firstClassWithSuffix(class, suffix string) string {
	for _, c := range strings.Fields(class) {
		if strings.HasSuffix(c, suffix) {
			return c
		}
	}
	return ""
}

func firstSrc(srcset string) string {
	s := strings.TrimSpace(srcset)
	if i := strings.IndexAny(s, " ,"); i >= 0 {
		s = s[:i]
	}
	return absURL(s)
}

// postIDFromURL reads 123 from "https://t.me/channel/123" or "/channel/123?single".
func postIDFromURL(u string) int {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	u = strings.TrimSuffix(u, "/")
	i := strings.LastIndexByte(u, '/')
	if i < 0 {
		return 0
	}
	return parseInt(u[i+1:])
}

func channelFromURL(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	u = strings.TrimPrefix(u, "t.me/")
	u = strings.TrimPrefix(u, "s/")
	if i := strings.IndexByte(u, '/'); i > 0 {
		return strings.ToLower(u[:i])
	}
	return ""
}

// cursorFrom reads N from "/s/durov?before=N".
func cursorFrom(href, key string) int {
	i := strings.Index(href, key+"=")
	if i < 0 {
		return 0
	}
	v := href[i+len(key)+1:]
	if j := strings.IndexByte(v, '&'); j >= 0 {
		v = v[:j]
	}
	return parseInt(v)
}

// coordsFromMapURL reads "q=-23.93,-44.08" from a maps link.
func coordsFromMapURL(u string) (lat, lon float64) {
	for _, key := range [...]string{"q=", "ll="} {
		i := strings.Index(u, key)
		if i < 0 {
			continue
		}
		v := u[i+len(key):]
		if j := strings.IndexByte(v, '&'); j >= 0 {
			v = v[:j]
		}
		a, b, ok := strings.Cut(v, ",")
		if !ok {
			continue
		}
		la, err1 := strconv.ParseFloat(a, 64)
		lo, err2 := strconv.ParseFloat(b, 64)
		if err1 == nil && err2 == nil && la >= -90 && la <= 90 && lo >= -180 && lo <= 180 {
			return la, lo
		}
	}
	return 0, 0
}
