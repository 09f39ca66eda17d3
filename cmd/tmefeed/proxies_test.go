package main

import (
	"net/http"
	"testing"

	"github.com/tmefeed/tmefeed/internal/proxytest"
)

// With ORIGIN_PROXIES the server reaches the origin through the proxies
// listed, in turn, never directly (direct is not listed), and the origin
// series name each egress.
func TestOriginProxies(t *testing.T) {
	hp := proxytest.StartHTTP(t, "127.0.0.2")
	sp := proxytest.StartSOCKS5(t, "127.0.0.3")
	s := startLive(t, map[string]string{"ORIGIN_PROXIES": hp.URL("http") + "," + sp.URL("socks5"), "UPDATER": "off", "LOG_LEVEL": "warn"})
	for _, ch := range []string{"tmefeed_news", "kanal_novostei", "emoji_party", "retro_channel"} {
		if status, _, out := s.do(t, http.MethodGet, "/v1/body/"+ch, ""); status != http.StatusOK {
			t.Fatalf("%s through the proxies: %d %s", ch, status, out)
		}
	}
	m := s.scrape(t)
	for _, p := range []*proxytest.Proxy{hp, sp} {
		if v := value(m, "tmefeed_origin_requests_total", "egress", p.Addr(), "outcome", "ok"); v < 1 || p.Dials() == 0 {
			t.Errorf("egress %s: %v requests counted, %d connections opened", p.Addr(), v, p.Dials())
		}
	}
	if v := value(m, "tmefeed_origin_requests_total", "egress", "direct"); v != -1 {
		t.Errorf("%v requests went direct, which is not listed", v)
	}
}
