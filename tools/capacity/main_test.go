package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// The table in docs/OPERATIONS.md is what the tool prints: run
// `make capacity` after changing the model or its defaults.
func TestDocumentedTableIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(nil, &out); err != nil {
		t.Fatal(err)
	}
	want, err := replaceSection(string(doc), out.String())
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != want {
		t.Errorf("docs/OPERATIONS.md's capacity table is not what the tool prints now; run make capacity. The tool prints:\n%s", out.String())
	}
}

// A channel the updater does not keep, read at random at rate λ, is fetched
// once per window plus the wait for the next read: λ/(1+λW) fetches a
// second. The simulation agrees with that within 2 %, with one shared
// copy and with a copy per process (each seeing λ/P).
func TestSimulationMatchesClosedForm(t *testing.T) {
	const channels, reads, window = 2000, 0.5, 10 * time.Second
	lambda := reads / 60 // a second, per channel
	for _, tt := range []struct {
		valkey bool
		copies float64
	}{{true, 1}, {false, 3}} {
		r := simulate(params{Channels: channels, Window: window, Processes: 3, Valkey: tt.valkey, Reads: reads,
			Zipf: 0, Top: 0, OriginRPM: 600, Warmup: 15 * time.Minute, Measure: 15 * time.Minute, Seed: 7})
		l := lambda / tt.copies
		want := channels * tt.copies * 60 * l / (1 + l*window.Seconds())
		if math.Abs(r.OriginPerMin-want) > 0.02*want {
			t.Errorf("valkey=%v: %.0f origin requests a minute, want about %.0f", tt.valkey, r.OriginPerMin, want)
		}
		if math.Abs(r.ReadsPerMin-channels*reads) > 0.02*channels*reads {
			t.Errorf("valkey=%v: %.0f reads a minute, want about %.0f", tt.valkey, r.ReadsPerMin, channels*reads)
		}
		if r.Egresses != int(math.Ceil(r.OriginPerMin/600)) {
			t.Errorf("valkey=%v: %d egresses for %.0f requests a minute at 600 each", tt.valkey, r.Egresses, r.OriginPerMin)
		}
	}
}

// The updater fetches each of its channels once per window, in each
// process without Valkey and once in all with it, and those channels'
// reads are all fresh.
func TestUpdaterCostsOneFetchPerWindow(t *testing.T) {
	for _, valkey := range []bool{true, false} {
		r := simulate(params{Channels: 100, Window: 10 * time.Second, Processes: 4, Valkey: valkey, Reads: 5,
			Zipf: 1, Top: 100, OriginRPM: 600, Warmup: time.Minute, Measure: 5 * time.Minute, Seed: 1})
		want := 600.0
		if !valkey {
			want *= 4
		}
		if r.UpdaterPerMin != want || r.OriginPerMin != want || r.Fresh != 1 {
			t.Errorf("valkey=%v: updater %.0f, origin %.0f a minute, %.3f fresh; want %.0f, %.0f, 1", valkey, r.UpdaterPerMin, r.OriginPerMin, r.Fresh, want, want)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-channels", "0"}, {"-channels", "ten"}, {"-windows", "10ms"}, {"-processes", "0"},
		{"-reads", "-1"}, {"-zipf", "9"}, {"-top", "-1"}, {"-origin-rpm", "0"}, {"extra"},
	} {
		var out strings.Builder
		if err := run(args, &out); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
