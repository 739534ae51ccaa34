package agentcore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/genai"
)

// FuzzRedactParts builds a random tree of parts from the fuzzer's bytes:
// every field of genai.Part and of what it points to, found by
// reflection (so a field a new genai adds is filled too), holds filler
// with the hidden value somewhere in it, raw, percent-encoded in URIs, or
// base64- or percent-encoded inside data: URIs. The redacted copy may hold
// the value in no field, decoded in each of those ways; the input is not
// changed. Identifiers (ids, function names), MIME types and thought
// signatures are not filled: they are not redacted (see Redactor).
func FuzzRedactParts(f *testing.F) {
	f.Fuzz(func(t *testing.T, tree []byte, value string) {
		if len(value) < 2 || !utf8.ValidString(value) {
			t.Skip()
		}
		g := &partGen{data: tree, value: value}
		var parts []*genai.Part
		for n := 1 + int(g.byte()%4); n > 0; n-- {
			p := &genai.Part{}
			g.fill(reflect.ValueOf(p).Elem(), 0)
			parts = append(parts, p)
		}
		in := &genai.Content{Role: "user", Parts: parts}
		before, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		r := newRedactor([]hiddenValue{{value: value, name: "userId"}})
		out := r.Content(in)
		if after, _ := json.Marshal(in); !bytes.Equal(before, after) {
			t.Fatalf("the input changed:\n%s\n%s", before, after)
		}
		for _, p := range out.Parts {
			if where := leak(reflect.ValueOf(p), "part", value); where != "" {
				got, _ := json.Marshal(p)
				t.Fatalf("value %q survives in %s: %s", value, where, got)
			}
		}
	})
}

// unredacted names the fields the redactor leaves as they are.
func unredacted(field string) bool {
	switch field {
	case "ID", "Name", "MIMEType", "ThoughtSignature":
		return true
	}
	return false
}

// partGen fills parts from fuzz bytes.
type partGen struct {
	data  []byte
	value string
}

func (g *partGen) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

// filler is up to 7 bytes of printable ASCII.
func (g *partGen) filler() string {
	var b strings.Builder
	for n := g.byte() % 8; n > 0; n-- {
		b.WriteByte(' ' + g.byte()%95)
	}
	return b.String()
}

// withValue is filler with s put in it somewhere, half the time.
func (g *partGen) withValue(s string) string {
	a, b := g.filler(), g.filler()
	if g.byte()%2 == 0 {
		return a + b
	}
	return a + s + b
}

func (g *partGen) str(field string) string {
	if field != "FileURI" {
		return g.withValue(g.value)
	}
	body := g.withValue(g.value)
	switch g.byte() % 6 {
	case 0:
		return "https://files.example/" + url.PathEscape(body) + ".png"
	case 1:
		return "https://files.example/a.png?q=" + url.QueryEscape(body) + "#" + url.PathEscape(g.withValue(g.value))
	case 2:
		return "https://" + url.UserPassword(g.withValue(g.value), g.withValue(g.value)).String() + "@files.example/a%2F" + body
	case 3:
		return "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(body))
	case 4:
		return "data:image/png;base64," + base64.RawURLEncoding.EncodeToString([]byte(body))
	default:
		return "data:text/plain," + url.PathEscape(body)
	}
}

var fuzzMIMEs = []string{"text/plain", "application/json", "image/png", "application/pdf", "", "text/csv; charset=utf-8", "application/ld+json"}

func (g *partGen) object(depth int) map[string]any {
	m := map[string]any{g.withValue(g.value): g.withValue(g.value), "n": float64(g.byte())}
	if depth < 2 && g.byte()%2 == 0 {
		m["nested"] = []any{g.object(depth + 1), g.withValue(g.value)}
	}
	return m
}

var (
	stringType = reflect.TypeFor[string]()
	objectType = reflect.TypeFor[map[string]any]()
	bytesType  = reflect.TypeFor[[]byte]()
)

// fill sets the fields of struct v: strings, bytes, objects, and the
// structs they point to.
func (g *partGen) fill(v reflect.Value, depth int) {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if sf.Name == "MIMEType" {
			f.SetString(fuzzMIMEs[int(g.byte())%len(fuzzMIMEs)])
			continue
		}
		if unredacted(sf.Name) || g.byte()%3 == 0 {
			continue
		}
		switch {
		case f.Type() == stringType:
			f.SetString(g.str(sf.Name))
		case f.Type() == bytesType:
			f.SetBytes([]byte(g.withValue(g.value)))
		case f.Type() == objectType:
			f.Set(reflect.ValueOf(g.object(0)))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct && depth < 3:
			p := reflect.New(f.Type().Elem())
			g.fill(p.Elem(), depth+1)
			f.Set(p)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Pointer &&
			f.Type().Elem().Elem().Kind() == reflect.Struct && depth < 3:
			n := int(g.byte() % 3)
			s := reflect.MakeSlice(f.Type(), n, n)
			for j := range n {
				p := reflect.New(f.Type().Elem().Elem())
				g.fill(p.Elem(), depth+1)
				s.Index(j).Set(p)
			}
			f.Set(s)
		}
	}
}

// leak names the first place under v that holds value, "" if none:
// strings as they are, URIs also percent-decoded and data: URIs decoded.
func leak(v reflect.Value, path, value string) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return leak(v.Elem(), path, value)
	case reflect.Struct:
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if unredacted(name) {
				continue
			}
			if w := leak(v.Field(i), path+"."+name, value); w != "" {
				return w
			}
			if name == "FileURI" {
				if w := uriLeak(v.Field(i).String(), value); w != "" {
					return path + ".FileURI " + w
				}
			}
		}
	case reflect.String:
		if strings.Contains(v.String(), value) {
			return path
		}
	case reflect.Slice:
		if v.Type() == bytesType {
			if bytes.Contains(v.Bytes(), []byte(value)) {
				return path
			}
			return ""
		}
		for i := range v.Len() {
			if w := leak(v.Index(i), path, value); w != "" {
				return w
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if w := leak(k, path+"[key]", value); w != "" {
				return w
			}
			if w := leak(v.MapIndex(k), path+"["+k.String()+"]", value); w != "" {
				return w
			}
		}
	}
	return ""
}

func uriLeak(uri, value string) string {
	for _, plus := range []bool{false, true} {
		if strings.Contains(percentDecode(uri, plus), value) {
			return "percent-decoded"
		}
	}
	if rest, ok := strings.CutPrefix(uri, "data:"); ok {
		meta, payload, _ := strings.Cut(rest, ",")
		data := []byte(percentDecode(payload, false))
		if strings.HasSuffix(meta, ";base64") {
			data, _ = decodeBase64(payload)
		}
		if bytes.Contains(data, []byte(value)) {
			return "decoded data"
		}
	}
	return ""
}
