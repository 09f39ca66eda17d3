package pages

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/tmefeed/tmefeed/tme"
)

// PopularityConfig tunes a Popularity.
type PopularityConfig struct {
	// Top bounds the channels Decay returns: the most read of those read
	// repeatedly.
	Top int
	// Factor is how much a client's weight keeps per Decay (a cycle):
	// 0.5^(cycle/half-life).
	Factor float64
	// Window is the refresh window: a channel whose reads span it is
	// popular.
	Window time.Duration
	// Idle is how long after its last read a popular channel stays so.
	Idle time.Duration
}

// Popularity is the tally of reads of channels' newest pages by distinct
// clients, which says which channels are read repeatedly: those a
// background updater keeps fresh. The Service counts into it on request
// paths, hot-store hits included (one map lookup and a few atomic
// operations, no allocation); the updater pulls it once a cycle
// (Decay, Clients, Drop), from one goroutine: those methods are not safe
// for concurrent use with each other.
//
// A channel is popular once its reads span a refresh window — read, then
// read again a window or more later, with no gap of idle between — and
// stays so until idle passes without a read. A copy serves its readers
// for a window anyway, so refreshing ahead pays off only for a channel
// read again after its refresh point: a name read once, or in one burst,
// is never refreshed ahead. Once popular, a channel costs one fetch per
// window until idle after its last read, however rarely it is read
// meanwhile; Top bounds what that can add up to. The top popular
// channels by distinct clients (each weighing less by half every
// half-life since its last read) are kept fresh: one client reading a
// channel ten thousand times counts once, and does not outrank a channel
// fifty clients read.
type Popularity struct {
	top          int
	factor       float64 // a client's weight's decay per cycle
	window, idle time.Duration
	counts       sync.Map // channel → *counter: reads since the last cycle
	size         atomic.Int64
	reads        map[string]*reads // the puller's own
	cycle        uint32            // cycles decayed so far; the puller's own
	scored       atomic.Int64      // len(reads), for Bytes
}

// CountPopularity makes the Service count the reads of channels' newest
// pages into a new Popularity, which it returns, in place of any earlier
// one. StopPopularity ends the counting.
func (s *Service) CountPopularity(cfg PopularityConfig) *Popularity {
	p := newPopularity(cfg)
	s.popular.Store(p)
	return p
}

// StopPopularity stops counting into p, if the Service still does.
func (s *Service) StopPopularity(p *Popularity) {
	s.popular.CompareAndSwap(p, nil)
}

// noteNewest counts a read of r towards its channel's popularity if r is
// a newest page, with its client: r.Client, else who's (nil: nobody's).
// A read from the cache only is not counted: the updater would keep the
// page fresh for it, fetching on its behalf.
func (s *Service) noteNewest(r tme.Request, who ClientNamer) {
	if r.Kind == tme.KindBody && r.Position == 0 && !r.CacheOnly {
		if p := s.popular.Load(); p != nil {
			id := ClientID(r.Client)
			if r.Client == "" && who != nil {
				id = who.ClientID()
			}
			p.hit(r.Channel, id)
		}
	}
}

// ClientID is the number Popularity counts a client by: a hash of its
// name (tme.Request.Client), 0 for nobody's.
func ClientID(name string) uint64 {
	if name == "" {
		return 0
	}
	return xxh3.HashString(name)
}

// clientBuckets is how many buckets a channel's clients are counted in:
// a client falls in bucket ClientID % clientBuckets, and the distinct
// clients are estimated from the buckets taken (linear counting), so that
// counting a client costs a read an atomic OR at most and a channel a
// fixed few hundred bytes however many clients read it. The estimate is
// within a few percent up to a hundred clients or so; beyond, the
// channel is among the most read anyway.
const clientBuckets = 128

// ClientSet is a set of client buckets: the clients of a channel's
// subscribers, say, which Popularity.Clients weighs with its readers.
type ClientSet [clientBuckets / 64]uint64

