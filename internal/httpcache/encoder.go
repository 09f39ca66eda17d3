package httpcache

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/tmefeed/tmefeed/internal/memsize"
	"github.com/tmefeed/tmefeed/internal/zstdenc"
)

// DefaultMinBytes is the smallest answer compressed: below about a
// kilobyte the coding's framing and the client's work outweigh the bytes
// saved.
const DefaultMinBytes = 1024

// Config configures an Encoder.
type Config struct {
	// Off sends every answer as it is (no Content-Encoding, no Vary).
	Off bool
	// MinBytes is the smallest answer compressed; 0 means DefaultMinBytes.
	MinBytes int
}

// Encoder compresses answers; it is safe for concurrent use and holds no
// goroutines. A nil *Encoder compresses nothing.
type Encoder struct {
	min     int
	zenc    *zstd.Encoder
	gz      sync.Pool // *gzip.Writer
	scratch sync.Pool // *scratch
}

// New returns an Encoder, or nil when cfg.Off.
func New(cfg Config) (*Encoder, error) {
	if cfg.Off {
		return nil, nil
	}
	if cfg.MinBytes < 0 {
		return nil, fmt.Errorf("httpcache: MinBytes %d is negative", cfg.MinBytes)
	}
	if cfg.MinBytes == 0 {
		cfg.MinBytes = DefaultMinBytes
	}
	// The process's one zstd encoder: its window (1 MiB) is well within
	// the 8 MiB RFC 9659 lets HTTP clients refuse beyond, and its states
	// are shared with the cache's codec rather than held twice.
	zenc := zstdenc.Shared()
	return &Encoder{min: cfg.MinBytes, zenc: zenc}, nil
}

// Compressible reports whether an answer of n bytes is sent compressed to
// a client that accepts a coding (and so varies by Accept-Encoding).
func (e *Encoder) Compressible(n int) bool { return e != nil && n >= e.min }

// Compress returns b in coding c, in a new slice of its length rounded up
// to the allocator's size class (so that cap is what it holds). Identity
// returns b itself.
func (e *Encoder) Compress(c Coding, b []byte) []byte {
	if c != Zstd && c != Gzip {
		return b
	}
	// The compressed bytes are made in a reused buffer and copied out:
	// growing a fresh one per answer was garbage several times the size
	// of what is kept.
	s, _ := e.scratch.Get().(*scratch)
	if s == nil {
		s = new(scratch)
	}
	s.b = s.b[:0]
	switch c {
	case Zstd:
		s.b = e.zenc.EncodeAll(b, s.b)
	case Gzip:
		zw, _ := e.gz.Get().(*gzip.Writer)
		if zw == nil {
			zw, _ = gzip.NewWriterLevel(s, gzip.DefaultCompression)
		} else {
			zw.Reset(s)
		}
		_, _ = zw.Write(b) // a scratch does not fail
		_ = zw.Close()
		zw.Reset(nil) // holds no scratch while pooled
		e.gz.Put(zw)
	}
	out := bytes.Clone(s.b)
	if cap(s.b) <= scratchKeep {
		e.scratch.Put(s)
	}
	return out
}

// scratchKeep bounds the buffers kept for reuse: an answer's compressed
// form is a few KiB; a larger one is made in a buffer of its own.
const scratchKeep = 256 << 10

// scratch is an io.Writer appending to a reusable buffer.
type scratch struct{ b []byte }

func (s *scratch) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// Rep is an answer's bytes with its validator and, when it is worth
// compressing, its compressed forms, made once: a cache holding a Rep
// serves every coding without compressing. It must not be modified.
type Rep struct {
	Body []byte // identity
	ETag string // strong, of Body
	weak string // ETag as the compressed forms' weak tag
	gzip []byte // nil when not kept
	zstd []byte
	// The Content-Length of each form, in decimal: "" when not kept.
	bodyLen, gzipLen, zstdLen string
}

// NewRep returns body's representation. With forms set (and a non-nil
// Encoder) the compressed forms are made now, to be kept with it;
// otherwise they are made per request by Select.
func (e *Encoder) NewRep(body []byte, forms bool) *Rep {
	return e.NewTaggedRep(body, ETag(body), forms)
}

// NewTaggedRep is NewRep with the strong ETag given, for an answer whose
// tag covers more than its bytes (its media type, say).
func (e *Encoder) NewTaggedRep(body []byte, tag string, forms bool) *Rep {
	r := &Rep{Body: body, ETag: tag, weak: Weak(tag)}
	if forms {
		r.bodyLen = strconv.Itoa(len(body))
		if e.Compressible(len(body)) {
			r.gzip = e.Compress(Gzip, body)
			r.zstd = e.Compress(Zstd, body)
			r.gzipLen, r.zstdLen = strconv.Itoa(len(r.gzip)), strconv.Itoa(len(r.zstd))
		}
	}
	return r
}

// ContentLength is the length in decimal of the form in coding c that
// Select returns, when r keeps it (it was made with its forms), so that
// a hit formats no number; "" when not kept.
func (r *Rep) ContentLength(c Coding) string {
	switch c {
	case Identity:
		return r.bodyLen
	case Gzip:
		return r.gzipLen
	case Zstd:
		return r.zstdLen
	}
	return ""
}

// Size is the heap a Rep holds beyond its Body (which the entry it is
// made from already holds): the struct, its tag and compressed forms.
func (r *Rep) Size() int64 {
	return memsize.Alloc(int(unsafe.Sizeof(*r))) + memsize.String(len(r.ETag)) + memsize.String(len(r.weak)) +
		memsize.Alloc(cap(r.gzip)) + memsize.Alloc(cap(r.zstd)) +
		memsize.String(len(r.bodyLen)) + memsize.String(len(r.gzipLen)) + memsize.String(len(r.zstdLen))
}

// Kept reports whether the compressed forms are held.
func (r *Rep) Kept() bool { return r.gzip != nil }

// Select returns what to send for a request accepting acceptEncoding (a
// HEAD gets the headers a GET would): the bytes,
// their coding and their ETag — weak for a compressed form, whose bytes
// are not the identity form's. vary reports that the answer depends on
// Accept-Encoding. A form not kept is compressed now.
func (e *Encoder) Select(r *Rep, acceptEncoding string) (body []byte, c Coding, etag string, vary bool) {
	if !e.Compressible(len(r.Body)) {
		return r.Body, Identity, r.ETag, false
	}
	switch c = Negotiate(acceptEncoding); c {
	case Zstd:
		body = r.zstd
	case Gzip:
		body = r.gzip
	default:
		return r.Body, Identity, r.ETag, true
	}
	if body == nil {
		body = e.Compress(c, r.Body)
	}
	return body, c, r.weak, true
}
