// Command tmefeed serves public Telegram channels as a JSON API.
//
//	tmefeed serve [--demo] [flags]     run the API (see `tmefeed serve -h`)
//	tmefeed fixtures [flags]           run the fixture origin standalone
//	tmefeed parse [--kind K] FILE|-    print a saved t.me page as the API's JSON
//	tmefeed healthcheck [flags]        exit 0 when a running server's /healthz answers 200
//	tmefeed keys add NAME [limits]     mint an API key: the key, then its line for API_KEYS_FILE
//	tmefeed bench <what> [flags]       performance figures against a baseline of the same run
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `tmefeed turns public Telegram channels into a JSON API.

usage:
  tmefeed serve [--demo] [flags]     run the API; --demo serves built-in pages, no network needed
  tmefeed fixtures [flags]           run the fixture origin (t.me's paths, recorded pages) standalone
  tmefeed parse [--kind K] FILE|-    print a saved t.me page as the API's JSON
  tmefeed healthcheck [flags]        exit 0 when a running server's /healthz answers 200 (Docker HEALTHCHECK)
  tmefeed keys add NAME [limits]     mint an API key: the key on line 1, its API_KEYS_FILE line on line 2
  tmefeed bench <what> [flags]       performance figures: parse, audit, memory

Run "tmefeed <command> -h" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "tmefeed:", err)
		os.Exit(1)
	}
}

// errUsage: the command line was wrong and usage has been printed.
var errUsage = errors.New("usage")

// run dispatches a subcommand; it returns when ctx ends or the command is done.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		cfg, err := parseServeConfig(args[1:], getenv, stderr)
		if err != nil {
			return err
		}
		// Process-wide, so set here rather than in serve, which tests run
		// in their own process.
		applyMemoryLimit(cfg, getenv)
		return serve(ctx, cfg, stderr, nil)
	case "fixtures":
		return runFixtures(ctx, args[1:], stderr)
	case "parse":
		return runParse(args[1:], stdin, stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], getenv, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, args[1:], getenv, stderr)
	case "keys":
		return runKeys(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "tmefeed: unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
}
