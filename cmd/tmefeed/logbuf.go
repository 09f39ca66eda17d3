package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// Log batching: a line is written at most logFlushDelay after it was
// logged, or sooner when logBufferBytes of lines are waiting.
const (
	logFlushDelay  = 100 * time.Millisecond
	logBufferBytes = 32 << 10
)

// logBuffer batches the log lines written to it into fewer writes: at
// info level every request logs a line, and one write syscall per line
// costs about as much as serving a cached answer. Each Write is one whole
// line (slog writes a record at once), kept whole: lines never interleave
// and a write never splits one, unless it is larger than the buffer.
// Close flushes what is left; after it, lines are written through at once.
type logBuffer struct {
	mu      sync.Mutex
	out     io.Writer
	buf     *bufio.Writer
	timer   *time.Timer
	pending bool // timer is set to flush
	closed  bool
}

func newLogBuffer(out io.Writer) *logBuffer {
	l := &logBuffer{out: out, buf: bufio.NewWriterSize(out, logBufferBytes)}
	l.timer = time.AfterFunc(time.Hour, l.flushDue)
	l.timer.Stop()
	return l
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.out.Write(p)
	}
	if len(p) > l.buf.Available() && l.buf.Buffered() > 0 {
		if err := l.flush(); err != nil {
			return 0, err
		}
	}
	n, err := l.buf.Write(p)
	if err != nil {
		l.buf.Reset(l.out) // a failed write is not retried with the next line
		return n, err
	}
	if l.buf.Buffered() > 0 && !l.pending {
		l.pending = true
		l.timer.Reset(logFlushDelay)
	}
	return n, nil
}

// flushDue is the timer's flush.
func (l *logBuffer) flushDue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = false
	_ = l.flush()
}

func (l *logBuffer) flush() error {
	err := l.buf.Flush()
	if err != nil {
		l.buf.Reset(l.out) // lines that could not be written are dropped
	}
	return err
}

// Close writes the lines waiting; later lines go straight to the output.
func (l *logBuffer) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer.Stop()
	l.pending = false
	l.closed = true
	return l.flush()
}
