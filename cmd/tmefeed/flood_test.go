package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tmefeed/tmefeed/fixtures"
)

// memoryChildProc is the service in a child process (see TestMain), with
// its memory route, for the flood tests.
type memoryChildProc struct {
	base   string
	client *http.Client
	stderr *lockedBuffer
}

// startServerChild runs this test binary again with env added to the
// test's environment, as a server that prints "ADDR host:port" when it
// listens and ends when its stdin closes (see TestMain); it ends with the
// test. The child's stderr goes to stderr.
func startServerChild(t *testing.T, stderr io.Writer, env ...string) (addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("child did not start: %q, %v\n%v", line, err, stderr)
	}
	return addr
}

// startMemoryChild runs the child over a fixture origin with env added to
// the test's environment; it ends with the test.
func startMemoryChild(t *testing.T, opts fixtures.OriginOptions, env ...string) *memoryChildProc {
	t.Helper()
	originSrv := httptest.NewServer(fixtures.NewOrigin(opts))
	t.Cleanup(originSrv.Close)
	stderr := &lockedBuffer{}
	addr := startServerChild(t, stderr, append([]string{memoryChildEnv + "=" + originSrv.URL, "MEMORY_LIMIT_MB=", "GOMEMLIMIT=", "LOG_LEVEL=error"}, env...)...)
	return &memoryChildProc{base: "http://" + addr, stderr: stderr, client: &http.Client{Timeout: time.Minute}}
}

func (p *memoryChildProc) report(t *testing.T) memoryReport {
	t.Helper()
	resp, err := p.client.Get(p.base + memoryRoute)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r memoryReport
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// warmReaderEnv starts this test binary as a warm reader (see TestMain):
// a client of its own, in a process of its own, so that what it measures
// is the service's answer and not the load generator's scheduler. Its
// value is the URL to read; it reads it every warmReadEvery until its
// stdin closes, then writes what it saw to stdout as JSON.
const (
	warmReaderEnv = "TMEFEED_WARM_READER_URL"
	warmReadEvery = 20 * time.Millisecond
)

// warmReader is what a warm reader saw: each read's latency, and each
// failure.
type warmReader struct {
	Lat    []time.Duration
	Failed []string
}

// readWarm starts a warm reader of base+path; stop ends it and returns
// what it saw.
func readWarm(t *testing.T, base, path string) (stop func() *warmReader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), warmReaderEnv+"="+base+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var w warmReader
	stop = func() *warmReader {
		once.Do(func() {
			_ = stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("warm reader: %v\n%s", err, errOut.String())
			}
			if err := json.Unmarshal([]byte(out.String()), &w); err != nil {
				t.Fatalf("warm reader's report: %v: %q", err, out.String())
			}
		})
		return &w
	}
	t.Cleanup(func() { stop() })
	return stop
}

// warmReaderChild is the warm reader's process: it reads target every
// warmReadEvery, on one kept-alive connection, until stdin closes.
func warmReaderChild(target string) error {
	stopped := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stopped)
	}()
	c := &http.Client{Timeout: 30 * time.Second}
	var w warmReader
	tick := time.NewTicker(warmReadEvery)
	defer tick.Stop()
	for {
		select {
		case <-stopped:
			return json.NewEncoder(os.Stdout).Encode(&w)
		case <-tick.C:
		}
		start := time.Now()
		resp, err := c.Get(target)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = &statusError{resp.StatusCode}
			}
		}
		w.Lat = append(w.Lat, time.Since(start))
		if err != nil {
			w.Failed = append(w.Failed, err.Error())
		}
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "status " + http.StatusText(e.code) }

// bareServerEnv starts this test binary as a bare net/http server (see
// TestMain) answering every request with the bytes of the file it names:
// the control beside the service under a flood, for a warm reader of each
// at once, since on one machine the flood's own clients take CPU from any
// server. It prints "ADDR host:port" and ends when its stdin closes.
const bareServerEnv = "TMEFEED_BARE_SERVER_FILE"

