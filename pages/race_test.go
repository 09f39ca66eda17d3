//go:build race

package pages_test

const raceEnabled = true
