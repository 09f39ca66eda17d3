package graph

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tmefeed/tmefeed/fault"
	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/live"
	"github.com/tmefeed/tmefeed/pages"
	"github.com/tmefeed/tmefeed/tme"
)

// LiveHub delivers the changes of watched channels; *live.Hub is one.
type LiveHub interface {
	Subscribe(ctx context.Context, req live.Request) (*live.Subscription, error)
}

// updateKinds maps live's kinds to the schema's (a test checks both sides
// match).
var updateKinds = map[live.Kind]model.FeedUpdateKind{
	live.KindNew:     model.FeedUpdateKindNew,
	live.KindEdited:  model.FeedUpdateKindEdited,
	live.KindRemoved: model.FeedUpdateKindRemoved,
}

// feedUpdates subscribes to the hub and forwards its events as the
// schema's updates until the client or the hub ends the subscription, or
// the server shuts down. Its arguments and channels are checked before the
// stream starts; a refusal is marked (refuseStream) so that WebSocket
// clients receive it as an error message.
// after (or, over an event stream, its Last-Event-ID) resumes it.
func (r *Resolver) feedUpdates(ctx context.Context, channels []string, filter *model.FeedFilter, after *string) (<-chan *model.FeedUpdate, error) {
	from := resumeFrom(ctx)
	if after != nil {
		from = *after
	}
	out, err := r.startUpdates(ctx, channels, filter, from)
	if err != nil {
		refuseStream(ctx)
	}
	return out, err
}

