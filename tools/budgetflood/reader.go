package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// readerEnv starts this program as the warm reader: a client in a process
// of its own, so that its latencies are the service's answers and not the
// attackers' scheduler or connection pool, which share this process. Its
// value is "URL X-Forwarded-For"; it reads the URL every readEvery until
// its stdin closes, then writes what it saw to stdout as JSON.
const (
	readerEnv = "BUDGETFLOOD_READER"
	readEvery = 20 * time.Millisecond
)

// readerReport is what a reader saw: each read's latency, and the first
// few answers that were not 200.
type readerReport struct {
	Lat  []time.Duration
	Errs []string
}

// readerProc is a running reader.
type readerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   strings.Builder
	once  sync.Once
	rep   readerReport
	err   error
}

// startReader reads url, as the client xff, in a process of its own.
func startReader(url, xff string) (*readerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r := &readerProc{cmd: exec.Command(exe, "-test.run=^$")}
	r.cmd.Env = append(os.Environ(), readerEnv+"="+url+" "+xff)
	r.cmd.Stdout = &r.out
	r.cmd.Stderr = os.Stderr
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the reader: %w", err)
	}
	return r, nil
}

// stop ends the reader and returns what it saw.
func (r *readerProc) stop() (readerReport, error) {
	r.once.Do(func() {
		_ = r.stdin.Close()
		if r.err = r.cmd.Wait(); r.err != nil {
			r.err = fmt.Errorf("reader: %w", r.err)
			return
		}
		if err := json.Unmarshal([]byte(r.out.String()), &r.rep); err != nil {
			r.err = fmt.Errorf("reader's report: %w", err)
		}
	})
	return r.rep, r.err
}

// readers reads path of each of bases, one reader process each (every
// process sees the reader, as round-robin clients are seen); stop ends
// them all and merges what they saw.
func readers(bases []string, path, xff string) (stop func() (readerReport, error), _ error) {
	var rs []*readerProc
	stop = func() (readerReport, error) {
		var all readerReport
		var first error
		for _, r := range rs {
			rep, err := r.stop()
			if err != nil && first == nil {
				first = err
			}
			all.Lat = append(all.Lat, rep.Lat...)
			all.Errs = append(all.Errs, rep.Errs...)
		}
		return all, first
	}
	for _, b := range bases {
		r, err := startReader(b+path, xff)
		if err != nil {
			_, _ = stop()
			return nil, err
		}
		rs = append(rs, r)
	}
	return stop, nil
}

// readerMain is the reader's process; it reports whether it was asked to
// be one.
func readerMain() bool {
	v := os.Getenv(readerEnv)
	if v == "" {
		return false
	}
	url, xff, _ := strings.Cut(v, " ")
	stopped := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stopped)
	}()
	c := &http.Client{Timeout: 20 * time.Second}
	var rep readerReport
	tick := time.NewTicker(readEvery)
	defer tick.Stop()
	for {
		select {
		case <-stopped:
			if err := json.NewEncoder(os.Stdout).Encode(&rep); err != nil {
				fmt.Fprintln(os.Stderr, "reader:", err)
				os.Exit(1)
			}
			return true
		case <-tick.C:
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("X-Forwarded-For", xff)
		start := time.Now()
		resp, err := c.Do(req)
		var status int
		var body []byte
		if err == nil {
			status = resp.StatusCode
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		rep.Lat = append(rep.Lat, time.Since(start))
		if (err != nil || status != http.StatusOK) && len(rep.Errs) < 5 {
			rep.Errs = append(rep.Errs, fmt.Sprintf("%d %v %.160s", status, err, body))
		}
	}
}
