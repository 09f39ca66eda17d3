package graph

import (
	"context"
	"errors"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tmefeed/tmefeed/graph/model"
	"github.com/tmefeed/tmefeed/live"
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
// the server shuts down.
func (r *Resolver) feedUpdates(ctx context.Context, channels []string, filter *model.FeedFilter) (<-chan *model.FeedUpdate, error) {
	if r.live == nil {
		return nil, errors.New("graph: subscriptions are not served: HandlerConfig.Live is nil")
	}
	if len(channels) == 0 {
		return nil, inputError("channels: give at least one channel to watch")
	}
	f, err := feedFilter(filter)
	if err != nil {
		return nil, err
	}
	sub, err := r.live.Subscribe(ctx, live.Request{Channels: channels, Filter: f})
	if err != nil {
		return nil, err
	}
	out := make(chan *model.FeedUpdate)
	go func() {
		defer close(out)
		for {
			var ev live.Event
			var ok bool
			select {
			case ev, ok = <-sub.Events():
			case <-ctx.Done():
				return
			case <-r.streams.closing:
				return // shutdown has said why
			}
			if !ok {
				if err := streamEndError(sub.Err()); err != nil {
					endStream(ctx, err)
				}
				return
			}
			u := model.UpdateOf(updateKinds[ev.Kind], ev.Channel, ev.Post)
			select {
			case out <- u:
			case <-ctx.Done():
				return
			case <-r.streams.closing:
				return
			}
		}
	}()
	return out, nil
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
