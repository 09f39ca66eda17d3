package server

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// A client's requests past its share wait in order for one of its
// working requests to end, while other clients are admitted at once.
func TestShareQueuesAClientsExtraRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShare(ShareConfig{PerClient: 1, Stall: time.Hour, Queue: 2})
		ctx := context.Background()
		first, refusal, _ := s.acquire(ctx, 1)
		if refusal != shareAdmitted {
			t.Fatalf("first request: %v, want admitted", refusal)
		}
		if _, refusal, _ := s.acquire(ctx, 2); refusal != shareAdmitted {
			t.Fatalf("another client's request: %v, want admitted at once", refusal)
		}
		order := make(chan int, 2)
		for i := range 2 {
			go func() {
				start, refusal, _ := s.acquire(ctx, 1)
				if refusal != shareAdmitted {
					t.Errorf("waiting request %d: %v", i, refusal)
					return
				}
				order <- i
				s.release(1, start)
			}()
			synctest.Wait() // queued in this order
		}
		if _, refusal, _ := s.acquire(ctx, 1); refusal != shareClientFull {
			t.Fatalf("a request beyond the queue: %v, want shareClientFull", refusal)
		}
		select {
		case i := <-order:
			t.Fatalf("request %d admitted while the client's first works", i)
		default:
		}
		s.release(1, first)
		if a, b := <-order, <-order; a != 0 || b != 1 {
			t.Errorf("admitted in order %d, %d; want 0, 1", a, b)
		}
		synctest.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		if c := s.clients[1]; c != nil || s.waiters != 0 {
			t.Errorf("client 1 still tracked (%+v), %d waiting; want forgotten", c, s.waiters)
		}
	})
}

// A request that has worked for the stall stops counting (it waits on
// Telegram, not the cores): the client's next request goes ahead then,
// not before.
func TestShareStopsCountingAStalledRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall = 250 * time.Millisecond
		s := newShare(ShareConfig{PerClient: 1, Stall: stall})
		ctx := context.Background()
		slow, _, _ := s.acquire(ctx, 7)
		begun := time.Now()
		start, refusal, _ := s.acquire(ctx, 7)
		if refusal != shareAdmitted {
			t.Fatalf("next request: %v", refusal)
		}
		if waited := time.Since(begun); waited != stall {
			t.Errorf("next request waited %v, want the stall, %v", waited, stall)
		}
		// The stalled request's end frees no place twice.
		s.release(7, slow)
		if got := len(s.clients[7].starts); got != 1 {
			t.Errorf("%d requests counted, want 1 (the one working)", got)
		}
		s.release(7, start)
	})
}

// A request whose client goes away while it waits leaves the queue, and
// one admitted as its client went away gives its place on.
func TestShareForgetsRequestsWhoseClientLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShare(ShareConfig{PerClient: 1, Stall: time.Hour})
		first, _, _ := s.acquire(context.Background(), 3)
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan shareRefusal, 1)
		go func() {
			_, refusal, _ := s.acquire(ctx, 3)
			gone <- refusal
		}()
		synctest.Wait()
		cancel()
		if refusal := <-gone; refusal != shareGone {
			t.Fatalf("a request whose client left: %v, want shareGone", refusal)
		}
		s.release(3, first)
		if _, refusal, _ := s.acquire(context.Background(), 3); refusal != shareAdmitted {
			t.Fatalf("the client's next request: %v, want admitted at once", refusal)
		}
		if s.waiters != 0 {
			t.Errorf("%d waiting, want 0", s.waiters)
		}
	})
}

// A full server refuses the next waiting request whoever sends it.
func TestShareBoundsWaitingOverAllClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShare(ShareConfig{PerClient: 1, Stall: time.Hour, Waiting: 1})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, _, _ = s.acquire(ctx, 1)
		_, _, _ = s.acquire(ctx, 2)
		go func() { _, _, _ = s.acquire(ctx, 1) }()
		synctest.Wait()
		if _, refusal, _ := s.acquire(ctx, 2); refusal != shareServerFull {
			t.Fatalf("waiting beyond the server's bound: %v, want shareServerFull", refusal)
		}
		cancel()
		synctest.Wait()
	})
}

// A client pays back the time its requests work, at its part of the
// cores: beyond its burst its next request waits until it owes the burst
// again, and is refused with that wait when it is longer than maxWait.
// Another client is admitted at once throughout, and a client that owes
// nothing any more is forgotten.
func TestShareMakesAClientPayBackItsWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShare(ShareConfig{
			PerClient: 1, Stall: time.Hour, Counted: time.Hour,
			CPU:   0.25 / float64(runtime.GOMAXPROCS(0)), // a quarter of one core
			Burst: time.Second, MaxWait: 2 * time.Second,
		})
		ctx := context.Background()
		start, _, _ := s.acquire(ctx, 1)
		time.Sleep(3 * time.Second) // works 3s: owes 2s beyond its burst, 8s to pay back
		s.release(1, start)

		if _, refusal, wait := s.acquire(ctx, 1); refusal != shareClientOwes || wait != 8*time.Second {
			t.Fatalf("next request: %v after %v, want shareClientOwes after 8s", refusal, wait)
		}
		other, refusal, _ := s.acquire(ctx, 2)
		if refusal != shareAdmitted {
			t.Fatalf("another client: %v, want admitted at once", refusal)
		}
		s.release(2, other)

		time.Sleep(6 * time.Second) // 1.5s paid back: 0.5s beyond the burst, 2s away
		begun := time.Now()
		start, refusal, _ = s.acquire(ctx, 1)
		if refusal != shareAdmitted {
			t.Fatalf("request within maxWait of its turn: %v, want admitted", refusal)
		}
		if waited := time.Since(begun); waited != 2*time.Second {
			t.Errorf("waited %v, want 2s", waited)
		}
		s.release(1, start)

		time.Sleep(time.Minute)
		_, _, _ = s.acquire(ctx, 3) // sweeps
		s.mu.Lock()
		defer s.mu.Unlock()
		if c := s.clients[1]; c != nil {
			t.Errorf("client 1 still tracked (%+v) a minute after it paid back, want forgotten", c)
		}
	})
}

// Work is counted up to counted, and never past the stall: a request
// waiting on Telegram costs its client no more than that, so that a person
// reading channels nobody holds keeps their share.
func TestShareCountsWorkUpToItsCap(t *testing.T) {
	for _, c := range []struct {
		name           string
		stall, counted time.Duration
		want           time.Duration
	}{
		{"default cap", 250 * time.Millisecond, 0, DefaultShareCounted},
		{"cap below the stall", 250 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond},
		{"cap past the stall", 250 * time.Millisecond, time.Hour, 250 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newShare(ShareConfig{PerClient: 4, Stall: c.stall, Counted: c.counted, CPU: 1, Burst: time.Second})
				start, _, _ := s.acquire(context.Background(), 5)
				time.Sleep(time.Minute)
				s.mu.Lock()
				s.releaseLocked(5, s.clients[5], start)
				owed := s.clients[5].owed
				s.mu.Unlock()
				if owed != c.want {
					t.Errorf("a request that ran a minute owes %v, want %v", owed, c.want)
				}
				// Below the cap, what it took is owed.
				start, _, _ = s.acquire(context.Background(), 6)
				time.Sleep(7 * time.Millisecond)
				s.mu.Lock()
				s.releaseLocked(6, s.clients[6], start)
				owed = s.clients[6].owed
				s.mu.Unlock()
				if owed != 7*time.Millisecond {
					t.Errorf("a request that ran 7ms owes %v, want 7ms", owed)
				}
			})
		})
	}
}
