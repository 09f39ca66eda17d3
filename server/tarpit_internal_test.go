package server

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A hold lasts its length (read on the bubble's fake clock), ends early
// when the client goes away, and the holds are bounded per client and in
// total: beyond, wait returns at once.
func TestTarpitHoldsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := newTarpit(TarpitConfig{PerClient: 2, Total: 3})
		if got := tp.holdFor("60"); got != DefaultTarpitHold {
			t.Errorf("Retry-After 60: held %v, want the hold's bound %v", got, DefaultTarpitHold)
		}
		if got := tp.holdFor("1"); got != time.Second {
			t.Errorf("Retry-After 1: held %v, want 1s", got)
		}
		if got := tp.holdFor(""); got != DefaultTarpitHold {
			t.Errorf("no Retry-After (refusals inside a 200): held %v, want the hold's bound %v", got, DefaultTarpitHold)
		}
		start := time.Now()
		ended := make(chan time.Duration, 3)
		for _, client := range []string{"a", "a", "b"} {
			go func() {
				if tp.wait(t.Context(), client, time.Second) {
					ended <- time.Since(start)
				}
			}()
		}
		synctest.Wait() // the three are held
		if tp.wait(t.Context(), "a", time.Second) {
			t.Error("a third refusal of a client with two held was held")
		}
		if tp.wait(t.Context(), "c", time.Second) {
			t.Error("a refusal was held beyond the total bound")
		}
		for range 3 {
			if d := <-ended; d != time.Second {
				t.Errorf("held %v, want 1s", d)
			}
		}
		if len(tp.held) != 0 || tp.n != 0 {
			t.Errorf("after the holds: %d held, clients %v", tp.n, tp.held)
		}
		// A client that goes away is let go at once.
		ctx, cancel := context.WithCancel(t.Context())
		start = time.Now()
		go func() {
			tp.wait(ctx, "a", time.Second)
			ended <- time.Since(start)
		}()
		synctest.Wait()
		cancel()
		if d := <-ended; d != 0 {
			t.Errorf("a client gone: held %v more", d)
		}
	})
}

// A client's mistakes are answered at once up to Mistakes a second; the
// next ones that second are to be held. Other clients count apart, a
// new second starts afresh, and the clients counted stay bounded.
func TestTarpitCountsMistakesPerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := newTarpit(TarpitConfig{Mistakes: 3})
		for i := range 3 {
			if tp.repeatedMistake("a") {
				t.Fatalf("mistake %d of 3 in a second to be held", i+1)
			}
		}
		if !tp.repeatedMistake("a") {
			t.Error("a fourth mistake in a second not to be held")
		}
		if tp.repeatedMistake("b") {
			t.Error("another client's first mistake to be held")
		}
		time.Sleep(time.Second) // the bubble's clock
		if tp.repeatedMistake("a") {
			t.Error("a mistake in a new second to be held")
		}
		for i := range maxMistakeClients + 10 {
			tp.repeatedMistake(string(rune('A' + i)))
		}
		if len(tp.made) > maxMistakeClients {
			t.Errorf("%d clients counted, want at most %d", len(tp.made), maxMistakeClients)
		}
		time.Sleep(time.Second)
		tp.repeatedMistake("late")
		if len(tp.made) != 1 {
			t.Errorf("a second later, %d clients counted, want the one new", len(tp.made))
		}
	})
}
