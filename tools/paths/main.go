// Command paths measures which of tmefeed's source files three request
// paths run (a cached REST hit, a cold GraphQL feed, a live update
// reaching a WebSocket) and keeps docs/ARCHITECTURE.md's account of them
// true.
//
// For each path it runs cmd/tmefeed's TestRequestPaths under coverage
// (go test -cover -covermode=atomic -coverpkg=./...), twice only warming
// what the path needs and twice warming and then running the path. A file
// is on the path when one of its blocks counts more in both runs of the
// path than in either warm-up. It prints the counts as a Markdown table and the files of each
// path, and fails when the file lists of the document's path sections
// ("### REST hit" and the others, each file in backquotes) differ from
// what was measured:
//
//	go run ./tools/paths                                 # print, check docs/ARCHITECTURE.md (make paths)
//	go run ./tools/paths -write docs/ARCHITECTURE.md      # also rewrite the table between the paths markers
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tmefeed/tmefeed/internal/docsection"
)

const (
	module      = "github.com/tmefeed/tmefeed/"
	beginMarker = "<!-- paths:begin -->"
	endMarker   = "<!-- paths:end -->"
)

// path is one measured request path: its name for TMEFEED_PATHS and the
// heading of its section in the document.
type path struct {
	name, heading string
}

var paths = []path{
	{"rest", "REST hit"},
	{"graphql", "Cold GraphQL feed"},
	{"live", "Live update"},
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "paths:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("paths", flag.ContinueOnError)
	doc := fs.String("doc", "docs/ARCHITECTURE.md", "the document whose path sections are checked")
	write := fs.Bool("write", false, "replace the table between the paths markers of -doc")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "tmefeed-paths")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	measured := map[string]files{}
	for _, p := range paths {
		// Each phase twice: a block the warm-up counts more in either
		// run, or the path less in either, is noise (a read split in two
		// by the network, a timer) and not the path's.
		var profiles [2]map[block]int64
		for i, phase := range []string{"warm", "warm", "run", "run"} {
			file := filepath.Join(tmp, fmt.Sprintf("%s-%s-%d.out", p.name, phase, i))
			cmd := exec.Command("go", "test", "-count=1", "-cover", "-covermode=atomic", "-coverpkg=./...",
				"-coverprofile="+file, "-run=^TestRequestPaths$", "./cmd/tmefeed")
			cmd.Env = append(os.Environ(), "TMEFEED_PATHS="+p.name+":"+phase)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s:%s: %w\n%s", p.name, phase, err, b)
			}
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			prof, err := readProfile(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			profiles[i/2] = combine(profiles[i/2], prof, phase == "warm")
		}
		measured[p.name] = ran(profiles[0], profiles[1])
	}
	// Generated files are told apart by their header.
	for name, fl := range measured {
		measured[name] = classify(fl, func(f string) bool {
			b, err := os.ReadFile(f)
			return err == nil && isGenerated(b)
		})
	}
	table := render(measured)
	fmt.Fprint(out, table)
	for _, p := range paths {
		fmt.Fprintf(out, "\n%s (%s):\n", p.heading, p.name)
		for _, f := range measured[p.name].Source {
			fmt.Fprintf(out, "- `%s`\n", f)
		}
		for _, f := range measured[p.name].Generated {
			fmt.Fprintf(out, "- `%s` (generated)\n", f)
		}
	}
	b, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	text := string(b)
	if *write {
		if text, err = replaceSection(text, table); err != nil {
			return fmt.Errorf("%s: %w", *doc, err)
		}
		if err := os.WriteFile(*doc, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return check(text, measured)
}

// block is one counted block of a coverage profile.
type block struct {
	file, span string
}

// readProfile reads a coverage profile (go test -coverprofile) into each
// block's count.
func readProfile(r io.Reader) (map[block]int64, error) {
	counts := map[block]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "mode:") {
			continue
		}
		// file.go:12.3,14.5 2 7
		loc, rest, ok := strings.Cut(line, " ")
		colon := strings.LastIndex(loc, ":")
		_, n, ok2 := strings.Cut(rest, " ")
		count, err := strconv.ParseInt(n, 10, 64)
		if !ok || !ok2 || colon < 0 || err != nil {
			return nil, fmt.Errorf("not a profile line: %q", line)
		}
		// A block is listed once per package that was covered.
		b := block{loc[:colon], loc[colon+1:]}
		counts[b] = max(counts[b], count)
	}
	return counts, sc.Err()
}

