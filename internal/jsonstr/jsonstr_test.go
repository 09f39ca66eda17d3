package jsonstr

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
)

// cases are strings that need every kind of escape, and random bytes.
func cases() []string {
	cs := []string{
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
		cs = append(cs, string(b))
	}
	return cs
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range cases() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, want %s", s, got, want)
		}
	}
}

// The request log writes what slog's JSON handler would: the same bytes,
// but for \b and \f, and always the same string once read.
func TestAppendReadsAsSlogWrites(t *testing.T) {
	for _, s := range cases() {
		var line bytes.Buffer
		h := slog.NewJSONHandler(&line, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}})
		rec := slog.Record{}
		rec.AddAttrs(slog.String("v", s))
		if err := h.Handle(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(strings.TrimPrefix(line.String(), `{"v":`), "}\n")
		got := string(Append(nil, s))
		if !strings.ContainsAny(s, "\b\f") && got != want {
			t.Fatalf("Append(%q) = %s, slog writes %s", s, got, want)
		}
		var a, b string
		if err := json.Unmarshal([]byte(got), &a); err != nil {
			t.Fatalf("Append(%q) = %s: %v", s, got, err)
		}
		if err := json.Unmarshal([]byte(want), &b); err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("Append(%q) reads as %q, slog's as %q", s, a, b)
		}
	}
}

// A post's HTML, the string the REST answers escape most.
var postHTML = strings.Repeat(`<a href="https://t.me/durov/42">Привет</a>, "world" &amp; more<br/>`+"\n", 20)

// BenchmarkEscape compares Append with encoding/json's own string
// encoding (json.Marshal of the string, the way a caller without Append
// would write one value).
func BenchmarkEscape(b *testing.B) {
	b.Run("Append", func(b *testing.B) {
		b.SetBytes(int64(len(postHTML)))
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			buf = Append(buf[:0], postHTML)
		}
	})
	b.Run("EncodingJSON", func(b *testing.B) {
		b.SetBytes(int64(len(postHTML)))
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(postHTML); err != nil {
				b.Fatal(err)
			}
		}
	})
}
