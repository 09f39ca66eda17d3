package proxytest

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// The proxy passes bytes both ways unchanged and in order, and Close cuts
// the connections it carries.
func TestDelayProxyForwards(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }() // echo
		}
	}()
	p, err := NewDelayProxy(ln.Addr().String(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for i := range 100 {
		line := strings.Repeat("x", i*100) + "\n"
		if _, err := io.WriteString(c, line); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != line {
			t.Fatalf("line %d: %d bytes back, %v", i, len(got), err)
		}
	}
	p.Close()
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("connection still open after Close")
	}
}
