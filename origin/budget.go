package origin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/internal/keys"
	"github.com/tmefeed/tmefeed/tme"
)

// numClasses counts tme's request classes, which index the budget's
// per-class reserves, waits and counters.
const numClasses = tme.ClassHistory + 1

// Defaults of a Budget's zero fields.
const (
	// DefaultBudgetWait is how long a reader's request queues for a token
	// before it is refused: long enough to ride out a burst, short enough
	// that an answer never hangs.
	DefaultBudgetWait = 2 * time.Second
	// DefaultClientBurst is the origin requests a quiet client may cause at
	// once: one cold feed of 100 channels, with room for a few of their
	// previews.
	DefaultClientBurst = 120
)

// Budget bounds the requests sent to Telegram (ORIGIN_RPM) and each
// client's share of them (CLIENT_ORIGIN_RPM). Every Fetch passes it
// before each attempt, whatever asked for the page.
type Budget struct {
	// Limiter keeps the buckets: a gcra.Valkey shared by every process,
	// or a gcra.Local for this one.
	Limiter gcra.Limiter
	// RPM is the requests one egress address may send a minute; Burst
	// how many of them may go at once (0 = RPM/5, at least 1).
	RPM, Burst int
	// ClientRPM is the origin requests one client may ask for a minute,
	// readers' pages and history alike (0 = no per-client share);
	// ClientBurst how many at once (0 = DefaultClientBurst). A request the
	// egress refuses still counts: see spend.
	ClientRPM, ClientBurst int
	// ClientLimit, when set, names a client's own share in place of
	// ClientRPM (an API consumer's origin_rpm=): the origin requests it may
	// ask for a minute, 0 for ClientRPM's. Its burst is ClientBurst, or the
	// share itself when smaller: a consumer held to a few fetches a minute
	// cannot take a whole cold feed's worth at once. It is asked only for a
	// request the caches could not answer, so it may look things up.
	ClientLimit func(client string) int
	// Wait is how long a reader's request queues for a token; 0 =
	// DefaultBudgetWait. Refreshes and the updater do not queue (a copy is
	// served meanwhile); history walks, search and media queue half as
	// long.
	Wait time.Duration
	// Observe, when set, learns each decision: the egress, the class,
	// the outcome ("admitted", "waited", "refused" (the egress's budget) or
	// "client_refused") and the wait (before going ahead, or the refusal's
	// Retry-After). It runs on the fetching goroutine: keep it fast.
	Observe func(egress string, class tme.Class, outcome string, wait time.Duration)
}

// reserves are the parts of the burst each class leaves to those above it.
var reserves = [numClasses]float64{tme.ClassReader: 0, tme.ClassRefresh: 0.1, tme.ClassUpdater: 0.25, tme.ClassHistory: 0.5}

// BudgetError reports a request not sent because a budget is spent:
// errors.Is(err, ErrBudget) holds, and errors.Is(err, ErrClientBudget)
// too when it is the client's own share.
type BudgetError struct {
	RetryAfter time.Time // when the refusing budget admits the request at once
	Egress     string
	Class      tme.Class
	Client     bool // the client's own share (CLIENT_ORIGIN_RPM), not the egress's
}

// ErrBudget and ErrClientBudget: see BudgetError.
var (
	ErrBudget       = errors.New("origin: budget exhausted")
	ErrClientBudget = errors.New("origin: the client's share of the budget is spent")
)

func (e *BudgetError) Error() string {
	what := "the origin budget of egress " + e.Egress + " is"
	if e.Client {
		what = "this client's share of the origin budget is"
	}
	return fmt.Sprintf("origin: %s spent (a %s request); retry after %s", what, e.Class, e.RetryAfter.UTC().Format(time.RFC3339))
}

func (e *BudgetError) Is(target error) bool {
	return target == ErrBudget || (e.Client && target == ErrClientBudget)
}

// budget is a Client's Budget in use.
type budget struct {
	Budget
	egress      gcra.Limit
	client      gcra.Limit
	reserve     [numClasses]int
	wait        [numClasses]time.Duration
	now         func() time.Time
	egressState sync.Map // egress name → *egressState
}

// egressState is what the budget last learnt of one egress's bucket.
type egressState struct {
	tokens  atomic.Int64
	decided atomic.Int64 // unix nanos of the last decision
	refused [numClasses]atomic.Uint64
}

func newBudget(b Budget, now func() time.Time) (*budget, error) {
	if b.Limiter == nil || b.RPM <= 0 {
		return nil, fmt.Errorf("origin: budget of %d requests a minute without a limiter", b.RPM)
	}
	if b.Burst <= 0 {
		b.Burst = max(1, b.RPM/5)
	}
	if b.ClientBurst <= 0 {
		b.ClientBurst = DefaultClientBurst
	}
	if b.Wait <= 0 {
		b.Wait = DefaultBudgetWait
	}
	bb := &budget{
		Budget: b,
		egress: gcra.Limit{Rate: b.RPM, Per: time.Minute, Burst: b.Burst},
		client: gcra.Limit{Rate: max(b.ClientRPM, 1), Per: time.Minute, Burst: b.ClientBurst},
		now:    now,
	}
	if err := bb.egress.Valid(); err != nil {
		return nil, fmt.Errorf("origin: ORIGIN_RPM: %w", err)
	}
	for c := range numClasses {
		bb.reserve[c] = min(int(reserves[c]*float64(b.Burst)), b.Burst-1)
	}
	bb.wait[tme.ClassReader] = b.Wait
	bb.wait[tme.ClassHistory] = b.Wait / 2
	return bb, nil
}

