// Package procbin helps the project's load tools run tmefeed as child
// processes: build the binary once, and pick loopback ports for them.
package procbin

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
)

// Build compiles cmd/tmefeed into dir (with the race detector if race) and
// returns the binary's path; the go command's output goes to log.
func Build(ctx context.Context, dir string, race bool, log io.Writer) (string, error) {
	bin := filepath.Join(dir, "tmefeed")
	fmt.Fprintln(log, "building tmefeed…")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	build := exec.CommandContext(ctx, "go", append(args, "github.com/tmefeed/tmefeed/cmd/tmefeed")...)
	build.Stdout, build.Stderr = log, log
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build tmefeed: %w", err)
	}
	return bin, nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
