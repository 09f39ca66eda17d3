// Package safeurl is the one allow-list for URLs taken from Telegram's
// pages. A channel owner writes the links of a post and t.me serves the
// page, so a URL read from it is untrusted: a page could name
// javascript:alert(1) as a picture. Every face asks here before it
// redirects to such a URL or hands it to a client as a link.
package safeurl

import (
	"net/url"
	"strings"
)

// telegramHosts are the hosts Telegram serves media from (cdn4.telesco.pe,
// cdn1.telegram-cdn.org, telegram.org/img/…) and its own pages; a
// subdomain of one of them counts as it.
var telegramHosts = []string{"telesco.pe", "telegram-cdn.org", "telegram.org", "t.me"}

// Media returns the URL a media link may redirect to: u when it is an
// https URL on one of Telegram's hosts, made absolute when t.me wrote it
// protocol-relative (//cdn4.telesco.pe/…). ok is false for anything else:
// another scheme (javascript:, data:, http:), another host, credentials in
// the URL, or one that does not parse.
func Media(u string) (string, bool) {
	if strings.HasPrefix(u, "//") {
		u = "https:" + u
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "https" || p.User != nil || p.Opaque != "" {
		return "", false
	}
	host := strings.ToLower(p.Hostname())
	if p.Port() != "" && p.Port() != "443" {
		return "", false
	}
	for _, h := range telegramHosts {
		if host == h || strings.HasSuffix(host, "."+h) {
			return u, true
		}
	}
	return "", false
}

// MediaOn is Media, also accepting a URL on one of origins
// ("http://127.0.0.1:8081", no trailing slash): hosts the operator
// serves media from besides Telegram's, such as the demo's fixture origin.
func MediaOn(u string, origins []string) (string, bool) {
	if m, ok := Media(u); ok {
		return m, true
	}
	for _, o := range origins {
		if o != "" && strings.HasPrefix(u, o+"/") {
			if p, err := url.Parse(u); err == nil && p.User == nil && p.Scheme+"://"+p.Host == o {
				return u, true
			}
		}
	}
	return "", false
}

// Link reports whether u may be given to a client as a link to follow:
// an absolute http or https URL with a host, or a tg: link (Telegram's
// app links). Anything else (javascript:, data:, vbscript:, a relative
// or malformed URL) is not.
func Link(u string) bool {
	if u == "" {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch strings.ToLower(p.Scheme) {
	case "http", "https":
		return p.Host != ""
	case "tg":
		return true
	}
	return false
}