// combine is the larger count of each block of a and b (highest) or the
// smaller; a nil a is b.
func combine(a, b map[block]int64, highest bool) map[block]int64 {
	if a == nil {
		return b
	}
	for k, n := range b {
		if highest {
			a[k] = max(a[k], n)
		} else {
			a[k] = min(a[k], n)
		}
	}
	if !highest {
		for k := range a {
			if _, ok := b[k]; !ok {
				a[k] = 0
			}
		}
	}
	return a
}

// files are a path's files, relative to the module, sorted.
type files struct {
	Source, Generated []string
}

// packages counts the distinct directories of fs.
func packages(fs ...[]string) int {
	dirs := map[string]bool{}
	for _, l := range fs {
		for _, f := range l {
			dirs[filepath.Dir(f)] = true
		}
	}
	return len(dirs)
}

// ran is the module's files with a block that counts more in run than in
// warm, test files aside (they are not instrumented) and so is the
// fixture origin (fixtures/), which stands in for Telegram.
func ran(warm, run map[block]int64) files {
	seen := map[string]bool{}
	for b, n := range run {
		if n > warm[b] && strings.HasPrefix(b.file, module) && !strings.HasPrefix(b.file, module+"fixtures/") {
			seen[strings.TrimPrefix(b.file, module)] = true
		}
	}
	var fl files
	for f := range seen {
		fl.Source = append(fl.Source, f)
	}
	slices.Sort(fl.Source)
	return fl
}

// classify moves the generated files of fl.Source to fl.Generated.
func classify(fl files, generated func(string) bool) files {
	var out files
	for _, f := range append(fl.Source, fl.Generated...) {
		if generated(f) {
			out.Generated = append(out.Generated, f)
		} else {
			out.Source = append(out.Source, f)
		}
	}
	slices.Sort(out.Source)
	slices.Sort(out.Generated)
	return out
}

// isGenerated reports the header of generated Go code
// (https://go.dev/s/generatedcode) before the package clause.
func isGenerated(src []byte) bool {
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "package ") {
			return false
		}
		if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(strings.TrimSpace(line), " DO NOT EDIT.") {
			return true
		}
	}
	return false
}

// render is the table of counts.
func render(measured map[string]files) string {
	var b strings.Builder
	b.WriteString("| path | files | packages | of which generated (gqlgen) |\n|---|---:|---:|---:|\n")
	for _, p := range paths {
		fl := measured[p.name]
		fmt.Fprintf(&b, "| %s | %d | %d | %d files |\n", p.heading,
			len(fl.Source)+len(fl.Generated), packages(fl.Source, fl.Generated), len(fl.Generated))
	}
	return b.String()
}

// check compares each path section's files (in backquotes, generated ones
// included) with the measured set.
func check(doc string, measured map[string]files) error {
	var problems []string
	for _, p := range paths {
		listed := sectionFiles(doc, p.heading)
		if listed == nil {
			problems = append(problems, fmt.Sprintf("no section %q", "### "+p.heading))
			continue
		}
		fl := measured[p.name]
		want := append(slices.Clone(fl.Source), fl.Generated...)
		for _, f := range want {
			if !slices.Contains(listed, f) {
				problems = append(problems, fmt.Sprintf("%s: `%s` runs but is not listed", p.heading, f))
			}
		}
		for _, f := range listed {
			if !slices.Contains(want, f) {
				problems = append(problems, fmt.Sprintf("%s: `%s` is listed but does not run", p.heading, f))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the document's paths differ from what runs:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

// sectionFiles is the distinct `dir/file.go` names in backquotes under
// the heading "### <heading>", up to the next heading; nil without it.
func sectionFiles(doc, heading string) []string {
	start := strings.Index(doc, "\n### "+heading+"\n")
	if start < 0 {
		return nil
	}
	body := doc[start+len(heading)+6:]
	if end := strings.Index(body, "\n#"); end >= 0 {
		body = body[:end]
	}
	listed := []string{}
	for {
		i := strings.Index(body, "`")
		if i < 0 {
			break
		}
		j := strings.Index(body[i+1:], "`")
		if j < 0 {
			break
		}
		name := body[i+1 : i+1+j]
		body = body[i+1+j+1:]
		if strings.HasSuffix(name, ".go") && strings.Contains(name, "/") && !slices.Contains(listed, name) {
			listed = append(listed, name)
		}
	}
	return listed
}

// replaceSection puts table between the markers of doc, keeping the rest.
func replaceSection(doc, table string) (string, error) {
	return docsection.Replace(doc, beginMarker, endMarker, table)
}
