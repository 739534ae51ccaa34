package gateway

import (
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentgate/agentgate/internal/jsonenc"
)

// The access log line, written by hand (Config.LogJSON): the bytes
// slog.JSONHandler writes for the record logRequest makes, the request's
// context attributes after the record's own (as agentcore's log handler
// adds them), without the record, its clone and the handler's walk over
// its attributes, on every request. A line with an attribute this encoder
// does not write exactly as slog does (a kind other than string, integer,
// boolean or duration, an empty key, a string with \b or \f, which slog
// writes as \u0008 and \u000c) goes through slog instead, whole.

// accessLine is what one request's access log line says.
type accessLine struct {
	time          time.Time
	method, route string
	status        int
	ms            float64 // the duration in milliseconds
}

// record is the line as an slog record, as agentcore's handler gets it.
func (l *accessLine) record() slog.Record {
	r := slog.NewRecord(l.time, slog.LevelInfo, "request", 0)
	r.AddAttrs(slog.String("method", l.method), slog.String("route", l.route),
		slog.Int("status", l.status), slog.Float64("duration_ms", l.ms))
	return r
}

var accessBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// write writes the line with attrs after its own to w in one call, and
// reports whether it did (not when an attribute must go through slog).
func (l *accessLine) write(w io.Writer, attrs []slog.Attr) bool {
	bp := accessBufs.Get().(*[]byte)
	b, ok := l.append((*bp)[:0], attrs)
	if ok {
		_, _ = w.Write(b)
	}
	if cap(b) <= 4<<10 {
		*bp = b
		accessBufs.Put(bp)
	}
	return ok
}

// append appends the line as slog's JSONHandler writes it, or reports
// that it cannot.
func (l *accessLine) append(b []byte, attrs []slog.Attr) ([]byte, bool) {
	if y := l.time.Year(); y < 0 || y >= 10000 {
		return b, false // slog writes an error in its place
	}
	b = append(b, `{"time":"`...)
	b = l.time.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","method":`...)
	if !slogSafe(l.method) {
		return b, false
	}
	b = jsonenc.AppendStringNoHTML(b, l.method)
	b = append(b, `,"route":`...)
	if !slogSafe(l.route) {
		return b, false
	}
	b = jsonenc.AppendStringNoHTML(b, l.route)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"duration_ms":`...)
	b = appendMillis(b, l.ms)
	for _, a := range attrs {
		if a.Key == "" || !slogSafe(a.Key) {
			return b, false
		}
		b = append(b, ',')
		b = jsonenc.AppendStringNoHTML(b, a.Key)
		b = append(b, ':')
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			s := v.String()
			if !slogSafe(s) {
				return b, false
			}
			b = jsonenc.AppendStringNoHTML(b, s)
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindDuration:
			b = strconv.AppendInt(b, int64(v.Duration()), 10)
		default:
			return b, false
		}
	}
	return append(b, "}\n"...), true
}

// appendMillis appends ms as jsonenc.AppendFloat does. A whole number of
// microseconds in milliseconds, as logRequest measures a request, is
// written from its integer: the decimal of us/1000 is the shortest that
// reads back as float64(us)/1000 while us has at most 15 digits (no other
// decimal of so few digits reads back as the same float64), and
// formatting it skips the float formatting code.
func appendMillis(b []byte, ms float64) []byte {
	us := math.Round(ms * 1000)
	if us < 0 || us >= 1e15 || us/1000 != ms {
		return jsonenc.AppendFloat(b, ms)
	}
	n := int64(us)
	b = strconv.AppendInt(b, n/1000, 10)
	frac := n % 1000
	if frac == 0 {
		return b
	}
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	return b
}

// slogSafe reports whether jsonenc writes s as slog's JSONHandler does:
// they differ on \b and \f only.
func slogSafe(s string) bool { return !strings.ContainsAny(s, "\b\f") }
