package graph

import (
	"bytes"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// The writer quotes strings as gqlgen does: control characters, quotes and
// backslashes escaped, everything else (text beyond ASCII, bytes that are
// not UTF-8, <, > and &) as it is. The fixtures hold no control
// characters but newlines and tabs, so these are tested here.
func TestAppendQuotedMatchesGQLGen(t *testing.T) {
	strs := []string{
		"", "plain", `"quoted" \ back\slash`, "tab\tcr\rlf\n", "\x00\x01\x08\x0b\x0c\x1b\x1f\x7f",
		"<b>&amp;</b> \u2028\u2029", "שלום Канал 😀 \u200d", "bad \xff\xfe utf-8 \xc3", "\xe2\x82", "end\\",
	}
	for i := range 0x80 {
		strs = append(strs, string(rune(i))+"x"+string(rune(i)))
	}
	for _, s := range strs {
		var want bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&want)
		if got := appendQuoted([]byte("x"), s); !bytes.Equal(got[1:], want.Bytes()) || got[0] != 'x' {
			t.Errorf("%q: wrote %s, gqlgen %s", s, got[1:], want.Bytes())
		}
	}
}

// Floats are written as gqlgen's MarshalFloatContext writes them.
func TestFloatMatchesGQLGen(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1.0 / 3, 2.5e-5, 1e-4, 123456, 1234567, 1e20, 1e21, 6.02214076e23, -7.25, 9.999999999999999, 5e-324, 1.7976931348623157e308} {
		var want bytes.Buffer
		if err := graphql.MarshalFloatContext(f).MarshalGQLContext(t.Context(), &want); err != nil {
			t.Fatal(err)
		}
		w := &answerWriter{}
		w.float(f)
		if string(w.b) != want.String() || w.failed {
			t.Errorf("%v: wrote %s, gqlgen %s", f, w.b, want.Bytes())
		}
	}
}
