package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/tmefeed/tmefeed/internal/procbin"
)

// minifluxModule is the reader under test, pinned: `go install` builds it
// from the Go module proxy once into the user's cache.
const minifluxModule = "miniflux.app/v2@v2.3.5"

// proc is a child process stopped with SIGTERM, then SIGKILL.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

func start(name string, cmd *exec.Cmd, log io.Writer) (*proc, error) {
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so a runuser wrapper's child is stopped too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// waitHTTP polls url until it answers 200, the process ends or ctx does.
func waitHTTP(ctx context.Context, p *proc, url string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("%s ended before it answered %s: %v", p.name, url, err)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer %s: %w", p.name, url, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// minifluxBinary returns Miniflux's binary, building it into the user's
// cache the first time.
func minifluxBinary(ctx context.Context, log io.Writer) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "tmefeed-readers", "miniflux-v2.3.5")
	bin := filepath.Join(dir, "miniflux.app")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintf(log, "building Miniflux (%s)…\n", minifluxModule)
	cmd := exec.CommandContext(ctx, "go", "install", minifluxModule)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s: %w", minifluxModule, err)
	}
	return bin, nil
}

// postgres is a PostgreSQL server of the run's own, in a temporary
// directory, on a loopback port.
type postgres struct {
	*proc
	url string
}

// pgBin finds a PostgreSQL program: on PATH, else where Debian's
// postgresql package puts it (/usr/lib/postgresql/<version>/bin).
func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(found) == 0 {
		return "", fmt.Errorf("%s not found: install PostgreSQL (Debian: apt-get install postgresql)", name)
	}
	slices.Sort(found)
	return found[len(found)-1], nil
}

// asUser runs PostgreSQL's programs as a user it accepts: root may not
// run them, so as root they run as the postgres user Debian's package
// creates.
func asUser(prog string, args ...string) (*exec.Cmd, *user.User, error) {
	if os.Geteuid() != 0 {
		return exec.Command(prog, args...), nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, nil, fmt.Errorf("running as root, PostgreSQL needs a user to run as: %w (Debian's postgresql package creates postgres)", err)
	}
	return exec.Command("runuser", append([]string{"-u", "postgres", "--", prog}, args...)...), u, nil
}

func startPostgres(ctx context.Context, dir string, log io.Writer) (*postgres, error) {
	initdb, err := pgBin("initdb")
	if err != nil {
		return nil, err
	}
	server, err := pgBin("postgres")
	if err != nil {
		return nil, err
	}
	isReady, err := pgBin("pg_isready")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "pgdata")
	cmd, u, err := asUser(initdb, "-D", data, "-U", "miniflux", "--auth=trust", "--encoding=UTF8", "--no-sync")
	if err != nil {
		return nil, err
	}
	if u != nil {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// The run's directory is root's: the server's own directories
		// are the postgres user's.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		for _, d := range []string{data, filepath.Join(dir, "pgsock")} {
			if err := os.Mkdir(d, 0o700); err != nil {
				return nil, err
			}
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, err
			}
		}
	} else if err := os.Mkdir(filepath.Join(dir, "pgsock"), 0o700); err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("initdb: %w", err)
	}
	port, err := procbin.FreePort()
	if err != nil {
		return nil, err
	}
	cmd, _, _ = asUser(server, "-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
		"-k", filepath.Join(dir, "pgsock"), "-c", "fsync=off")
	p, err := start("postgres", cmd, log)
	if err != nil {
		return nil, err
	}
	pg := &postgres{proc: p, url: fmt.Sprintf("postgres://miniflux@127.0.0.1:%d/postgres?sslmode=disable", port)}
	// Ready when it accepts a connection and answers the protocol.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if exec.CommandContext(ctx, isReady, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-q").Run() == nil {
			return pg, nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			return nil, fmt.Errorf("postgres ended: %v", err)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("postgres did not accept connections within 30s")
		}
	}
}
