// Package origin fetches t.me pages: a connection pool per egress (the
// server's own address or a proxy), bounded retries with jittered backoff
// under a retry budget, Retry-After honoured and a circuit breaker per
// egress and host, a cap on body size, and an optional fallback origin.
package origin

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/tmefeed/tmefeed/internal/defaults"
	"github.com/tmefeed/tmefeed/tme"
)

// Defaults for the zero fields of Config.
const (
	DefaultBaseURL                = "https://t.me"
	DefaultRequestTimeout         = 10 * time.Second
	DefaultMaxBodyBytes           = 8 << 20
	DefaultMaxRetries             = 2
	DefaultUserAgent              = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36"
	DefaultAcceptLanguage         = "en-US,en;q=0.9"
	DefaultMaxConnsPerHost        = 32
	DefaultInFlightPerConn        = 16 // MaxInFlight's default, per connection allowed
	DefaultRetryBaseDelay         = 250 * time.Millisecond
	DefaultRetryMaxDelay          = 4 * time.Second
	DefaultRetryAfter             = 30 * time.Second
	DefaultMaxRetryAfter          = time.Hour
	DefaultFallbackAfter          = 3
	DefaultFallbackCooldown       = 30 * time.Second
	DefaultBreakerFailures        = 5
	DefaultBreakerCoolDown        = 10 * time.Second
	DefaultBreakerProbes          = 3
	DefaultRetryBudget            = 0.2
	retryBurst                    = 10 // retries a quiet client may make before requests have paid for them
	defaultDialTimeout            = 5 * time.Second
	defaultTLSTimeout             = 5 * time.Second
	defaultHeaderTimeout          = 8 * time.Second
	acceptHTML                    = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	acceptMore                    = "application/json, text/javascript, */*; q=0.01"
	drainOnError            int64 = 4 << 10 // read this much of an error body so the connection can be reused
)

// Config configures a Client. Zero fields take the defaults above.
type Config struct {
	BaseURL     string // origin, e.g. "https://t.me" (TME_ORIGIN)
	FallbackURL string // optional second origin, e.g. "https://telegram.me" (TME_FALLBACK_ORIGIN)

	RequestTimeout time.Duration // one attempt, body included
	MaxBodyBytes   int64         // larger bodies fail with ErrTooLarge
	MaxRetries     int           // attempts after the first; 0 = DefaultMaxRetries, negative = none
	UserAgent      string
	AcceptLanguage string // pins the language of t.me's counters ("subscribers")

	// Egresses are the ways out to the origin (ORIGIN_PROXIES, see
	// ParseEgresses); nil means DirectOnly. Requests spread over them in
	// turn, skipping those paused by a 429 or with their breaker open.
	Egresses []Egress

	// Admit, when set, is asked before each request is sent through an
	// egress, with the egress's name — the key of an origin budget's
	// bucket — and the request. An error keeps the request off that
	// egress: the next one is asked, and when none admits it Fetch
	// returns the first error, wrapped as is. It runs on the fetching
	// goroutine and may wait, within ctx.
	Admit func(ctx context.Context, egress string, r tme.Request) error

	// Transport replaces the Client's own pool (tests, instrumentation)
	// for the Direct egress. With it nil, New builds one http.Transport
	// per egress from the fields below.
	Transport             http.RoundTripper
	TLSClientConfig       *tls.Config // nil = system roots
	MaxConnsPerHost       int
	DialTimeout           time.Duration
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration

	// MaxInFlight caps the fetches running or waiting for a connection at
	// once; a Fetch beyond it fails at once with an *UnavailableError
	// wrapping ErrBusy. Loads run detached from the requests that start
	// them, so without it a flood of distinct pages that outpaces the
	// pool (or a hung origin) piles up goroutines until RequestTimeout.
	// 0 means DefaultInFlightPerConn·MaxConnsPerHost.
	MaxInFlight int

	RetryBaseDelay    time.Duration // backoff before retry n is about base·2ⁿ⁻¹, jittered
	RetryMaxDelay     time.Duration // cap of one backoff
	DefaultRetryAfter time.Duration // a 429 without a usable Retry-After blocks this long
	MaxRetryAfter     time.Duration // a longer Retry-After is cut to this

	FallbackAfter    int           // consecutive primary failures that divert traffic to FallbackURL
	FallbackCooldown time.Duration // how long traffic stays diverted before the primary is tried again

	// Circuit breaker, one per host: BreakerFailures consecutive failed
	// attempts (5xx, timeouts, failed connections, broken bodies) open it;
	// while open no request goes to the host and Fetch answers at once with
	// an *UnavailableError. After BreakerCoolDown, BreakerProbes requests
	// may go through: as many successes close it, one failure reopens it.
	BreakerFailures int
	BreakerCoolDown time.Duration
	BreakerProbes   int

	// RetryBudget caps retries at this fraction of recent requests (a token
	// bucket: each Fetch adds RetryBudget tokens, each retry takes one), so
	// an outage costs about one attempt per request instead of
	// 1+MaxRetries. 0 means DefaultRetryBudget; negative means no cap.
	RetryBudget float64

	// Budget, when set, bounds the requests sent (ORIGIN_RPM) and each
	// client's share of them (CLIENT_ORIGIN_RPM): every attempt takes a
	// token for its egress first, by the tme.Request's Class and Client.
	Budget *Budget

	Now func() time.Time // clock for Retry-After and cool-downs; nil = time.Now

	// Observe, when set, is called after every request sent to a host
	// with the egress it went through, its outcome ("ok", "not_found", "rate_limited", "timeout", "refused", "unreachable", "reset", "truncated", "server_error" or "error") and duration, for metrics. It runs on
	// the fetching goroutine: keep it fast.
	Observe func(egress, host, outcome string, d time.Duration)
}

