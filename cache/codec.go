package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/tmefeed/tmefeed/internal/zstdenc"
)

// Encoded layout, shared by every tier so bytes written by one process can be
// read by another:
//
//	[0]     magic byte 0xC7 (not ASCII, so raw HTML or JSON is never mistaken for an entry)
//	[1]     format version (2)
//	[2:10]  FetchedAt, Unix nanoseconds, big-endian; 0 = zero time
//	[10:18] RefreshAt, Unix nanoseconds, big-endian; 0 = one refresh point after FetchedAt
//	[18:22] length of the uncompressed value, big-endian
//	[22:]   one zstd frame holding the value (absent for an empty value)
//
// Version 1 lacked RefreshAt; the keys of internal/keys changed with it.
const (
	codecMagic   = 0xC7
	codecVersion = 2
	headerLen    = 22

	// MaxValueBytes bounds one uncompressed value. Pages are tens to a few
	// hundred KiB; the bound keeps a corrupt or hostile header from making
	// Decode allocate without limit.
	MaxValueBytes = 64 << 20

	// maxRatio is the largest expansion zstd can achieve: a block holds at
	// most 128 KiB and takes at least 4 bytes. A header claiming more than
	// len(payload)*maxRatio bytes is corrupt, and rejecting it early stops a
	// tiny input from reserving a large buffer.
	maxRatio = (128 << 10) / 4

	// scratchKeep bounds the encoding buffers kept for reuse.
	scratchKeep = 1 << 20
)

// ErrCorrupt reports bytes that are not a valid encoded entry: truncated,
// from an unknown format version, or failing zstd's checksum.
var ErrCorrupt = errors.New("cache: corrupt entry")

// ErrValueTooLarge reports a value longer than MaxValueBytes.
var ErrValueTooLarge = errors.New("cache: value too large")

// Codec turns entries into compressed bytes and back. It is safe for
// concurrent use: zstd's EncodeAll and DecodeAll take one of a fixed set of
// states per call, so a single Codec serves a whole process. Every Codec
// compresses with the process's one encoder (internal/zstdenc), whose
// states cost more than a megabyte each; each has its own decoder, which
// allocates as it is used. A Codec holds no goroutines, so it needs no
// Close.
type Codec struct {
	enc     *zstd.Encoder
	dec     *zstd.Decoder
	scratch sync.Pool // *[]byte, the compressed output before it is copied to an exact-size slice
}

// NewCodec returns a Codec at zstd's default level, which shrinks t.me
// channel pages to about a seventh and small embed or preview pages to about
// a third (see TestCompressionRatio). A page is encoded once per fetch but
// decoded on every hit, and decoding speed barely depends on the level. The
// encoder writes a checksum, so Decode detects bit rot in a shared store.
func NewCodec() (*Codec, error) {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0), // GOMAXPROCS concurrent DecodeAll calls
		zstd.WithDecoderMaxMemory(MaxValueBytes),
		zstd.WithDecodeAllCapLimit(true), // never decode past the length in the header
	)
	if err != nil {
		return nil, fmt.Errorf("cache: zstd decoder: %w", err)
	}
	return &Codec{enc: zstdenc.Shared(), dec: dec}, nil
}

