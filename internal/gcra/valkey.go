package gcra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
// ARGV[1] is the cost; ARGV[2] the calling process's id and ARGV[3] the
// window (µs) it counts processes over, when the last key is the
// processes' sorted set (ARGV[2] empty: no such key); then, per bucket
// key, its interval, burst, reserve and longest wait. It returns
// {admitted, wait, refusing key (0-based, -1 none), processes seen within
// the window (0 without the set), tokens left per bucket}. The buckets are
// written only when every one admits, each with a TTL ending when it is
// full again: a full bucket and a missing key are the same.
var takeScript = valkey.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cost = tonumber(ARGV[1])
local n = #KEYS
local procs = 0
if ARGV[2] ~= '' then
  local set = KEYS[n]
  n = n - 1
  local window = tonumber(ARGV[3])
  redis.call('ZADD', set, now, ARGV[2])
  redis.call('ZREMRANGEBYSCORE', set, '-inf', '(' .. string.format('%d', now - window))
  redis.call('PEXPIRE', set, math.floor(window / 1000) + 1000)
  procs = redis.call('ZCARD', set)
end
local nexts, left = {}, {}
local wait = 0
local function room(tat, interval, burst)
  if tat < now then tat = now end
  local r = now + burst * interval - tat
  if r <= 0 then return 0 end
  return math.floor(r / interval)
end
for i = 1, n do
  local interval = tonumber(ARGV[4 * i])
  local burst = tonumber(ARGV[4 * i + 1])
  local reserve = tonumber(ARGV[4 * i + 2])
  local maxwait = tonumber(ARGV[4 * i + 3])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
  local base = tat
  if base < now then base = now end
  local nxt = base + cost * interval
  local w = nxt - now - (burst - reserve) * interval
  if w > maxwait then
    local out = {0, w, i - 1, procs}
    for j = 1, n do
      if j == i then out[4 + j] = room(tat, interval, burst) else out[4 + j] = left[j] or 0 end
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
local out = {1, wait, -1, procs}
for j = 1, n do out[4 + j] = left[j] end
return out
`)

// Valkey keeps buckets in the shared Valkey server, so that every
// process's requests draw on one bucket per key. The keys of one Take must
// share a Cluster slot (internal/keys places them). When Valkey cannot
// answer (down, breaker open, timed out), Take decides on Fallback
// instead, and conservatively: each bucket there holds and refills 1/N of
// the shared one, N the processes Valkey last said were taking from it
// (ValkeyConfig.Processes), so that the processes together, each deciding
// alone, still stay within one budget rather than N of them.
type Valkey struct {
	kv        Scripter
	fallback  *Local
	fellBack  atomic.Uint64
	procs     string // ValkeyConfig.Processes
	id        string // this limiter's member of procs
	window    time.Duration
	processes atomic.Int64 // N: the processes seen at the last answer
}

// Defaults of ValkeyConfig.
const (
	// DefaultProcessWindow is how long a process counts as taking from
	// the shared buckets after its last Take.
	DefaultProcessWindow = 2 * time.Minute
	// DefaultFallbackProcesses is the least N: a process that has never
	// reached Valkey, or last saw itself alone there, cannot know whether
	// another has started since, and assumes it is one of two.
	DefaultFallbackProcesses = 2
)

// ValkeyConfig configures a Valkey limiter.
type ValkeyConfig struct {
	KV       Scripter
	Fallback *Local // nil = a Local of its own
	// Processes is the key of the sorted set where every process taking
	// from the buckets notes itself with each Take, in the slot of every
	// Take's keys (keys.BudgetProcesses); "" = none, and the fallback
	// spends whole buckets, as if this process were alone.
	Processes string
	// ProcessWindow: see DefaultProcessWindow (0 = it).
	ProcessWindow time.Duration
}

// NewValkey returns a limiter over cfg.KV.
func NewValkey(cfg ValkeyConfig) (*Valkey, error) {
	if cfg.KV == nil {
		return nil, errors.New("gcra: Valkey limiter without a Valkey")
	}
	if cfg.Fallback == nil {
		cfg.Fallback = NewLocal(LocalConfig{})
	}
	if cfg.ProcessWindow <= 0 {
		cfg.ProcessWindow = DefaultProcessWindow
	}
	v := &Valkey{kv: cfg.KV, fallback: cfg.Fallback, procs: cfg.Processes, window: cfg.ProcessWindow}
	v.processes.Store(1)
	if v.procs != "" {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("gcra: a process id: %w", err)
		}
		v.id = hex.EncodeToString(b[:])
		v.processes.Store(DefaultFallbackProcesses)
	}
	return v, nil
}

// Processes is N, the processes the fallback divides the buckets between:
// those Valkey last said took from them within the window, this one
// included.
func (v *Valkey) Processes() int { return int(v.processes.Load()) }

// FellBack is the Takes decided in process because Valkey could not answer.
func (v *Valkey) FellBack() uint64 { return v.fellBack.Load() }

// Take implements Limiter.
func (v *Valkey) Take(ctx context.Context, cost int, asks ...Ask) (Decision, error) {
	if err := check(cost, asks); err != nil {
		return Decision{}, err
	}
	keys := make([]string, len(asks), len(asks)+1)
	args := make([]string, 3, 3+4*len(asks))
	args[0] = strconv.Itoa(cost)
	for i, a := range asks {
		keys[i] = a.Key
		args = append(args,
			strconv.FormatInt(a.Limit.Interval().Microseconds(), 10),
			strconv.Itoa(a.Limit.Burst),
			strconv.Itoa(a.Reserve),
			strconv.FormatInt(a.MaxWait.Microseconds(), 10))
	}
	if v.procs != "" {
		keys = append(keys, v.procs)
		args[1], args[2] = v.id, strconv.FormatInt(v.window.Microseconds(), 10)
	}
	out, err := v.kv.Ints(ctx, takeScript, keys, args)
	if err == nil && len(out) != 4+len(asks) {
		err = fmt.Errorf("gcra: script answered %d values for %d keys", len(out), len(asks))
	}
	if err != nil {
		if ctx.Err() != nil {
			return Decision{}, fmt.Errorf("gcra: %w", ctx.Err())
		}
		v.fellBack.Add(1)
		return v.fallback.Take(ctx, cost, v.share(asks)...)
	}
	if out[3] > 0 {
		// At least DefaultFallbackProcesses: a process that saw itself
		// alone cannot know whether another started since.
		v.processes.Store(max(out[3], DefaultFallbackProcesses))
	}
	d := Decision{OK: out[0] == 1, Wait: max(time.Duration(out[1])*time.Microsecond, 0), Refused: int(out[2])}
	if d.OK {
		d.Refused = -1
	}
	for i := range asks {
		d.Left[i] = int(out[4+i])
	}
	return d, nil
}

// share is asks as this process decides them alone: each bucket 1/N of
// the shared one (its burst divided, at least 1, and its refill slowed N
// times), its reserve in proportion.
func (v *Valkey) share(asks []Ask) []Ask {
	n := int(v.processes.Load())
	if n <= 1 {
		return asks
	}
	out := make([]Ask, len(asks))
	for i, a := range asks {
		burst := max(1, a.Limit.Burst/n)
		out[i] = Ask{
			Key:     a.Key,
			Limit:   Limit{Rate: a.Limit.Rate, Per: a.Limit.Per * time.Duration(n), Burst: burst},
			Reserve: min(a.Reserve/n, burst-1),
			MaxWait: a.MaxWait,
		}
	}
	return out
}
