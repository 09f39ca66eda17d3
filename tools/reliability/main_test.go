package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseFiguresKeepsOrderAndLastValue(t *testing.T) {
	out := `=== RUN   TestFaultX
    fault_test.go:42: FIGURE: origin | requests, origin 500 | 12
    fault_test.go:43: not a figure
    abuse_test.go:9: FIGURE: graphql | fan-out 30 levels, time to refuse | 0.4 ms
    fault_test.go:44: FIGURE: origin | requests, origin 500 | 11
    x.go:1: FIGURE: broken line without cells
ok  	example	0.1s
`
	got := parseFigures(strings.NewReader(out))
	want := []figure{
		{"origin", "requests, origin 500", "11"},
		{"graphql", "fan-out 30 levels, time to refuse", "0.4 ms"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d figures %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("figure %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReplaceSectionKeepsProse(t *testing.T) {
	doc := "# Title\n\nprose before\n\n" + beginMarker + "\nold table\n" + endMarker + "\n\nprose after\n"
	table := renderTable([]figure{{"a", "b|c", "1"}}, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	got, err := replaceSection([]byte(doc), table)
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, must := range []string{"prose before", "prose after", `| a | b\|c | 1 |`, "2026-01-02"} {
		if !strings.Contains(s, must) {
			t.Errorf("result lacks %q:\n%s", must, s)
		}
	}
	if strings.Contains(s, "old table") {
		t.Errorf("old table kept:\n%s", s)
	}
	if _, err := replaceSection([]byte("no markers"), table); err == nil {
		t.Error("a document without markers was accepted")
	}
}
