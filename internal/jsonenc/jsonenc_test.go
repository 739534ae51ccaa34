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

// FuzzAppendAny writes what encoding/json decodes into an `any`, and the
// other values it is given, as json.Marshal does (its error too).
func FuzzAppendAny(f *testing.F) {
	for _, s := range []string{`null`, `{"b":[1,2.5,-0,1e21,1e-7,"<x>",true,null,{}],"a":{"z":"\u2028","y":[]},"":"e","é":1}`,
		`[[],{},"",0]`, `"s"`, `12345678901234567890`, `{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17}`} {
		f.Add([]byte(s))
	}
	check := func(t *testing.T, v any) {
		t.Helper()
		want, werr := json.Marshal(v)
		got, err := AppendAny([]byte("x"), v)
		if (err == nil) != (werr == nil) || (err == nil && string(got) != "x"+string(want)) {
			t.Errorf("AppendAny(%#v) = %s, %v; json.Marshal: %s, %v", v, got, err, want, werr)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			check(t, v)
		}
	})
}

// TestAppendAnyOtherValues: values no decoder makes (ints, other types,
// floats without JSON) come out as json.Marshal writes them, or fail as it
// fails.
func TestAppendAnyOtherValues(t *testing.T) {
	for _, v := range []any{
		int(-7), int64(math.MaxInt64), int32(math.MinInt32), float32(0.1), uint8(3), map[string]any{"n": math.NaN()},
		[]any{math.Inf(1)}, map[string]string{"b": "<", "a": ">"}, json.RawMessage(`{"z": 1, "a" : [ ] }`), json.Number("1.50"),
		[]any(nil), map[string]any(nil), map[string]any{"x": []any(nil), "y": map[string]any(nil), "z": struct{ A int }{1}},
	} {
		want, werr := json.Marshal(v)
		got, err := AppendAny(nil, v)
		if (err == nil) != (werr == nil) || (err == nil && string(got) != string(want)) {
			t.Errorf("AppendAny(%#v) = %s, %v; json.Marshal: %s, %v", v, got, err, want, werr)
		}
	}
}
