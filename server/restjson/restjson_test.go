package restjson

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tmefeed/tmefeed/parser"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the current output")

const fixturesDir = "../../fixtures/pages"

// render parses a recorded page by the directory it is under and writes
// it as the REST API does; ok is false for a file of no page kind.
func render(rel string, b []byte) (out []byte, ok bool, err error) {
	switch strings.SplitN(rel, "/", 2)[0] {
	case "s":
		p, err := parser.ParseBody(b)
		if err != nil {
			return nil, true, err
		}
		return AppendPage(nil, p), true, nil
	case "more":
		p, err := parser.ParseMore(b)
		if err != nil {
			return nil, true, err
		}
		return AppendPage(nil, p), true, nil
	case "preview":
		p, err := parser.ParsePreview(b)
		if err != nil {
			return nil, true, err
		}
		return AppendPreview(nil, p), true, nil
	case "embed":
		p, err := parser.ParseEmbed(b)
		if err != nil {
			return nil, true, err
		}
		return AppendPost(nil, p), true, nil
	}
	return nil, false, nil
}

// TestGolden writes every recorded page as the REST API does and compares
// it with the reviewed golden file (indented, HTML escaped, for reading
// and diffing). Run `go test ./server/restjson -update` after an intended
// change and review the diff.
func TestGolden(t *testing.T) {
	n := 0
	err := filepath.WalkDir(fixturesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".html" && ext != ".json" {
			return nil
		}
		rel, _ := filepath.Rel(fixturesDir, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		compact, ok, perr := render(rel, data)
		if !ok {
			return nil
		}
		n++
		var got []byte
		if perr != nil {
			q, _ := json.Marshal(perr.Error())
			got = []byte(`{"error": ` + string(q) + "}\n")
		} else {
			if !json.Valid(compact) {
				t.Errorf("%s: not valid JSON: %s", rel, compact)
				return nil
			}
			var escaped, indented bytes.Buffer
			json.HTMLEscape(&escaped, compact)
			if err := json.Indent(&indented, escaped.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			got = append(indented.Bytes(), '\n')
		}
		golden := filepath.Join("testdata", "golden", strings.TrimSuffix(rel, filepath.Ext(rel))+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			return os.WriteFile(golden, got, 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Errorf("no golden file (run go test ./server/restjson -update): %v", err)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: output differs from %s\n%s", rel, golden, firstDiff(string(want), string(got)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Fatalf("want at least 15 fixture pages in %s, found %d", fixturesDir, n)
	}
}

// firstDiff shows where two texts first differ, with some context.
func firstDiff(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("at byte %d:\n want …%s…\n got  …%s…", i, want[from:min(len(want), i+80)], got[from:min(len(got), i+80)])
}

// encodePlain encodes v as encoding/json does by its tags alone (HTML left
// unescaped), without the trailing newline.
func encodePlain(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// fill sets every field reachable from v to a non-empty value: strings that
// need escaping, non-zero numbers, true, one-element slices, allocated pointers.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(`a<"&>` + "\n")
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

// tagKeys returns the JSON keys a struct's tags name, and which of them are
// tmefeed's additions (omitempty).
func tagKeys(typ reflect.Type) (keys []string, extra map[string]bool) {
	extra = map[string]bool{}
	for i := range typ.NumField() {
		name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		keys = append(keys, name)
		if strings.Contains(opts, "omitempty") {
			extra[name] = true
		}
	}
	return keys, extra
}

// objectKeys returns the keys of a JSON object in order.
func objectKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// writer writes one model type, taking a pointer to a value of it.
type writer struct {
	typ   reflect.Type
	write func(ptr any) []byte
}

func writerOf[T any](write func([]byte, *T) []byte) writer {
	return writer{reflect.TypeFor[T](), func(ptr any) []byte { return write(nil, ptr.(*T)) }}
}

// The hand-written writers must say what the tags say: a filled value
// writes as encoding/json writes the same value by its tags, and an empty
// one keeps every telegram-me key (null) and drops the additions.
func TestKeysFollowTags(t *testing.T) {
	for _, w := range []writer{
		writerOf(func(b []byte, o *parser.Offset) []byte { return appendOffset(b, *o) }),
		writerOf(AppendChannel), writerOf(appendCounters), writerOf(AppendPreview), writerOf(appendEntity),
		writerOf(appendMedia), writerOf(appendPoll), writerOf(appendReply), writerOf(appendPreviewLink),
		writerOf(appendReact), writerOf(appendFooter), writerOf(appendForwarded), writerOf(AppendPost),
	} {
		typ := w.typ
		t.Run(typ.Name(), func(t *testing.T) {
			keys, extra := tagKeys(typ)

			full := reflect.New(typ)
			fill(full.Elem())
			got := w.write(full.Interface())
			want := encodePlain(t, full.Interface())
			if typ == reflect.TypeFor[parser.Preview]() {
				// The one intended difference: a preview's description is its string.
				var p map[string]any
				_ = json.Unmarshal(want, &p)
				if d, ok := p["description"].(map[string]any); ok {
					p["description"] = d["string"]
				}
				var g map[string]any
				if err := json.Unmarshal(got, &g); err != nil || !reflect.DeepEqual(g, p) {
					t.Errorf("filled %s:\n got  %s\n want %v", typ.Name(), got, p)
				}
			} else if !bytes.Equal(got, want) {
				t.Errorf("filled %s:\n got  %s\n want %s", typ.Name(), got, want)
			}
			if k := objectKeys(t, got); !slices.Equal(k, keys) {
				t.Errorf("filled %s keys %v, tags name %v", typ.Name(), k, keys)
			}

			var empty map[string]json.RawMessage
			if err := json.Unmarshal(w.write(reflect.New(typ).Interface()), &empty); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if _, ok := empty[k]; ok == extra[k] {
					t.Errorf("empty %s: key %q present=%v, want %v", typ.Name(), k, ok, !extra[k])
				}
			}
		})
	}
}

func TestMissingOptionalValuesAreNull(t *testing.T) {
	got := string(AppendPost(nil, &parser.Post{Content: parser.PostContent{Reacts: []parser.React{{Count: "3", Type: parser.ReactStars}}}}))
	for _, want := range []string{
		`"id":null`, `"forwarded":null`, `"text":null`, `"media":null`, `"poll":null`, `"inline":null`, `"reply":null`,
		`"preview_link":null`, `"views":null`, `"author":null`, `"emoji":"⭐"`, `"emoji_id":null`,
		`"date":{"string":null,"unix":null}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in %s", want, got)
		}
	}
	for _, absent := range []string{`"location"`, `"service"`, `"views_count"`} {
		if strings.Contains(got, absent) {
			t.Errorf("tmefeed-only key %s written for an empty value: %s", absent, got)
		}
	}
	if got := string(AppendMeta(nil, parser.Meta{})); got != `{"offset":{"before":null,"after":null}}` {
		t.Errorf("empty meta = %s", got)
	}
}

// Numbers are written as encoding/json writes them, those it writes with
// an exponent included.
func TestLocationNumbersAsEncodingJSON(t *testing.T) {
	for _, f := range []float64{1.5, -33.8688, 151.2093, 1e-7, -2.5e-9, 1e21, 123456789.125} {
		l := parser.Location{Latitude: f, Longitude: -f, Address: "a"}
		if got, want := appendLocation(nil, &l), encodePlain(t, l); !bytes.Equal(got, want) {
			t.Errorf("location %v: got %s, want %s", f, got, want)
		}
	}
}

// BenchmarkPage compares the REST writer with encoding/json writing the
// same page by its tags (not the same bytes: no nulls), the choice behind
// writing the REST answers by hand.
func BenchmarkPage(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(fixturesDir, "s", "tmefeed_news.html"))
	if err != nil {
		b.Fatal(err)
	}
	p, err := parser.ParseBody(data)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Append", func(b *testing.B) {
		buf := AppendPage(nil, p)
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendPage(buf[:0], p)
		}
	})
	b.Run("EncodingJSON", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A post t.me names nowhere has id null, and an estimated date says so;
// an embed's unknown date is null.
func TestIDsAndDatesOfRecordedPages(t *testing.T) {
	read := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(fixturesDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	js, _, err := render("s/nameless_notes.html", read("s/nameless_notes.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(js, []byte(`{"id":null,"view":`)); n != 2 {
		t.Errorf("%d posts with id null, want the two named nowhere", n)
	}
	if js, _, err = render("s/late_edition.html", read("s/late_edition.html")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"date":{"string":"2026-06-19T09:15:00+00:00","unix":1781860500,"estimated":true}`)) {
		t.Errorf("the estimated date is not marked:\n%s", js)
	}
	if js, _, err = render("embed/late_edition/305.html", read("embed/late_edition/305.html")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"date":{"string":null,"unix":null}`)) {
		t.Errorf("embed 305: unknown date not null:\n%s", js)
	}
}