// Add puts client (ClientID) in the set.
func (c *ClientSet) Add(client uint64) {
	b := client % clientBuckets
	c[b/64] |= 1 << (b % 64)
}

func (c *ClientSet) has(b int) bool { return c[b/64]&(1<<(b%64)) != 0 }

func (c *ClientSet) set(b int)   { c[b/64] |= 1 << (b % 64) }
func (c *ClientSet) unset(b int) { c[b/64] &^= 1 << (b % 64) }

// counter is a channel's reads since the last cycle.
type counter struct {
	n       atomic.Int64
	clients [clientBuckets / 64]atomic.Uint64 // a ClientSet
}

func (c *counter) add(client uint64) {
	c.n.Add(1)
	b := client % clientBuckets
	// Loaded first: a channel's regular clients find their bit set and
	// write nothing, so its readers do not contend for the cache line.
	if w, bit := &c.clients[b/64], uint64(1)<<(b%64); w.Load()&bit == 0 {
		w.Or(bit)
	}
}

// reads is what Popularity knows of one channel.
type reads struct {
	seen        [clientBuckets]uint32 // the cycle each client bucket was last read in
	taken       ClientSet             // the buckets with a weight left in seen
	score       float64               // distinct clients, decayed (see weigh): the rank among popular channels
	first, last time.Time             // the cycles that counted the current run of reads; first is zero when there is none
	dropped     time.Time             // reads before this do not count towards a run (the channel does not exist)
}

// MaxCounted bounds the channels counted between two cycles: reads of
// further channels wait for the next cycle to make room.
func (p *Popularity) MaxCounted() int64 { return int64(4*p.top + 256) }

// Heap per counted channel (sync.Map entry, key, counter) and per scored
// one (map slot, its reads, key): estimates from the types' sizes,
// generous.
const (
	countedBytes = 192
	scoredBytes  = 720
)

// Bytes estimates the heap the counts and scores take.
func (p *Popularity) Bytes() int64 {
	return p.size.Load()*countedBytes + p.scored.Load()*scoredBytes
}

func newPopularity(cfg PopularityConfig) *Popularity {
	return &Popularity{top: cfg.Top, factor: cfg.Factor, window: cfg.Window, idle: cfg.Idle, reads: map[string]*reads{}}
}

// hit counts a read of channel by client (ClientID).
func (p *Popularity) hit(channel string, client uint64) {
	if c, ok := p.counts.Load(channel); ok {
		c.(*counter).add(client)
		return
	}
	if p.size.Load() >= p.MaxCounted() {
		return
	}
	c, loaded := p.counts.LoadOrStore(channel, new(counter))
	if !loaded {
		p.size.Add(1)
	}
	c.(*counter).add(client)
}

// weigh estimates the distinct clients of r (nil: none read) and of
// watchers, the buckets of the channel's subscribers: a client read in
// the current cycle or watching weighs 1, one last read k cycles ago
// factor^k. Only the buckets taken are visited.
func (p *Popularity) weigh(r *reads, watchers ClientSet) float64 {
	var w float64
	all := watchers
	if r != nil {
		for i := range all {
			all[i] |= r.taken[i]
		}
	}
	for i, word := range all {
		for word != 0 {
			bit := word & -word
			word &^= bit
			b := i*64 + bitIndex(bit)
			if watchers.has(b) {
				w++
			} else {
				w += math.Pow(p.factor, float64(p.cycle-r.seen[b]))
			}
		}
	}
	// Linear counting: n clients in m buckets leave m·e^(-n/m) empty.
	const m = clientBuckets
	return -m * math.Log1p(-min(w, m-0.5)/m)
}

// Clients estimates, for each channel of chs, the distinct clients that
// read it lately or watch it (watched: the subscribers' buckets by
// channel, which the caller keeps), a client doing both counting once.
func (p *Popularity) Clients(chs []string, watched map[string]ClientSet) map[string]float64 {
	out := make(map[string]float64, len(chs))
	for _, ch := range chs {
		out[ch] = p.weigh(p.reads[ch], watched[ch])
	}
	return out
}

