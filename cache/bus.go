package cache

import (
	"context"
	"errors"
	"time"

	"github.com/valkey-io/valkey-go"
)

// ValkeyBus is a Valkey pub/sub channel over the tier's connection: what
// one process publishes, every process receiving gets, itself included.
// Messages published while a process is disconnected are lost to it, as
// pub/sub has no backlog.
type ValkeyBus struct {
	v       *Valkey
	channel string
}

// Bus returns the pub/sub channel named channel.
func (v *Valkey) Bus(channel string) *ValkeyBus { return &ValkeyBus{v: v, channel: channel} }

// Publish sends msg to every process receiving, through the tier's
// breaker and deadline.
func (b *ValkeyBus) Publish(ctx context.Context, msg []byte) error {
	return b.v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		return c.Do(ctx, c.B().Publish().Channel(b.channel).Message(valkey.BinaryString(msg)).Build()).Error()
	})
}

// Receive calls fn with every message until ctx ends or the subscription
// fails. It waits for the tier to connect.
func (b *ValkeyBus) Receive(ctx context.Context, fn func(msg []byte)) error {
	for {
		cp := b.v.client.Load()
		if cp != nil {
			c := *cp
			err := c.Receive(ctx, c.B().Subscribe().Channel(b.channel).Build(), func(m valkey.PubSubMessage) {
				fn([]byte(m.Message))
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == nil {
				err = errors.New("cache: valkey subscription ended")
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.v.base.Done():
			return ErrClosed
		case <-time.After(100 * time.Millisecond):
		}
	}
}
