package cache

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"
)

// ValkeyStream is a Valkey stream over the tier's connection: an ordered
// log every process appends to and reads, whose entry ids ("<ms>-<seq>")
// order entries among all processes. It keeps at most about MaxLen
// entries and drops those older than MaxAge as entries are added (XADD
// MAXLEN ~, XTRIM MINID ~: whole nodes at a time, so a few more may stay).
// live.Hub records its events in one (live.Log).
type ValkeyStream struct {
	v      *Valkey
	key    string
	maxLen int
	maxAge time.Duration
}

// Stream returns the stream at key, bounded by maxLen entries and maxAge.
func (v *Valkey) Stream(key string, maxLen int, maxAge time.Duration) *ValkeyStream {
	return &ValkeyStream{v: v, key: key, maxLen: max(maxLen, 1), maxAge: max(maxAge, time.Second)}
}

// field is the name of the one field of each entry.
const streamField = "m"

// Append adds msgs in one round trip and trims the stream, through the
// tier's breaker and deadline.
func (s *ValkeyStream) Append(ctx context.Context, msgs [][]byte) ([]string, error) {
	ids := make([]string, 0, len(msgs))
	err := s.v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		cmds := make(valkey.Commands, 0, len(msgs)+1)
		for _, m := range msgs {
			cmds = append(cmds, c.B().Xadd().Key(s.key).Maxlen().Almost().Threshold(strconv.Itoa(s.maxLen)).
				Id("*").FieldValue().FieldValue(streamField, valkey.BinaryString(m)).Build())
		}
		minID := strconv.FormatInt(s.v.now().Add(-s.maxAge).UnixMilli(), 10)
		cmds = append(cmds, c.B().Xtrim().Key(s.key).Minid().Almost().Threshold(minID).Build())
		for i, r := range c.DoMulti(ctx, cmds...) {
			if i == len(msgs) {
				break // the trim: the next append trims again
			}
			id, err := r.ToString()
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	return ids, err
}

// Read waits up to wait for entries after id (XREAD BLOCK), on a
// connection of its own; its deadline is wait plus the tier's.
func (s *ValkeyStream) Read(ctx context.Context, after string, count int, wait time.Duration) ([]string, [][]byte, error) {
	cp := s.v.client.Load()
	if cp == nil {
		return nil, nil, errNotConnected
	}
	c := *cp
	ctx, cancel := context.WithTimeout(ctx, wait+max(s.v.cfg.Timeout, time.Second))
	defer cancel()
	res, err := c.Do(ctx, c.B().Xread().Count(int64(count)).Block(max(wait.Milliseconds(), 1)).
		Streams().Key(s.key).Id(after).Build()).AsXRead()
	if valkey.IsValkeyNil(err) {
		return nil, nil, nil // nothing within wait
	}
	if err != nil {
		return nil, nil, err
	}
	ids, msgs := entries(res[s.key])
	return ids, msgs, nil
}

// Range returns up to count entries after id (XRANGE with an exclusive
// start).
func (s *ValkeyStream) Range(ctx context.Context, after string, count int) ([]string, [][]byte, error) {
	var res []valkey.XRangeEntry
	err := s.v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		var err error
		res, err = c.Do(ctx, c.B().Xrange().Key(s.key).Start("("+after).End("+").Count(int64(count)).Build()).AsXRange()
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	ids, msgs := entries(res)
	return ids, msgs, nil
}

// Bounds reads the stream's first entry and last id given (XINFO STREAM);
// ok is false when the stream does not exist.
func (s *ValkeyStream) Bounds(ctx context.Context) (first, last string, ok bool, err error) {
	var info map[string]valkey.ValkeyMessage
	err = s.v.do(ctx, func(ctx context.Context, c valkey.Client) error {
		var err error
		info, err = c.Do(ctx, c.B().XinfoStream().Key(s.key).Build()).AsMap()
		if ve, is := valkey.IsValkeyErr(err); is && strings.Contains(ve.Error(), "no such key") {
			info, err = nil, nil // an answer, not a failure of the tier
		}
		return err
	})
	if err != nil {
		return "", "", false, err
	}
	if info == nil {
		return "", "0-0", false, nil
	}
	if m, ok := info["first-entry"]; ok && !m.IsNil() {
		e, err := m.AsXRangeEntry()
		if err != nil {
			return "", "", false, err
		}
		first = e.ID
	}
	lm := info["last-generated-id"]
	if last, err = lm.ToString(); err != nil {
		return "", "", false, err
	}
	return first, last, true, nil
}

func entries(res []valkey.XRangeEntry) (ids []string, msgs [][]byte) {
	for _, e := range res {
		ids = append(ids, e.ID)
		msgs = append(msgs, []byte(e.FieldValues[streamField]))
	}
	return ids, msgs
}
