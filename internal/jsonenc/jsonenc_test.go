package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// FuzzAppendString writes any string as encoding/json does, with HTML
// escaping (json.Marshal) and without (an Encoder after SetEscapeHTML(false)).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\x00\u2028\xff", `"\`, "tab\tand\bbell\f日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := AppendStringNoHTML([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendStringNoHTML(%q) = %s, want x%s", s, got, want)
		}
	})
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1764160000.123456, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21,
		-1e21, 123456789e15, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		want, _ := json.Marshal(v)
		if got := AppendFloat([]byte("x"), v); string(got) != "x"+string(want) {
			t.Errorf("AppendFloat(%v) = %s, want x%s", v, got, want)
		}
	})
}
