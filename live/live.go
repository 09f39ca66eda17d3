// Package live keeps channels' newest pages fresh and tells subscribers
// what changed on them. A Hub holds the subscriptions of one process; its
// updater refreshes the popular and the watched channels shortly before
// their refresh point, and the process that fetched a changed page (the
// cache lease holder) compares it with the copy it replaces and publishes
// the resulting events in a Log that every process reads (a Valkey stream
// when there are several), which subscribers that reconnect resume from.
// See docs/live.md.
package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmefeed/tmefeed/feed"
	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/parser"
	"github.com/tmefeed/tmefeed/tme"
)

// Kind is what happened to a post.
type Kind string

const (
	// The constructor is New, so the kinds carry the type's name.
	KindNew     Kind = "NEW"     // a post newer than any the page showed
	KindEdited  Kind = "EDITED"  // a post whose content changed (see Edit and docs/live.md)
	KindRemoved Kind = "REMOVED" // a post gone from within the page's range of ids
)

// Event is one change of one post.
type Event struct {
	// ID orders the event among every process's (see Log); zero for an
	// event delivered by its finder alone because the log failed.
	ID      EventID
	Kind    Kind
	Channel *parser.Channel // the channel's header as on the page the change was seen on
	Post    *parser.Post    // for Removed: the post as last seen
}

// Request asks for the events of some channels.
type Request struct {
	// Channels are usernames as the user wrote them ("@Durov", "durov"):
	// Subscribe normalizes them with tme.NormalizeUsername; duplicates
	// are ignored.
	Channels []string
	// Filter keeps the posts feed's filter keeps.
	Filter feed.Filter
	// After, when set, resumes a subscription: the backlog's events after
	// this id come first (Subscription.Replay), then the live ones after
	// them, none twice. An id in the format the events carry; a malformed
	// one is ErrBadEventID.
	After string
	// Client is who subscribes (tme.Request.Client): the updater
	// ranks a channel by the distinct clients that read or watch it, so
	// many subscriptions of one client count once. "" is nobody's.
	Client string
}

var (
	// ErrSlowSubscriber: the subscriber let Config.Buffer events pile up
	// unread and was closed, so that it slows nobody else.
	ErrSlowSubscriber = errors.New("live: subscriber fell behind; too many events unread")
	// ErrClosed: the hub is shutting down.
	ErrClosed = errors.New("live: shutting down")
	// ErrTooManyChannels: a request for more than Config.MaxChannels
	// channels. It also matches feed.ErrBadRequest.
	ErrTooManyChannels = errors.New("live: too many channels")
)

// Defaults for zero Config fields.
const (
	DefaultMaxChannels = 100
	DefaultBuffer      = 64
)

// Config configures a Hub.
type Config struct {
	// Pages is the page service whose channels the Hub watches; New makes
	// the Hub its Watcher, and the updater ranks channels by the reads it
	// counts (pages.Popularity). Required.
	Pages *pages.Service
	// Log records every event, in order, for every process to deliver
	// and for subscribers to resume from (a Valkey stream when processes
	// share one). nil: an in-process MemoryLog bounded by Backlog.
	Log Log
	// Backlog bounds the in-process log when Log is nil, and the entries
	// one resume reads from either.
	Backlog MemoryLogConfig
	// MaxChannels bounds the channels of one subscription.
	MaxChannels int
	// Buffer is how many events a subscriber may leave unread before it is
	// closed with ErrSlowSubscriber.
	Buffer int
	// Refresh is the cache's refresh point (CACHE_MODE); 0 (nothing is
	// cached) turns the updater off.
	Refresh time.Duration
	// Updater tunes the background updater.
	Updater UpdaterConfig
	Logger  *slog.Logger // nil means slog.Default()
	Now     func() time.Time
}

// Hub delivers events to the subscriptions of one process. It is safe for
// concurrent use.
type Hub struct {
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	rec  Log
	upd  *updater
	diff chan pages.Change
	feed atomic.Pointer[FeedCache] // nil until TellFeeds

	mu     sync.RWMutex
	subs   map[string]map[*Subscription]struct{} // channel → its subscribers
	nsubs  int
	closed bool

	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	changes, dropped, published, delivered, slow, publishErrors atomic.Uint64
	queued                                                      atomic.Int64 // bytes of the replaced pages waiting in diff
}