// Encode returns e's header and compressed value in a slice of exactly that
// length (no spare capacity), so len is the memory it holds. e.Stale is not
// stored: staleness is decided when an entry is served.
func (c *Codec) Encode(e Entry) ([]byte, error) {
	if len(e.Value) > MaxValueBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrValueTooLarge, len(e.Value))
	}
	var nanos int64
	if !e.FetchedAt.IsZero() {
		// UnixNano is undefined outside about 1678..2262.
		if y := e.FetchedAt.Year(); y < 1678 || y > 2261 {
			return nil, fmt.Errorf("cache: encode: FetchedAt %v out of range", e.FetchedAt)
		}
		nanos = e.FetchedAt.UnixNano()
	}
	var refreshNs int64
	if !e.RefreshAt.IsZero() {
		if y := e.RefreshAt.Year(); y < 1678 || y > 2261 {
			return nil, fmt.Errorf("cache: encode: RefreshAt %v out of range", e.RefreshAt)
		}
		refreshNs = e.RefreshAt.UnixNano()
	}

	bp, _ := c.scratch.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	buf := (*bp)[:0]
	buf = append(buf, codecMagic, codecVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(nanos))
	buf = binary.BigEndian.AppendUint64(buf, uint64(refreshNs))
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(e.Value)))
	buf = c.enc.EncodeAll(e.Value, buf)

	out := make([]byte, len(buf))
	copy(out, buf)
	if cap(buf) <= scratchKeep {
		*bp = buf
		c.scratch.Put(bp)
	}
	return out, nil
}

// Decode parses bytes made by Encode. Anything else — truncated, garbage, an
// unknown version, a failed checksum — yields an error wrapping ErrCorrupt.
// The returned Value is freshly allocated and owned by the caller.
func (c *Codec) Decode(b []byte) (Entry, error) {
	fetched, rawLen, err := parseHeader(b)
	if err != nil {
		return Entry{}, err
	}
	payload := b[headerLen:]
	if uint64(rawLen) > uint64(len(payload))*maxRatio {
		return Entry{}, fmt.Errorf("%w: %d bytes cannot hold %d", ErrCorrupt, len(payload), rawLen)
	}
	// Sized from the header, so decoding allocates once; with the cap limit
	// set, zstd refuses to produce more than that.
	out, err := c.dec.DecodeAll(payload, make([]byte, 0, rawLen))
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if len(out) != int(rawLen) {
		return Entry{}, fmt.Errorf("%w: value is %d bytes, header says %d", ErrCorrupt, len(out), rawLen)
	}
	return Entry{Value: out, FetchedAt: fetched, RefreshAt: nanosTime(refreshNanos(b))}, nil
}

// parseHeader validates b's header and returns its fetched-at time and the
// uncompressed length.
func parseHeader(b []byte) (time.Time, uint32, error) {
	if len(b) < headerLen {
		return time.Time{}, 0, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, len(b))
	}
	if b[0] != codecMagic {
		return time.Time{}, 0, fmt.Errorf("%w: bad magic byte %#x", ErrCorrupt, b[0])
	}
	if b[1] != codecVersion {
		return time.Time{}, 0, fmt.Errorf("%w: unknown format version %d", ErrCorrupt, b[1])
	}
	rawLen := binary.BigEndian.Uint32(b[18:22])
	if rawLen > MaxValueBytes {
		return time.Time{}, 0, fmt.Errorf("%w: value length %d over the limit", ErrCorrupt, rawLen)
	}
	return nanosTime(fetchedNanos(b)), rawLen, nil
}

// fetchedNanos reads FetchedAt from a header that parseHeader accepted (or
// that this package wrote), without decoding the value.
func fetchedNanos(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b[2:10]))
}

// refreshNanos reads RefreshAt (0: not stored) like fetchedNanos.
func refreshNanos(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b[10:18]))
}

func nanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// defaultCodec serves the package-level Encode and Decode. It is built once,
// at package initialisation, and never reassigned; the zstd states inside are
// synchronised by zstd itself. Building it eagerly rather than on first use
// keeps its internal channels outside any testing/synctest bubble; it
// compresses with the shared encoder, so it costs no encoder states of its
// own.
var defaultCodec = func() *Codec {
	c, err := NewCodec()
	if err != nil {
		panic(err) // only reachable with invalid constant options
	}
	return c
}()

// Encode encodes e with a process-wide Codec. See Codec.Encode.
func Encode(e Entry) ([]byte, error) { return defaultCodec.Encode(e) }

// Decode decodes b with a process-wide Codec. See Codec.Decode.
func Decode(b []byte) (Entry, error) { return defaultCodec.Decode(b) }