// spend takes one token for r from r's client's bucket, when r is a
// client's, and from egress's, waiting its turn when the budget allows a
// wait; it returns a *BudgetError when the request may not go.
func (b *budget) spend(ctx context.Context, r tme.Request, egress string) error {
	class := min(r.Class, numClasses-1)
	st := b.state(egress)
	// The client's share first, and spent whether or not the egress can
	// take the request: it bounds what a client asks of Telegram, so a
	// client flooding a spent budget runs out of its own share at once
	// instead of keeping its place in the queue ahead of everyone else.
	// Only what a client chose to ask for counts: refreshes of pages
	// being read and the updater's loads are nobody's.
	if lim, ok := b.clientLimit(r.Client, class); ok {
		d, err := b.take(ctx, gcra.Ask{Key: keys.ClientBudget(r.Client), Limit: lim})
		if err != nil {
			return err
		}
		if !d.OK {
			b.observe(egress, class, "client_refused", d.Wait)
			return &BudgetError{RetryAfter: b.now().Add(d.Wait), Egress: egress, Class: class, Client: true}
		}
	}
	d, err := b.take(ctx, gcra.Ask{Key: keys.Budget(egress), Limit: b.egress, Reserve: b.reserve[class], MaxWait: b.wait[class]})
	if err != nil {
		return err
	}
	st.tokens.Store(int64(d.Left[0]))
	st.decided.Store(b.now().UnixNano())
	if !d.OK {
		st.refused[class].Add(1)
		b.observe(egress, class, "refused", d.Wait)
		// Exact: the updater waits just so long; faces round up to the
		// whole seconds Retry-After says.
		return &BudgetError{RetryAfter: b.now().Add(d.Wait), Egress: egress, Class: class}
	}
	if d.Wait <= 0 {
		b.observe(egress, class, "admitted", 0)
		return nil
	}
	b.observe(egress, class, "waited", d.Wait)
	t := time.NewTimer(d.Wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctxError(ctx)
	}
}

// clientLimit is the share of the origin budget client's requests of
// class draw on, if any: its own (ClientLimit), else ClientRPM's.
func (b *budget) clientLimit(client string, class tme.Class) (gcra.Limit, bool) {
	if client == "" || (class != tme.ClassReader && class != tme.ClassHistory) {
		return gcra.Limit{}, false
	}
	if b.ClientLimit != nil {
		if rpm := b.ClientLimit(client); rpm > 0 {
			return gcra.Limit{Rate: rpm, Per: time.Minute, Burst: min(rpm, b.ClientBurst)}, true
		}
	}
	return b.client, b.ClientRPM > 0
}

func (b *budget) take(ctx context.Context, a gcra.Ask) (gcra.Decision, error) {
	d, err := b.Limiter.Take(ctx, 1, a)
	if err != nil {
		if ctx.Err() != nil {
			return d, ctxError(ctx)
		}
		return d, fmt.Errorf("origin: budget: %w", err)
	}
	return d, nil
}

func (b *budget) observe(egress string, class tme.Class, outcome string, wait time.Duration) {
	if b.Observe != nil {
		b.Observe(egress, class, outcome, wait)
	}
}

func (b *budget) state(egress string) *egressState {
	if s, ok := b.egressState.Load(egress); ok {
		return s.(*egressState)
	}
	s, _ := b.egressState.LoadOrStore(egress, &egressState{})
	return s.(*egressState)
}

// BudgetState is the origin budget of one egress, as /readyz shows it.
type BudgetState struct {
	Egress string
	RPM    int // requests a minute
	Burst  int
	// Tokens is what the bucket held at the last decision (Decided); with
	// a shared limiter, after every process's requests.
	Tokens  int
	Decided time.Time
	// Refused counts requests refused for the egress's budget, by class.
	Refused map[string]uint64
	// ClientRPM and ClientBurst are each client's share; 0 = none.
	ClientRPM, ClientBurst int
}

// Budget reports the origin budget per egress; nil without one.
func (c *Client) Budget() []BudgetState {
	b := c.budget
	if b == nil {
		return nil
	}
	var out []BudgetState
	names := c.Egresses() // every egress has a budget of its own
	for _, name := range names {
		st := b.state(name)
		s := BudgetState{Egress: name, RPM: b.RPM, Burst: b.Burst, Tokens: b.Burst, Refused: map[string]uint64{}}
		if n := st.decided.Load(); n != 0 {
			s.Tokens, s.Decided = int(st.tokens.Load()), time.Unix(0, n)
		}
		for _, cl := range tme.Classes() {
			s.Refused[cl.String()] = st.refused[cl].Load()
		}
		if b.ClientRPM > 0 {
			s.ClientRPM, s.ClientBurst = b.ClientRPM, b.ClientBurst
		}
		out = append(out, s)
	}
	return out
}
