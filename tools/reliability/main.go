// Command reliability runs the abuse, fault and memory suites and writes the
// figures they report into docs/RELIABILITY.md, between the figures markers,
// so the table in the document is always the output of one run.
//
// Tests report a figure with a log line of the form
//
//	FIGURE: <area> | <case> | <value>
//
// and this command keeps every such line, in the order the packages ran.
//
//	go run ./tools/reliability              # run, then rewrite the table
//	go run ./tools/reliability -check       # run, print the table, write nothing
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

const (
	beginMarker = "<!-- figures:begin -->"
	endMarker   = "<!-- figures:end -->"
	figureTag   = "FIGURE: "
)

type config struct {
	Doc      string        // document whose figures section is rewritten
	Pattern  string        // -run pattern of the suites
	Packages string        // package pattern
	Timeout  time.Duration // whole run
	Check    bool          // print only
	Stdout   io.Writer
	Stderr   io.Writer
}

// figure is one reported measurement.
type figure struct {
	area, name, value string
}

func main() {
	cfg := config{Stdout: os.Stdout, Stderr: os.Stderr}
	flag.StringVar(&cfg.Doc, "doc", "docs/RELIABILITY.md", "document to update")
	flag.StringVar(&cfg.Pattern, "run", "Abuse|Fault|Memory", "go test -run pattern")
	flag.StringVar(&cfg.Packages, "pkg", "./...", "packages to test")
	flag.DurationVar(&cfg.Timeout, "timeout", 20*time.Minute, "limit for the whole run")
	flag.BoolVar(&cfg.Check, "check", false, "print the table, leave the document alone")
	flag.Parse()
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-run", cfg.Pattern, cfg.Packages)
	cmd.Stdout = io.MultiWriter(&out, filterWriter{w: cfg.Stderr})
	cmd.Stderr = cfg.Stderr
	testErr := cmd.Run()

	figs := parseFigures(&out)
	table := renderTable(figs, time.Now().UTC())
	fmt.Fprint(cfg.Stdout, table)
	if testErr != nil {
		// A failing suite's figures are not the project's figures.
		return fmt.Errorf("go test: %w", testErr)
	}
	if len(figs) == 0 {
		return errors.New("the suites reported no figures")
	}
	if cfg.Check {
		return nil
	}
	doc, err := os.ReadFile(cfg.Doc)
	if err != nil {
		return fmt.Errorf("read document: %w", err)
	}
	updated, err := replaceSection(doc, table)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Doc, err)
	}
	return os.WriteFile(cfg.Doc, updated, 0o644)
}

// filterWriter passes on test results and failures only, so a run shows its
// progress without every log line.
type filterWriter struct{ w io.Writer }

func (f filterWriter) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(p), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "FAIL") ||
			strings.HasPrefix(t, "ok ") || strings.Contains(t, figureTag) {
			io.WriteString(f.w, line)
		}
	}
	return len(p), nil
}

// parseFigures reads FIGURE lines from go test -v output. A figure printed
// twice (a test run for several cases with the same name) keeps its last
// value.
func parseFigures(r io.Reader) []figure {
	var figs []figure
	index := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, figureTag)
		if i < 0 {
			continue
		}
		parts := strings.SplitN(line[i+len(figureTag):], "|", 3)
		if len(parts) != 3 {
			continue
		}
		f := figure{
			area:  strings.TrimSpace(parts[0]),
			name:  strings.TrimSpace(parts[1]),
			value: strings.TrimSpace(parts[2]),
		}
		key := f.area + "\x00" + f.name
		if j, ok := index[key]; ok {
			figs[j] = f
			continue
		}
		index[key] = len(figs)
		figs = append(figs, f)
	}
	return figs
}

func renderTable(figs []figure, at time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Produced by `make reliability` on %s (%s, %d CPUs, %s).\n\n",
		at.Format("2006-01-02"), runtime.Version(), runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH)
	b.WriteString("| area | case | figure |\n| --- | --- | --- |\n")
	for _, f := range figs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", escapeCell(f.area), escapeCell(f.name), escapeCell(f.value))
	}
	return b.String()
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// replaceSection puts table between the markers, keeping the rest of doc.
func replaceSection(doc []byte, table string) ([]byte, error) {
	s := string(doc)
	i := strings.Index(s, beginMarker)
	j := strings.Index(s, endMarker)
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %s … %s section", beginMarker, endMarker)
	}
	return []byte(s[:i+len(beginMarker)] + "\n" + table + s[j:]), nil
}
