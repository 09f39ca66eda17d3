//go:build !race

package cache

// raceEnabled shrinks the heap measurements, which the race detector slows
// several times over: make test measures them at full size in its non-race
// pass.
const raceEnabled = false