// Client fetches t.me pages. It is safe for concurrent use.
//
// Fallback policy (only with Config.FallbackURL set):
//   - Within one Fetch, when every earlier attempt failed on the primary
//     with a retryable error (5xx, timeout, broken body), the last attempt
//     goes to the fallback.
//   - After FallbackAfter consecutive retryable failures on the primary
//     (counted across requests), every request goes to the fallback for
//     FallbackCooldown. Then the primary is tried again: one success resets
//     the count, one more failure starts another cool-down.
//   - While the primary is rate-limited (429), requests go to the fallback
//     unless it is rate-limited too; then Fetch returns *RateLimitError.
//
// Definitive answers (200, 404, the /s/ redirect of a non-channel, other
// 4xx, an oversized body) are never retried and never diverted.
//
// Each host has a circuit breaker (see Config.BreakerFailures). A host
// whose breaker is open is skipped like a rate-limited one: traffic goes to
// the other host if it can take it, otherwise Fetch returns an
// *UnavailableError at once. Retries beyond the first attempt draw on a
// shared budget (Config.RetryBudget); without budget a failure is
// returned after one attempt.
type Client struct {
	cfg      Config
	now      func() time.Time
	egresses []*egress
	next     atomic.Uint32 // the egress the next Fetch tries first
	inFlight atomic.Int64  // Fetch calls running, see Config.MaxInFlight
	budget   *budget       // nil without Config.Budget

	mu     sync.Mutex // guards rng, tokens and the state in each host
	rng    *rand.Rand
	tokens float64 // retry budget
}

// egress is one way out (Egress) with its pool and its view of each host.
type egress struct {
	name     string
	hc       *http.Client
	own      *http.Transport // the pool New built; nil when Config.Transport was given
	primary  *host
	fallback *host // nil without FallbackURL
}

