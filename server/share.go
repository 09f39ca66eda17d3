package server

import (
	"context"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/tmefeed/tmefeed/pages"
)

// Defaults of ShareConfig's zero fields.
const (
	// DefaultShareStall is how long a request runs before it stops
	// counting against its client's share: a cached answer, a history
	// walk over cached pages or a rebuilt feed takes milliseconds of CPU,
	// while a request that runs longer is waiting, for Telegram or the
	// origin budget, not working the cores.
	DefaultShareStall = 250 * time.Millisecond
	// DefaultShareQueue bounds the requests one client has waiting for
	// its share; beyond, a request is refused with 429. As many as
	// CONNECTIONS_PER_CLIENT's default lets one address hold open: a
	// burst a client's connections can send is queued, not refused.
	DefaultShareQueue = 1024
	// DefaultShareWaiting bounds the requests waiting over all clients;
	// beyond, a request is refused with 503.
	DefaultShareWaiting = 4096
	// DefaultShareCPU is the part of the server's cores one client's
	// work may keep busy on average: a sixty-fourth, 31ms a second on two
	// cores. A dashboard's uncached feeds take milliseconds now and then,
	// and a person in the playground far less than that; a client that
	// builds answers without pause (history walks with a new cut-off each
	// time) is what this bounds. On a small server any work beside a
	// reader's shows at the reader's 99th percentile (the cores are shared
	// with the operating system's other tasks, which wait their turn), so
	// the share is what one client may take from everyone else's tail.
	DefaultShareCPU = 1.0 / 64
	// DefaultShareCounted is the most one request adds to what its
	// client owes. A cached answer, a history walk over cached pages or a
	// rebuilt feed works a few milliseconds; a request running longer is
	// almost always waiting, for Telegram or the origin budget, and a
	// person reading channels nobody holds must not run out of share for
	// that.
	DefaultShareCounted = 50 * time.Millisecond
	// DefaultShareBurst is the work a client may do at once beyond its
	// average: ten cold reads in a row, a cold feed of many channels.
	// Short, because a burst is a full core taken at once.
	DefaultShareBurst = 500 * time.Millisecond
	// DefaultShareMaxWait is the longest a request waits for its client's
	// work budget; a longer wait is refused with 429 and the wait as its
	// Retry-After, so a connection never hangs on it.
	DefaultShareMaxWait = time.Second
)

// ShareConfig configures the per-client share of the server's cores
// (Config.Share, CLIENT_CONCURRENCY).
type ShareConfig struct {
	// PerClient is how many requests one client may have working at once;
	// the next ones wait, in order, until one of them ends or has run for
	// Stall. 0 means half the cores (GOMAXPROCS), at least one; negative
	// turns the share off.
	PerClient int
	// Stall is how long a request works before it stops counting against
	// its client's share (see DefaultShareStall); 0 means the default.
	Stall time.Duration
	// Queue bounds the requests one client has waiting; 0 means
	// DefaultShareQueue.
	Queue int
	// Waiting bounds the requests waiting over all clients; 0 means
	// DefaultShareWaiting.
	Waiting int
	// CPU is the part of the server's cores (GOMAXPROCS) one client's
	// requests may keep working on average, counted as the time each
	// works (up to Counted); 0 means DefaultShareCPU, negative no bound.
	CPU float64
	// Counted is the most one request adds to what its client owes,
	// whatever it took; 0 means DefaultShareCounted (never more than
	// Stall).
	Counted time.Duration
	// Burst is the work a client may do beyond that average before its
	// requests wait; 0 means DefaultShareBurst.
	Burst time.Duration
	// MaxWait is the longest a request waits for its client's work to be
	// paid back; beyond, it is refused. 0 means DefaultShareMaxWait.
	MaxWait time.Duration
}

