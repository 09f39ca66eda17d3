package archrules

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tmefeed/tmefeed"

// rule is one row of the table: the packages it names and what they may
// import of tmefeed. A name ending in "/*" stands for every package
// under it.
type rule struct {
	packages []string
	allowed  []string
	any      bool // "everything"
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	// "`x` (tests)": x is imported by tests only, which the rules leave
	// alone; any other parenthesis explains, and names nothing allowed.
	testsOnly    = regexp.MustCompile("`[^`]+` \\(tests\\)")
	parenthesis  = regexp.MustCompile(`\([^)]*\)`)
	packageShape = regexp.MustCompile(`^[a-z][a-z0-9/]*(/\*)?$`)
)

// readRules reads the "## Packages" table of ARCHITECTURE.md.
func readRules(doc []byte) ([]rule, error) {
	var rules []rule
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Packages"
			continue
		case !in || !strings.HasPrefix(line, "| `"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			return nil, fmt.Errorf("table row with %d cells, want 3: %s", len(cells), line)
		}
		var r rule
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			if !packageShape.MatchString(m[1]) {
				return nil, fmt.Errorf("%q is not a package path: %s", m[1], line)
			}
			r.packages = append(r.packages, m[1])
		}
		allowed := strings.TrimSpace(cells[2])
		switch {
		case allowed == "everything":
			r.any = true
		case allowed == "—":
		default:
			stated := allowed
			allowed = parenthesis.ReplaceAllString(testsOnly.ReplaceAllString(allowed, ""), "")
			for _, m := range backticked.FindAllStringSubmatch(allowed, -1) {
				if !packageShape.MatchString(m[1]) {
					return nil, fmt.Errorf("%q is not a package path: %s", m[1], line)
				}
				r.allowed = append(r.allowed, m[1])
			}
			if len(r.allowed) == 0 && !testsOnly.MatchString(stated) {
				return nil, fmt.Errorf("no package allowed and not \"—\": %s", line)
			}
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("no package table under \"## Packages\"")
	}
	return rules, sc.Err()
}

func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}

// ruleFor is the row naming pkg; an exact name wins over a pattern.
func ruleFor(rules []rule, pkg string) (rule, bool) {
	for _, r := range rules {
		if slices.Contains(r.packages, pkg) {
			return r, true
		}
	}
	for _, r := range rules {
		for _, p := range r.packages {
			if matches(p, pkg) {
				return r, true
			}
		}
	}
	return rule{}, false
}

// violations lists every import of imports (package → its imports of
// tmefeed, relative paths) that the rules do not allow, and every package
// the table does not name.
func violations(rules []rule, imports map[string][]string) []string {
	var bad []string
	for pkg, deps := range imports {
		r, ok := ruleFor(rules, pkg)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: not in the table", pkg))
			continue
		}
		if r.any {
			continue
		}
		for _, d := range deps {
			if !slices.ContainsFunc(r.allowed, func(a string) bool { return matches(a, d) }) {
				bad = append(bad, fmt.Sprintf("%s imports %s", pkg, d))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// moduleImports runs go list over the module: each package's own imports
// of tmefeed (tests' imports are not counted).
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Error", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkg, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		var own []string
		for _, imp := range p.Imports {
			if d, ok := strings.CutPrefix(imp, module+"/"); ok {
				own = append(own, d)
			}
		}
		imports[pkg] = own
	}
	return imports
}

// noteSources reads every directory and stats every Go file of the
// module, so that go test's cache, which cannot see what go list read,
// runs this test again when an import changes.
func noteSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestImportsFollowArchitecture(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := readRules(doc)
	if err != nil {
		t.Fatalf("docs/ARCHITECTURE.md: %v", err)
	}
	imports := moduleImports(t, root)
	noteSources(t, root)
	if len(imports) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(imports))
	}
	for _, v := range violations(rules, imports) {
		t.Errorf("%s (docs/ARCHITECTURE.md, ## Packages)", v)
	}
}

// The checker itself: a new arrow the table does not allow is found, and
// so is a package the table does not name.
func TestViolationsFindsABadImport(t *testing.T) {
	doc := []byte("# A\n\n## Packages\n\n| package | what | may import (of tmefeed) |\n|---|---|---|\n" +
		"| `parser` | pages | `internal/tme` |\n" +
		"| `internal/tme`, `internal/keys` | kinds | — |\n" +
		"| `pages` | parsed pages | `parser`, `internal/*` (not `cache`) |\n" +
		"| `internal/gcra` | limiter | `internal/keys` (tests) |\n" +
		"| `cmd/tmefeed` | wiring | everything |\n\n## Next\n\n| `server` | face | `pages` |\n")
	rules, err := readRules(doc)
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string][]string{
		"parser":        {"internal/tme"},
		"pages":         {"parser", "internal/tme", "internal/keys"},
		"internal/gcra": nil,
		"cmd/tmefeed":   {"pages", "parser", "server"},
	}
	if v := violations(rules, ok); len(v) != 0 {
		t.Fatalf("allowed imports reported: %q", v)
	}
	bad := map[string][]string{
		"parser":        {"internal/tme", "pages"}, // an arrow back up
		"pages":         {"cache"},                 // named only in a parenthesis
		"internal/gcra": {"internal/keys"},         // allowed to its tests only
		"internal/tme":  {"parser"},
		"server":        {"pages"}, // its row is outside the table
	}
	want := []string{
		"internal/gcra imports internal/keys",
		"internal/tme imports parser",
		"pages imports cache",
		"parser imports pages",
		"server: not in the table",
	}
	if got := violations(rules, bad); !slices.Equal(got, want) {
		t.Fatalf("violations:\n got %q\nwant %q", got, want)
	}
}

// The server's binary links no test harness: measurements that start
// redis-servers or use package testing are tools of their own.
func TestBinaryLinksNoTesting(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/tmefeed")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	noteSources(t, cmd.Dir)
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") || dep == module+"/internal/redistest" {
			t.Errorf("cmd/tmefeed links %s", dep)
		}
	}
}
