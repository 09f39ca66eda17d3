package server

import (
	"context"
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
		first, refusal := s.acquire(ctx, 1)
		if refusal != shareAdmitted {
			t.Fatalf("first request: %v, want admitted", refusal)
		}
		if _, refusal := s.acquire(ctx, 2); refusal != shareAdmitted {
			t.Fatalf("another client's request: %v, want admitted at once", refusal)
		}
		order := make(chan int, 2)
		for i := range 2 {
			go func() {
				start, refusal := s.acquire(ctx, 1)
				if refusal != shareAdmitted {
					t.Errorf("waiting request %d: %v", i, refusal)
					return
				}
				order <- i
				s.release(1, start)
			}()
			synctest.Wait() // queued in this order
		}
		if _, refusal := s.acquire(ctx, 1); refusal != shareClientFull {
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
		slow, _ := s.acquire(ctx, 7)
		begun := time.Now()
		start, refusal := s.acquire(ctx, 7)
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
		first, _ := s.acquire(context.Background(), 3)
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan shareRefusal, 1)
		go func() {
			_, refusal := s.acquire(ctx, 3)
			gone <- refusal
		}()
		synctest.Wait()
		cancel()
		if refusal := <-gone; refusal != shareGone {
			t.Fatalf("a request whose client left: %v, want shareGone", refusal)
		}
		s.release(3, first)
		if _, refusal := s.acquire(context.Background(), 3); refusal != shareAdmitted {
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
		_, _ = s.acquire(ctx, 1)
		_, _ = s.acquire(ctx, 2)
		go func() { _, _ = s.acquire(ctx, 1) }()
		synctest.Wait()
		if _, refusal := s.acquire(ctx, 2); refusal != shareServerFull {
			t.Fatalf("waiting beyond the server's bound: %v, want shareServerFull", refusal)
		}
		cancel()
		synctest.Wait()
	})
}