// host is one origin as seen through one egress, and what we learnt
// about it that way.
type host struct {
	eg           *egress
	base         string // scheme://host[:port][/prefix], no trailing slash
	name         string
	blockedUntil time.Time // from Retry-After
	failures     int       // consecutive retryable failures
	coolUntil    time.Time // primary only: traffic goes to the fallback until then
	last         error     // the kind of the last retryable failure, for UnavailableError

	cb         *gobreaker.TwoStepCircuitBreaker[struct{}]
	openUntil  atomic.Int64 // unix nanos when the open breaker lets probes through
	lastAnswer atomic.Int64 // unix nanos of the last answer (success or definitive), for Health
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	defaults.Set(&cfg.RequestTimeout, DefaultRequestTimeout)
	defaults.Set(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.AcceptLanguage == "" {
		cfg.AcceptLanguage = DefaultAcceptLanguage
	}
	defaults.Set(&cfg.MaxConnsPerHost, DefaultMaxConnsPerHost)
	defaults.Set(&cfg.MaxInFlight, DefaultInFlightPerConn*cfg.MaxConnsPerHost)
	defaults.Set(&cfg.DialTimeout, defaultDialTimeout)
	defaults.Set(&cfg.TLSHandshakeTimeout, defaultTLSTimeout)
	defaults.Set(&cfg.ResponseHeaderTimeout, defaultHeaderTimeout)
	defaults.Set(&cfg.RetryBaseDelay, DefaultRetryBaseDelay)
	defaults.Set(&cfg.RetryMaxDelay, DefaultRetryMaxDelay)
	defaults.Set(&cfg.DefaultRetryAfter, DefaultRetryAfter)
	defaults.Set(&cfg.MaxRetryAfter, DefaultMaxRetryAfter)
	defaults.Set(&cfg.FallbackAfter, DefaultFallbackAfter)
	defaults.Set(&cfg.FallbackCooldown, DefaultFallbackCooldown)
	defaults.Set(&cfg.BreakerFailures, DefaultBreakerFailures)
	defaults.Set(&cfg.BreakerCoolDown, DefaultBreakerCoolDown)
	defaults.Set(&cfg.BreakerProbes, DefaultBreakerProbes)
	if cfg.RetryBudget == 0 {
		cfg.RetryBudget = DefaultRetryBudget
	}

	if len(cfg.Egresses) == 0 {
		cfg.Egresses = DirectOnly
	}
	c := &Client{
		cfg:    cfg,
		now:    cfg.Now,
		rng:    rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		tokens: retryBurst,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if cfg.Budget != nil {
		var err error
		if c.budget, err = newBudget(*cfg.Budget, c.now); err != nil {
			return nil, err
		}
	}
	for _, e := range cfg.Egresses {
		eg := &egress{name: e.Name}
		var err error
		if eg.primary, err = newHost(cfg, eg, cfg.BaseURL); err != nil {
			return nil, fmt.Errorf("origin: base URL: %w", err)
		}
		if cfg.FallbackURL != "" {
			if eg.fallback, err = newHost(cfg, eg, cfg.FallbackURL); err != nil {
				return nil, fmt.Errorf("origin: fallback URL: %w", err)
			}
		}
		rt := cfg.Transport
		if rt == nil || e.Proxy != nil {
			eg.own = newTransport(cfg, e)
			rt = eg.own
		}
		eg.hc = &http.Client{
			Transport: rt,
			// A redirect is an answer (a /s/ page of a non-channel goes to
			// the landing page), so it is returned, not followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		c.egresses = append(c.egresses, eg)
	}
	return c, nil
}

// errExcluded reports an attempt that says nothing about the host's health
// (a 429, the caller giving up): the breaker does not count it.
var errExcluded = errors.New("origin: attempt not counted")

func newHost(cfg Config, eg *egress, raw string) (*host, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is not an http(s) origin", raw)
	}
	h := &host{eg: eg, base: strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), name: u.Host}
	h.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        eg.name + " " + u.Host,
		MaxRequests: uint32(cfg.BreakerProbes),
		Timeout:     cfg.BreakerCoolDown,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= uint32(cfg.BreakerFailures)
		},
		IsExcluded: func(err error) bool { return errors.Is(err, errExcluded) },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			// Runs under the breaker's lock, which uses the wall clock.
			if to == gobreaker.StateOpen {
				h.openUntil.Store(time.Now().Add(cfg.BreakerCoolDown).UnixNano())
			}
		},
	})
	return h, nil
}

