package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tmefeed/tmefeed/fault"
)

// Defaults of TarpitConfig's zero fields.
const (
	DefaultTarpitHold      = time.Second
	DefaultTarpitPerClient = 64
	DefaultTarpitTotal     = 2048
	// DefaultTarpitMistakes is how many answers to a client's own mistakes
	// (bad input, a name that is not there) within a second are answered at
	// once; the next ones that second are held. A person or a program
	// being written makes a few; a closed loop of bad requests makes
	// hundreds.
	DefaultTarpitMistakes = 10
)

// TarpitConfig configures the holding of refusals (see tarpit).
type TarpitConfig struct {
	// Hold is the longest a refusal is held: it is held for its
	// Retry-After, up to Hold. 0 means DefaultTarpitHold; negative
	// answers every refusal at once.
	Hold time.Duration
	// PerClient bounds the refusals one client has held at once; beyond,
	// its refusals are answered at once. 0 means DefaultTarpitPerClient.
	PerClient int
	// Total bounds the refusals held at once over all clients. 0 means
	// DefaultTarpitTotal.
	Total int
	// Mistakes is how many answers to a client's own mistakes within a
	// second are sent at once; beyond, they are held for Hold. 0 means
	// DefaultTarpitMistakes.
	Mistakes int
	// After is the tarpit's timer; nil means time.After. Tests release
	// holds with it.
	After func(time.Duration) <-chan time.Time
	// Now is the clock mistakes are counted by; nil means time.Now.
	Now func() time.Time
}

// tarpit holds the answers of requests refused for budget reasons
// (RATE_LIMIT_RPM, CLIENT_ORIGIN_RPM: the client's own) for their
// Retry-After, up to a second, before they are sent. A refusal costs the
// server little, but a client that sends again as soon as it is answered
// (an attacker's closed loop) turns cheap refusals into a flood that
// takes the cores from every other client; held, its connections wait
// instead, and a flood of refusals is a few requests a second per
// connection. Only refusals are held: a cached answer, or any answer
// that was not refused, is never delayed. The holds are bounded per
// client and in total, so that they stay a few kilobytes of goroutine
// and buffer each: beyond the bounds a refusal is answered at once.
//
// The same holds a client's answers to its own mistakes (bad input, a
// name that is not there) once it makes more than a few a second: such
// an answer costs a millisecond of parsing and checking, and a closed
// loop of them takes the cores as a flood of refusals does.
type tarpit struct {
	hold      time.Duration
	perClient int
	total     int
	mistakes  int
	after     func(time.Duration) <-chan time.Time
	now       func() time.Time

	mu   sync.Mutex
	held map[string]int // client → refusals held; absent when none
	n    int            // refusals held
	// made counts each client's mistakes in its current second; only
	// clients that made one are here, and seconds past are dropped as the
	// map grows.
	made map[string]mistakes
}

type mistakes struct {
	since time.Time // the start of the second counted
	n     int
}

// maxMistakeClients bounds made between prunings.
const maxMistakeClients = 4096

