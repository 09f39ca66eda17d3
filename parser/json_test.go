package parser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// encodePlain encodes v as the REST API does (HTML left unescaped), without
// the trailing newline.
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

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", `"quoted" \ back\slash`, "<b>bold</b> & more",
		"\x00\x01\x1f\x7f", "\b\f\n\r\t", "caf\u00e9 \u05e9\u05dc\u05d5\u05dd \U0001f600",
		"line\u2028sep\u2029para", "bad \xff\xfe utf8 \xc3", "\xe2\x80", "end \xed\xa0\x80 surrogate",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want := encodePlain(t, s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
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

// The hand-written encoders must say what the tags say: a filled value
// encodes as encoding/json would encode the same fields by their tags, and
// an empty one keeps every telegram-me key (null) and drops the additions.
func TestMarshalKeysFollowTags(t *testing.T) {
	for _, v := range []json.Marshaler{Offset{}, Channel{}, Counters{}, Preview{}, Entity{}, Media{}, Poll{}, Reply{}, PreviewLink{}, React{}, Footer{}, Forwarded{}} {
		typ := reflect.TypeOf(v)
		t.Run(typ.Name(), func(t *testing.T) {
			keys, extra := tagKeys(typ)

			full := reflect.New(typ).Elem()
			fill(full)
			got := encodePlain(t, full.Interface())
			// The same struct without its methods: what the tags alone give.
			plain := reflect.New(reflect.StructOf(fieldsOf(typ))).Elem()
			for i := range typ.NumField() {
				plain.Field(i).Set(full.Field(i))
			}
			if typ == reflect.TypeFor[Preview]() {
				// The one intended difference: a preview's description is its string.
				var p map[string]any
				_ = json.Unmarshal(encodePlain(t, plain.Interface()), &p)
				if d, ok := p["description"].(map[string]any); ok {
					p["description"] = d["string"]
				}
				var g map[string]any
				if err := json.Unmarshal(got, &g); err != nil || !reflect.DeepEqual(g, p) {
					t.Errorf("filled %s:\n got  %s\n want %v", typ.Name(), got, p)
				}
			} else if want := encodePlain(t, plain.Interface()); !bytes.Equal(got, want) {
				t.Errorf("filled %s:\n got  %s\n want %s", typ.Name(), got, want)
			}
			if k := objectKeys(t, got); !slices.Equal(k, keys) {
				t.Errorf("filled %s keys %v, tags name %v", typ.Name(), k, keys)
			}

			var empty map[string]json.RawMessage
			if err := json.Unmarshal(encodePlain(t, reflect.Zero(typ).Interface()), &empty); err != nil {
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

// fieldsOf copies a struct's fields, tags included, to build a type with
// the same JSON tags and no methods.
func fieldsOf(typ reflect.Type) []reflect.StructField {
	out := make([]reflect.StructField, typ.NumField())
	for i := range out {
		f := typ.Field(i)
		out[i] = reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag}
	}
	return out
}

func TestMissingOptionalValuesAreNull(t *testing.T) {
	got := string(encodePlain(t, Post{ID: 1, Content: PostContent{Reacts: []React{{Count: "3", Type: ReactStars}}}}))
	for _, want := range []string{
		`"forwarded":null`, `"text":null`, `"media":null`, `"poll":null`, `"inline":null`, `"reply":null`,
		`"preview_link":null`, `"views":null`, `"author":null`, `"emoji":"⭐"`, `"emoji_id":null`,
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
}

// The REST server writes whole answers with the Append functions; they must
// give exactly what encoding/json gives for the same values.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	check := func(name string, v any, got []byte) {
		t.Helper()
		if want := encodePlain(t, v); !bytes.Equal(got, want) {
			t.Errorf("%s: Append differs from encoding/json\n%s", name, firstDiff(string(want), string(got)))
		}
	}
	for _, f := range loadFixtures(t) {
		v, err := parseAs(f.kind, f.data)
		if err != nil {
			continue
		}
		switch v := v.(type) {
		case *Page:
			check(f.rel, v, AppendPageJSON(nil, v))
			check(f.rel+" meta", v.Meta, AppendMetaJSON(nil, v.Meta))
		case *Post:
			check(f.rel, v, AppendPostJSON(nil, v))
		case *Preview:
			check(f.rel, v, AppendPreviewJSON(nil, v))
		}
	}
	// Every field filled, and the parts no fixture has (a location, a
	// service message, numbers encoding/json writes with an exponent).
	var page Page
	fill(reflect.ValueOf(&page).Elem())
	check("filled page", &page, AppendPageJSON(nil, &page))
	post := page.Content.Posts[0]
	for _, f := range []float64{0, 1.5, -33.8688, 151.2093, 1e-7, -2.5e-9, 1e21, 123456789.125} {
		post.Content.Location = &Location{Latitude: f, Longitude: -f, Address: "a"}
		check(fmt.Sprint("location ", f), &post, AppendPostJSON(nil, &post))
	}
	check("empty page", &Page{}, AppendPageJSON(nil, &Page{}))
	check("empty post", &Post{}, AppendPostJSON(nil, &Post{}))
	check("empty preview", &Preview{}, AppendPreviewJSON(nil, &Preview{}))
}
