package origin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fixtures"
	"github.com/tmefeed/tmefeed/internal/proxytest"
	"github.com/tmefeed/tmefeed/tme"
)

// bySource is the fixture origin behind TLS, as t.me is, counting requests
// by the address they come from and answering 429 to the addresses told
// to, as Telegram limits each address on its own.
type bySource struct {
	srv     *httptest.Server
	mu      sync.Mutex
	counts  map[string]int
	limited map[string]bool
}

func newBySource(t *testing.T) *bySource {
	t.Helper()
	o := fixtures.NewOrigin(fixtures.OriginOptions{Synthetic: 40})
	b := &bySource{counts: map[string]int{}, limited: map[string]bool{}}
	b.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		b.mu.Lock()
		b.counts[ip]++
		limited := b.limited[ip]
		b.mu.Unlock()
		if limited {
			w.Header().Set("Retry-After", "60")
			http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
			return
		}
		o.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bySource) count(ip string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts[ip]
}

func (b *bySource) limit(ip string) {
	b.mu.Lock()
	b.limited[ip] = true
	b.mu.Unlock()
}

// egressClient is a Client for the origin through the egresses listed.
func egressClient(t *testing.T, b *bySource, proxies string, admit func(context.Context, string, tme.Request) error) *Client {
	t.Helper()
	egs, err := ParseEgresses(proxies)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, Config{
		BaseURL:         b.srv.URL,
		Egresses:        egs,
		TLSClientConfig: b.srv.Client().Transport.(*http.Transport).TLSClientConfig,
		Admit:           admit,
	})
}

func numberedPage(i int) tme.Request {
	return tme.Request{Kind: tme.KindBody, Channel: fmt.Sprintf("loadchan%03d", i%40+1), Position: i + 1}
}

// Two proxies in ORIGIN_PROXIES, an HTTP CONNECT proxy and a SOCKS5 one,
// in front of the fixture origin over TLS (the path to https://t.me):
// fetches take them in turn, none goes direct; a 429 through one pauses
// that one only, the request that met it is sent through the other, and
// so are the next ones until the pause ends; with both paused, Fetch says
// so with the soonest end.
func TestEgressesShareFetchesAndPauseAlone(t *testing.T) {
	const viaConnect, viaSOCKS = "127.0.0.2", "127.0.0.3"
	b := newBySource(t)
	hp := proxytest.StartHTTP(t, viaConnect)
	sp := proxytest.StartSOCKS5(t, viaSOCKS)
	c := egressClient(t, b, hp.URL("http")+", "+sp.URL("socks5"), nil)
	ctx := context.Background()
	if got := strings.Join(c.Egresses(), " "); got != hp.Addr()+" "+sp.Addr() {
		t.Fatalf("egresses %q", got)
	}

	const n = 20
	for i := range n {
		if _, err := c.Fetch(ctx, numberedPage(i)); err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	if a, s, d := b.count(viaConnect), b.count(viaSOCKS), b.count("127.0.0.1"); a != n/2 || s != n/2 || d != 0 {
		t.Fatalf("requests through the CONNECT proxy %d, the SOCKS5 proxy %d, direct %d; want %d, %d, 0", a, s, d, n/2, n/2)
	}
	if hp.Dials() == 0 || sp.Dials() == 0 {
		t.Fatalf("tunnels: CONNECT %d, SOCKS5 %d", hp.Dials(), sp.Dials())
	}

	// Telegram limits the CONNECT proxy's address.
	b.limit(viaConnect)
	before := b.count(viaSOCKS)
	for i := range n {
		if _, err := c.Fetch(ctx, numberedPage(n+i)); err != nil {
			t.Fatalf("fetch %d with one egress paused: %v", i, err)
		}
	}
	if got := b.count(viaConnect); got != n/2+1 {
		t.Errorf("the paused proxy was asked %d more times after its 429, want none", got-n/2-1)
	}
	if got := b.count(viaSOCKS) - before; got != n {
		t.Errorf("%d of %d fetches went through the other proxy", got, n)
	}
	for _, h := range c.Health() {
		if h.Breaker != "closed" {
			t.Errorf("%s via %s: breaker %s; a 429 is not a failure", h.Host, h.Egress, h.Breaker)
		}
	}

	// Both limited: the request is refused, naming when an egress is free.
	b.limit(viaSOCKS)
	_, err := c.Fetch(ctx, numberedPage(2*n))
	var rl *RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, ErrRateLimited) {
		t.Fatalf("with both egresses limited: %v, want a RateLimitError", err)
	}
	if wait := time.Until(rl.RetryAfter); wait < 50*time.Second || wait > 61*time.Second {
		t.Errorf("retry after %v, want about the 60 s Telegram asked", wait)
	}
	if rl.Egress != hp.Addr() && rl.Egress != sp.Addr() {
		t.Errorf("RateLimitError names egress %q", rl.Egress)
	}
	asked := b.count(viaConnect) + b.count(viaSOCKS)
	if _, err := c.Fetch(ctx, numberedPage(2*n+1)); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("while both are paused: %v", err)
	}
	if got := b.count(viaConnect) + b.count(viaSOCKS); got != asked {
		t.Errorf("%d requests sent while every egress was paused", got-asked)
	}
}

