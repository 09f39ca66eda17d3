package access

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func mustSet(t *testing.T, lines ...string) *Set {
	t.Helper()
	s, err := Parse(strings.NewReader(strings.Join(lines, "\n")), secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A minted key is found by its line, with its limits; the file holds
// only its hash; other keys are unknown.
func TestKeyAndLine(t *testing.T) {
	key, line, err := NewKey("dash-1", Limits{RPM: 600, Streams: 4})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(line, key) || !strings.HasPrefix(line, "dash-1 sha256:") || !strings.HasSuffix(line, " rpm=600 streams=4") {
		t.Fatalf("line %q for key %q", line, key)
	}
	s := mustSet(t, "# comment", "", line)
	g, err := s.Lookup(key)
	if err != nil || g.Consumer.Name != "dash-1" || g.Consumer.RPM != 600 || g.Consumer.Streams != 4 || g.Consumer.OriginRPM != 0 || g.Widget() {
		t.Fatalf("lookup: %+v %v", g, err)
	}
	for _, k := range []string{key + "x", key[:len(key)-1], "tmf_", "Bearer " + key} {
		if _, err := s.Lookup(k); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("%q: %v", k, err)
		}
	}
	if _, err := s.Lookup(""); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v", err)
	}
}

// Lines that are wrong stop the reading and name their line.
func TestParseErrors(t *testing.T) {
	_, a, _ := NewKey("a", Limits{})
	for _, c := range []struct{ text, want string }{
		{"a", "line 1"},
		{"bad/name sha256:00", "name"},
		{"a sha256:abcd", "64 hex"},
		{"a md5:" + strings.Repeat("0", 64), "sha256:"},
		{a + " rpm=x", "rpm=N"},
		{a + " burst=3", "unknown limit"},
		{a + " rpm=1 rpm=2", "twice"},
		{a + "\n" + a, "line 2"},
		{a + "\n" + strings.Replace(a, "a ", "b ", 1), "has the key of"},
	} {
		if _, err := Parse(strings.NewReader(c.text), secret); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

// A widget key reads its channels only, verifies only untouched, and
// stops with its consumer's line or key, or another secret.
func TestWidgetKey(t *testing.T) {
	key, line, _ := NewKey("dash", Limits{})
	s := mustSet(t, line)
	g, _ := s.Lookup(key)
	wk, err := s.MintWidget(g.Consumer, []string{"durov", "alpha_news", "durov"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Lookup(wk)
	if err != nil || w.Consumer.Name != "dash" || !w.Widget() || !w.Allows("durov") || !w.Allows("alpha_news") || w.Allows("telegram") {
		t.Fatalf("widget grant %+v %v", w, err)
	}
	// Tampered: another channel list under the same signature.
	p, sig, _ := strings.Cut(strings.TrimPrefix(wk, "tmw_"), ".")
	for _, bad := range []string{wk + "A", "tmw_" + p, "tmw_" + sig + "." + p, "tmw_ZGFzaDp0ZWxlZ3JhbQ." + sig} {
		if _, err := s.Lookup(bad); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// The consumer's key replaced, or another secret: void.
	_, line2, _ := NewKey("dash", Limits{})
	if _, err := mustSet(t, line2).Lookup(wk); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("after the key was replaced: %v", err)
	}
	other, _ := Parse(strings.NewReader(line), []byte(strings.Repeat("x", 32)))
	if _, err := other.Lookup(wk); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("with another secret: %v", err)
	}
}

// Open makes the secret once, beside the file, and Reload keeps the old
// keys when the file turns bad.
func TestOpenAndReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	k1, l1, _ := NewKey("one", Limits{})
	if err := os.WriteFile(path, []byte(l1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path + SecretSuffix)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret: %v %v", st, err)
	}
	g, _ := keys.Lookup(k1)
	wk, _ := keys.Current().MintWidget(g.Consumer, []string{"durov"})
	if err := os.WriteFile(path, []byte("broken line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := keys.Reload(); err == nil {
		t.Fatal("a bad file reloaded")
	}
	if _, err := keys.Lookup(k1); err != nil {
		t.Errorf("the old keys after a failed reload: %v", err)
	}
	// Another process over the same files reads the same secret.
	again, err := Open(path + "2")
	if err == nil || again != nil {
		t.Fatalf("a missing file opened")
	}
	if err := os.WriteFile(path, []byte(l1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Lookup(wk); err != nil {
		t.Errorf("a widget key in another process: %v", err)
	}
}
