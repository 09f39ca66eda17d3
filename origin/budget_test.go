package origin

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/gcra"
	"github.com/tmefeed/tmefeed/tme"
)

// budgetClient is a Client over the fixture origin with budget b, on the
// test's clock, recording the budget's decisions.
func budgetClient(t *testing.T, b Budget) (*Client, *fixtures.Origin, *clock, *decisions) {
	t.Helper()
	o := fixtures.NewOrigin(fixtures.OriginOptions{})
	s := httptest.NewServer(o)
	t.Cleanup(s.Close)
	clk := newClock()
	b.Limiter = gcra.NewLocal(gcra.LocalConfig{Now: clk.Now})
	d := &decisions{}
	b.Observe = d.add
	c := newClient(t, Config{BaseURL: s.URL, Budget: &b, Now: clk.Now})
	return c, o, clk, d
}

type decisions struct {
	mu  sync.Mutex
	got []string
}

func (d *decisions) add(egress string, class tme.Class, outcome string, _ time.Duration) {
	d.mu.Lock()
	d.got = append(d.got, egress+"/"+class.String()+"/"+outcome)
	d.mu.Unlock()
}

func (d *decisions) count(what string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, g := range d.got {
		if g == what {
			n++
		}
	}
	return n
}

func page(ch string, class tme.Class, client string) tme.Request {
	return tme.Request{Kind: tme.KindBody, Channel: ch, Class: class, Client: client}
}

// Past its burst the budget sends nothing more to Telegram: the request
// fails at once with a BudgetError saying when the budget takes it again
// (ORIGIN_RPM's interval), and origin saw exactly the burst.
func TestBudgetBoundsRequestsSent(t *testing.T) {
	c, o, clk, d := budgetClient(t, Budget{RPM: 1, Burst: 3})
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, "")); err != nil {
			t.Fatalf("request %d of the burst: %v", i+1, err)
		}
	}
	_, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, ""))
	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrBudget) || errors.Is(err, ErrClientBudget) {
		t.Fatalf("past the burst: %v, want a BudgetError of the egress", err)
	}
	if be.Egress != Direct || be.Class != tme.ClassReader || !be.RetryAfter.Equal(clk.Now().Add(time.Minute)) {
		t.Errorf("refusal %+v, want egress direct, class reader, retry in 1m (one token a minute)", be)
	}
	if n := o.Requests("/s/tmefeed_news"); n != 3 {
		t.Errorf("the origin saw %d requests, want the burst of 3", n)
	}
	if ra, ok := RetryAfter(err); !ok || !ra.Equal(be.RetryAfter) {
		t.Errorf("RetryAfter(err) = %v %v", ra, ok)
	}
	if code, remembered := (Failures{}).Code(err); remembered {
		t.Errorf("a budget refusal is remembered as the page's failure %q: the page did not fail", code)
	}
	if d.count("direct/reader/refused") != 1 || d.count("direct/reader/admitted") != 3 {
		t.Errorf("decisions %v", d.got)
	}
	st := c.Budget()
	if len(st) != 1 || st[0].Tokens != 0 || st[0].Refused["reader"] != 1 || st[0].RPM != 1 || st[0].Burst != 3 {
		t.Errorf("Budget() = %+v", st)
	}
	clk.Advance(time.Minute)
	if _, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, "")); err != nil {
		t.Errorf("a minute later: %v", err)
	}
}

// The lower classes leave the last tokens to the higher: history walks and
// search stop at half the burst, the updater at a quarter, refreshes at a
// tenth, and a reader waiting for a page no tier holds gets the rest.
func TestBudgetReservesForHigherClasses(t *testing.T) {
	c, _, _, _ := budgetClient(t, Budget{RPM: 1, Burst: 20})
	ctx := context.Background()
	took := func(class tme.Class) int {
		n := 0
		for {
			if _, err := c.Fetch(ctx, page("tmefeed_news", class, "")); err != nil {
				if !errors.Is(err, ErrBudget) {
					t.Fatal(err)
				}
				return n
			}
			n++
		}
	}
	for _, want := range []struct {
		class tme.Class
		n     int
	}{{tme.ClassHistory, 10}, {tme.ClassUpdater, 5}, {tme.ClassRefresh, 3}, {tme.ClassReader, 2}} {
		if got := took(want.class); got != want.n {
			t.Errorf("%s took %d tokens, want %d", want.class, got, want.n)
		}
	}
}