// share bounds the requests each client has working at once, so that no
// one client takes every core: a closed loop of valid, cached but costly
// requests (history walks, feeds of many channels) from one client would
// otherwise keep both cores of a small server busy, and every other
// client's answer would wait for the Go scheduler's turn, ten times its
// usual latency at the 99th percentile. With the share, the loop's extra
// requests wait in its own queue, and other clients' requests find a core.
// Nothing is refused for this while the client's queue has room: its
// requests are served in order, a little later.
//
// A request stops counting once it has run for stall: it is then waiting
// on Telegram (a page nobody holds) or the origin budget, and the
// client's next requests, say its cached reads, must not wait for that.
//
// Bounding requests at once is not enough on a small server: one client
// working one core without pause, or a quarter of one, leaves the other
// clients' requests waiting for a core now and then behind it and the
// operating system's other tasks (a warm reader's 99th percentile
// doubled). So the time each request works (up to counted: a longer one
// is waiting) is also owed by its client, and paid back at rate, its part
// of the cores: a client owing more than burst has its next requests wait
// until it owes burst again, and refused (429, Retry-After) when that is
// more than maxWait away.
type share struct {
	per     int
	stall   time.Duration
	queue   int
	waiting int
	rate    float64       // work paid back per unit of time; 0: no bound on work
	counted time.Duration // the most one request adds to what its client owes
	burst   time.Duration
	maxWait time.Duration

	mu      sync.Mutex
	clients map[uint64]*shareClient // clients with a request working or waiting
	waiters int                     // requests waiting, over all clients
	free    []*shareClient          // recycled, so that a hit allocates nothing
	sweepAt time.Time               // when clients that owe nothing are next forgotten
}

// shareClient is one client's requests working and waiting.
type shareClient struct {
	starts []time.Time      // when each request counted against the share began working, oldest first
	queue  []chan time.Time // waiting requests, in arrival order; each is sent its start when admitted
	timer  *time.Timer      // wakes the queue's head when it may go: a place frees or enough work is paid back
	owed   time.Duration    // work not yet paid back, as of owedAt
	owedAt time.Time
}

// Share is the per-client share of the server's cores as a value of its
// own, so that what works outside a request's middleware can be owed by
// its client too: a WebSocket's subscribe messages, each of which may
// look up a hundred channels, ride on one request the middleware never
// sees end.
type Share struct{ s *share }

// NewShare returns the share cfg describes, nil when cfg turns it off.
func NewShare(cfg ShareConfig) *Share {
	s := newShare(cfg)
	if s == nil {
		return nil
	}
	return &Share{s: s}
}

// StartWork waits for client's turn to work, as a request of its would
// (client named as ClientKey names it). Admitted, it returns done, to
// call with the time the work took when it ends, which client owes (up to
// ShareConfig.Counted): the caller measures it, leaving out what it waited
// for besides its client's turn. Refused, ok is false and retryAfter is
// how long the client should wait (0 when ctx ended first).
func (s *Share) StartWork(ctx context.Context, client string) (done func(worked time.Duration), retryAfter time.Duration, ok bool) {
	id := pages.ClientID(client)
	start, refusal, wait := s.s.acquire(ctx, id)
	switch refusal {
	case shareAdmitted:
		return func(worked time.Duration) { s.s.releaseWorked(id, start, worked) }, 0, true
	case shareClientOwes:
		return nil, wait, false
	case shareGone:
		return nil, 0, false
	default: // the client's queue or the server's is full
		return nil, time.Second, false
	}
}

