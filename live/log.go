package live

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Log is the bounded, ordered record of the events every process finds:
// the backlog a subscriber that reconnects resumes from. Each entry's id
// orders it among all entries: "<unix ms>-<seq>", Valkey stream ids
// (cache.ValkeyStream is a Log over a Valkey stream); the Hub keeps one in
// memory (NewMemoryLog) when it has none. Entries are dropped oldest first
// beyond a count and an age.
type Log interface {
	// Append records msgs in order and returns their ids.
	Append(ctx context.Context, msgs [][]byte) (ids []string, err error)
	// Read returns up to count entries after id, waiting up to wait for
	// one when there is none (then it returns none).
	Read(ctx context.Context, after string, count int, wait time.Duration) (ids []string, msgs [][]byte, err error)
	// Range returns up to count entries after id at once.
	Range(ctx context.Context, after string, count int) (ids []string, msgs [][]byte, err error)
	// Bounds returns the oldest id held ("" when none) and the newest id
	// given ("0-0" when none); ok is false when the log holds no record
	// at all (a Valkey that lost its data, or has never held events).
	Bounds(ctx context.Context) (first, last string, ok bool, err error)
}

// logEntry is one event as the MemoryLog holds it.
type logEntry struct {
	ID  EventID
	Msg []byte
}

// EventID orders events among every process: the Unix milliseconds of its
// record and a sequence within them, as Valkey stream ids are.
type EventID struct {
	Ms, Seq uint64
}

// ErrBadEventID: an event id that is not "<ms>-<seq>". It also matches
// feed's ErrBadRequest through Subscribe.
var ErrBadEventID = errors.New("live: malformed event id")

// ParseEventID reads an id as String writes it.
func ParseEventID(s string) (EventID, error) {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok || len(s) > 41 {
		return EventID{}, fmt.Errorf("%w: %q: want <ms>-<seq>, as the events carry", ErrBadEventID, clipID(s))
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil {
		return EventID{}, fmt.Errorf("%w: %q: want <ms>-<seq>, as the events carry", ErrBadEventID, clipID(s))
	}
	return EventID{a, b}, nil
}

func clipID(s string) string {
	if len(s) > 48 {
		return s[:48] + "…"
	}
	return s
}

func (id EventID) String() string {
	return strconv.FormatUint(id.Ms, 10) + "-" + strconv.FormatUint(id.Seq, 10)
}

// IsZero: no id ("0-0" is below every entry's).
func (id EventID) IsZero() bool { return id == EventID{} }

// Compare orders ids: -1, 0 or +1.
func (id EventID) Compare(o EventID) int {
	switch {
	case id.Ms < o.Ms || id.Ms == o.Ms && id.Seq < o.Seq:
		return -1
	case id == o:
		return 0
	}
	return 1
}

// Defaults of a backlog's bounds (LIVE_BACKLOG, LIVE_BACKLOG_AGE).
const (
	DefaultBacklogLen = 10_000
	DefaultBacklogAge = 5 * time.Minute
)

// MemoryLogConfig bounds a MemoryLog.
type MemoryLogConfig struct {
	MaxLen int           // entries held at most; 0: DefaultBacklogLen
	MaxAge time.Duration // older entries are dropped; 0: DefaultBacklogAge
	Now    func() time.Time
}

// MemoryLog is a Log in one process: a ring of the newest entries.
type MemoryLog struct {
	cfg MemoryLogConfig

	mu      sync.Mutex
	entries []logEntry // oldest first
	last    EventID
	grew    chan struct{} // closed and replaced on Append
}

// NewMemoryLog returns an empty log. Its ids start after the moment it was
// made, so an id from before (another process, one restarted) is older
// than anything it could hold: Bounds tells a resumer that much is lost.
func NewMemoryLog(cfg MemoryLogConfig) *MemoryLog {
	if cfg.MaxLen <= 0 {
		cfg.MaxLen = DefaultBacklogLen
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultBacklogAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &MemoryLog{cfg: cfg, last: EventID{Ms: uint64(cfg.Now().UnixMilli())}, grew: make(chan struct{})}
}

func (l *MemoryLog) Append(_ context.Context, msgs [][]byte) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, len(msgs))
	now := uint64(l.cfg.Now().UnixMilli())
	for i, m := range msgs {
		if now > l.last.Ms {
			l.last = EventID{Ms: now}
		} else {
			l.last.Seq++
		}
		l.entries = append(l.entries, logEntry{ID: l.last, Msg: m})
		ids[i] = l.last.String()
	}
	l.trim(now)
	close(l.grew)
	l.grew = make(chan struct{})
	return ids, nil
}

// trim drops entries beyond the bounds; mu held.
func (l *MemoryLog) trim(now uint64) {
	drop := max(0, len(l.entries)-l.cfg.MaxLen)
	floor := now - min(now, uint64(l.cfg.MaxAge.Milliseconds()))
	for drop < len(l.entries) && l.entries[drop].ID.Ms < floor {
		drop++
	}
	if drop > 0 {
		l.entries = append(l.entries[:0:0], l.entries[drop:]...)
	}
}

// after returns up to count entries after id; mu held.
func (l *MemoryLog) after(id EventID, count int) (ids []string, msgs [][]byte) {
	l.trim(uint64(l.cfg.Now().UnixMilli()))
	i, j := 0, len(l.entries)
	for i < j { // the first entry after id
		h := (i + j) / 2
		if l.entries[h].ID.Compare(id) <= 0 {
			i = h + 1
		} else {
			j = h
		}
	}
	for _, e := range l.entries[i:min(i+max(count, 0), len(l.entries))] {
		ids, msgs = append(ids, e.ID.String()), append(msgs, e.Msg)
	}
	return ids, msgs
}

func (l *MemoryLog) Read(ctx context.Context, after string, count int, wait time.Duration) ([]string, [][]byte, error) {
	id, err := ParseEventID(after)
	if err != nil {
		return nil, nil, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		l.mu.Lock()
		ids, msgs := l.after(id, count)
		grew := l.grew
		l.mu.Unlock()
		if len(ids) > 0 {
			return ids, msgs, nil
		}
		select {
		case <-grew:
		case <-t.C:
			return nil, nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (l *MemoryLog) Range(_ context.Context, after string, count int) ([]string, [][]byte, error) {
	id, err := ParseEventID(after)
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ids, msgs := l.after(id, count)
	return ids, msgs, nil
}

func (l *MemoryLog) Bounds(context.Context) (first, last string, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trim(uint64(l.cfg.Now().UnixMilli()))
	if len(l.entries) > 0 {
		first = l.entries[0].ID.String()
	}
	return first, l.last.String(), true, nil
}

// missed reports whether a resumer after id may have lost events that the
// log dropped (or never held) given its bounds: held entries start at
// first, or none are held and the newest given was last.
func missed(after EventID, first, last string, ok bool) bool {
	f, ferr := ParseEventID(first)
	l, lerr := ParseEventID(last)
	switch {
	case !ok || first != "" && ferr != nil || first == "" && lerr != nil:
		return true
	case first != "":
		// after was an event's id: below the oldest held, it and what
		// followed it were dropped (perhaps only it: said anyway).
		return after.Compare(f) < 0
	}
	return after.Compare(l) < 0
}
