package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// Concurrent callers share one call; one giving up neither cancels it nor
// stops the others from getting its result.
func TestSharedAndDetached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[int]
		var calls atomic.Int32
		release := make(chan struct{})
		var fnCtx context.Context
		fn := func(ctx context.Context) (int, error) {
			calls.Add(1)
			fnCtx = ctx
			<-release
			return 42, ctx.Err()
		}
		type ctxKey struct{}
		leaving, leave := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		var left error
		var wg sync.WaitGroup
		wg.Go(func() { _, left = g.Do(leaving, "k", fn) })
		synctest.Wait() // the first caller started the call
		got := make([]int, 5)
		for i := range got {
			wg.Go(func() {
				v, err := g.Do(context.Background(), "k", fn)
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
				}
				got[i] = v
			})
		}
		synctest.Wait()
		leave()
		synctest.Wait()
		if !errors.Is(left, context.Canceled) {
			t.Errorf("the caller that gave up got %v, want context.Canceled", left)
		}
		close(release)
		wg.Wait()
		if n := calls.Load(); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
		for i, v := range got {
			if v != 42 {
				t.Errorf("caller %d got %d, want 42", i, v)
			}
		}
		if fnCtx.Value(ctxKey{}) != "v" {
			t.Error("the call lost the starting caller's values")
		}
	})
}

func TestErrorAsIs(t *testing.T) {
	var g Group[string]
	boom := errors.New("boom")
	if _, err := g.Do(context.Background(), "k", func(context.Context) (string, error) { return "", boom }); err != boom {
		t.Errorf("err = %v, want the call's own error", err)
	}
}

// Wait waits for the call even when its ctx ends.
func TestWaitOutlivesCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group[int]
		release := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		var v int
		var err error
		done := make(chan struct{})
		go func() {
			v, err = g.Wait(ctx, "k", func(context.Context) (int, error) { <-release; return 7, nil })
			close(done)
		}()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Wait returned when its ctx ended")
		default:
		}
		close(release)
		<-done
		if v != 7 || err != nil {
			t.Errorf("Wait = %d, %v; want 7", v, err)
		}
	})
}
