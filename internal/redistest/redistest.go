// Package redistest starts a real redis-server (or valkey-server) on a free
// loopback port for tests that need one.
//
// When no server binary is installed the tests that ask for one are skipped
// with a message naming the binary, except when CI=true: there a missing
// binary fails the test, so CI never passes without having run them.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binaries are the server executables tried, in order.
var binaries = []string{"redis-server", "valkey-server"}

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 10 * time.Second

// Server is one running server process bound to 127.0.0.1.
type Server struct {
	Addr string // host:port
	URL  string // redis://host:port/0

	bin    string
	dir    string
	ownDir bool
	extra  []string // more server arguments (cluster mode)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the running process has been reaped
}

// Binary returns the path of the first server binary found on PATH.
func Binary() (string, error) {
	for _, b := range binaries {
		if p, err := exec.LookPath(b); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no %s binary on PATH (Debian: apt-get install redis-server)", strings.Join(binaries, " or "))
}

// Start runs a fresh server for the test and stops it at cleanup.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := need(tb, Binary)
	s, err := launch(bin, tb.TempDir())
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// need returns what find finds, or ends the test: a skip naming the missing
// binary, or under CI=true a failure, so CI never passes without the tests
// that need it.
func need(tb testing.TB, find func() (string, error)) string {
	tb.Helper()
	p, err := find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redistest: %v; CI=true, so this is a failure, not a skip", err)
		}
		tb.Skipf("redistest: SKIPPING: %v", err)
	}
	return p
}

// Launch runs a fresh server outside a test (e.g. for a load tool). Close
// stops it and removes its directory.
func Launch() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s, err := launch(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.ownDir = true
	return s, nil
}

// Close stops the server and, for one made by Launch, removes its directory.
func (s *Server) Close() {
	s.Stop()
	if s.ownDir {
		os.RemoveAll(s.dir)
	}
}

func launch(bin, dir string, extra ...string) (*Server, error) {
	s := &Server{bin: bin, dir: dir, extra: extra}
	var err error
	for range 3 { // a free port can be taken between probing and binding
		port, perr := freePort()
		if perr != nil {
			return nil, perr
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.URL = "redis://" + s.Addr + "/0"
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// Stop ends the server process; the port becomes free. Safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	var err error
	// The old socket may linger briefly; retry the bind a few times.
	for range 50 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("redistest: restart: %v", err)
}

// Running reports whether the process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, port, _ := net.SplitHostPort(s.Addr)
	args := []string{
		"--port", port,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--enable-debug-command", "yes", // DEBUG SLEEP simulates a slow server
	}
	cmd := exec.Command(s.bin, append(args, s.extra...)...)
	out := &lockedWriter{}
	cmd.Stdout = out
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(startTimeout)
	for {
		if err := ping(s.Addr); err == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before answering PING: %v: %s", s.bin, waitErr, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("%s did not answer PING within %v", s.bin, startTimeout)
		}
	}
}

// lockedWriter collects the server's output for error messages.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("probe free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Do sends one command over a fresh connection and returns the reply as text
// (simple, bulk and integer replies; arrays are joined by newlines). It needs
// no client library, so tests can inspect the server independently of the
// code under test.
func (s *Server) Do(ctx context.Context, args ...string) (string, error) {
	c, err := s.Dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.Do(args...)
}

// Conn is one plain connection to the server, for many commands in a row.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// Dial opens a Conn; ctx's deadline (or 30 s) bounds its whole life.
func (s *Server) Dial(ctx context.Context) (*Conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	}
	return &Conn{c: c, r: bufio.NewReader(c)}, nil
}

// Do sends one command and reads its reply (see Server.Do).
func (c *Conn) Do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.c.Write([]byte(b.String())); err != nil {
		return "", fmt.Errorf("write: %w", err)
	}
	return readReply(c.r)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// ErrNil is returned by Do for a nil reply.
var ErrNil = errors.New("redistest: nil reply")

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("redistest: empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redistest: server error: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("redistest: bad bulk length %q", line)
		}
		if n < 0 {
			return "", ErrNil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", fmt.Errorf("read bulk: %w", err)
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("redistest: bad array length %q", line)
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readReply(r)
			if err != nil && !errors.Is(err, ErrNil) {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	default:
		return "", fmt.Errorf("redistest: unexpected reply %q", line)
	}
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected PING reply %q", line)
	}
	return nil
}

// CommandCalls returns the calls counted by INFO commandstats for one command
// (lower case, e.g. "get"); 0 when the command was never run.
func (s *Server) CommandCalls(ctx context.Context, command string) (int64, error) {
	stats, err := s.CommandStats(ctx)
	if err != nil {
		return 0, err
	}
	return stats[strings.ToLower(command)], nil
}

// CommandStats returns the calls INFO commandstats counts for every command
// run so far, by lower-case name ("get", "client|tracking"). The INFO that
// reads them is counted too.
func (s *Server) CommandStats(ctx context.Context) (map[string]int64, error) {
	info, err := s.Do(ctx, "INFO", "commandstats")
	if err != nil {
		return nil, err
	}
	stats := make(map[string]int64)
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, rest, ok := strings.Cut(rest, ":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redistest: commandstats line %q: %w", line, err)
		}
		stats[name] = n
	}
	return stats, nil
}

// connectionSetup are the commands a client sends when it opens a
// connection, which valkey-go may do lazily at any call, and the INFO that
// reads the counts: they cost once per connection, not per call.
var connectionSetup = map[string]bool{
	"hello": true, "client|tracking": true, "client|setname": true, "client|setinfo": true,
	"select": true, "auth": true, "info": true,
}

// CommandsSince returns the commands run since before (a CommandStats
// result) that are not connection setup, by name, leaving out those not
// run at all.
func (s *Server) CommandsSince(ctx context.Context, before map[string]int64) (map[string]int64, error) {
	now, err := s.CommandStats(ctx)
	if err != nil {
		return nil, err
	}
	delta := make(map[string]int64)
	for name, n := range now {
		if d := n - before[name]; d > 0 && !connectionSetup[name] {
			delta[name] = d
		}
	}
	return delta, nil
}