// A plain-http origin (the fixture origin as tests and load runs use it)
// is reached through an HTTP proxy with absolute-form requests, and
// through SOCKS5 like any other.
func TestEgressesToPlainHTTPOrigin(t *testing.T) {
	hits := map[string]int{}
	var mu sync.Mutex
	o := fixtures.NewOrigin(fixtures.OriginOptions{Synthetic: 40})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		hits[ip]++
		mu.Unlock()
		o.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	hp := proxytest.StartHTTP(t, "127.0.0.2")
	sp := proxytest.StartSOCKS5(t, "127.0.0.3")
	egs, err := ParseEgresses(hp.URL("http") + "," + sp.URL("socks5"))
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Config{BaseURL: srv.URL, Egresses: egs})
	for i := range 6 {
		b, err := c.Fetch(context.Background(), numberedPage(i))
		if err != nil || !strings.Contains(string(b), "loadchan") {
			t.Fatalf("fetch %d: %d bytes, %v", i, len(b), err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits["127.0.0.2"] != 3 || hits["127.0.0.3"] != 3 || hits["127.0.0.1"] != 0 {
		t.Errorf("requests by source %v; want 3 through each proxy, none direct", hits)
	}
}

// The server's own address is used only when listed, beside the proxies.
func TestDirectEgressOnlyWhenListed(t *testing.T) {
	b := newBySource(t)
	hp := proxytest.StartHTTP(t, "127.0.0.2")
	c := egressClient(t, b, "direct,"+hp.URL("http"), nil)
	for i := range 4 {
		if _, err := c.Fetch(context.Background(), numberedPage(i)); err != nil {
			t.Fatal(err)
		}
	}
	if d, p := b.count("127.0.0.1"), b.count("127.0.0.2"); d != 2 || p != 2 {
		t.Errorf("direct %d, proxy %d; want 2 and 2", d, p)
	}
}

// Config.Admit is asked with the egress's name before each request; an
// egress it refuses is skipped, and when it refuses every one, Fetch
// returns its error and sends nothing.
func TestAdmitIsAskedPerEgress(t *testing.T) {
	b := newBySource(t)
	hp := proxytest.StartHTTP(t, "127.0.0.2")
	sp := proxytest.StartSOCKS5(t, "127.0.0.3")
	errSpent := errors.New("budget spent")
	var (
		mu     sync.Mutex
		asked  = map[string]int{}
		refuse = map[string]bool{hp.Addr(): true}
	)
	admit := func(_ context.Context, egress string, r tme.Request) error {
		mu.Lock()
		defer mu.Unlock()
		if r.Channel == "" {
			return errors.New("no request")
		}
		asked[egress]++
		if refuse[egress] {
			return fmt.Errorf("%s: %w", egress, errSpent)
		}
		return nil
	}
	c := egressClient(t, b, hp.URL("http")+","+sp.URL("socks5h"), admit)
	for i := range 6 {
		if _, err := c.Fetch(context.Background(), numberedPage(i)); err != nil {
			t.Fatal(err)
		}
	}
	if p, s := b.count("127.0.0.2"), b.count("127.0.0.3"); p != 0 || s != 6 {
		t.Errorf("refused proxy sent %d, the other %d; want 0 and 6", p, s)
	}
	mu.Lock()
	if asked[hp.Addr()] != 3 || asked[sp.Addr()] != 6 {
		t.Errorf("Admit asked %v", asked)
	}
	refuse[sp.Addr()] = true
	mu.Unlock()
	if _, err := c.Fetch(context.Background(), numberedPage(7)); !errors.Is(err, errSpent) {
		t.Fatalf("every egress refused: %v, want the refusal", err)
	}
	if got := b.count("127.0.0.2") + b.count("127.0.0.3"); got != 6 {
		t.Errorf("%d requests sent though Admit refused them", got-6)
	}
}

func TestParseEgresses(t *testing.T) {
	egs, err := ParseEgresses(" http://10.0.0.2:3128, socks5://u:secret@10.0.0.3:1080 ,DIRECT,https://proxy.example:443")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range egs {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); got != "10.0.0.2:3128 10.0.0.3:1080 direct proxy.example:443" {
		t.Errorf("names %q", got)
	}
	if egs[2].Proxy != nil || egs[1].Proxy.User.Username() != "u" {
		t.Errorf("egresses %+v", egs)
	}
	if egs, err := ParseEgresses(""); err != nil || len(egs) != 1 || egs[0].Name != Direct {
		t.Errorf("empty: %v, %v; want direct only", egs, err)
	}
	for in, want := range map[string]string{
		"ftp://10.0.0.2:21":                       "want an http://",
		"http://10.0.0.2":                         "host:port",
		"http://10.0.0.2:3128/path":               "host:port",
		"10.0.0.2:3128":                           "want an http://",
		"http://10.0.0.2:3128,,direct":            "empty item",
		"direct,direct":                           "direct is listed twice",
		"socks5://a:1,http://a:1":                 "a:1 is listed twice",
		"socks5://u:secret@10.0.0.3:1080/x":       "u:xxxxx@",
		"socks5://u:secret@10.0.0.3:bad\x7f:1080": "…@",
	} {
		_, err := ParseEgresses(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: %v; want an error containing %q, without the password", in, err, want)
		}
	}
}
