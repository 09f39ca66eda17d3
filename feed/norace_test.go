//go:build !race

package feed_test

// raceEnabled shrinks the heap measurements, which the race detector slows
// several times over.
const raceEnabled = false
