package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/internal/jsonenc"
)

// slogAccessLine is the access line as slog writes it: the record through
// agentcore's log handler over a JSONHandler, attrs in ctx.
func slogAccessLine(t testing.TB, l accessLine, attrs []slog.Attr) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := agentcore.NewLogHandler(slog.NewJSONHandler(&buf, nil))
	ctx, set := agentcore.WithLogAttrSet(context.Background())
	set.Add(attrs...)
	if err := h.Handle(ctx, l.record()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkAccessLine compares the hand-written line with slog's, or checks
// that the line goes through slog when it must.
func checkAccessLine(t testing.TB, l accessLine, attrs []slog.Attr) {
	t.Helper()
	want := slogAccessLine(t, l, attrs)
	var got bytes.Buffer
	if !l.write(&got, attrs) {
		if got.Len() != 0 {
			t.Fatalf("a line that goes through slog was written: %q", got.Bytes())
		}
		return
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("access line\n got %q\nwant %q", got.Bytes(), want)
	}
}

var oddStrings = []string{"", "plain", "req_0123456789abcdef01234567", "with space", `quote"d`, `back\slash`,
	"<html>&amp;", "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f", "del\x7f ~", "\b", "\f", "é ü 漢字 🙂", "\u2028\u2029",
	"bad \xff utf8 \xc3", "/v1/chat/completions", "/v1/responses/:id", strings.Repeat("x", 200)}

func TestAccessLineAsSlogWritesIt(t *testing.T) {
	times := []time.Time{time.Date(2026, 11, 26, 20, 36, 28, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 5*3600+1800)),
		time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.Local), time.Now(),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}
	durations := []float64{0, 0.001, 0.5, 1.234, 12.345, 999.999, 123456.789, 1e-7, 3e21}
	kinds := []slog.Attr{slog.String("model", "pass"), slog.Int("n", -42), slog.Uint64("u", 42), slog.Bool("ok", true),
		slog.Duration("d", 1500*time.Millisecond), slog.Float64("f", 1.5), slog.Time("at", time.Unix(0, 0)),
		slog.Any("e", context.Canceled), slog.Group("g", slog.String("a", "b")), slog.String("", "empty key"),
		slog.Any("", nil), slog.String("request_id", "x"), slog.String("request_id", "dup")}
	var got bytes.Buffer
	if l := (accessLine{time: times[0], method: "POST", route: "/v1/chat/completions", status: 200, ms: 1.5}); !l.write(&got,
		[]slog.Attr{slog.String("request_id", "req_1"), slog.String("model", "pass"), slog.Int("n", 1)}) {
		t.Fatal("a request's usual line went through slog")
	}
	for _, tm := range times {
		for _, ms := range durations {
			for _, status := range []int{200, 404, 500, 0} {
				checkAccessLine(t, accessLine{time: tm, method: "POST", route: "/v1/chat/completions", status: status, ms: ms},
					[]slog.Attr{slog.String("request_id", "req_1"), slog.String("model", "pass")})
			}
		}
	}
	for _, s := range oddStrings {
		checkAccessLine(t, accessLine{time: times[0], method: s, route: "/r", status: 200, ms: 1}, nil)
		checkAccessLine(t, accessLine{time: times[0], method: "GET", route: s, status: 200, ms: 1}, nil)
		checkAccessLine(t, accessLine{time: times[0], method: "GET", route: "/r", status: 200, ms: 1},
			[]slog.Attr{slog.String("request_id", s)})
		checkAccessLine(t, accessLine{time: times[0], method: "GET", route: "/r", status: 200, ms: 1},
			[]slog.Attr{slog.String(s, "v")})
	}
	for _, a := range kinds {
		checkAccessLine(t, accessLine{time: times[0], method: "GET", route: "/r", status: 200, ms: 1},
			[]slog.Attr{slog.String("request_id", "r"), a})
	}
	// Random attribute lists, of the kinds above and odd strings.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		attrs := make([]slog.Attr, rng.IntN(8))
		for i := range attrs {
			if rng.IntN(3) == 0 {
				attrs[i] = kinds[rng.IntN(len(kinds))]
			} else {
				attrs[i] = slog.String(oddStrings[rng.IntN(len(oddStrings))], oddStrings[rng.IntN(len(oddStrings))])
			}
		}
		checkAccessLine(t, accessLine{time: times[rng.IntN(4)], method: oddStrings[rng.IntN(len(oddStrings))],
			route: oddStrings[rng.IntN(len(oddStrings))], status: rng.IntN(600), ms: float64(rng.IntN(1e7)) / 1000}, attrs)
	}
}

func FuzzAccessLine(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, s, 200, 1.5)
	}
	f.Fuzz(func(t *testing.T, method, id, key string, status int, ms float64) {
		if ms != ms || ms > 1e300 || ms < -1e300 {
			return // never NaN nor infinite: a measured duration
		}
		checkAccessLine(t, accessLine{time: time.Date(2026, 11, 26, 20, 36, 28, 123456789, time.UTC), method: method,
			route: "/v1/chat/completions", status: status, ms: ms},
			[]slog.Attr{slog.String("request_id", id), slog.String(key, method)})
	})
}

// BenchmarkAccessLine is the access line through slog (agentcore's handler
// over a JSONHandler) and written by hand, to io.Discard, with a request's
// usual attributes.
func BenchmarkAccessLine(b *testing.B) {
	l := accessLine{time: time.Now(), method: "POST", route: "/v1/chat/completions", status: 200, ms: 1.234}
	ctx, set := agentcore.WithLogAttrSet(context.Background())
	set.Add(slog.String("request_id", "req_0123456789abcdef01234567"), slog.String("model", "pass"),
		slog.String("session_id", "bench-1"), slog.String("invocation_id", "e-0123456789"), slog.String("agent", "pass"))
	b.Run("slog", func(b *testing.B) {
		h := agentcore.NewLogHandler(slog.NewJSONHandler(discard{}, nil))
		b.ReportAllocs()
		for b.Loop() {
			_ = h.Handle(ctx, l.record())
		}
	})
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.write(discard{}, agentcore.LogAttrs(ctx))
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestAppendMillis holds the access line's integer formatting of a
// duration in whole microseconds to the float formatting it stands for,
// and checks that other values are still formatted as floats.
func TestAppendMillis(t *testing.T) {
	check := func(ms float64) {
		t.Helper()
		if got, want := appendMillis(nil, ms), jsonenc.AppendFloat(nil, ms); !bytes.Equal(got, want) {
			t.Fatalf("appendMillis(%v) = %s, want %s", ms, got, want)
		}
	}
	for us := range int64(2e6) {
		check(float64(us) / 1000)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		check(float64(rng.Int64N(1e15)) / 1000)
		check(float64(rng.Int64N(1e16)) / 1000) // beyond the integer path too
	}
	for _, ms := range []float64{1e-7, 0.0005, 1.0001, 3e21, 1e12 - 0.001, 1e12, -0.001, -1, 123.4567} {
		check(ms)
	}
}