// Stats is a snapshot of a Hub's state and counters.
type Stats struct {
	Subscribers   int // open subscriptions
	Watched       int // distinct channels they watch
	Updater       UpdaterStats
	Changes       uint64 // changed newest pages this process fetched and compared
	Dropped       uint64 // changes not compared because the queue was full
	Published     uint64 // events this process found and sent
	Delivered     uint64 // events handed to subscribers of this process
	SlowClosed    uint64 // subscriptions closed with ErrSlowSubscriber
	PublishErrors uint64
	QueuedBytes   int64 // replaced pages' bytes waiting to be compared (at most 4 MiB)
}

// New returns a running Hub and makes it cfg.Pages's Watcher; its
// updater has cfg.Pages count the reads of newest pages.
func New(cfg Config) (*Hub, error) {
	if cfg.Pages == nil {
		return nil, errors.New("live: Config.Pages is required")
	}
	if cfg.MaxChannels < 0 || cfg.Buffer < 0 || cfg.Refresh < 0 {
		return nil, fmt.Errorf("live: negative Config value")
	}
	defaults.Set(&cfg.MaxChannels, DefaultMaxChannels)
	defaults.Set(&cfg.Buffer, DefaultBuffer)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Hub{
		cfg:  cfg,
		log:  cfg.Logger,
		now:  cfg.Now,
		rec:  cfg.Log,
		diff: make(chan pages.Change, 256),
		subs: map[string]map[*Subscription]struct{}{},
	}
	if h.rec == nil {
		bl := cfg.Backlog
		if bl.Now == nil {
			bl.Now = cfg.Now
		}
		h.rec = NewMemoryLog(bl)
	}
	h.base, h.cancel = context.WithCancel(context.Background())
	upd, err := newUpdater(h, cfg.Updater)
	if err != nil {
		return nil, err
	}
	h.upd = upd
	h.wg.Go(h.compare)
	h.wg.Go(h.receive)
	if h.upd != nil {
		h.wg.Go(h.upd.run)
	}
	cfg.Pages.Watch(h)
	return h, nil
}

// NewestChanged implements pages.Watcher. The page is in the cache by
// now, so that a feed rebuilt on the news (FeedCache) reads the new copy.
// The change is compared on the Hub's own goroutine, never on the path of
// the request that fetched it.
// The queue is bounded by the bytes it holds as well as by its length:
// each change holds the replaced page's bytes until it is compared.
func (h *Hub) NewestChanged(c pages.Change) {
	n := int64(len(c.Prev))
	if h.queued.Add(n) > maxQueuedBytes {
		h.queued.Add(-n)
		h.dropped.Add(1)
		return
	}
	select {
	case h.diff <- c:
	default:
		h.queued.Add(-n)
		h.dropped.Add(1)
	}
}

// compare turns changed pages into events and sends them.
func (h *Hub) compare() {
	for {
		select {
		case <-h.base.Done():
			return
		case c := <-h.diff:
			h.queued.Add(-int64(len(c.Prev)))
			h.changes.Add(1)
			prev, err := parser.ParseBody(c.Prev)
			if err != nil {
				continue // the replaced copy was a page once; cannot happen short of corruption
			}
			events := Diff(prev, c.Next)
			if len(events) == 0 {
				continue
			}
			h.published.Add(uint64(len(events)))
			h.send(c.Channel, events)
		}
	}
}

// send records events in the log, whence every process (this one too)
// delivers them; when recording fails the finder delivers them here,
// without ids.
func (h *Hub) send(channel string, events []Event) {
	msgs := make([][]byte, len(events))
	var err error
	for i := range events {
		if msgs[i], err = encode(channel, events[i:i+1]); err != nil {
			break
		}
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(h.base, publishTimeout)
		_, err = h.rec.Append(ctx, msgs)
		cancel()
		if err == nil {
			return // delivered here when receive reads it
		}
	}
	h.publishErrors.Add(1)
	h.log.Warn("live: recording events failed; delivering in this process only", "channel", channel, "err", err)
	h.deliver(channel, events)
}

