// Package zstdenc is the process's one zstd encoder, shared by everything
// that compresses with zstd (the cache tiers' codec, HTTP answers).
//
// A zstd.Encoder allocates all its encoder states up front, about 1.3 MiB
// each at the default level, and one state per GOMAXPROCS unless told
// otherwise. Each store building its own encoder multiplied that fixed
// memory, outside any budget, by the number of stores and by the number of
// cores; one shared encoder with a bounded number of states keeps it small
// and fixed.
package zstdenc

import (
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// MaxStates bounds the encoder states, whatever GOMAXPROCS is: the memory
// they hold is fixed, and compressions beyond that many wait for a state
// (each takes well under a millisecond for a page or an answer; hits
// compress nothing).
const MaxStates = 4

// Window is the largest distance a match may reach back. Values of one
// block (128 KiB) or less are one frame whatever the window; a larger value
// makes the state keep a history buffer of twice the window, which at
// zstd's default 8 MiB would be 16 MiB per state, held for as long as the
// process runs. 1 MiB keeps it at 2 MiB and loses little: JSON and HTML
// repeat themselves within a post or two.
const Window = 1 << 20

// shared is built once, when the package is initialised (outside any
// testing/synctest bubble), and never reassigned; zstd synchronises the
// states inside it. Its states are made then too: zstd makes them, and the
// channel that hands them out, at the first EncodeAll, and a channel made
// inside a bubble cannot be used outside it, nor in another.
var shared = func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(min(runtime.GOMAXPROCS(0), MaxStates)),
		zstd.WithWindowSize(Window),
		zstd.WithEncoderCRC(true), // a stored entry's bit rot is detected on decode
	)
	if err != nil {
		panic(err) // only reachable with invalid constant options
	}
	enc.EncodeAll(nil, nil)
	return enc
}()

// Shared returns the process's encoder. Only its EncodeAll is safe for
// concurrent use; callers must not Close or Reset it.
func Shared() *zstd.Encoder { return shared }
