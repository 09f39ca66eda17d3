// Package proxytest starts forward proxies on loopback for tests of
// ORIGIN_PROXIES: an HTTP proxy (CONNECT tunnels, and absolute-form
// requests for plain-http origins) and a SOCKS5 server (RFC 1928, CONNECT
// without authentication). Each opens its connections to the origin from
// an address of its own (127.0.0.N), as proxies on other machines would,
// so that an origin can tell them apart by the request's remote address.
// DelayProxy (delay.go) is a TCP proxy that delays every byte, for a
// Valkey on another machine.
package proxytest

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a running proxy; it stops when the test ends.
type Proxy struct {
	ln    net.Listener
	from  *net.TCPAddr
	dials atomic.Int64
	wg    sync.WaitGroup
}

// StartHTTP starts an HTTP proxy whose connections to the origin come
// from the loopback address from (e.g. "127.0.0.2").
func StartHTTP(t testing.TB, from string) *Proxy {
	return start(t, from, (*Proxy).serveHTTP)
}

// StartSOCKS5 starts a SOCKS5 server whose connections to the origin
// come from the loopback address from.
func StartSOCKS5(t testing.TB, from string) *Proxy {
	return start(t, from, (*Proxy).serveSOCKS5)
}

// URL is the proxy's URL with scheme ("http", "socks5", "socks5h").
func (p *Proxy) URL(scheme string) string { return scheme + "://" + p.Addr() }

// Addr is the proxy's host:port, the name of its egress.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Dials is how many connections the proxy opened to origins.
func (p *Proxy) Dials() int64 { return p.dials.Load() }

func start(t testing.TB, from string, serve func(*Proxy, net.Conn)) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, from: &net.TCPAddr{IP: net.ParseIP(from)}}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() {
				defer c.Close()
				serve(p, c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *Proxy) dial(addr string) (net.Conn, error) {
	p.dials.Add(1)
	d := net.Dialer{LocalAddr: p.from, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

func (p *Proxy) serveHTTP(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		p.forward(c, br, req)
		return
	}
	up, err := p.dial(req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	pipe(c, br, up)
}

// forward relays the absolute-form requests on c, the first one req.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req *http.Request) {
	tr := &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		return p.dial(addr)
	}}
	defer tr.CloseIdleConnections()
	for {
		req.RequestURI = ""
		resp, err := tr.RoundTrip(req)
		if err != nil {
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
			return
		}
		err = resp.Write(c)
		resp.Body.Close()
		if err != nil {
			return
		}
		if req, err = http.ReadRequest(br); err != nil {
			return
		}
	}
}

func (p *Proxy) serveSOCKS5(c net.Conn) {
	br := bufio.NewReader(c)
	var hello [2]byte // version, number of methods
	if _, err := io.ReadFull(br, hello[:]); err != nil || hello[0] != 5 {
		return
	}
	if _, err := io.ReadFull(br, make([]byte, hello[1])); err != nil {
		return
	}
	if _, err := c.Write([]byte{5, 0}); err != nil { // no authentication
		return
	}
	var head [4]byte // version, command, reserved, address type
	if _, err := io.ReadFull(br, head[:]); err != nil || head[1] != 1 {
		return
	}
	var host string
	switch head[3] {
	case 1, 4: // IPv4, IPv6
		ip := make([]byte, 4)
		if head[3] == 4 {
			ip = make([]byte, 16)
		}
		if _, err := io.ReadFull(br, ip); err != nil {
			return
		}
		host = net.IP(ip).String()
	case 3: // a name
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return
		}
		host = string(name)
	default:
		return
	}
	var port [2]byte
	if _, err := io.ReadFull(br, port[:]); err != nil {
		return
	}
	up, err := p.dial(net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:])))))
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return
	}
	defer up.Close()
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	pipe(c, br, up)
}

// pipe copies both ways until either side is done.
func pipe(c net.Conn, fromClient io.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, fromClient); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
