package graph

import (
	"strconv"
	"sync"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// channelCap bounds the distinct channels one client keeps subscribed
// (SUBSCRIBED_CHANNELS_PER_CLIENT): the updater refreshes every
// subscribed channel once a window, so without it one client's few
// streams over thousands of names would spend the origin budget for
// everyone. A channel counts once per client however many of its
// subscriptions watch it; a client is forgotten when its last
// subscription ends.
type channelCap struct {
	max int // 0: no bound

	mu   sync.Mutex
	held map[string]map[string]int // client → channel → its subscriptions watching it
}

func newChannelCap(max int) *channelCap {
	return &channelCap{max: max, held: map[string]map[string]int{}}
}

// hold counts channels in for client, or refuses them all when the
// client would then watch more than max distinct channels. release gives
// them back; it is safe to call once.
func (c *channelCap) hold(client string, channels []string) (release func(), _ *gqlerror.Error) {
	if c == nil || c.max <= 0 || client == "" {
		return func() {}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	mine := c.held[client]
	fresh := 0
	for _, ch := range channels {
		if mine[ch] == 0 {
			fresh++
		}
	}
	if len(mine)+fresh > c.max {
		err := gqlerror.Errorf("this client already watches %d channels and may watch at most %d at once (SUBSCRIBED_CHANNELS_PER_CLIENT); end a subscription first", len(mine), c.max)
		err.Extensions = map[string]any{"code": CodeRateLimited, "limit": strconv.Itoa(c.max)}
		return nil, err
	}
	if mine == nil {
		mine = map[string]int{}
		c.held[client] = mine
	}
	for _, ch := range channels {
		mine[ch]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, ch := range channels {
				if mine[ch]--; mine[ch] <= 0 {
					delete(mine, ch)
				}
			}
			if len(mine) == 0 {
				delete(c.held, client)
			}
		})
	}, nil
}
