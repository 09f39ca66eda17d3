package gcra

import (
	"context"
	"sync"
	"time"
)

// Local keeps buckets in process. It is safe for concurrent use; a
// Take is one lock and, for a bucket seen before, no allocation.
type Local struct {
	now func() time.Time

	mu    sync.Mutex
	tats  map[string]int64 // key → TAT, unix nanos; a TAT in the past is a full bucket
	sweep int              // map size at which the full buckets are dropped
}

// LocalConfig configures a Local.
type LocalConfig struct {
	Now func() time.Time // the clock; nil = time.Now
}

// minSweep is the size below which the map is not swept: a few hundred
// full buckets cost less than looking at them.
const minSweep = 1024

// NewLocal returns an empty Local.
func NewLocal(cfg LocalConfig) *Local {
	l := &Local{now: cfg.Now, tats: map[string]int64{}, sweep: minSweep}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Take implements Limiter.
func (l *Local) Take(_ context.Context, cost int, asks ...Ask) (Decision, error) {
	if err := check(cost, asks); err != nil {
		return Decision{}, err
	}
	d := Decision{Refused: -1}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now().UnixNano()
	var next [MaxAsks]int64
	for i, a := range asks {
		n, wait, ok, left := step(l.tats[a.Key], now, cost, a)
		d.Left[i] = left
		if !ok {
			d.Wait, d.Refused = time.Duration(wait), i
			return d, nil
		}
		d.Wait = max(d.Wait, time.Duration(wait))
		next[i] = n
	}
	d.OK = true
	for i, a := range asks {
		l.tats[a.Key] = next[i]
	}
	l.maybeSweep(now)
	return d, nil
}

// Peek is the whole tokens key's bucket holds now, without taking any.
func (l *Local) Peek(key string, lim Limit) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return tokensLeft(l.tats[key], l.now().UnixNano(), lim)
}

// Len is the buckets remembered (full ones may linger until a sweep).
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tats)
}

// maybeSweep drops the full buckets (a TAT in the past is what no entry
// means too) once the map has doubled since the last sweep, so memory
// follows the clients active within a burst's time, amortised over the
// takes that grew it.
func (l *Local) maybeSweep(now int64) {
	if len(l.tats) < l.sweep {
		return
	}
	for k, tat := range l.tats {
		if tat <= now {
			delete(l.tats, k)
		}
	}
	l.sweep = max(minSweep, 2*len(l.tats))
}
