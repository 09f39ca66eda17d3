package live

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"

	"github.com/tmefeed/tmefeed/parser"
)

// Publisher carries events between the processes sharing a Valkey: the
// process that found a change publishes it once, and every process
// (itself included) receives it and delivers it to its own subscribers.
// cache.ValkeyBus is one.
type Publisher interface {
	// Publish sends msg to every process receiving.
	Publish(ctx context.Context, msg []byte) error
	// Receive calls fn with every message published until ctx ends or the
	// connection fails; the Hub calls it again after a failure. fn must
	// not block.
	Receive(ctx context.Context, fn func(msg []byte)) error
}

// message is the events of one change as they travel between processes.
// gob carries the parser's model exactly (nil and empty lists, fields the
// REST JSON leaves out).
type message struct {
	Channel string
	Header  *parser.Channel
	Events  []wireEvent
}

type wireEvent struct {
	Kind Kind
	Post parser.Post
}

func encode(channel string, events []Event) ([]byte, error) {
	m := message{Channel: channel, Header: events[0].Channel, Events: make([]wireEvent, len(events))}
	for i, e := range events {
		m.Events[i] = wireEvent{Kind: e.Kind, Post: *e.Post}
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&m); err != nil {
		return nil, fmt.Errorf("live: encoding events: %w", err)
	}
	return b.Bytes(), nil
}

func decode(msg []byte) (string, []Event, error) {
	var m message
	if err := gob.NewDecoder(bytes.NewReader(msg)).Decode(&m); err != nil {
		return "", nil, fmt.Errorf("live: decoding events: %w", err)
	}
	if m.Channel == "" {
		return "", nil, fmt.Errorf("live: event message without a channel")
	}
	out := make([]Event, len(m.Events))
	for i := range m.Events {
		out[i] = Event{Kind: m.Events[i].Kind, Channel: m.Header, Post: &m.Events[i].Post}
	}
	return m.Channel, out, nil
}
