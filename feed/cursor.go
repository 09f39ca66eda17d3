package feed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"math"
)

// A cursor is the sort key of an item, so that paging continues next to it
// even when the feed was rebuilt in between, together with a hash binding
// it to its feed (channels, order and filter). It is sealed: encrypted so
// that clients cannot read, and come to depend on, what is inside, and
// authenticated so that it cannot be altered. Sealing is deterministic
// (SIV: the CTR IV is an HMAC of the plaintext), so one item of one feed
// has the same cursor in every build and in every process with the same
// key.
//
// Plaintext: version, order, binding (8 bytes), score bits (8 bytes),
// varint date, uvarint id, channel.

const (
	cursorVersion = 2
	tagSize       = 16 // of the HMAC, also the CTR IV
	fixedPlain    = 1 + 1 + 8 + 8
)

// DefaultCursorKey seals cursors when Config.CursorKey is empty. It keeps
// them opaque and bound to their feed, and valid across processes and
// restarts; being public, it does not stop someone who reads the source
// from reading or forging a cursor, which holds only a post's public sort
// key. Set a key of your own to rule that out.
const DefaultCursorKey = "tmefeed default cursor key"

// sealer seals and opens cursors. It is safe for concurrent use.
type sealer struct {
	block cipher.Block
	mac   []byte
}

func newSealer(secret string) (*sealer, error) {
	if secret == "" {
		secret = DefaultCursorKey
	}
	k, err := hkdf.Key(sha256.New, []byte(secret), nil, "tmefeed feed cursor v2", 32+32)
	if err != nil {
		return nil, fmt.Errorf("feed: cursor key: %w", err)
	}
	block, err := aes.NewCipher(k[:32])
	if err != nil {
		return nil, fmt.Errorf("feed: cursor key: %w", err)
	}
	return &sealer{block: block, mac: k[32:]}, nil
}

// cursor is an opened cursor.
type cursor struct {
	order   Order
	binding uint64
	key     sortKey
}

// cursorWriter seals the cursors of one build; it reuses its buffers and
// so is not safe for concurrent use.
type cursorWriter struct {
	s       *sealer
	mac     hash.Hash
	binding uint64
	order   Order
	plain   []byte
	sealed  []byte
}

func (s *sealer) writer(o Order, binding uint64) *cursorWriter {
	return &cursorWriter{s: s, mac: hmac.New(sha256.New, s.mac), binding: binding, order: o}
}

func (w *cursorWriter) cursor(k sortKey) string {
	p := append(w.plain[:0], cursorVersion, w.order[0])
	p = binary.LittleEndian.AppendUint64(p, w.binding)
	p = binary.LittleEndian.AppendUint64(p, math.Float64bits(k.score))
	p = binary.AppendVarint(p, k.date)
	p = binary.AppendUvarint(p, uint64(k.id))
	p = append(p, k.channel...)
	w.plain = p

	w.mac.Reset()
	w.mac.Write(p)
	out := w.mac.Sum(w.sealed[:0])[:tagSize]
	out = append(out, p...)
	cipher.NewCTR(w.s.block, out[:tagSize]).XORKeyStream(out[tagSize:], p)
	w.sealed = out
	return base64.RawURLEncoding.EncodeToString(out)
}

// open decodes a cursor given as argument arg ("after" or "before") of a
// request for feed q. Every failure is an ErrBadRequest naming arg.
func (s *sealer) open(arg, c string, q query) (cursor, error) {
	var out cursor
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < tagSize+fixedPlain+2 {
		return out, notACursor(arg, c)
	}
	p := make([]byte, len(raw)-tagSize)
	cipher.NewCTR(s.block, raw[:tagSize]).XORKeyStream(p, raw[tagSize:])
	m := hmac.New(sha256.New, s.mac)
	m.Write(p)
	if !hmac.Equal(m.Sum(nil)[:tagSize], raw[:tagSize]) {
		// Altered, or sealed under another key: the one a client can meet
		// without a bug of its own is a key changed since it got the cursor.
		return out, fmt.Errorf("%w: %s: %q is not a feed cursor of this server: altered, or sealed under a cursor key the server no longer uses; start again without %s",
			ErrBadRequest, arg, truncate(c), arg)
	}
	if p[0] != cursorVersion {
		return out, notACursor(arg, c)
	}
	for _, o := range Orders() {
		if o[0] == p[1] {
			out.order = o
		}
	}
	if out.order == "" {
		return out, notACursor(arg, c)
	}
	out.binding = binary.LittleEndian.Uint64(p[2:])
	out.key.score = math.Float64frombits(binary.LittleEndian.Uint64(p[10:]))
	rest := p[fixedPlain:]
	date, n := binary.Varint(rest)
	if n <= 0 {
		return out, notACursor(arg, c)
	}
	rest = rest[n:]
	id, n := binary.Uvarint(rest)
	if n <= 0 || id > math.MaxInt32 || len(rest) == n {
		return out, notACursor(arg, c)
	}
	out.key.date, out.key.id, out.key.channel = date, int(id), string(rest[n:])

	// Sealed by this service, so the only question left is whose feed it is.
	if out.order != q.order {
		return out, fmt.Errorf("%w: %s: the cursor belongs to a feed in %s order, not %s; a cursor only pages the feed it came from",
			ErrBadRequest, arg, out.order, q.order)
	}
	if out.binding != q.binding {
		return out, fmt.Errorf("%w: %s: the cursor belongs to another feed (other channels or filter); a cursor only pages the feed it came from",
			ErrBadRequest, arg)
	}
	return out, nil
}

func notACursor(arg, c string) error {
	return fmt.Errorf("%w: %s: %q is not a feed cursor; pass back a cursor, startCursor or endCursor unchanged",
		ErrBadRequest, arg, truncate(c))
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
