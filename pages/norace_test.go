//go:build !race

package pages_test

// raceEnabled shrinks the heap measurements, which the race detector slows
// several times over.
const raceEnabled = false
