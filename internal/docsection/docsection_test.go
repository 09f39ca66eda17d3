package docsection

import "testing"

func TestReplaceKeepsTheMarkersAndTheRest(t *testing.T) {
	doc := "intro\n<!-- x:begin -->\n| old |\n<!-- x:end -->\nafter\n"
	got, err := Replace(doc, "<!-- x:begin -->", "<!-- x:end -->", "| new |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "intro\n<!-- x:begin -->\n| new |\n<!-- x:end -->\nafter\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"no markers", "<!-- x:end --> <!-- x:begin -->"} {
		if _, err := Replace(bad, "<!-- x:begin -->", "<!-- x:end -->", "x"); err == nil {
			t.Errorf("%q: no error, want one for a missing section", bad)
		}
	}
}