func bareServerChild(file string) error {
	body, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("ADDR %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

// startBareServer serves body from a bare server process; it ends with
// the test.
func startBareServer(t *testing.T, body []byte) (base string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	return "http://" + startServerChild(t, &stderr, bareServerEnv+"="+file)
}

// quietBaseline is the warm reader's figures over a second with no
// flood, read in the same run, so that the flood's are given as a ratio
// as well (these machines are shared and noisy).
func quietBaseline(t *testing.T, base, path string) *warmReader {
	t.Helper()
	stop := readWarm(t, base, path)
	time.Sleep(time.Second)
	return stop()
}

// quantile of the latencies read (after done).
func (w *warmReader) quantile(q float64) time.Duration {
	if len(w.Lat) == 0 {
		return 0
	}
	d := slices.Clone(w.Lat)
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// Header floods: the 1,000 connections, each sending 1 MiB of
// header lines without ending the header block, raised RSS from 57 to
// over 1,000 MiB until the 10 s header timeout.
const (
	floodConns    = 1000
	floodBytes    = 1 << 20
	floodRSSBound = 256 << 20
)

// TestMemoryHeaderFlood: 1,000 connections from one client each send up
// to 1 MiB of header lines and never finish the block, and hold the
// connection open; the service at its defaults keeps peak RSS within
// 256 MiB, and a warm reader reading a cached page every 20 ms meanwhile
// sees no failure (its latencies are reported).
func TestMemoryHeaderFlood(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector multiplies memory and time; the figures are for the real build")
	}
	if testing.Short() {
		t.Skip("a flood of a gigabyte")
	}
	p := startMemoryChild(t, fixtures.OriginOptions{})
	const path = "/v1/body/tmefeed_news"
	resp, err := p.client.Get(p.base + path)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up: %v %v", resp, err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	bare := startBareServer(t, page)
	before := p.report(t)

	quiet := quietBaseline(t, p.base, path)
	stopReader := readWarm(t, p.base, path)
	stopControl := readWarm(t, bare, path)
	line := []byte("X-Pad: " + strings.Repeat("a", 1000) + "\r\n")
	chunk := []byte(strings.Repeat(string(line), 16))
	var sent, refused, served atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	var written sync.WaitGroup
	addr := strings.TrimPrefix(p.base, "http://")
	start := time.Now()
	for range floodConns {
		wg.Add(1)
		written.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				written.Done()
				refused.Add(1)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			n := 0
			if _, err = c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n")); err == nil {
				for n < floodBytes {
					var k int
					if k, err = c.Write(chunk); err != nil {
						break
					}
					n += k
				}
			}
			sent.Add(int64(n))
			if err != nil {
				refused.Add(1) // answered (431 or 503) and closed before the megabyte
			}
			written.Done()
			<-release // hold the connection, as the flood did until the header timeout
			// Whatever the server answered, if it did: never the page.
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				if resp.StatusCode == http.StatusOK {
					served.Add(1)
				}
				resp.Body.Close()
			}
		}()
	}
	written.Wait()
	took := time.Since(start)
	time.Sleep(time.Second) // a second of the held connections beside the reader
	reader := stopReader()
	control := stopControl()
	during := p.report(t)
	close(release)
	wg.Wait()

	t.Logf("%d connections sent %d MiB of header lines in %s, %d answered and closed before 1 MiB; RSS %d MiB before, peak %d MiB; warm reader: %d reads, p50 %v, p99 %v, max %v",
		floodConns, sent.Load()>>20, took.Round(time.Millisecond), refused.Load(), before.VmRSS>>20, during.VmHWM>>20, len(reader.Lat), reader.quantile(0.5), reader.quantile(0.99), reader.quantile(1))
	t.Logf("FIGURE: memory | peak RSS, %d connections x 1 MiB of unfinished headers, defaults | %d MiB", floodConns, during.VmHWM>>20)
	t.Logf("FIGURE: memory | warm cached read p99 during %d connections x 1 MiB of unfinished headers (ms; %d reads, %d failed) | %.1f", floodConns, len(reader.Lat), len(reader.Failed), float64(reader.quantile(0.99).Microseconds())/1000)
	t.Logf("FIGURE: memory | warm cached read p99 during %d connections x 1 MiB of unfinished headers / p99 with no flood, same run (%d reads, quiet p99 %v) | %.1f", floodConns, len(quiet.Lat), quiet.quantile(0.99), float64(reader.quantile(0.99))/float64(max(quiet.quantile(0.99), time.Microsecond)))
	t.Logf("FIGURE: memory | warm cached read p99 during %d connections x 1 MiB of unfinished headers / a bare net/http server's, read at once on the same machine (%d reads, bare p99 %v) | %.1f", floodConns, len(control.Lat), control.quantile(0.99), float64(reader.quantile(0.99))/float64(max(control.quantile(0.99), time.Microsecond)))
	if during.VmHWM <= 0 || during.VmHWM > floodRSSBound {
		t.Errorf("peak RSS %d MiB, bound %d MiB", during.VmHWM>>20, floodRSSBound>>20)
	}
	if len(reader.Failed) > 0 || len(reader.Lat) == 0 || len(quiet.Failed) > 0 {
		t.Errorf("warm reader: %d reads, failures %v (before the flood: %v)", len(reader.Lat), reader.Failed, quiet.Failed)
	}
	if n := served.Load(); n > 0 {
		t.Errorf("%d connections of a megabyte of header lines were answered 200", n)
	}
}

