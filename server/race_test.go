//go:build race

package server_test

// raceSlack: the race detector's instrumentation allocates a little on its own.
const raceSlack = 4
