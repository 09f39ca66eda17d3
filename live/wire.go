package live

import (
	"bytes"
	"encoding/gob"
	"fmt"

	"github.com/tmefeed/tmefeed/parser"
)

// message is events of one channel as the Log records them (the Hub
// records one event a message, so that each has its own id).
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
