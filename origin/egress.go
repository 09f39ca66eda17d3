package origin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Direct is the name of the egress that sends requests from the server's
// own address, without a proxy.
const Direct = "direct"

// Egress is one way out to the origin: the server's own address (Direct)
// or a proxy. Each egress has its own connection pool, its own circuit
// breaker per origin host and its own Retry-After pause, since Telegram
// judges each address on its own: a 429 through one proxy pauses that
// proxy only, and requests go on through the others.
//
// Name is what tells egresses apart outside this package: in metrics, in
// /readyz, and as the key of an origin budget's bucket (Config.Admit).
type Egress struct {
	Name  string   // Direct, or the proxy's host:port
	Proxy *url.URL // nil for Direct
}

// DirectOnly is the egress list of a Client without proxies.
var DirectOnly = []Egress{{Name: Direct}}

// ParseEgresses reads ORIGIN_PROXIES: a comma-separated list of proxy URLs
// — http:// or https:// (a CONNECT tunnel, one per connection to the
// origin), socks5:// or socks5h:// (the proxy resolves the origin's name),
// each with an optional user:password@ — and the word "direct" for the
// server's own address. The server's own address is used only when
// listed: an operator adding proxies usually wants Telegram to see them
// and not the server. Empty means Direct only. Each proxy is named by its
// host:port, which must be unique.
func ParseEgresses(s string) ([]Egress, error) {
	if strings.TrimSpace(s) == "" {
		return DirectOnly, nil
	}
	var out []Egress
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, errors.New("an empty item in the list")
		}
		var e Egress
		if strings.EqualFold(item, Direct) {
			e.Name = Direct
		} else {
			// url.Parse's own errors quote the URL, password included.
			u, err := url.Parse(item)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5" && u.Scheme != "socks5h") {
				return nil, fmt.Errorf("%q: want an http://, https://, socks5:// or socks5h:// proxy URL, or direct", redact(item))
			}
			if u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
				return nil, fmt.Errorf("%q: want scheme://[user:password@]host:port", u.Redacted())
			}
			e.Name, e.Proxy = u.Host, u
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("%s is listed twice", e.Name)
		}
		seen[e.Name] = true
		out = append(out, e)
	}
	return out, nil
}

// redact hides the password of what may be a URL, for error messages.
func redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	if at := strings.LastIndex(s, "@"); at >= 0 {
		return "…" + s[at:]
	}
	return s
}

// proxyFunc is the Transport's Proxy for e: every request through e's
// proxy. net/http tunnels an https origin (t.me) through an HTTP proxy
// with CONNECT, and speaks SOCKS5 itself; a plain-http origin is sent to
// an HTTP proxy as an absolute-form request instead. Direct keeps the
// environment's HTTPS_PROXY and NO_PROXY, as before egresses existed.
func (e Egress) proxyFunc() func(*http.Request) (*url.URL, error) {
	if e.Proxy == nil {
		return http.ProxyFromEnvironment
	}
	return http.ProxyURL(e.Proxy)
}
