// Package gcra is tmefeed's one rate limiter: the generic cell rate
// algorithm (GCRA) over buckets named by key, kept in process (Local) or in
// Valkey (Valkey: one Lua script, so every process sharing the server
// shares the buckets). The clients' request limit (RATE_LIMIT_RPM) and the
// origin budgets (ORIGIN_RPM, CLIENT_ORIGIN_RPM) both draw on it.
//
// A bucket is one time, its theoretical arrival time (TAT): the moment it
// would be full again. A request of cost n pushes the TAT n intervals
// later, from now if it lay in the past; it is admitted while the TAT stays
// within Burst intervals of now. So a bucket admits Burst at once, then one
// per interval, and over any span d at most Rate·d/Per + Burst, and the
// wait until the next admission is read off the TAT exactly: no windows,
// nothing to reconstruct.
//
// Two refinements serve the origin budget: Reserve keeps the last tokens
// of a bucket for others (a lower class of requests is admitted only while
// more than its reserve is left), and MaxWait admits a request whose
// tokens come within that wait, with the wait to sleep first: a bounded
// queue measured in time, whose places are booked in the bucket itself.
package gcra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Limit is a bucket's shape.
type Limit struct {
	Rate  int           // tokens added per Per
	Per   time.Duration // e.g. time.Minute
	Burst int           // tokens the bucket holds when full; at least 1
}

// Valid reports whether l can shape a bucket.
func (l Limit) Valid() error {
	if l.Rate <= 0 || l.Per <= 0 || l.Burst <= 0 {
		return fmt.Errorf("gcra: limit %+v: rate, period and burst must be positive", l)
	}
	if l.Per/time.Duration(l.Rate) <= 0 {
		return fmt.Errorf("gcra: limit %+v: more than one token a nanosecond", l)
	}
	return nil
}

// Interval is the time one token takes to come back.
func (l Limit) Interval() time.Duration { return l.Per / time.Duration(l.Rate) }

// Ask is one bucket a request draws on.
type Ask struct {
	Key   string
	Limit Limit
	// Reserve is the tokens this request must leave in the bucket for
	// others; 0 lets it take the last one. Below Burst.
	Reserve int
	// MaxWait admits a request whose token comes within this wait;
	// Decision.Wait says how long to sleep before going ahead. 0 refuses
	// at once what cannot go at once.
	MaxWait time.Duration
}

// Decision is a limiter's answer for one request over its asks.
type Decision struct {
	// OK: every ask admitted the request, and each bucket was charged.
	// Otherwise none was.
	OK bool
	// Wait: admitted, how long to wait before going ahead (0 = now);
	// refused, how long until the refusing bucket would admit the request
	// at once: an honest Retry-After.
	Wait time.Duration
	// Refused is the index of the ask that refused; -1 when OK.
	Refused int
	// Left is, per ask, the whole tokens left in its bucket after the
	// decision (0 while requests queue on it).
	Left [MaxAsks]int
}

// MaxAsks is the most buckets one request draws on.
const MaxAsks = 4

// Limiter decides requests. Take charges cost tokens to every ask's
// bucket if all of them admit it, and to none otherwise, atomically.
type Limiter interface {
	Take(ctx context.Context, cost int, asks ...Ask) (Decision, error)
}

// ErrInvalid reports an Ask that cannot be decided.
var ErrInvalid = errors.New("gcra: invalid ask")

func check(cost int, asks []Ask) error {
	if cost <= 0 || len(asks) == 0 || len(asks) > MaxAsks {
		return fmt.Errorf("%w: cost %d over %d buckets", ErrInvalid, cost, len(asks))
	}
	for _, a := range asks {
		if err := a.Limit.Valid(); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrInvalid, a.Key, err)
		}
		if a.Key == "" || a.Reserve < 0 || a.Reserve >= a.Limit.Burst || a.MaxWait < 0 {
			return fmt.Errorf("%w: key %q, reserve %d of burst %d, max wait %v", ErrInvalid, a.Key, a.Reserve, a.Limit.Burst, a.MaxWait)
		}
	}
	return nil
}

// step is the algorithm, in nanoseconds, shared by Local and (as Lua) by
// Valkey: for a bucket whose TAT is tat at now, the TAT after admitting
// cost tokens, the wait (admitted: before going ahead; refused: until it
// would go at once), whether it is admitted, and the tokens left.
func step(tat, now int64, cost int, a Ask) (next, wait int64, ok bool, left int) {
	interval := int64(a.Limit.Interval())
	// Admitted at once while the TAT stays within this of now.
	tolerance := int64(a.Limit.Burst-a.Reserve) * interval
	next = max(tat, now) + int64(cost)*interval
	wait = next - now - tolerance
	if wait > int64(a.MaxWait) {
		return tat, wait, false, tokensLeft(tat, now, a.Limit)
	}
	return next, max(wait, 0), true, tokensLeft(next, now, a.Limit)
}

// tokensLeft is the whole tokens a bucket with this TAT holds at now.
func tokensLeft(tat, now int64, l Limit) int {
	room := now + int64(l.Burst)*int64(l.Interval()) - max(tat, now)
	if room <= 0 {
		return 0
	}
	return int(min(room/int64(l.Interval()), math.MaxInt32))
}