func (r *Resolver) startUpdates(ctx context.Context, channels []string, filter *model.FeedFilter, after string) (<-chan *model.FeedUpdate, error) {
	if r.live == nil {
		return nil, errors.New("graph: subscriptions are not served: HandlerConfig.Live is nil")
	}
	if len(channels) == 0 {
		return nil, inputError("channels: give at least one channel to watch")
	}
	f, err := feedFilter(channels, filter)
	if err != nil {
		return nil, err
	}
	if after != "" {
		if _, err := live.ParseEventID(after); err != nil {
			return nil, inputError("after: %q is not an event id; give the eventId of the last update received", clip(after))
		}
	}
	// Watched before the channels are looked up (the hub checks the
	// arguments first), so that nothing published meanwhile is missed;
	// unwatched if they are refused.
	watch, unwatch := context.WithCancel(ctx)
	sub, err := r.live.Subscribe(watch, live.Request{Channels: channels, Filter: f, After: after, Client: clientOf(ctx)})
	if err != nil {
		unwatch()
		return nil, err
	}
	release, gerr := r.streams.channels.hold(clientOf(ctx), sub.Channels())
	if gerr != nil {
		unwatch()
		return nil, gerr
	}
	if err := r.checkChannels(ctx, sub.Channels()); err != nil {
		release()
		unwatch()
		return nil, err
	}
	out := make(chan *model.FeedUpdate)
	go func() {
		defer close(out)
		defer unwatch()
		defer release() // the updater stops refreshing them for this client
		replay, gap := sub.Replay()
		send := func(ev live.Event) bool {
			// The transport gives the update its id (and says the
			// gap, once) as it writes it.
			noteEvent(ctx, ev.ID, gap)
			gap = false
			select {
			case out <- model.UpdateOf(updateKinds[ev.Kind], ev.Channel, ev.Post):
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, ev := range replay {
			if !send(ev) {
				return
			}
		}
		for {
			var ev live.Event
			var ok bool
			select {
			case ev, ok = <-sub.Events():
			case <-ctx.Done():
				return
			case <-r.streams.closing:
				drain(ctx, sub, send)
				return
			}
			if !ok {
				if err := streamEndError(sub.Err()); err != nil {
					endStream(ctx, err)
				}
				return
			}
			if !send(ev) {
				return
			}
		}
	}()
	return out, nil
}

// drain sends, on shutdown, the events the subscription holds already,
// notes that it has (drainedStream), and waits for the transport to end
// the stream: the channel must stay open, or the transport would
// complete a stream that clients should resume once the server is back.
func drain(ctx context.Context, sub *live.Subscription, send func(live.Event) bool) {
	for more := true; more; {
		select {
		case ev, ok := <-sub.Events():
			more = ok && send(ev)
		default:
			more = false
		}
	}
	drainedStream(ctx)
	<-ctx.Done()
}

// checkChannels refuses a subscription to channels that do not exist or
// are not channels (a user, a group, a bot), as feed reports them: it
// reads each one's newest page through the cache, the page the updater
// keeps fresh for the subscription anyway. Warm, that is a lookup; cold,
// concurrent subscribers share one fetch, and a remembered failure none.
// A failure that may pass (Telegram failing, slow, rate-limiting, its
// breaker open) refuses nothing: the subscription starts, and its events
// come once Telegram answers. So does one whose look-up runs past the
// operation timeout or into shutdown.
func (r *Resolver) checkChannels(ctx context.Context, channels []string) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	go func() {
		select {
		case <-r.streams.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	// Channels found moments ago by another subscription's look-up are
	// not read again: a client opening a thousand subscriptions to the
	// same hundred channels costs a hundred reads, not a hundred thousand.
	todo := make([]string, 0, len(channels))
	for _, ch := range channels {
		if !r.found(ch) {
			todo = append(todo, ch)
		}
	}
	client := clientOf(ctx)
	var results []pages.NameResult[struct{}]
	if len(todo) > 0 {
		// A look-up may wait for Telegram: other subscriptions start
		// meanwhile.
		resume := pauseStart(ctx)
		results = pages.EachChannel(ctx, r.fanOut, todo, r.concurrency, func(ctx context.Context, ch string) (struct{}, error) {
			return r.lookUp(ctx, ch, client)
		})
		resume()
	}
	var failed []map[string]any
	var msgs []string
	code := ""
	for _, res := range results {
		if res.Err == nil {
			continue
		}
		f := fault.Classify(res.Err)
		switch f.Kind {
		case fault.NotFound, fault.NotAChannel:
			c := graphCode(f.Kind)
			code = cmp.Or(code, c)
			// feed's FailedChannel, field for field.
			failed = append(failed, map[string]any{"username": res.Channel, "code": c, "reason": f.Message})
			msgs = append(msgs, res.Channel+": "+f.Message)
		case fault.Internal: // a bug: the subscription starts regardless
			r.log.ErrorContext(ctx, "graphql: feedUpdates: looking up a channel", "channel", res.Channel, "err", res.Err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	err := gqlerror.Errorf("%s", strings.Join(msgs, "; "))
	err.Extensions = map[string]any{"code": code, "failedChannels": failed}
	return err
}

// checkedChannels and checkedFor bound what Resolver.checked remembers:
// a channel found stays found for a minute (the updater keeps a watched
// channel's page fresh meanwhile); one that then disappears is reported
// by the events that stop, as it would be after any subscription starts.
const (
	checkedChannels = 16_384
	checkedFor      = time.Minute
)

// lookUp reads a channel's newest page once for every subscription
// looking it up at the same time, and remembers it was found.
// The look-up is charged to client's share of the origin budget (the
// client whose subscription started it, when several share it).
func (r *Resolver) lookUp(ctx context.Context, ch, client string) (struct{}, error) {
	if r.found(ch) {
		return struct{}{}, nil
	}
	return r.lookups.Do(ctx, ch, func(ctx context.Context) (struct{}, error) {
		// Detached from the caller (others wait on it): bounded here.
		ctx, cancel := context.WithTimeout(ctx, r.timeout)
		defer cancel()
		_, err := r.pages.Page(ctx, tme.Request{Kind: tme.KindBody, Channel: ch, Client: client})
		if err == nil {
			r.checked.Add(ch, r.now().Add(checkedFor))
		}
		return struct{}{}, err
	})
}

// found reports whether a look-up found ch within checkedFor.
func (r *Resolver) found(ch string) bool {
	until, ok := r.checked.Peek(ch)
	return ok && r.now().Before(until)
}

// streamEndError is what the client learns when the hub ends a
// subscription; nil when the subscriber's own context ended it.
func streamEndError(err error) *gqlerror.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, live.ErrSlowSubscriber):
		e := gqlerror.Errorf("updates came faster than this client read them, so the server ended the subscription; read faster (or watch fewer channels) and subscribe again")
		e.Extensions = map[string]any{"code": CodeSlowSubscriber}
		return e
	case errors.Is(err, live.ErrClosed):
		return shuttingDownError()
	}
	e := gqlerror.Errorf("the subscription ended: internal error")
	e.Extensions = map[string]any{"code": CodeInternal}
	return e
}
