package httpcache

import (
	"strconv"
	"time"
)

// NoStore is the Cache-Control of an answer no cache may keep: a POST's,
// an error's, one missing parts for a reason that may pass.
const NoStore = "no-store"

// maxMadeAges bounds the values made ahead: one per max-age up to the
// refresh window (CACHE_MODE's are 10 s and 120 s), so that a hit formats
// none.
const maxMadeAges = 600

// CacheControl is the one builder of the Cache-Control values of answers
// made from cached pages: downstream caches keep an answer only until its
// pages reach their refresh point, never longer than a refresh window,
// then serve it stale for one more window while revalidating. Values are
// made ahead, so that a cache hit formats none. A nil *CacheControl, or
// one with no refresh window, answers NoStore.
type CacheControl struct {
	refresh time.Duration
	scope   string // "public", or "private"
	swr     string // stale-while-revalidate, in seconds
	// made[age] is the value of max-age age, in a slice of its own capped
	// at its one element, so that an Add to the header copies it.
	made [][]string
}

// NewCacheControl returns the builder of a refresh window; private marks
// the answers private (API keys are on: no shared cache may hand one
// consumer's answer to another).
func NewCacheControl(refresh time.Duration, private bool) *CacheControl {
	c := &CacheControl{refresh: max(refresh, 0), scope: "public", swr: strconv.Itoa(int(max(refresh, 0) / time.Second))}
	if private {
		c.scope = "private"
	}
	if c.refresh > 0 {
		c.made = make([][]string, min(int(c.refresh/time.Second), maxMadeAges)+1)
		for age := range c.made {
			c.made[age] = []string{c.format(age)}
		}
	}
	return c
}

// Refresh is the refresh window; 0 when answers are not cached.
func (c *CacheControl) Refresh() time.Duration {
	if c == nil {
		return 0
	}
	return c.refresh
}

// MaxAge is the max-age in seconds of an answer whose pages reach their
// refresh point at refreshAt, sent at now: 0 when it is stale or past
// that point, at most the refresh window.
func (c *CacheControl) MaxAge(now, refreshAt time.Time, stale bool) int {
	if c == nil || stale {
		return 0
	}
	left := min(refreshAt.Sub(now), c.refresh)
	if left <= 0 {
		return 0
	}
	return int(left / time.Second)
}

// Value is the Cache-Control of an answer fresh for age seconds.
func (c *CacheControl) Value(age int) string {
	if c == nil || c.refresh <= 0 {
		return NoStore
	}
	if age >= 0 && age < len(c.made) {
		return c.made[age][0]
	}
	return c.format(age)
}

// Header is Value as a header's values, to be assigned (a made one is
// shared: it must not be modified).
func (c *CacheControl) Header(age int) []string {
	if c != nil && age >= 0 && age < len(c.made) {
		return c.made[age]
	}
	return []string{c.Value(age)}
}

// At is the Cache-Control of an answer whose pages reach their refresh
// point at refreshAt, sent at now.
func (c *CacheControl) At(now, refreshAt time.Time, stale bool) string {
	return c.Value(c.MaxAge(now, refreshAt, stale))
}

func (c *CacheControl) format(age int) string {
	return c.scope + ", max-age=" + strconv.Itoa(age) + ", stale-while-revalidate=" + c.swr
}