// The subscription flood: 128 WebSockets × 16 subscriptions ×
// the same 100 cached channels, at MEMORY_CACHE_MAX_MB=32. Each
// subscription looked its 100 channels up as it started, 16 at a time,
// and nothing bounded them per process: 1,375 MiB of RSS and a warm
// reader's p99 at 1.6 s. From one client, the flood is now refused by
// that client's share of the cores once its starts outgrow it
// (TestSubscriptionStartsAreOwedByTheirClient); the process's bound must
// hold when many clients open them, so each socket here is a client of
// its own.
const (
	subSockets   = 128
	subPerSocket = 16
	subChannels  = 100
	subBudgetMB  = 32
	subRSSBound  = 256 << 20
)

// TestMemorySubscriptionFlood: the flood above against the service in a
// child process: every subscription starts (the process counts 2,048 open,
// no error message arrives), peak RSS stays within 256 MiB, and a warm
// reader reading a cached page every 20 ms meanwhile sees no failure (its
// p99 is reported).
func TestMemorySubscriptionFlood(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector multiplies memory and time; the figures are for the real build")
	}
	if testing.Short() {
		t.Skip("two thousand subscriptions")
	}
	p := startMemoryChild(t, fixtures.OriginOptions{Synthetic: subChannels},
		"MEMORY_CACHE_MAX_MB="+strconv.Itoa(subBudgetMB), "CACHE_MODE=aggressive", "UPDATER=off", "TRUSTED_PROXIES=127.0.0.1,::1")
	channels := make([]string, subChannels)
	for i := range channels {
		channels[i] = fmt.Sprintf("loadchan%03d", i+1)
		resp, err := p.client.Get(p.base + "/v1/body/" + channels[i])
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("warm-up %s: %v %v", channels[i], resp, err)
		}
		resp.Body.Close()
	}
	const path = "/v1/body/loadchan001"
	before := p.report(t)
	quiet := quietBaseline(t, p.base, path)

	sub, _ := json.Marshal(map[string]any{
		"query":     `subscription($c: [String!]!) { feedUpdates(channels: $c) { kind post { messageId } } }`,
		"variables": map[string]any{"c": channels},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stopReader := readWarm(t, p.base, path)
	var errMsgs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	conns := make([]*websocket.Conn, subSockets)
	for i := range subSockets {
		wg.Go(func() {
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.base, "http")+"/graphql", &websocket.DialOptions{
				Subprotocols: []string{"graphql-transport-ws"},
				HTTPHeader:   http.Header{"X-Forwarded-For": {fmt.Sprintf("10.0.%d.%d", i/250, 1+i%250)}},
			})
			if err != nil {
				errMsgs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			c.SetReadLimit(1 << 20)
			conns[i] = c
			msgs := []string{`{"type":"connection_init"}`}
			for j := range subPerSocket {
				msgs = append(msgs, `{"type":"subscribe","id":"`+strconv.Itoa(j)+`","payload":`+string(sub)+`}`)
			}
			for _, m := range msgs {
				if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
					errMsgs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					return
				}
			}
			go func() { // answers pings, counts errors, until the socket closes
				for {
					_, b, err := c.Read(ctx)
					if err != nil {
						return
					}
					switch s := string(b); {
					case strings.Contains(s, `"type":"ping"`):
						_ = c.Write(ctx, websocket.MessageText, []byte(`{"type":"pong"}`))
					case strings.Contains(s, `"type":"error"`), strings.Contains(s, `"errors"`):
						errMsgs.Add(1)
						firstErr.CompareAndSwap(nil, s)
					}
				}
			}()
		})
	}
	wg.Wait()
	want := float64(subSockets * subPerSocket)
	var open float64
	for ctx.Err() == nil && errMsgs.Load() == 0 {
		if open = p.metric(t, "tmefeed_graphql_subscriptions_open"); open == want {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	time.Sleep(time.Second) // a second of the open subscriptions beside the reader
	reader := stopReader()
	during := p.report(t)
	for _, c := range conns {
		if c != nil {
			_ = c.CloseNow()
		}
	}

	t.Logf("%d subscriptions of %d channels on %d sockets open in %s; RSS %d MiB before, peak %d MiB; warm reader: %d reads, p50 %v, p99 %v, max %v",
		int(open), subChannels, subSockets, took.Round(time.Millisecond), before.VmRSS>>20, during.VmHWM>>20, len(reader.Lat), reader.quantile(0.5), reader.quantile(0.99), reader.quantile(1))
	load := fmt.Sprintf("%d WebSockets x %d subscriptions x %d channels, MEMORY_CACHE_MAX_MB=%d", subSockets, subPerSocket, subChannels, subBudgetMB)
	t.Logf("FIGURE: memory | peak RSS, %s | %d MiB", load, during.VmHWM>>20)
	t.Logf("FIGURE: memory | warm cached read p99 during %s (ms; %d reads, %d failed) | %.1f", load, len(reader.Lat), len(reader.Failed), float64(reader.quantile(0.99).Microseconds())/1000)
	t.Logf("FIGURE: memory | warm cached read p99 during %s / p99 with no flood, same run (%d reads, quiet p99 %v) | %.1f", load, len(quiet.Lat), quiet.quantile(0.99), float64(reader.quantile(0.99))/float64(max(quiet.quantile(0.99), time.Microsecond)))
	t.Logf("FIGURE: memory | time for %s to open (s) | %.1f", load, took.Seconds())
	if n := errMsgs.Load(); n > 0 || open != want {
		t.Errorf("%v of %v subscriptions open, %d errors, first: %v", open, want, n, firstErr.Load())
	}
	if during.VmHWM <= 0 || during.VmHWM > subRSSBound {
		t.Errorf("peak RSS %d MiB, bound %d MiB", during.VmHWM>>20, subRSSBound>>20)
	}
	if len(reader.Failed) > 0 || len(reader.Lat) == 0 || len(quiet.Failed) > 0 {
		t.Errorf("warm reader: %d reads, failures %v (before the flood: %v)", len(reader.Lat), reader.Failed, quiet.Failed)
	}
}

// metric reads one unlabelled series of the child's /metrics.
func (p *memoryChildProc) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := p.client.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}
