//go:build race

package feed_test

const raceEnabled = true
