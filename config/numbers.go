package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fractions reports every number written with a fraction where the config
// wants a whole one: the YAML decoder would silently truncate it
// (`interval: 1.5` decodes to 1). n is the document's node, t the type it
// decodes into; the errors name the key path and line, as the decoder's
// own errors do after withKeyPath.
func fractions(n *yaml.Node, t reflect.Type) []error {
	var errs []error
	walkNumbers(n, t, "", &errs)
	return errs
}

func walkNumbers(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	if n == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkNumbers(c, t, path, errs)
		}
		return
	case yaml.AliasNode:
		walkNumbers(n.Alias, t, path, errs)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if ft, ok := fields[n.Content[i].Value]; ok {
				walkNumbers(n.Content[i+1], ft, joinKey(path, n.Content[i].Value), errs)
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkNumbers(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value), errs)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			walkNumbers(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
			return
		}
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && f == math.Trunc(f) {
			return // 2.0 and 1e3 are whole
		}
		*errs = append(*errs, fmt.Errorf("%s (line %d): %s is not a whole number", path, n.Line, n.Value))
	}
}

// yamlFields maps the YAML keys of struct t to their fields' types,
// inlined structs' keys included.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range yamlFields(ft) {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
