package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The recorder notes what the log and the metrics report of an answer,
// and passes on what the writer it wraps can do.
func TestRecorderNotesTheAnswer(t *testing.T) {
	t.Run("body without a header is 200", func(t *testing.T) {
		inner := httptest.NewRecorder()
		w := &recorder{ResponseWriter: inner}
		_, _ = w.Write([]byte("hello "))
		_, _ = w.Write([]byte("world"))
		if w.status != http.StatusOK || w.bytes != 11 || inner.Body.String() != "hello world" {
			t.Errorf("status %d, %d bytes, body %q; want 200, 11, hello world", w.status, w.bytes, inner.Body)
		}
	})
	t.Run("early hints are not the status", func(t *testing.T) {
		w := &recorder{ResponseWriter: httptest.NewRecorder()}
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusNotFound)
		w.WriteHeader(http.StatusInternalServerError) // superfluous: ignored, as net/http does
		if w.status != http.StatusNotFound {
			t.Errorf("status %d, want 404", w.status)
		}
	})
	t.Run("flush reaches the writer", func(t *testing.T) {
		inner := httptest.NewRecorder()
		w := &recorder{ResponseWriter: inner}
		if err := http.NewResponseController(w).Flush(); err != nil || !inner.Flushed || w.status != http.StatusOK {
			t.Errorf("flush: %v, flushed %v, status %d; want flushed with 200", err, inner.Flushed, w.status)
		}
	})
	t.Run("a writer that cannot be hijacked says so", func(t *testing.T) {
		w := &recorder{ResponseWriter: httptest.NewRecorder()}
		if _, _, err := w.Hijack(); !errors.Is(err, http.ErrNotSupported) {
			t.Errorf("hijack: %v, want http.ErrNotSupported", err)
		}
	})
	t.Run("files are counted", func(t *testing.T) {
		inner := httptest.NewRecorder()
		w := &recorder{ResponseWriter: inner}
		n, err := w.ReadFrom(strings.NewReader(strings.Repeat("x", 5000)))
		if err != nil || n != 5000 || w.bytes != 5000 || inner.Body.Len() != 5000 || w.status != http.StatusOK {
			t.Errorf("ReadFrom: %d, %v; recorded %d bytes, status %d; body %d", n, err, w.bytes, w.status, inner.Body.Len())
		}
	})
}
