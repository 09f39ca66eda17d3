package server

import (
	"context"
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
type share struct {
	per     int
	stall   time.Duration
	queue   int
	waiting int

	mu      sync.Mutex
	clients map[uint64]*shareClient // clients with a request working or waiting
	waiters int                     // requests waiting, over all clients
	free    []*shareClient          // recycled, so that a hit allocates nothing
}

// shareClient is one client's requests working and waiting.
type shareClient struct {
	starts []time.Time      // when each request counted against the share began working, oldest first
	queue  []chan time.Time // waiting requests, in arrival order; each is sent its start when admitted
	timer  *time.Timer      // wakes the queue's head when the oldest working request stalls
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
		clients: map[uint64]*shareClient{},
	}
	if s.per == 0 {
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
)

// acquire admits a request of client, waiting for its turn when the
// client has per requests working. It returns the start to hand back to
// release when admitted.
func (s *share) acquire(ctx context.Context, client uint64) (time.Time, shareRefusal) {
	now := time.Now()
	s.mu.Lock()
	c := s.clients[client]
	if c == nil {
		c = s.newClient()
		s.clients[client] = c
	}
	s.expire(c, now)
	if len(c.starts) < s.per && len(c.queue) == 0 {
		c.starts = append(c.starts, now)
		s.mu.Unlock()
		return now, shareAdmitted
	}
	if len(c.queue) >= s.queue {
		s.mu.Unlock()
		return time.Time{}, shareClientFull
	}
	if s.waiters >= s.waiting {
		s.mu.Unlock()
		return time.Time{}, shareServerFull
	}
	turn := make(chan time.Time, 1)
	c.queue = append(c.queue, turn)
	s.waiters++
	s.arm(client, c)
	s.mu.Unlock()

	select {
	case start := <-turn:
		return start, shareAdmitted
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range c.queue {
		if t == turn {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			s.waiters--
			s.tidy(client, c)
			return time.Time{}, shareGone
		}
	}
	// Admitted as the context ended: give the place on. c may have been
	// forgotten since, so the client is looked up again.
	start := <-turn
	if cur := s.clients[client]; cur != nil {
		s.releaseLocked(client, cur, start)
	}
	return time.Time{}, shareGone
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
	for i, t := range c.starts {
		if t.Equal(start) {
			c.starts = append(c.starts[:i], c.starts[i+1:]...)
			break
		}
	}
	// A start no longer in starts had stalled: the request was no longer
	// counted, and its end frees no place.
	s.admit(client, c, time.Now())
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
	for len(c.queue) > 0 && len(c.starts) < s.per {
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

// arm wakes c's queue when its oldest working request stalls, should no
// request end before.
func (s *share) arm(client uint64, c *shareClient) {
	if len(c.queue) == 0 || len(c.starts) == 0 {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	d := s.stall - time.Since(c.starts[0])
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

// tidy forgets c when it has nothing working or waiting, keeping its
// slices for the next client.
func (s *share) tidy(client uint64, c *shareClient) {
	if len(c.starts) > 0 || len(c.queue) > 0 {
		return
	}
	delete(s.clients, client)
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if len(s.free) < 64 {
		c.starts, c.queue = c.starts[:0], c.queue[:0]
		s.free = append(s.free, c)
	}
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
			start, refusal := s.acquire(r.Context(), client)
			switch refusal {
			case shareAdmitted:
				defer s.release(client, start)
				next.ServeHTTP(w, r)
			case shareClientFull:
				h.refuse(w, r, 1, "too many requests at once from this client: "+strconv.Itoa(s.per)+" are served at a time and "+strconv.Itoa(s.queue)+" may wait; retry in 1s")
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