// Drop takes channel out of the popular set at now: reads before until
// do not count, so it comes back only when read over a window after that.
// It reports whether the channel was popular.
func (p *Popularity) Drop(channel string, now, until time.Time) bool {
	r, ok := p.reads[channel]
	if !ok {
		return false // never read (only watched): nothing to forget
	}
	was := p.popular(r, now)
	r.first, r.last, r.dropped = time.Time{}, time.Time{}, until
	p.scored.Store(int64(len(p.reads)))
	return was
}

// popular reports whether r's reads make a popular channel at now.
func (p *Popularity) popular(r *reads, now time.Time) bool {
	return !r.first.IsZero() && r.last.Sub(r.first) >= p.window && now.Sub(r.last) <= p.idle
}

// Decay folds the reads since the last cycle, counted at now, into the
// channels' runs and decayed scores, and returns the top popular
// channels by score. It is called once a cycle: each call is a cycle of
// Factor's decay.
func (p *Popularity) Decay(now time.Time) []string {
	p.cycle++
	p.counts.Range(func(k, v any) bool {
		c := v.(*counter)
		if c.n.Swap(0) == 0 {
			p.counts.Delete(k)
			p.size.Add(-1)
			return true
		}
		ch := k.(string)
		r := p.reads[ch]
		if r == nil {
			r = &reads{}
			p.reads[ch] = r
		}
		for i := range c.clients {
			// A read between the two swaps counts in this cycle or the
			// next: either way it is counted.
			bits := c.clients[i].Swap(0)
			for bits != 0 {
				b := bits & -bits
				r.seen[i*64+bitIndex(b)] = p.cycle
				r.taken.set(i*64 + bitIndex(b))
				bits &^= b
			}
		}
		if !now.Before(r.dropped) {
			if r.first.IsZero() || now.Sub(r.last) > p.idle {
				r.first = now // a new run of reads
			}
			r.last = now
		}
		return true
	})
	for _, r := range p.reads {
		// A client last read this long ago weighs under 1/1000: dropped.
		for b := range clientBuckets {
			if r.taken.has(b) && math.Pow(p.factor, float64(p.cycle-r.seen[b])) < 1e-3 {
				r.taken.unset(b)
			}
		}
		r.score = p.weigh(r, ClientSet{})
	}
	type scored struct {
		ch      string
		s       float64
		popular bool
	}
	all := make([]scored, 0, len(p.reads))
	for ch, r := range p.reads {
		if now.Sub(r.last) > p.idle && !now.Before(r.dropped) {
			delete(p.reads, ch) // idle: forgotten, so a later read starts afresh
			continue
		}
		all = append(all, scored{ch, r.score, p.popular(r, now)})
	}
	// Popular channels rank before the others, then by score: a burst of
	// names read a few times each never displaces a channel read over a
	// window, nor its history of reads.
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(-cmp.Compare(btoi(a.popular), btoi(b.popular)), cmp.Compare(b.s, a.s), cmp.Compare(a.ch, b.ch))
	})
	// Beyond twice Top, scores only cost memory: the least read of the
	// channels not (yet) popular go first.
	for _, x := range all[min(len(all), p.maxScored()):] {
		delete(p.reads, x.ch)
	}
	p.scored.Store(int64(len(p.reads)))
	var out []string
	for _, x := range all {
		if len(out) == p.top || !x.popular {
			break
		}
		out = append(out, x.ch)
	}
	return out
}

// maxScored bounds the channels whose reads Popularity remembers.
func (p *Popularity) maxScored() int { return 2 * p.top }

// bitIndex is the index of the one bit set in b.
func bitIndex(b uint64) int { return bits.TrailingZeros64(b) }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
