// Package httpcachetest holds what tests of compressed answers share.
package httpcachetest

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Decode undoes a Content-Encoding ("" or "identity", "gzip", "zstd"),
// failing the test if the bytes are not in it or the coding is unknown.
func Decode(t testing.TB, coding string, b []byte) []byte {
	t.Helper()
	switch coding {
	case "", "identity":
		return b
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case "zstd":
		zr, err := zstd.NewReader(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		out, err := zr.DecodeAll(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Fatalf("Content-Encoding %q", coding)
	return nil
}
