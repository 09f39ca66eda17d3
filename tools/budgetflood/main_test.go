package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the tool's warm reader (startReader
// runs this executable again).
func TestMain(m *testing.M) {
	if readerMain() {
		return
	}
	os.Exit(m.Run())
}

// TestTwoProcessesShareOneBudget is the short form of the tool: two built
// `tmefeed serve` processes over one redis-server, every attack at once
// spread over both: together they send Telegram no more than one
// ORIGIN_RPM allows (rate × duration + burst), the reader of a warm
// channel gets no error, the newcomer's five cold channels are answered,
// and every refusal says when to retry.
func TestTwoProcessesShareOneBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log, out strings.Builder
	ok, err := run(ctx, config{
		Procs: 2,
		// The HTTP attacks; the GraphQL and WebSocket ones are rehearsed
		// by the tool's full runs (docs/OPERATIONS.md).
		Attacks:  []string{"body", "feed", "previews", "search", "history"},
		Duration: 8 * time.Second,
		RPM:      600,
		Latency:  50 * time.Millisecond,
		Warm:     2 * time.Second,
		Log:      &log,
		Out:      &out,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Logf("\n%s", out.String())
	if !ok {
		t.Error("the flood broke the budget or a reader")
	}
	// The attacks did more than the budget allows, so the bound was what
	// held them: refused by their share (429) or by the spent budget
	// (503). Held for their Retry-After, the attackers may not spend
	// their own share within a short flood.
	if !strings.Contains(out.String(), "×429") && !strings.Contains(out.String(), "×503") {
		t.Error("no attacker was refused: the flood did not reach the budget")
	}
}
