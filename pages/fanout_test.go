package pages_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// One call per channel however it is written, one result per name in the
// order given; a name that is not a username fails alone, without a call.
func TestEachChannelDedupes(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	names := []string{"@Durov", "durov", "x!", " DUROV ", "tmefeed_news", "x!"}
	res := pages.EachChannel(context.Background(), nil, names, 4, func(_ context.Context, ch string) (string, error) {
		mu.Lock()
		calls[ch]++
		mu.Unlock()
		if ch == "tmefeed_news" {
			return "", fmt.Errorf("%s: %w", ch, pages.ErrBadRequest)
		}
		return "value of " + ch, nil
	})
	if len(calls) != 2 || calls["durov"] != 1 || calls["tmefeed_news"] != 1 {
		t.Errorf("calls = %v, want durov and tmefeed_news once each", calls)
	}
	if len(res) != len(names) {
		t.Fatalf("%d results for %d names", len(res), len(names))
	}
	for i, r := range res {
		if r.Name != names[i] {
			t.Errorf("result %d is for %q, want %q", i, r.Name, names[i])
		}
		switch names[i] {
		case "x!":
			if r.Channel != "" || !errors.Is(r.Err, tme.ErrInvalidUsername) {
				t.Errorf("%q: %+v, want tme.ErrInvalidUsername", names[i], r)
			}
		case "tmefeed_news":
			if r.Channel != "tmefeed_news" || !errors.Is(r.Err, pages.ErrBadRequest) {
				t.Errorf("%q: %+v, want the call's error", names[i], r)
			}
		default:
			if r.Channel != "durov" || r.Err != nil || r.Value != "value of durov" {
				t.Errorf("%q: %+v, want durov's value", names[i], r)
			}
		}
	}
}

// At most limit calls run at once, and that many do.
func TestEachChannelBoundsConcurrency(t *testing.T) {
	const limit = 3
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("chan%04d", i)
	}
	var running, most atomic.Int32
	started := make(chan struct{}, len(names))
	release := make(chan struct{})
	done := make(chan []pages.NameResult[int])
	go func() {
		done <- pages.EachChannel(context.Background(), nil, names, limit, func(_ context.Context, ch string) (int, error) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			started <- struct{}{}
			<-release
			running.Add(-1)
			return len(ch), nil
		})
	}()
	for range limit { // blocks for ever unless limit calls run together
		<-started
	}
	close(release)
	res := <-done
	if m := most.Load(); m != limit {
		t.Errorf("%d calls ran at once, want %d", m, limit)
	}
	for _, r := range res {
		if r.Err != nil || r.Value != len(r.Channel) {
			t.Errorf("%+v", r)
		}
	}
}

// A panic fails its name alone, as a *PanicError, and does not escape.
func TestEachChannelRecovers(t *testing.T) {
	res := pages.EachChannel(context.Background(), nil, []string{"good_one", "bad_one"}, 2, func(_ context.Context, ch string) (int, error) {
		if ch == "bad_one" {
			panic("boom")
		}
		return 1, nil
	})
	var pe *pages.PanicError
	if !errors.As(res[1].Err, &pe) || pe.Channel != "bad_one" || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Errorf("bad_one: %+v, want a *PanicError", res[1])
	}
	if res[0].Err != nil || res[0].Value != 1 {
		t.Errorf("good_one: %+v", res[0])
	}
}

// A caller that is gone gets its context's error for every name.
func TestEachChannelCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := pages.EachChannel(ctx, nil, []string{"chan0001", "chan0002", "chan0003"}, 1, func(ctx context.Context, ch string) (int, error) {
		return 0, ctx.Err()
	})
	for _, r := range res {
		if !errors.Is(r.Err, context.Canceled) {
			t.Errorf("%+v, want context.Canceled", r)
		}
	}
}

// Fan-outs sharing a gate run at most its places of look-ups together,
// however many of them there are and whatever their own limits; a caller
// that gives up while it waits for a place fails its names at once.
func TestEachChannelSharesGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const places, callers = 3, 8
		gate := pages.NewGate(places)
		var running, most atomic.Int32
		release := make(chan struct{})
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				names := []string{fmt.Sprintf("chan%04d", c), fmt.Sprintf("chan%04d", c+100)}
				for _, r := range pages.EachChannel(context.Background(), gate, names, 16, func(_ context.Context, ch string) (int, error) {
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					<-release
					running.Add(-1)
					return len(ch), nil
				}) {
					if r.Err != nil {
						t.Errorf("%+v", r)
					}
				}
			})
		}
		synctest.Wait() // every caller is running or waiting for a place
		if n := running.Load(); n != places {
			t.Errorf("%d look-ups running, want the gate's %d", n, places)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan []pages.NameResult[int])
		go func() {
			done <- pages.EachChannel(ctx, gate, []string{"late0001"}, 1, func(context.Context, string) (int, error) { return 1, nil })
		}()
		synctest.Wait()
		cancel()
		if res := <-done; !errors.Is(res[0].Err, context.Canceled) {
			t.Errorf("a caller that gave up waiting: %+v", res[0])
		}
		close(release)
		wg.Wait()
		if m := most.Load(); m != places {
			t.Errorf("%d look-ups ran at once, want %d", m, places)
		}
	})
}
