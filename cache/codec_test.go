package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 30, 15, 123456789, time.UTC)
	page := realisticPages(t)[0].body
	tests := []struct {
		name string
		in   Entry
	}{
		{"page", Entry{Value: page, FetchedAt: at}},
		{"empty value", Entry{Value: []byte{}, FetchedAt: at}},
		{"nil value", Entry{FetchedAt: at}},
		{"zero time", Entry{Value: []byte("x")}},
		{"binary", Entry{Value: []byte{0, 0xff, 0xc7, 1, 0, 0}, FetchedAt: at}},
		{"incompressible", Entry{Value: bytes.Repeat([]byte{0x5a, 0xa5, 0x13, 0x77}, 100), FetchedAt: at}},
		{"stale flag dropped", Entry{Value: []byte("old"), FetchedAt: at, Stale: true}},
		{"before 1970", Entry{Value: []byte("v"), FetchedAt: time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)}},
		{"refresh point", Entry{Value: []byte("v"), FetchedAt: at, RefreshAt: at.Add(12500 * time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if cap(b) != len(b) {
				t.Errorf("encoded slice has cap %d for len %d; the weigher assumes no spare capacity", cap(b), len(b))
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Value, tt.in.Value) {
				t.Errorf("value: got %d bytes, want %d", len(got.Value), len(tt.in.Value))
			}
			if !got.FetchedAt.Equal(tt.in.FetchedAt) || got.FetchedAt.IsZero() != tt.in.FetchedAt.IsZero() {
				t.Errorf("FetchedAt: got %v, want %v", got.FetchedAt, tt.in.FetchedAt)
			}
			if !got.RefreshAt.Equal(tt.in.RefreshAt) || got.RefreshAt.IsZero() != tt.in.RefreshAt.IsZero() {
				t.Errorf("RefreshAt: got %v, want %v", got.RefreshAt, tt.in.RefreshAt)
			}
			if got.Stale {
				t.Error("Stale survived encoding")
			}
		})
	}
}

func TestCodecCompressesPages(t *testing.T) {
	page := realisticPages(t)[0].body
	b, err := Encode(Entry{Value: page, FetchedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= len(page)/2 {
		t.Errorf("a %d-byte page encoded to %d bytes", len(page), len(b))
	}
}

func TestEncodeRejects(t *testing.T) {
	if _, err := Encode(Entry{Value: make([]byte, MaxValueBytes+1)}); !errors.Is(err, ErrValueTooLarge) {
		t.Errorf("oversized value: err = %v, want ErrValueTooLarge", err)
	}
	if _, err := Encode(Entry{Value: []byte("x"), FetchedAt: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("FetchedAt in 2300: no error, but it has no UnixNano")
	}
}

func TestDecodeRejectsCorruptInput(t *testing.T) {
	good, err := Encode(Entry{Value: []byte(strings.Repeat("<div>post</div>", 200)), FetchedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte {
		return f(bytes.Clone(good))
	}
	tests := map[string][]byte{
		"nil":               nil,
		"short header":      good[:headerLen-1],
		"header only":       good[:headerLen],
		"truncated payload": good[:len(good)-3],
		"raw HTML":          []byte("<!DOCTYPE html><html><body>not an entry</body></html>"),
		"bad magic":         mutate(func(b []byte) []byte { b[0] = '{'; return b }),
		"future version":    mutate(func(b []byte) []byte { b[1] = codecVersion + 1; return b }),
		"flipped bit":       mutate(func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b }),
		"length too small": mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[headerLen-4:], binary.BigEndian.Uint32(b[headerLen-4:])-1)
			return b
		}),
		"length too large": mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[headerLen-4:], binary.BigEndian.Uint32(b[headerLen-4:])+1)
			return b
		}),
		"length over limit": mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[headerLen-4:], MaxValueBytes+1)
			return b
		}),
		"trailing garbage": append(bytes.Clone(good), 1, 2, 3, 4, 5, 6, 7, 8),
		"empty value with payload": mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[headerLen-4:], 0)
			return b
		}),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			e, err := Decode(in)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if e.Value != nil {
				t.Errorf("value of %d bytes returned with the error", len(e.Value))
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, v := range [][]byte{nil, []byte("x"), []byte(strings.Repeat("<p>hello</p>", 300)), generatePage(rand.New(rand.NewPCG(5, 6)), 3)} {
		b, err := Encode(Entry{Value: v, FetchedAt: at})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{codecMagic, codecVersion})
	c, err := NewCodec()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := c.Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Whatever decodes must survive a round trip.
		again, err := c.Encode(e)
		if err != nil {
			t.Fatalf("re-encoding a decoded entry: %v", err)
		}
		e2, err := c.Decode(again)
		if err != nil || !bytes.Equal(e2.Value, e.Value) || !e2.FetchedAt.Equal(e.FetchedAt) {
			t.Fatalf("round trip of a decoded entry failed: %v", err)
		}
	})
}
