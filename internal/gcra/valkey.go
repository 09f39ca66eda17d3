package gcra

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Scripter runs a Lua script on the shared Valkey server and returns its
// array of integers; *cache.ValkeyKV is one (its client, deadline and
// circuit breaker).
type Scripter interface {
	Ints(ctx context.Context, script *valkey.Lua, keys, args []string) ([]int64, error)
}

// takeScript is step over every key of one request, in microseconds of
// the server's own clock, so that every process decides by one time.
// ARGV[1] is the cost; then, per key, its interval, burst, reserve and
// longest wait. It returns {admitted, wait, refusing key (0-based, -1
// none), tokens left per key}. The keys are written only when every one
// admits, each with a TTL ending when its bucket is full again: a full
// bucket and a missing key are the same.
var takeScript = valkey.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cost = tonumber(ARGV[1])
local n = #KEYS
local nexts, left = {}, {}
local wait = 0
local function room(tat, interval, burst)
  if tat < now then tat = now end
  local r = now + burst * interval - tat
  if r <= 0 then return 0 end
  return math.floor(r / interval)
end
for i = 1, n do
  local interval = tonumber(ARGV[4 * i - 2])
  local burst = tonumber(ARGV[4 * i - 1])
  local reserve = tonumber(ARGV[4 * i])
  local maxwait = tonumber(ARGV[4 * i + 1])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  local base = tat
  if base < now then base = now end
  local nxt = base + cost * interval
  local w = nxt - now - (burst - reserve) * interval
  if w > maxwait then
    local out = {0, w, i - 1}
    for j = 1, n do
      if j == i then out[3 + j] = room(tat, interval, burst) else out[3 + j] = left[j] or 0 end
    end
    return out
  end
  if w > wait then wait = w end
  nexts[i] = nxt
  left[i] = room(nxt, interval, burst)
end
for i = 1, n do
  redis.call('SET', KEYS[i], string.format('%d', nexts[i]), 'PX', math.floor((nexts[i] - now) / 1000) + 1000)
end
local out = {1, wait, -1}
for j = 1, n do out[3 + j] = left[j] end
return out
`)

// Valkey keeps buckets in the shared Valkey server, so that every
// process's requests draw on one bucket per key. The keys of one Take must
// share a Cluster slot (internal/keys places them). When Valkey cannot
// answer (down, breaker open, timed out), Take decides on Fallback
// instead: a process then spends its own budget until Valkey is back.
type Valkey struct {
	kv       Scripter
	fallback *Local
	fellBack atomic.Uint64
}

// ValkeyConfig configures a Valkey limiter.
type ValkeyConfig struct {
	KV       Scripter
	Fallback *Local // nil = a Local of its own
}

// NewValkey returns a limiter over cfg.KV.
func NewValkey(cfg ValkeyConfig) (*Valkey, error) {
	if cfg.KV == nil {
		return nil, errors.New("gcra: Valkey limiter without a Valkey")
	}
	if cfg.Fallback == nil {
		cfg.Fallback = NewLocal(LocalConfig{})
	}
	return &Valkey{kv: cfg.KV, fallback: cfg.Fallback}, nil
}

// FellBack is the Takes decided in process because Valkey could not answer.
func (v *Valkey) FellBack() uint64 { return v.fellBack.Load() }

// Take implements Limiter.
func (v *Valkey) Take(ctx context.Context, cost int, asks ...Ask) (Decision, error) {
	if err := check(cost, asks); err != nil {
		return Decision{}, err
	}
	keys := make([]string, len(asks))
	args := make([]string, 1, 1+4*len(asks))
	args[0] = strconv.Itoa(cost)
	for i, a := range asks {
		keys[i] = a.Key
		args = append(args,
			strconv.FormatInt(a.Limit.Interval().Microseconds(), 10),
			strconv.Itoa(a.Limit.Burst),
			strconv.Itoa(a.Reserve),
			strconv.FormatInt(a.MaxWait.Microseconds(), 10))
	}
	out, err := v.kv.Ints(ctx, takeScript, keys, args)
	if err == nil && len(out) != 3+len(asks) {
		err = fmt.Errorf("gcra: script answered %d values for %d keys", len(out), len(asks))
	}
	if err != nil {
		if ctx.Err() != nil {
			return Decision{}, fmt.Errorf("gcra: %w", ctx.Err())
		}
		v.fellBack.Add(1)
		return v.fallback.Take(ctx, cost, asks...)
	}
	d := Decision{OK: out[0] == 1, Wait: max(time.Duration(out[1])*time.Microsecond, 0), Refused: int(out[2])}
	if d.OK {
		d.Refused = -1
	}
	for i := range asks {
		d.Left[i] = int(out[3+i])
	}
	return d, nil
}
