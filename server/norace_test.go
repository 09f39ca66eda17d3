//go:build !race

package server_test

const raceSlack = 0