// newTarpit returns nil when cfg turns holding off.
func newTarpit(cfg TarpitConfig) *tarpit {
	if cfg.Hold < 0 {
		return nil
	}
	t := &tarpit{
		hold:      cfg.Hold,
		perClient: cfg.PerClient,
		total:     cfg.Total,
		mistakes:  cfg.Mistakes,
		after:     cfg.After,
		now:       cfg.Now,
		held:      map[string]int{},
		made:      map[string]mistakes{},
	}
	if t.mistakes <= 0 {
		t.mistakes = DefaultTarpitMistakes
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.hold == 0 {
		t.hold = DefaultTarpitHold
	}
	if t.perClient <= 0 {
		t.perClient = DefaultTarpitPerClient
	}
	if t.total <= 0 {
		t.total = DefaultTarpitTotal
	}
	if t.after == nil {
		t.after = time.After
	}
	return t
}

// repeatedMistake counts a mistake of client's and reports whether it
// is beyond the few a second answered at once.
func (t *tarpit) repeatedMistake(client string) bool {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.made[client]
	if !ok || now.Sub(m.since) >= time.Second {
		if !ok && len(t.made) >= maxMistakeClients {
			for c, old := range t.made {
				if now.Sub(old.since) >= time.Second {
					delete(t.made, c)
				}
			}
		}
		m = mistakes{since: now}
	}
	m.n++
	if ok || len(t.made) < maxMistakeClients {
		t.made[client] = m
	}
	return m.n > t.mistakes
}

// holdFor is how long a refusal with Retry-After header value ra is held:
// its seconds, up to the tarpit's hold; the hold when it has none (an
// answer carrying refusals for some of its parts).
func (t *tarpit) holdFor(ra string) time.Duration {
	secs, err := strconv.Atoi(ra)
	if err != nil || secs <= 0 {
		return t.hold
	}
	return min(time.Duration(secs)*time.Second, t.hold)
}

// wait holds client's refusal for d, or until ctx ends (the client went
// away). It reports whether the refusal was held: not when the client,
// or the tarpit, holds as many as it may.
func (t *tarpit) wait(ctx context.Context, client string, d time.Duration) bool {
	t.mu.Lock()
	if t.n >= t.total || t.held[client] >= t.perClient {
		t.mu.Unlock()
		return false
	}
	t.n++
	t.held[client]++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.n--
		if t.held[client]--; t.held[client] == 0 {
			delete(t.held, client)
		}
		t.mu.Unlock()
	}()
	select {
	case <-t.after(d):
	case <-ctx.Done():
	}
	return true
}

// refusedForBudget reports whether the answer to the request with record
// info, of status, is or carries a refusal for budget reasons: the
// client's RATE_LIMIT_RPM or its share of the origin budget, as the whole
// answer or for one channel or field of it (NoteRefused). Telegram's own refusals and outages are not the
// client's doing and are not held, nor is anything before an answer
// began (a WebSocket upgrade's connection).
func refusedForBudget(info *reqInfo, status int) bool {
	if status < http.StatusOK {
		return false
	}
	if info.refused.Load() {
		return true
	}
	if info.err == nil || (status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable) {
		return false
	}
	return overBudget(fault.Classify(info.err).Kind)
}

// holdDue says whether the answer of status to r (with record info,
// written to w) is to be held, for how long, and for which client.
func (h *handler) holdDue(r *http.Request, info *reqInfo, status int, w http.ResponseWriter) (time.Duration, string, bool) {
	switch {
	case refusedForBudget(info, status):
		return h.tarpit.holdFor(w.Header().Get("Retry-After")), h.clientKey(r, info), true
	case mistaken(info, status):
		client := h.clientKey(r, info)
		return h.tarpit.hold, client, h.tarpit.repeatedMistake(client)
	}
	return 0, "", false
}

// mistaken reports whether the answer to the request with record info, of
// status, is the answer to the client's own mistake: bad input, a route
// or name that is not there, a request too large, or a GraphQL answer
// whose errors are input errors (NoteMistake). Missing or refused keys
// (401, 403) and refusals (429) are not: they are answered or held as
// such.
func mistaken(info *reqInfo, status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge,
		http.StatusRequestURITooLong, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity,
		http.StatusRequestHeaderFieldsTooLarge:
		return true
	}
	return status >= http.StatusOK && info.mistaken.Load()
}

// overBudget reports whether a failure of kind k is the refusal of the
// client's own share of the origin budget. The origin budget's own
// refusal (503) is not held: the request queued for a token before it
// (up to 2 s for a reader), and it spends the client's share, so a
// client that keeps asking runs out of its share, whose refusals are
// held, instead of keeping its place in the budget's queue longer.
func overBudget(k fault.Kind) bool { return k == fault.ClientOverBudget }
