package pages

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/tmefeed/tmefeed/tme"
)

// NameResult is the outcome of one name a client listed.
type NameResult[T any] struct {
	Name    string // as given
	Channel string // Name normalized; "" when it is not a username
	Value   T
	Err     error // tme.ErrInvalidUsername when Channel is ""
}

// PanicError is a panic caught while serving one name of many. It is
// caught here because the goroutine is not the request's, so no recover
// of the face would see it.
type PanicError struct {
	Channel string
	Value   any
	Stack   []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("pages: %s: panic: %v", e.Channel, e.Value)
}

// Gate bounds the look-ups of every fan-out of the process together:
// each call of EachChannel bounds its own, but a thousand calls at once
// (subscriptions starting, each reading its hundred channels) would
// otherwise run thousands of reads, each holding a page and its parse,
// and starve every other request of CPU and memory. The zero of *Gate
// (nil) bounds nothing.
type Gate struct {
	slots chan struct{}
}

// NewGate makes a gate of n look-ups at once (n < 1: nil, no bound).
func NewGate(n int) *Gate {
	if n < 1 {
		return nil
	}
	return &Gate{slots: make(chan struct{}, n)}
}

// acquire takes a place, waiting while ctx lasts.
func (g *Gate) acquire(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *Gate) release() {
	if g != nil {
		<-g.slots
	}
}

// EachChannel calls get once for each distinct channel names lists (names
// are read with NormalizeUsername, so "@Durov" and "durov" are one call),
// at most limit at a time and within gate's places (shared with every
// other fan-out; nil for none), and returns one result per name, in order.
// A name that fails, or panics, fails alone. Faces use it for every list
// of channels they serve name by name, so that all of them dedupe, bound
// and report alike. A look-up's goroutine exists only while it holds its
// places, so waiting callers cost no more than themselves.
func EachChannel[T any](ctx context.Context, gate *Gate, names []string, limit int, get func(ctx context.Context, channel string) (T, error)) []NameResult[T] {
	out := make([]NameResult[T], len(names))
	first := make(map[string]int, len(names)) // channel → the index that fetches it
	work := make([]int, 0, len(names))
	for i, raw := range names {
		out[i].Name = raw
		ch, err := tme.NormalizeUsername(raw)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Channel = ch
		if _, ok := first[ch]; !ok {
			first[ch] = i
			work = append(work, i)
		}
	}

	sem := make(chan struct{}, max(1, limit))
	var wg sync.WaitGroup
	for _, i := range work {
		res := &out[i]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			// The caller is gone: the names not started fail at once
			// rather than one by one.
			res.Err = fmt.Errorf("%s: %w", res.Channel, ctx.Err())
			continue
		}
		if err := gate.acquire(ctx); err != nil {
			<-sem
			res.Err = fmt.Errorf("%s: %w", res.Channel, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					res.Err = &PanicError{Channel: res.Channel, Value: p, Stack: debug.Stack()}
				}
				gate.release()
				<-sem
				wg.Done()
			}()
			res.Value, res.Err = get(ctx, res.Channel)
		}()
	}
	wg.Wait()

	for i := range out {
		if ch := out[i].Channel; ch != "" {
			if j := first[ch]; j != i {
				out[i].Value, out[i].Err = out[j].Value, out[j].Err
			}
		}
	}
	return out
}
