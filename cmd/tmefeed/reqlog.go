package main

import (
	"context"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tmefeed/tmefeed/internal/jsonstr"
	"github.com/tmefeed/tmefeed/server"
)

// requestLogger writes the request lines the way slog's JSON or text
// handler would write the same record (same keys, order and value
// formats; strings escaped by jsonstr, which spells \b and \f as
// encoding/json does), appending straight into a pooled buffer: at info
// level every request logs a line, and the generic handler's formatting
// was the largest cost of a cached answer after the network
// (BenchmarkRequestLine, against slog's handlers).
type requestLogger struct {
	out   io.Writer // one Write per line
	json  bool
	bufs  sync.Pool
	stamp atomic.Pointer[timeStamp] // the second lines were last logged in
}

// timeStamp is a line's time formatted up to its second, and its zone:
// what lines of the same second share, formatted once per second rather
// than on every line.
type timeStamp struct {
	sec  int64          // Unix seconds
	loc  *time.Location // of the time formatted
	date []byte         // "2006-01-02T15:04:05"
	zone []byte         // "Z" or "+07:00"
}

func newRequestLogger(out io.Writer, json bool) *requestLogger {
	return &requestLogger{out: out, json: json, bufs: sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}}
}

// Log writes one line; it is server.Config.RequestLog.
func (l *requestLogger) Log(_ context.Context, line server.RequestLine) {
	bp := l.bufs.Get().(*[]byte)
	b := l.appendLine((*bp)[:0], &line)
	_, _ = l.out.Write(b)
	*bp = b
	l.bufs.Put(bp)
}

func (l *requestLogger) appendLine(b []byte, line *server.RequestLine) []byte {
	if l.json {
		b = append(b, `{"time":"`...)
		b = l.appendTime(b, line.Time)
		b = append(b, `","level":"`...)
		b = append(b, line.Level.String()...)
		b = append(b, `","msg":"request"`...)
	} else {
		b = append(b, "time="...)
		b = l.appendTime(b, line.Time)
		b = append(b, " level="...)
		b = append(b, line.Level.String()...)
		b = append(b, " msg=request"...)
	}
	b = l.str(b, "id", line.ID)
	b = l.str(b, "method", line.Method)
	b = l.str(b, "route", line.Route)
	b = strconv.AppendInt(l.key(b, "status"), int64(line.Status), 10)
	b = strconv.AppendInt(l.key(b, "bytes"), int64(line.Bytes), 10)
	if l.json { // slog's JSON handler writes durations in nanoseconds
		b = strconv.AppendInt(l.key(b, "dur"), int64(line.Duration), 10)
	} else {
		b = append(l.key(b, "dur"), line.Duration.String()...)
	}
	b = l.str(b, "cache", line.Cache)
	for _, kv := range [...]struct{ k, v string }{{"op", line.Operation}, {"consumer", line.Consumer}, {"err", line.Err}, {"path", line.Path}, {"remote", line.Remote}} {
		if kv.v != "" {
			b = l.str(b, kv.k, kv.v)
		}
	}
	if l.json {
		b = append(b, '}')
	}
	return append(b, '\n')
}

// key appends the separator and a key that needs no escaping.
func (l *requestLogger) key(b []byte, k string) []byte {
	if l.json {
		b = append(b, ',', '"')
		b = append(b, k...)
		return append(b, '"', ':')
	}
	b = append(b, ' ')
	b = append(b, k...)
	return append(b, '=')
}

func (l *requestLogger) str(b []byte, k, v string) []byte {
	b = l.key(b, k)
	if l.json {
		return jsonstr.Append(b, v)
	}
	if needsQuoting(v) {
		return strconv.AppendQuote(b, v)
	}
	return append(b, v...)
}

// appendTime appends t as slog's handlers write it: RFC 3339 with the
// nanoseconds, trailing zeros trimmed, in JSON; with exactly three digits
// of milliseconds in text. The date, clock and zone come from the stamp of
// t's second, made when a line is the first of its second.
func (l *requestLogger) appendTime(b []byte, t time.Time) []byte {
	st := l.stamp.Load()
	if st == nil || st.sec != t.Unix() || st.loc != t.Location() {
		st = &timeStamp{sec: t.Unix(), loc: t.Location(), date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		l.stamp.Store(st)
	}
	b = append(b, st.date...)
	ns := t.Nanosecond()
	if !l.json {
		ms := ns / 1e6
		b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	} else if ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, st.zone...)
}

// needsQuoting is the text handler's rule for quoting a string value.
func needsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == ' ' || c == '=' || c == '"' || c < 0x20 {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}