func newTransport(cfg Config, e Egress) *http.Transport {
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 e.proxyFunc(),
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true, // a custom dialer turns HTTP/2 off unless asked for
		MaxIdleConns:          2 * cfg.MaxConnsPerHost,
		MaxIdleConnsPerHost:   cfg.MaxConnsPerHost,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSClientConfig:       cfg.TLSClientConfig,
		TLSHandshakeTimeout:   cfg.TLSHandshakeTimeout,
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// Close drops idle connections of the Client's own pools.
func (c *Client) Close() error {
	for _, eg := range c.egresses {
		if eg.own != nil {
			eg.own.CloseIdleConnections()
		}
	}
	return nil
}

// Egresses returns the names of the Client's egresses, in the order
// configured.
func (c *Client) Egresses() []string {
	names := make([]string, len(c.egresses))
	for i, eg := range c.egresses {
		names[i] = eg.name
	}
	return names
}

// outcome classifies one attempt.
type outcome int

const (
	done        outcome = iota // success or a definitive answer: stop
	retry                      // 5xx, timeout, broken body
	rateLimited                // 429
)

// Fetch returns the bytes of the page r names.
func (c *Client) Fetch(ctx context.Context, r tme.Request) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if c.inFlight.Add(1) > int64(c.cfg.MaxInFlight) {
		c.inFlight.Add(-1)
		return nil, &UnavailableError{RetryAfter: c.now().Add(time.Second), Host: c.egresses[0].primary.name, Last: ErrBusy}
	}
	defer c.inFlight.Add(-1)
	path := r.Path()
	attempts := c.cfg.MaxRetries + 1
	c.deposit()
	first := int(c.next.Add(1)-1) % len(c.egresses) // requests take the egresses in turn
	var (
		lastErr  error
		prev     *host
		retrying bool // the last attempt failed with a retryable error
		n        int
	)
	for ; n < attempts; n++ {
		if retrying && !c.withdraw() {
			break // out of retry budget: an outage costs one attempt per request
		}
		h, report, err := c.pick(ctx, r, first, retrying && n == attempts-1)
		if err != nil {
			if retrying {
				break // the breaker opened under this request: report what failed
			}
			return nil, err
		}
		if retrying && h == prev {
			if err := c.backoff(ctx, n); err != nil {
				report(errExcluded)
				return nil, ctxError(ctx)
			}
		}
		if c.budget != nil {
			if err := c.budget.spend(ctx, r, h.eg.name); err != nil {
				report(errExcluded)
				if retrying {
					break // no budget for a retry: report what failed
				}
				return nil, err
			}
		}
		prev = h
		start := time.Now()
		body, oc, until, err := c.attempt(ctx, h, r, path)
		if c.cfg.Observe != nil {
			c.cfg.Observe(h.eg.name, h.name, outcomeName(oc == rateLimited, err), time.Since(start))
		}
		if ctx.Err() != nil {
			report(errExcluded)
			return nil, ctxError(ctx)
		}
		switch oc {
		case done:
			report(nil)
			c.answered(h)
			return body, err
		case rateLimited:
			report(errExcluded) // the host answered; the block keeps traffic off it
			c.block(h, until)
			lastErr, retrying = &RateLimitError{RetryAfter: until, Host: h.name, Egress: h.eg.name}, false
		case retry:
			report(err)
			c.failed(h, err)
			lastErr, retrying = err, true
		}
	}
	if retrying && n > 1 {
		return nil, fmt.Errorf("%w (%d attempts)", lastErr, n)
	}
	return nil, lastErr
}

// pick chooses the egress and host for the next attempt and takes a pass
// from the host's breaker on that egress; report must be called with the
// attempt's outcome. The egresses are tried in turn from first, skipping
// those whose every host is rate-limited or has its breaker open, and
// those Config.Admit refuses. When none can take the request it returns
// the error saying why: Admit's first refusal, else the open breaker that
// lets probes through soonest, else the rate limit that ends soonest.
func (c *Client) pick(ctx context.Context, r tme.Request, first int, lastChance bool) (*host, func(error), error) {
	var (
		refused error
		open    *UnavailableError
		limited *RateLimitError
	)
	for i := range c.egresses {
		eg := c.egresses[(first+i)%len(c.egresses)]
		h, report, err := c.pickHost(eg, lastChance)
		if err != nil {
			var ue *UnavailableError
			var rl *RateLimitError
			switch {
			case errors.As(err, &ue):
				if open == nil || ue.RetryAfter.Before(open.RetryAfter) {
					open = ue
				}
			case errors.As(err, &rl):
				if limited == nil || rl.RetryAfter.Before(limited.RetryAfter) {
					limited = rl
				}
			}
			continue
		}
		if c.cfg.Admit != nil {
			if err := c.cfg.Admit(ctx, eg.name, r); err != nil {
				report(errExcluded)
				if refused == nil {
					refused = err
				}
				continue
			}
		}
		return h, report, nil
	}
	switch {
	case refused != nil:
		return nil, nil, refused
	case open != nil:
		return nil, nil, open
	}
	return nil, nil, limited
}