// publishTimeout bounds one Append.
const publishTimeout = 2 * time.Second

// maxQueuedBytes bounds the replaced pages waiting to be compared (a page
// is about 100 KB). Beyond it a change is dropped and counted: its posts
// reach subscribers with the next change of that page.
const maxQueuedBytes = 4 << 20

// readWait is how long one Log.Read waits for news; readBatch how many
// entries it takes at most.
const (
	readWait  = 5 * time.Second
	readBatch = 256
)

// receive delivers the log's entries, in order, to this process's
// subscribers, from the newest held when the Hub started. A failed read
// is retried from the last entry delivered, so a blip of the connection
// to Valkey loses nothing the log still holds.
func (h *Hub) receive() {
	last := "0-0"
	for {
		_, l, _, err := h.rec.Bounds(h.base)
		if err == nil {
			last = l
			break
		}
		h.log.Warn("live: reading the event log's bounds failed; retrying", "err", err)
		if !h.pause(time.Second) {
			return
		}
	}
	for {
		ids, msgs, err := h.rec.Read(h.base, last, readBatch, readWait)
		if h.base.Err() != nil {
			return
		}
		if err != nil {
			h.log.Warn("live: reading the event log failed; retrying", "err", err)
			if !h.pause(time.Second) {
				return
			}
			continue
		}
		var batch []Event
		var batchCh string
		for i := range ids {
			last = ids[i]
			id, err := ParseEventID(ids[i])
			channel, evs, derr := decode(msgs[i])
			if err = cmp.Or(err, derr); err != nil {
				h.log.Warn("live: unreadable event", "id", ids[i], "err", err)
				continue
			}
			for j := range evs {
				evs[j].ID = id
			}
			if channel != batchCh && len(batch) > 0 {
				h.deliver(batchCh, batch)
				batch = nil
			}
			batchCh = channel
			batch = append(batch, evs...)
		}
		if len(batch) > 0 {
			h.deliver(batchCh, batch)
		}
	}
}

