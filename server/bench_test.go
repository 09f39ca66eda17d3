package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// discardWriter is a ResponseWriter that keeps nothing but the status, so
// the benchmark measures the router and the cache rather than a recorder.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// BenchmarkBodyHit is a cached GET /v1/body/{channel} through the router:
// the answer is the stored rendered bytes, with no parsing or encoding.
func BenchmarkBodyHit(b *testing.B) {
	benchmarkBodyHit(b, envOptions{refresh: hitRefresh})
}

// BenchmarkBodyHitCompressed is the same hit with the in-process copy of
// hot responses turned off: the bytes come out of the zstd-compressed cache.
func BenchmarkBodyHitCompressed(b *testing.B) {
	benchmarkBodyHit(b, envOptions{refresh: hitRefresh, hotBytes: -1})
}

func benchmarkBodyHit(b *testing.B, opts envOptions) {
	e := newEnv(b, opts)
	req := httptest.NewRequest(http.MethodGet, "/v1/body/"+demoChannel, nil)
	w := &discardWriter{h: http.Header{}}
	e.h.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		b.Fatalf("warm-up: status %d", w.status)
	}
	size := w.n
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		w.status, w.n = 0, 0
		e.h.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n != size {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
	}
}