// pickHost chooses the host for the next attempt through eg, as pick does
// across egresses: the primary unless it is rate-limited, cooling down
// after failures or this is the last chance, and a host whose breaker is
// open is skipped.
func (c *Client) pickHost(eg *egress, lastChance bool) (*host, func(error), error) {
	now := c.now()
	c.mu.Lock()
	p, f := eg.primary, eg.fallback
	pOK := !now.Before(p.blockedUntil)
	fOK := f != nil && !now.Before(f.blockedUntil)
	var order []*host
	switch {
	case fOK && (!pOK || lastChance || now.Before(p.coolUntil)):
		order = append(order, f)
		if pOK {
			order = append(order, p) // only when the fallback's breaker is open
		}
	case pOK:
		order = append(order, p)
		if fOK {
			order = append(order, f) // only when the primary's breaker is open
		}
	}
	until := p.blockedUntil
	if f != nil && f.blockedUntil.Before(until) {
		until = f.blockedUntil
	}
	c.mu.Unlock()

	var open *UnavailableError
	for _, h := range order {
		report, err := h.cb.Allow()
		if err == nil {
			return h, report, nil
		}
		// Open, or half-open with its probes already out: a probe's answer
		// comes within a request timeout.
		retryAt := time.Unix(0, h.openUntil.Load())
		if errors.Is(err, gobreaker.ErrTooManyRequests) || !retryAt.After(time.Now()) {
			retryAt = time.Now().Add(time.Second)
		}
		if open == nil || retryAt.Before(open.RetryAfter) {
			c.mu.Lock()
			last := h.last
			c.mu.Unlock()
			open = &UnavailableError{RetryAfter: retryAt, Host: h.name, Egress: eg.name, Last: last}
		}
	}
	if open != nil {
		return nil, nil, open
	}
	name := p.name
	if f != nil {
		name += ", " + f.name
	}
	return nil, nil, &RateLimitError{RetryAfter: until, Host: name, Egress: eg.name}
}

func (c *Client) answered(h *host) {
	h.lastAnswer.Store(time.Now().UnixNano())
	c.mu.Lock()
	h.failures = 0
	h.coolUntil = time.Time{}
	c.mu.Unlock()
}

func (c *Client) failed(h *host, err error) {
	now := c.now()
	kind := kindOf(err)
	c.mu.Lock()
	h.failures++
	h.last = kind
	if h == h.eg.primary && h.eg.fallback != nil && h.failures >= c.cfg.FallbackAfter {
		h.coolUntil = now.Add(c.cfg.FallbackCooldown)
	}
	c.mu.Unlock()
}

// kindOf is the sentinel naming err's kind of failure.
func kindOf(err error) error {
	for _, k := range []error{ErrTimeout, ErrRefused, ErrUnreachable, ErrReset, ErrTruncated, ErrServerError} {
		if errors.Is(err, k) {
			return k
		}
	}
	return ErrUpstream
}

func (c *Client) block(h *host, until time.Time) {
	c.mu.Lock()
	if until.After(h.blockedUntil) {
		h.blockedUntil = until
	}
	c.mu.Unlock()
}

// deposit pays into the retry budget for one request.
func (c *Client) deposit() {
	if c.cfg.RetryBudget < 0 {
		return
	}
	c.mu.Lock()
	c.tokens = min(c.tokens+c.cfg.RetryBudget, max(retryBurst, c.cfg.RetryBudget))
	c.mu.Unlock()
}

