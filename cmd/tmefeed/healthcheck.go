package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runHealthcheck GETs a running server's /healthz and fails unless it
// answers 200 within the timeout: the container image's HEALTHCHECK,
// which needs no curl or wget in the image.
func runHealthcheck(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: tmefeed healthcheck [--url URL] [--timeout 3s]\nExits 0 when the URL answers 200, 1 otherwise.")
		fs.PrintDefaults()
	}
	port := "8080"
	if v, ok := lookup(getenv, "PORT"); ok {
		port = v
	}
	url := fs.String("url", "http://127.0.0.1:"+port+"/healthz", "URL to GET: /healthz on $PORT of this host unless given")
	timeout := fs.Duration("timeout", 3*time.Second, "deadline of the request, connecting included")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return errors.New("healthcheck: --timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", *url, resp.Status)
	}
	return nil
}
