package openai

import (
	"strings"

	"google.golang.org/genai"
)

// jsonSchema converts Gemini's Schema (an OpenAPI 3.0 subset with upper-case
// type names and "nullable") to JSON Schema. Gemini-only keys
// (propertyOrdering, example) are dropped.
func jsonSchema(s *genai.Schema) map[string]any {
	if s == nil {
		return nil
	}
	out := map[string]any{}
	if t := strings.ToLower(string(s.Type)); t != "" && s.Type != genai.TypeUnspecified {
		if s.Nullable != nil && *s.Nullable {
			out["type"] = []any{t, "null"}
		} else {
			out["type"] = t
		}
	}
	set := func(key string, v any, present bool) {
		if present {
			out[key] = v
		}
	}
	set("title", s.Title, s.Title != "")
	set("description", s.Description, s.Description != "")
	set("format", s.Format, s.Format != "")
	set("pattern", s.Pattern, s.Pattern != "")
	set("default", s.Default, s.Default != nil)
	if len(s.Enum) > 0 {
		enum := make([]any, len(s.Enum))
		for i, e := range s.Enum {
			enum[i] = e
		}
		out["enum"] = enum
	}
	for key, v := range map[string]*float64{"minimum": s.Minimum, "maximum": s.Maximum} {
		set(key, deref(v), v != nil)
	}
	for key, v := range map[string]*int64{
		"minItems": s.MinItems, "maxItems": s.MaxItems,
		"minLength": s.MinLength, "maxLength": s.MaxLength,
		"minProperties": s.MinProperties, "maxProperties": s.MaxProperties,
	} {
		set(key, deref(v), v != nil)
	}
	if s.Items != nil {
		out["items"] = jsonSchema(s.Items)
	}
	if s.Properties != nil {
		props := make(map[string]any, len(s.Properties))
		for name, p := range s.Properties {
			props[name] = jsonSchema(p)
		}
		out["properties"] = props
	}
	if len(s.Required) > 0 {
		req := make([]any, len(s.Required))
		for i, r := range s.Required {
			req[i] = r
		}
		out["required"] = req
	}
	if len(s.AnyOf) > 0 {
		alts := make([]any, len(s.AnyOf))
		for i, a := range s.AnyOf {
			alts[i] = jsonSchema(a)
		}
		out["anyOf"] = alts
	}
	return out
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
