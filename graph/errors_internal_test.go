package graph

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/origin"
)

// Only Internal falls through to INTERNAL_SERVER_ERROR: a kind added to
// fault without a GraphQL code would be told as a bug.
func TestEveryKindHasACode(t *testing.T) {
	for _, k := range fault.Kinds() {
		if code := graphCode(k); (code == CodeInternal) != (k == fault.Internal) {
			t.Errorf("%v: %s", k, code)
		}
	}
}

// The presenter tells the transport of input errors (Mistaken) and of
// budget refusals (Refused), and of nothing else, so that the server can
// hold a client's repeated mistakes and refusals.
func TestPresenterNotesMistakesAndRefusals(t *testing.T) {
	var mistakes, refusals int
	present := errorPresenter(slog.New(slog.DiscardHandler), time.Now,
		func(context.Context) { refusals++ }, func(context.Context) { mistakes++ })
	ctx := context.Background()
	present(ctx, inputError("%d ids given, at most %d allowed", 199, MaxNodes))
	if mistakes != 1 || refusals != 0 {
		t.Errorf("an input error: %d mistakes, %d refusals noted; want 1, 0", mistakes, refusals)
	}
	present(ctx, fmt.Errorf("reading: %w", origin.ErrUpstream))
	if mistakes != 1 || refusals != 0 {
		t.Errorf("an upstream failure: %d mistakes, %d refusals noted; want 1, 0", mistakes, refusals)
	}
}
