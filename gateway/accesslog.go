package gateway

import (
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	b = append(b, `{"time":"`...)
	b, ok := appendTime(b, l.time)
	if !ok {
		return b, false // slog writes an error in its place
	}
	b = append(b, `","level":"INFO","msg":"request","method":`...)
	if b, ok = appendSlogString(b, l.method); !ok {
		return b, false
	}
	b = append(b, `,"route":`...)
	if b, ok = appendSlogString(b, l.route); !ok {
		return b, false
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"duration_ms":`...)
	b = appendMillis(b, l.ms)
	for _, a := range attrs {
		if a.Key == "" {
			return b, false
		}
		b = append(b, ',')
		if b, ok = appendSlogString(b, a.Key); !ok {
			return b, false
		}
		b = append(b, ':')
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			if b, ok = appendSlogString(b, v.String()); !ok {
				return b, false
			}
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

// appendTime appends t as time.RFC3339Nano formats it, when its year has
// four digits (else it reports that it cannot): the date, the time to the
// second and the zone from lastSecond, formatted once a second, and the
// fraction of the second.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	sec, loc := t.Unix(), t.Location()
	st := lastSecond.Load()
	if st == nil || st.unix != sec || st.loc != loc {
		st = &secondStamp{unix: sec, loc: loc}
		// Formatted as the line's times are; t's own, less its fraction.
		st.text = t.Truncate(time.Second).Round(0).AppendFormat(nil, time.RFC3339)
		y := t.Year()
		st.ok = y >= 0 && y < 10000 && len(st.text) > len("2006-01-02T15:04:05")
		lastSecond.Store(st)
	}
	if !st.ok {
		return b, false
	}
	const date = len("2006-01-02T15:04:05")
	b = append(b, st.text[:date]...)
	if ns := t.Nanosecond(); ns != 0 { // RFC3339Nano: 9 digits, less trailing zeros
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, st.text[date:]...), true
}

// secondStamp is one second of a location as time.RFC3339 formats it
// (text: the date and time, then the zone), and whether its year has four
// digits.
type secondStamp struct {
	unix int64
	loc  *time.Location
	text []byte
	ok   bool
}

// lastSecond is the second of the last access line; requests that end in
// the same second share it.
var lastSecond atomic.Pointer[secondStamp]

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

// appendSlogString appends s as a JSON string as slog's JSONHandler writes
// it, or reports that it cannot. A string of printable ASCII bytes but
// the quote and the backslash, as the line's are (ids, names, routes),
// is written as it is, in one pass; another through jsonenc, when it
// writes it as slog does.
func appendSlogString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			if !slogSafe(s) {
				return b, false
			}
			return jsonenc.AppendStringNoHTML(b, s), true
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// slogSafe reports whether jsonenc writes s as slog's JSONHandler does:
// they differ on \b and \f only.
func slogSafe(s string) bool { return !strings.ContainsAny(s, "\b\f") }
