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
	// After is the tarpit's timer; nil means time.After. Tests release
	// holds with it.
	After func(time.Duration) <-chan time.Time
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
type tarpit struct {
	hold      time.Duration
	perClient int
	total     int
	after     func(time.Duration) <-chan time.Time

	mu   sync.Mutex
	held map[string]int // client → refusals held; absent when none
	n    int            // refusals held
}

// newTarpit returns nil when cfg turns holding off.
func newTarpit(cfg TarpitConfig) *tarpit {
	if cfg.Hold < 0 {
		return nil
	}
	t := &tarpit{
		hold:      cfg.Hold,
		perClient: cfg.PerClient,
		total:     cfg.Total,
		after:     cfg.After,
		held:      map[string]int{},
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

// overBudget reports whether a failure of kind k is the refusal of the
// client's own share of the origin budget. The origin budget's own
// refusal (503) is not held: the request queued for a token before it
// (up to 2 s for a reader), and it spends the client's share, so a
// client that keeps asking runs out of its share, whose refusals are
// held, instead of keeping its place in the budget's queue longer.
func overBudget(k fault.Kind) bool { return k == fault.ClientOverBudget }