// withdraw takes one retry from the budget, if there is one.
func (c *Client) withdraw() bool {
	if c.cfg.RetryBudget < 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// backoff sleeps before attempt n (n ≥ 1): about base·2ⁿ⁻¹, capped, with
// equal jitter so that retries of many requests spread out.
func (c *Client) backoff(ctx context.Context, n int) error {
	d := c.cfg.RetryBaseDelay << min(n-1, 20)
	if d <= 0 || d > c.cfg.RetryMaxDelay {
		d = c.cfg.RetryMaxDelay
	}
	c.mu.Lock()
	d = d/2 + time.Duration(c.rng.Int64N(int64(d/2)+1))
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ctxError reports the caller's context ending: a deadline is a timeout to
// the caller, a cancellation is passed on as is.
func ctxError(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("origin: %w", err)
}

// attempt sends one request to h. For rateLimited it returns the time the
// host may be asked again.
func (c *Client) attempt(ctx context.Context, h *host, r tme.Request, path string) ([]byte, outcome, time.Time, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	method := r.Method()
	target := h.base + path
	req, err := http.NewRequestWithContext(actx, method, target, nil)
	if err != nil {
		return nil, done, time.Time{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept-Language", c.cfg.AcceptLanguage)
	if r.Kind == tme.KindMore {
		// What t.me's own page script sends when loading more posts.
		req.Header.Set("Accept", acceptMore)
		req.Header.Set("X-Requested-With", "XMLHttpRequest")
		req.Header.Set("Origin", h.base)
		req.Header.Set("Referer", h.base+"/s/"+r.Channel)
	} else {
		req.Header.Set("Accept", acceptHTML)
	}
	what := method + " " + h.base + r.Shown()

	resp, err := h.eg.hc.Do(req)
	if err != nil {
		kind := connErrorKind(actx, err)
		// url.Error repeats the method and the URL, query included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, retry, time.Time{}, fmt.Errorf("%w: %s: %w", kind, what, err)
	}
	defer resp.Body.Close()

	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		body, oc, err := c.readBody(actx, resp, what)
		return body, oc, time.Time{}, err
	case code == http.StatusNotFound || code == http.StatusGone:
		drain(resp.Body)
		return nil, done, time.Time{}, fmt.Errorf("%w: %s: status %d", ErrNotFound, what, code)
	case code >= 300 && code < 400 && strings.HasPrefix(path, "/s/"):
		// t.me sends /s/<name> of a user, group, bot or unknown name to
		// the landing page /<name>: not a public channel.
		drain(resp.Body)
		return nil, done, time.Time{}, fmt.Errorf("%w: %s: redirected to %q", ErrNotFound, what, resp.Header.Get("Location"))
	case code == http.StatusTooManyRequests:
		drain(resp.Body)
		return nil, rateLimited, c.retryAfter(resp.Header.Get("Retry-After")), nil
	case code >= 500:
		drain(resp.Body)
		return nil, retry, time.Time{}, fmt.Errorf("%w: %s: status %d", ErrServerError, what, code)
	default:
		drain(resp.Body)
		return nil, done, time.Time{}, fmt.Errorf("%w: %s: unexpected status %d", ErrUpstream, what, code)
	}
}

func (c *Client) readBody(actx context.Context, resp *http.Response, what string) ([]byte, outcome, error) {
	limit := c.cfg.MaxBodyBytes
	if resp.ContentLength > limit {
		return nil, done, fmt.Errorf("%w: %w: %s: %d bytes declared, limit %d", ErrUpstream, ErrTooLarge, what, resp.ContentLength, limit)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil && isTimeout(actx, err):
		return nil, retry, fmt.Errorf("%w: %s: reading body: %w", ErrTimeout, what, err)
	case err != nil:
		return nil, retry, fmt.Errorf("%w: %s: reading body: %w", ErrTruncated, what, err)
	case n > limit:
		return nil, done, fmt.Errorf("%w: %w: %s: body over %d bytes", ErrUpstream, ErrTooLarge, what, limit)
	case resp.ContentLength >= 0 && n != resp.ContentLength:
		return nil, retry, fmt.Errorf("%w: %s: truncated body: %d of %d bytes", ErrTruncated, what, n, resp.ContentLength)
	}
	return buf.Bytes(), done, nil
}

// retryAfter turns a Retry-After value (seconds or an HTTP date) into the
// time the host may be asked again.
func (c *Client) retryAfter(v string) time.Time {
	now := c.now()
	d := c.cfg.DefaultRetryAfter
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
		d = time.Duration(min(secs, int64(c.cfg.MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(now), 0)
	}
	return now.Add(min(d, c.cfg.MaxRetryAfter))
}

// connErrorKind names why a request got no response at all.
func connErrorKind(actx context.Context, err error) error {
	var (
		op  *net.OpError
		dns *net.DNSError
	)
	switch {
	case isTimeout(actx, err):
		return ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The server closed or reset the connection before answering.
		return ErrReset
	case errors.As(err, &dns), errors.As(err, &op) && op.Op == "dial":
		return ErrUnreachable
	}
	return ErrUpstream
}

func isTimeout(actx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(actx.Err(), context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func drain(r io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r, drainOnError))
}