// Each client has its own share (CLIENT_ORIGIN_RPM): one client past its
// burst is refused with ErrClientBudget while others, and requests of
// nobody's (the updater's, refreshes), still go; a client's refusal costs
// the egress nothing, and a request the egress refuses still costs the
// client.
func TestBudgetClientShare(t *testing.T) {
	c, o, clk, d := budgetClient(t, Budget{RPM: 600, Burst: 100, ClientRPM: 6, ClientBurst: 4})
	ctx := context.Background()
	for range 4 {
		if _, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, "192.0.2.1")); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, "192.0.2.1"))
	var be *BudgetError
	if !errors.As(err, &be) || !be.Client || !errors.Is(err, ErrClientBudget) {
		t.Fatalf("past the client's burst: %v", err)
	}
	if !be.RetryAfter.Equal(clk.Now().Add(10 * time.Second)) {
		t.Errorf("client refused until %v, want 10s on (a minute/6)", be.RetryAfter.Sub(clk.Now()))
	}
	for _, r := range []tme.Request{page("tmefeed_news", tme.ClassReader, "192.0.2.2"), page("tmefeed_news", tme.ClassUpdater, "192.0.2.1"), page("tmefeed_news", tme.ClassRefresh, "192.0.2.1"), page("tmefeed_news", tme.ClassReader, "")} {
		if _, err := c.Fetch(ctx, r); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	if n := o.Requests("/s/tmefeed_news"); n != 8 {
		t.Errorf("origin saw %d requests, want 8", n)
	}
	if d.count("direct/reader/client_refused") != 1 || c.Budget()[0].Refused["reader"] != 0 {
		t.Errorf("decisions %v, state %+v", d.got, c.Budget())
	}
}

// A client's own share (ClientLimit: an API consumer's origin_rpm=)
// replaces ClientRPM for it alone, with a burst no larger than the share,
// and applies even without a ClientRPM for everyone else.
func TestBudgetClientLimit(t *testing.T) {
	own := map[string]int{"consumer=small": 2, "consumer=large": 600}
	for _, clientRPM := range []int{0, 6} {
		c, _, clk, _ := budgetClient(t, Budget{RPM: 6000, Burst: 1000, ClientRPM: clientRPM, ClientBurst: 4,
			ClientLimit: func(client string) int { return own[client] }})
		ctx := context.Background()
		fetched := func(client string, n int) int {
			ok := 0
			for range n {
				if _, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, client)); err == nil {
					ok++
				} else if !errors.Is(err, ErrClientBudget) {
					t.Fatal(err)
				}
			}
			return ok
		}
		wantOther := 10
		if clientRPM > 0 {
			wantOther = 4
		}
		for client, want := range map[string]int{"consumer=small": 2, "consumer=large": 4, "192.0.2.1": wantOther} {
			if got := fetched(client, 10); got != want {
				t.Errorf("ClientRPM %d: %s fetched %d of 10 at once, want %d", clientRPM, client, got, want)
			}
		}
		// small's share comes back at 2 a minute: one in 30 s.
		clk.Advance(30 * time.Second)
		if got := fetched("consumer=small", 3); got != 1 {
			t.Errorf("ClientRPM %d: small fetched %d 30 s on, want 1", clientRPM, got)
		}
	}
}

// A reader whose token comes within the wait queues for it instead of
// failing; one whose token is further away is refused at once, never
// held past the wait.
func TestBudgetReaderQueuesBriefly(t *testing.T) {
	o := fixtures.NewOrigin(fixtures.OriginOptions{})
	s := httptest.NewServer(o)
	t.Cleanup(s.Close)
	d := &decisions{}
	// A token every 50ms, one at once; the limiter's clock stands still,
	// so the decisions do not depend on how fast the goroutines run (the
	// waits are slept for real).
	clk := newClock()
	b := Budget{Limiter: gcra.NewLocal(gcra.LocalConfig{Now: clk.Now}), RPM: 1200, Burst: 1, Wait: 120 * time.Millisecond, Observe: d.add}
	c := newClient(t, Config{BaseURL: s.URL, Budget: &b, Now: clk.Now})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { _, errs[i] = c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, "")) })
	}
	wg.Wait()
	var ok, refused int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrBudget):
			refused++
		default:
			t.Errorf("fetch: %v", err)
		}
	}
	// One at once, two queued (50 and 100ms), three refused (150ms on and
	// more, past the 120ms wait).
	if ok != 3 || refused != 3 || d.count("direct/reader/waited") != 2 {
		t.Errorf("%d sent, %d refused, decisions %v; want 3 sent (2 after a wait) and 3 refused", ok, refused, d.got)
	}
	if n := o.Requests("/s/tmefeed_news"); n != int64(ok) {
		t.Errorf("origin saw %d, want %d", n, ok)
	}
	// The updater never queues: a copy is served while it waits.
	_, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassUpdater, ""))
	if !errors.Is(err, ErrBudget) {
		t.Errorf("updater with the bucket empty: %v, want refused at once", err)
	}
}

// A client flooding a spent budget spends its own share on the refusals,
// so once the budget recovers it cannot crowd out other clients.
func TestBudgetRefusalsCostTheClient(t *testing.T) {
	c, _, _, _ := budgetClient(t, Budget{RPM: 1, Burst: 2, ClientRPM: 1, ClientBurst: 5})
	ctx := context.Background()
	var egress, client int
	for range 8 {
		_, err := c.Fetch(ctx, page("tmefeed_news", tme.ClassReader, "192.0.2.1"))
		switch {
		case errors.Is(err, ErrClientBudget):
			client++
		case errors.Is(err, ErrBudget):
			egress++
		case err != nil:
			t.Fatal(err)
		}
	}
	if egress != 3 || client != 3 {
		t.Errorf("8 requests on an egress of 2: %d refused by the egress, %d by the client's share; want 3 and 3 (the client's 5 spent by 2 sent and 3 refused)", egress, client)
	}
}