// pause waits d unless the Hub closes first (false).
func (h *Hub) pause(d time.Duration) bool {
	select {
	case <-h.base.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// FeedCache keeps feeds built from channels' pages; *feed.Service is one.
type FeedCache interface {
	// Changed: channel's newest page changed; feeds built from the copy
	// before must not be served unchecked any more.
	Changed(channel string)
}

// TellFeeds makes f hear of every channel whose events this process
// delivers, before its subscribers do: a client that refetches a feed on
// an event (the widget does) then gets the feed with the change, not one
// kept from the page before, which would still count as fresh until its
// refresh point. nil: none.
func (h *Hub) TellFeeds(f FeedCache) {
	if f == nil {
		h.feed.Store(nil)
		return
	}
	h.feed.Store(&f)
}

// deliver hands events to the channel's subscribers whose filter keeps
// their post. Sends never block: a full buffer closes its subscriber.
func (h *Hub) deliver(channel string, events []Event) {
	if f := h.feed.Load(); f != nil {
		(*f).Changed(channel)
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.subs[channel] {
		for i := range events {
			if !s.match.Match(events[i].Post) || events[i].Kind == KindNew && s.since != 0 && events[i].Post.Footer.Date.Unix < s.since {
				continue
			}
			if !s.send(events[i]) {
				break
			}
			h.delivered.Add(1)
		}
	}
}

// Subscribe opens a subscription to the events of req's channels. It ends
// when ctx ends, when the Hub closes, or when the subscriber falls behind;
// Err then says which.
func (h *Hub) Subscribe(ctx context.Context, req Request) (*Subscription, error) {
	var channels []string
	for _, raw := range req.Channels {
		name, err := tme.NormalizeUsername(raw)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(channels, name) {
			channels = append(channels, name)
		}
	}
	switch {
	case len(channels) == 0:
		return nil, fmt.Errorf("%w: no channels", feed.ErrBadRequest)
	case len(channels) > h.cfg.MaxChannels:
		return nil, fmt.Errorf("%w: %d channels, at most %d: %w", ErrTooManyChannels, len(channels), h.cfg.MaxChannels, feed.ErrBadRequest)
	}
	var after EventID
	if req.After != "" {
		var err error
		if after, err = ParseEventID(req.After); err != nil {
			return nil, fmt.Errorf("%w: %w", err, feed.ErrBadRequest)
		}
	}
	m, err := feed.CompileFilter(req.Filter)
	if err != nil {
		return nil, err
	}
	s := &Subscription{hub: h, channels: channels, match: m, events: make(chan Event, h.cfg.Buffer),
		since: h.now().Add(-postDateSlack).Unix(), client: pages.ClientID(req.Client)}
	if req.After != "" {
		// A resumer was subscribed all along: every event after its last
		// is news to it, whatever its post's date. Live events wait in
		// held until the backlog is read.
		s.since, s.resuming, s.head = 0, true, after
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	for _, ch := range channels {
		set := h.subs[ch]
		if set == nil {
			set = map[*Subscription]struct{}{}
			h.subs[ch] = set
		}
		set[s] = struct{}{}
	}
	h.nsubs++
	h.mu.Unlock()
	if h.upd != nil {
		h.upd.wake()
	}
	stop := context.AfterFunc(ctx, func() { h.remove(s, nil) })
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	if s.resuming {
		h.replay(ctx, s, after)
	}
	return s, nil
}

// maxReplay bounds the entries one resume reads: a backlog's worth.
func (h *Hub) maxReplay() int {
	if ml, ok := h.rec.(*MemoryLog); ok {
		return ml.cfg.MaxLen
	}
	if h.cfg.Backlog.MaxLen > 0 {
		return h.cfg.Backlog.MaxLen
	}
	return DefaultBacklogLen
}

// replay reads the log's entries after id for s, subscribed already, and
// then lets its live events through from the last entry read on: an event
// both read here and delivered live is sent once, and none delivered
// meanwhile is lost (they wait in s.held).
func (h *Hub) replay(ctx context.Context, s *Subscription, after EventID) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	head := after
	var replay []Event
	first, last, ok, err := h.rec.Bounds(ctx)
	gap := err != nil || missed(after, first, last, ok)
	for n := 0; err == nil && n < h.maxReplay(); {
		var ids []string
		var msgs [][]byte
		ids, msgs, err = h.rec.Range(ctx, head.String(), min(readBatch, h.maxReplay()-n))
		if err != nil || len(ids) == 0 {
			break
		}
		n += len(ids)
		for i := range ids {
			id, perr := ParseEventID(ids[i])
			channel, evs, derr := decode(msgs[i])
			if perr != nil {
				continue
			}
			head = id
			if derr != nil || !slices.Contains(s.channels, channel) {
				continue
			}
			for _, ev := range evs {
				if s.match.Match(ev.Post) {
					ev.ID = id
					replay = append(replay, ev)
				}
			}
		}
	}
	if err != nil {
		gap = true
		h.log.Warn("live: reading the backlog for a resuming subscriber failed", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replay, s.gap, s.head, s.resuming = replay, gap, head, false
	for _, e := range s.held {
		if !s.done && (e.ID.IsZero() || e.ID.Compare(head) > 0) {
			s.events <- e // held is at most cap(events), and events is empty yet
		}
	}
	s.held = nil
}

// remove ends s with err (nil: its ctx ended) unless it has ended.
func (h *Hub) remove(s *Subscription, err error) {
	h.mu.Lock()
	h.unlink(s)
	h.mu.Unlock()
	s.end(err)
}

// unlink drops s from the index; called with mu held.
func (h *Hub) unlink(s *Subscription) {
	removed := false
	for _, ch := range s.channels {
		if set := h.subs[ch]; set != nil {
			if _, ok := set[s]; ok {
				removed = true
				delete(set, s)
			}
			if len(set) == 0 {
				delete(h.subs, ch)
			}
		}
	}
	if removed {
		h.nsubs--
	}
}

// watched lists the channels with a subscriber in this process, each
// with the client buckets (see pages.ClientSet) of its subscribers.
func (h *Hub) watched() map[string]pages.ClientSet {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]pages.ClientSet, len(h.subs))
	for ch, set := range h.subs {
		var cs pages.ClientSet
		for s := range set {
			cs.Add(s.client)
		}
		out[ch] = cs
	}
	return out
}

// Close closes every subscription with ErrClosed, stops the updater and
// waits for the Hub's goroutines. The page service keeps working without
// a Watcher.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	var all []*Subscription
	for _, set := range h.subs {
		for s := range set {
			if !slices.Contains(all, s) {
				all = append(all, s)
			}
		}
	}
	clear(h.subs)
	h.nsubs = 0
	h.mu.Unlock()
	for _, s := range all {
		s.end(ErrClosed)
	}
	h.cfg.Pages.Watch(nil)
	if h.upd != nil {
		h.cfg.Pages.StopPopularity(h.upd.popular)
	}
	h.cancel()
	h.wg.Wait()
}

// Stats returns the Hub's state and counters.
func (h *Hub) Stats() Stats {
	h.mu.RLock()
	st := Stats{Subscribers: h.nsubs, Watched: len(h.subs)}
	h.mu.RUnlock()
	if h.upd != nil {
		st.Updater = h.upd.stats()
	}
	st.Changes = h.changes.Load()
	st.Dropped = h.dropped.Load()
	st.Published = h.published.Load()
	st.Delivered = h.delivered.Load()
	st.SlowClosed = h.slow.Load()
	st.PublishErrors = h.publishErrors.Load()
	st.QueuedBytes = h.queued.Load()
	return st
}

// postDateSlack is how much older than its subscription a NEW post may be
// dated and still be sent. A refresh compares the page with the copy held
// before it, which may be older than the subscription; posts published
// before the subscriber came were there when it began, so they are not
// sent. Post dates have whole seconds and clocks drift a little.
const postDateSlack = 2 * time.Second

// Subscription is one subscriber's stream of events.
type Subscription struct {
	hub      *Hub
	channels []string
	match    feed.Matcher
	since    int64  // Unix seconds: NEW posts dated before are not news to this subscriber; 0: all are
	client   uint64 // pages.ClientID of Request.Client
	events   chan Event
	stop     func() bool

	mu   sync.Mutex // orders sends against closing events
	done bool
	err  error

	// Resuming (Request.After): live events wait in held while the
	// backlog is read; then only those after head are sent.
	resuming bool
	held     []Event
	head     EventID
	replay   []Event
	gap      bool
}

// Replay returns, for a resumed subscription (Request.After), the
// backlog's events after the id it gave, in order, before anything on
// Events; and gap reports that the backlog no longer held every event
// after that id (it was older than the backlog's bounds, or reading the
// backlog failed), so some may be missing.
func (s *Subscription) Replay() (events []Event, gap bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replay, s.gap
}

// Events delivers the subscription's events. It is closed when the
// subscription's ctx ends, when the Hub closes, or when the subscriber fell
// behind.
func (s *Subscription) Events() <-chan Event { return s.events }

// Err says why Events was closed: nil when the ctx ended,
// ErrSlowSubscriber or ErrClosed. Before that it is nil.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Channels are the normalized channels the subscription watches.
func (s *Subscription) Channels() []string { return slices.Clone(s.channels) }

// send hands e to the subscriber without blocking; false if the
// subscription is over (then or before).
func (s *Subscription) send(e Event) bool {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return false
	}
	if !e.ID.IsZero() && !s.head.IsZero() && e.ID.Compare(s.head) <= 0 {
		s.mu.Unlock()
		return true // replayed already, or before the id resumed from
	}
	full := false
	if s.resuming {
		if full = len(s.held) == cap(s.events); !full {
			s.held = append(s.held, e)
			s.mu.Unlock()
			return true
		}
	}
	if !full {
		select {
		case s.events <- e:
			s.mu.Unlock()
			return true
		default:
		}
	}
	s.mu.Unlock()
	// Full: the subscriber fell behind. Unlinking takes the Hub's write
	// lock, which deliver (holding the read lock) would deadlock on.
	s.hub.slow.Add(1)
	s.end(ErrSlowSubscriber)
	go s.hub.remove(s, ErrSlowSubscriber)
	return false
}

// end closes events with err, once.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done, s.err = true, err
	close(s.events)
	if s.stop != nil {
		s.stop()
	}
}