// newShare returns nil when cfg turns the share off.
func newShare(cfg ShareConfig) *share {
	if cfg.PerClient < 0 {
		return nil
	}
	s := &share{
		per:     cfg.PerClient,
		stall:   cfg.Stall,
		queue:   cfg.Queue,
		waiting: cfg.Waiting,
		counted: cfg.Counted,
		burst:   cfg.Burst,
		maxWait: cfg.MaxWait,
		clients: map[uint64]*shareClient{},
	}
	// Zero or negative means the default (a negative PerClient is off, above).
	if s.per <= 0 {
		s.per = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if s.stall <= 0 {
		s.stall = DefaultShareStall
	}
	if s.queue <= 0 {
		s.queue = DefaultShareQueue
	}
	if s.waiting <= 0 {
		s.waiting = DefaultShareWaiting
	}
	if s.counted <= 0 {
		s.counted = DefaultShareCounted
	}
	s.counted = min(s.counted, s.stall)
	if s.burst <= 0 {
		s.burst = DefaultShareBurst
	}
	if s.maxWait <= 0 {
		s.maxWait = DefaultShareMaxWait
	}
	switch {
	case cfg.CPU == 0:
		s.rate = DefaultShareCPU * float64(runtime.GOMAXPROCS(0))
	case cfg.CPU > 0:
		s.rate = cfg.CPU * float64(runtime.GOMAXPROCS(0))
	}
	return s
}

// shareRefusal is acquire's answer: admitted, or why not. A full queue
// of the client's own is its doing (429, held by the tarpit like other
// refusals of its own limits); a full server is nobody's (503).
type shareRefusal int

const (
	shareAdmitted shareRefusal = iota
	shareClientFull
	shareServerFull
	shareGone // the request's context ended while it waited
	// shareClientOwes: the client has worked more than its share and
	// would wait longer than maxWait (its own doing, 429).
	shareClientOwes
)

// acquire admits a request of client, waiting for its turn when the
// client has per requests working or owes more than burst. It returns the
// start to hand back to release when admitted; refused for what the
// client owes, the wait it would have had.
func (s *share) acquire(ctx context.Context, client uint64) (time.Time, shareRefusal, time.Duration) {
	now := time.Now()
	s.mu.Lock()
	if now.After(s.sweepAt) {
		s.sweep(now)
	}
	c := s.clients[client]
	if c == nil {
		c = s.newClient()
		s.clients[client] = c
	}
	s.expire(c, now)
	owes := s.paybackWait(c, now)
	if len(c.starts) < s.per && len(c.queue) == 0 && owes == 0 {
		c.starts = append(c.starts, now)
		s.mu.Unlock()
		return now, shareAdmitted, 0
	}
	if owes > s.maxWait {
		s.tidy(client, c)
		s.mu.Unlock()
		return time.Time{}, shareClientOwes, owes
	}
	if len(c.queue) >= s.queue {
		s.mu.Unlock()
		return time.Time{}, shareClientFull, 0
	}
	if s.waiters >= s.waiting {
		s.mu.Unlock()
		return time.Time{}, shareServerFull, 0
	}
	turn := make(chan time.Time, 1)
	c.queue = append(c.queue, turn)
	s.waiters++
	s.arm(client, c)
	s.mu.Unlock()

	select {
	case start := <-turn:
		return start, shareAdmitted, 0
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range c.queue {
		if t == turn {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			s.waiters--
			s.tidy(client, c)
			return time.Time{}, shareGone, 0
		}
	}
	// Admitted as the context ended: give the place on. c may have been
	// forgotten since, so the client is looked up again.
	start := <-turn
	if cur := s.clients[client]; cur != nil {
		s.releaseLocked(client, cur, start)
	}
	return time.Time{}, shareGone, 0
}

// release ends the request of client admitted at start.
func (s *share) release(client uint64, start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[client]; c != nil {
		s.releaseLocked(client, c, start)
	}
}

func (s *share) releaseLocked(client uint64, c *shareClient, start time.Time) {
	s.releaseWorkedLocked(client, c, start, time.Since(start))
}

// releaseWorked ends the work of client admitted at start, which worked
// for worked.
func (s *share) releaseWorked(client uint64, start time.Time, worked time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[client]; c != nil {
		s.releaseWorkedLocked(client, c, start, worked)
	}
}

func (s *share) releaseWorkedLocked(client uint64, c *shareClient, start time.Time, worked time.Duration) {
	now := time.Now()
	if s.rate > 0 {
		// What a request took past counted is waiting, not work.
		c.owed = s.owing(c, now) + min(max(worked, 0), s.counted)
	}
	for i, t := range c.starts {
		if t.Equal(start) {
			c.starts = append(c.starts[:i], c.starts[i+1:]...)
			break
		}
	}
	// A start no longer in starts had stalled: the request was no longer
	// counted, and its end frees no place.
	s.admit(client, c, now)
}

// owing is what c owes at now, what it has paid back since owedAt taken
// off.
func (s *share) owing(c *shareClient, now time.Time) time.Duration {
	if c.owed <= 0 || s.rate <= 0 {
		c.owedAt = now
		return 0
	}
	paid := time.Duration(float64(now.Sub(c.owedAt)) * s.rate)
	c.owed = max(0, c.owed-paid)
	c.owedAt = now
	return c.owed
}

// paybackWait is how long c's next request must wait until c owes no
// more than burst: 0 when it may go now.
func (s *share) paybackWait(c *shareClient, now time.Time) time.Duration {
	over := s.owing(c, now) - s.burst
	if over <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(float64(over) / s.rate))
}

// expire drops the requests of c that have worked for stall: they no
// longer count.
func (s *share) expire(c *shareClient, now time.Time) {
	n := 0
	for n < len(c.starts) && now.Sub(c.starts[n]) >= s.stall {
		n++
	}
	if n > 0 {
		c.starts = append(c.starts[:0], c.starts[n:]...)
	}
}

// admit starts the waiting requests of c that now have a place, and
// forgets c when it has nothing working or waiting.
func (s *share) admit(client uint64, c *shareClient, now time.Time) {
	s.expire(c, now)
	for len(c.queue) > 0 && len(c.starts) < s.per && s.paybackWait(c, now) == 0 {
		turn := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		s.waiters--
		c.starts = append(c.starts, now)
		turn <- now
	}
	s.arm(client, c)
	s.tidy(client, c)
}

// arm wakes c's queue when its head may go, should no request end
// before: once its oldest working request stalls when every place is
// taken, and once enough of what c owes is paid back.
func (s *share) arm(client uint64, c *shareClient) {
	if len(c.queue) == 0 {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	now := time.Now()
	d := s.paybackWait(c, now)
	if len(c.starts) >= s.per {
		d = max(d, s.stall-now.Sub(c.starts[0]))
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(d, func() { s.wake(client) })
		return
	}
	c.timer.Reset(d)
}

func (s *share) wake(client uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[client]; c != nil {
		s.admit(client, c, time.Now())
	}
}

// tidy forgets c when it has nothing working or waiting and owes
// nothing, keeping its slices for the next client.
func (s *share) tidy(client uint64, c *shareClient) {
	if len(c.starts) > 0 || len(c.queue) > 0 || s.owing(c, time.Now()) > 0 {
		return
	}
	delete(s.clients, client)
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if len(s.free) < 64 {
		c.starts, c.queue = c.starts[:0], c.queue[:0]
		c.owed, c.owedAt = 0, time.Time{}
		s.free = append(s.free, c)
	}
}

// sweep forgets the clients that came to owe nothing since their last
// request, at most every burst: a client that owed something was kept
// when its last request ended.
func (s *share) sweep(now time.Time) {
	for client, c := range s.clients {
		s.tidy(client, c)
	}
	s.sweepAt = now.Add(s.burst)
}

func (s *share) newClient() *shareClient {
	if n := len(s.free); n > 0 {
		c := s.free[n-1]
		s.free = s.free[:n-1]
		return c
	}
	return &shareClient{starts: make([]time.Time, 0, s.per)}
}

// shareCPU bounds each client's requests working at once (see share).
// Streams are left out: an open subscription waits for events, and
// STREAMS_PER_CLIENT bounds them.
func (h *handler) shareCPU(s *share) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h.streams != nil && h.isGraphQL(r) && h.streams(r) {
				next.ServeHTTP(w, r)
				return
			}
			info := requestInfo(r.Context())
			client := h.clientID(r, info)
			start, refusal, wait := s.acquire(r.Context(), client)
			switch refusal {
			case shareAdmitted:
				defer s.release(client, start)
				next.ServeHTTP(w, r)
			case shareClientFull:
				h.refuse(w, r, 1, "too many requests at once from this client: "+strconv.Itoa(s.per)+" are served at a time and "+strconv.Itoa(s.queue)+" may wait; retry in 1s")
			case shareClientOwes:
				retry := int(math.Ceil(wait.Seconds()))
				h.refuse(w, r, retry, "this client's requests have kept the server's cores busy beyond its share; retry in "+strconv.Itoa(retry)+"s")
			case shareServerFull:
				h.overloaded(w, r, "the server has "+strconv.Itoa(s.waiting)+" requests waiting for their clients' share; retry in 1s")
			case shareGone:
				// The client went away while it waited: nobody reads an answer.
			}
		})
	}
}

// clientID is the hashed client r counts against every per-client limit
// by, made without building its name.
func (h *handler) clientID(r *http.Request, info *reqInfo) uint64 {
	if info != nil && info.client != "" {
		return pages.ClientID(info.client)
	}
	return rateKeyID(clientAddr(r, h.trusted))
}

// overloaded answers a request the server has no room to queue: 503 with
// Retry-After, nobody's fault (REST overloaded, GraphQL RATE_LIMITED as
// for a spent origin budget).
func (h *handler) overloaded(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Retry-After", "1")
	if h.isGraphQL(r) {
		h.failGraphQL(w, r, http.StatusServiceUnavailable, gqlCodeRateLimited, msg)
		return
	}
	h.fail(w, r, apiError{Status: http.StatusServiceUnavailable, Code: CodeOverloaded, Message: msg, RetryAfter: 1})
}
