// Package openapitoolset turns an OpenAPI 3 document on disk into tools:
// one per operation, named by its operationId (or method_path), whose
// arguments are the operation's path, query and header parameters and the
// properties of its JSON request body. A call is one HTTP request to the
// configured base URL with the configured headers (authorization, ...);
// the JSON reply is the result, and anything else (a non-2xx status, a
// reply that is not JSON, a timeout) an error the model sees as
// {"error": ...}. The document is read with kin-openapi
// (github.com/getkin/kin-openapi); references to other files are followed
// on disk only, never over the network.
package openapitoolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/tools/httptool"
)

// Config configures a Toolset. Zero fields mean the defaults.
type Config struct {
	// Name identifies the toolset (default: the document's title).
	Name string
	// Spec is the path of the OpenAPI 3 document (YAML or JSON).
	Spec string
	// BaseURL is where the operations are called (default: the document's
	// first server, which must then be an absolute URL).
	BaseURL string
	// Headers are sent with every call (authorization, API keys).
	Headers map[string]string
	// Timeout bounds one call (default 30s).
	Timeout time.Duration
	// MaxResponseBytes caps a reply (default 1 MiB).
	MaxResponseBytes int64
	// Client sends the requests (default: a client of its own). Its
	// redirect policy is replaced: redirects stay on the base URL's host.
	Client *http.Client
}

// Toolset is the operations of one document. It never changes after New
// and is safe for concurrent use.
type Toolset struct {
	name  string
	tools []agentcore.Tool
}

var _ agentcore.Toolset = (*Toolset)(nil)

// New reads and validates the document and makes its tools. Error messages
// start with the config key at fault (spec, base_url, ...).
func New(cfg Config) (*Toolset, error) {
	if cfg.Spec == "" {
		return nil, errors.New("spec: required")
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = true
	loader.ReadFromURIFunc = func(l *openapi3.Loader, u *url.URL) ([]byte, error) {
		if (u.Scheme != "" && u.Scheme != "file") || u.Host != "" {
			return nil, fmt.Errorf("reference %s: only files on disk are read", u)
		}
		return openapi3.ReadFromFile(l, u)
	}
	doc, err := loader.LoadFromFile(cfg.Spec)
	if err != nil {
		return nil, fmt.Errorf("spec: reading %s: %w", cfg.Spec, err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, fmt.Errorf("spec: %s is not an OpenAPI 3 document (openapi: %q)", cfg.Spec, doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("spec: %s is not valid: %w", cfg.Spec, err)
	}
	base := cfg.BaseURL
	if base == "" {
		base = serverURL(doc)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if cfg.BaseURL == "" {
			return nil, fmt.Errorf("base_url: required, %s names no absolute server URL", cfg.Spec)
		}
		return nil, fmt.Errorf("base_url: must be an absolute http(s) URL, got %q", cfg.BaseURL)
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("timeout: must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = httptool.DefaultTimeout
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = httptool.DefaultMaxResponseBytes
	}
	name := cfg.Name
	if name == "" && doc.Info != nil {
		name = doc.Info.Title
	}
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.RawPath, "/")
	u.Fragment, u.RawFragment = "", ""
	caller := &caller{base: u, headers: cfg.Headers, timeout: cfg.Timeout,
		limit: cfg.MaxResponseBytes, client: httptool.NewClient(cfg.Client)}
	ts := &Toolset{name: name}
	used := map[string]bool{}
	paths := doc.Paths.Keys()
	sort.Strings(paths)
	for _, p := range paths {
		item := doc.Paths.Value(p)
		ops := item.Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			t, err := newTool(caller, p, m, item, ops[m], used)
			if err != nil {
				return nil, fmt.Errorf("spec: %s %s: %w", m, p, err)
			}
			if t != nil {
				ts.tools = append(ts.tools, t)
			}
		}
	}
	if len(ts.tools) == 0 {
		return nil, fmt.Errorf("spec: %s has no operation that can be a tool", cfg.Spec)
	}
	return ts, nil
}

// Name implements agentcore.Toolset.
func (t *Toolset) Name() string { return t.name }

// Tools implements agentcore.Toolset.
func (t *Toolset) Tools(context.Context, *agentcore.ReadonlyContext) ([]agentcore.Tool, error) {
	return slices.Clone(t.tools), nil
}

// serverURL is the document's first server with its variables at their
// defaults.
func serverURL(doc *openapi3.T) string {
	if len(doc.Servers) == 0 || doc.Servers[0] == nil {
		return ""
	}
	s := doc.Servers[0]
	u := s.URL
	for k, v := range s.Variables {
		if v != nil {
			u = strings.ReplaceAll(u, "{"+k+"}", v.Default)
		}
	}
	return u
}

var (
	invalidChars = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)
	// reservedHeaders are never parameters (OpenAPI says to ignore them).
	reservedHeaders = []string{"accept", "content-type", "authorization"}
)

func unique(name string, used map[string]bool) string {
	n := name
	for i := 2; used[n]; i++ {
		suffix := fmt.Sprintf("_%d", i)
		n = name[:min(len(name), 64-len(suffix))] + suffix
	}
	used[n] = true
	return n
}

// toolName is the operationId, or method_path, made a valid function
// name.
func toolName(opID, method, p string) string {
	clean := func(s string) string { return strings.Trim(invalidChars.ReplaceAllString(s, "_"), "_") }
	n := clean(opID)
	if n == "" {
		n = strings.ToLower(method)
		if rest := clean(p); rest != "" {
			n += "_" + rest
		}
	}
	return n[:min(len(n), 64)]
}

// arg maps one tool argument to where it goes in the request.
type arg struct {
	in   string // path, query, header, body (one body property) or bodyAll
	name string // the parameter or body property name
}

// tool is one operation.
type tool struct {
	agentcore.DeclaredTool
	c        *caller
	method   string
	path     string
	args     map[string]arg // by argument name
	required []string
	bodyJSON bool
}

var _ agentcore.CallableTool = (*tool)(nil)

// newTool makes the tool for one operation, named uniquely among used;
// nil when the operation cannot be one (a required body that is not JSON).
func newTool(c *caller, p, method string, item *openapi3.PathItem, op *openapi3.Operation, used map[string]bool) (*tool, error) {
	t := &tool{c: c, method: method, path: p, args: map[string]arg{}}
	desc := strings.TrimSpace(strings.Join(nonEmpty(op.Summary, op.Description), "\n\n"))
	if desc == "" {
		desc = method + " " + p
	}
	props := map[string]any{}
	add := func(argName string, a arg, schema map[string]any, required bool) {
		if _, dup := t.args[argName]; dup {
			argName = a.name + "_" + a.in
		}
		t.args[argName] = a
		props[argName] = schema
		if required {
			t.required = append(t.required, argName)
		}
	}
	// Operation parameters override path-item ones of the same name and
	// location.
	params := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			key := ref.Value.In + ":" + ref.Value.Name
			if _, seen := params[key]; !seen {
				order = append(order, key)
			}
			params[key] = ref.Value
		}
	}
	for _, key := range order {
		prm := params[key]
		if prm.In == openapi3.ParameterInCookie ||
			(prm.In == openapi3.ParameterInHeader && slices.Contains(reservedHeaders, strings.ToLower(prm.Name))) {
			continue
		}
		s := paramSchema(prm)
		if prm.Description != "" {
			s["description"] = prm.Description
		}
		add(prm.Name, arg{in: prm.In, name: prm.Name}, s, prm.Required || prm.In == openapi3.ParameterInPath)
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		rb := op.RequestBody.Value
		mt := jsonMedia(rb.Content)
		if mt == nil {
			if rb.Required {
				return nil, nil
			}
		} else {
			t.bodyJSON = true
			body := map[string]any{"type": "object"}
			if mt.Schema != nil {
				body = convert(mt.Schema, 0)
			}
			flat := mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Type.Is("object") &&
				len(mt.Schema.Value.Properties) > 0 && len(mt.Schema.Value.AllOf)+len(mt.Schema.Value.AnyOf)+len(mt.Schema.Value.OneOf) == 0
			if flat {
				for _, k := range sortedKeys(mt.Schema.Value.Properties) {
					if _, taken := t.args[k]; taken {
						flat = false
					}
				}
			}
			if flat {
				bs := mt.Schema.Value
				for _, k := range sortedKeys(bs.Properties) {
					if ps := bs.Properties[k]; ps != nil && ps.Value != nil && ps.Value.ReadOnly {
						continue // the server sets it; never sent
					}
					add(k, arg{in: "body", name: k}, convert(bs.Properties[k], 1), rb.Required && slices.Contains(bs.Required, k))
				}
			} else {
				if rb.Description != "" {
					body["description"] = rb.Description
				}
				add("body", arg{in: "bodyAll", name: "body"}, body, rb.Required)
			}
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(t.required) > 0 {
		schema["required"] = slices.Clone(t.required)
	}
	name := unique(toolName(op.OperationID, method, p), used)
	t.Decl = &genai.FunctionDeclaration{Name: name, Description: desc, ParametersJsonSchema: schema}
	return t, nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonMedia is the JSON media type of a body, if it has one.
func jsonMedia(c openapi3.Content) *openapi3.MediaType {
	if mt := c.Get("application/json"); mt != nil {
		return mt
	}
	for _, k := range sortedKeys(c) {
		if strings.HasSuffix(strings.SplitN(k, ";", 2)[0], "+json") {
			return c[k]
		}
	}
	return nil
}

func paramSchema(p *openapi3.Parameter) map[string]any {
	if p.Schema != nil {
		return convert(p.Schema, 0)
	}
	if mt := jsonMedia(p.Content); mt != nil && mt.Schema != nil {
		return convert(mt.Schema, 0)
	}
	return map[string]any{"type": "string"}
}

// maxDepth stops recursive schemas.
const maxDepth = 8

// convert renders an OpenAPI schema as a JSON Schema object, references
// inlined. Beyond maxDepth (recursive schemas) it gives up on structure.
func convert(ref *openapi3.SchemaRef, depth int) map[string]any {
	out := map[string]any{}
	if ref == nil || ref.Value == nil {
		return out
	}
	if depth > maxDepth {
		return map[string]any{"description": "(nested too deeply to describe)"}
	}
	s := ref.Value
	if s.Type != nil && len(*s.Type) > 0 {
		if ts := s.Type.Slice(); len(ts) == 1 {
			out["type"] = ts[0]
		} else {
			out["type"] = ts
		}
	}
	set := func(k string, v any, ok bool) {
		if ok {
			out[k] = v
		}
	}
	set("title", s.Title, s.Title != "")
	set("description", s.Description, s.Description != "")
	set("format", s.Format, s.Format != "")
	set("enum", s.Enum, len(s.Enum) > 0)
	set("const", s.Const, s.Const != nil)
	set("default", s.Default, s.Default != nil)
	set("pattern", s.Pattern, s.Pattern != "")
	set("minimum", deref(s.Min), s.Min != nil)
	set("maximum", deref(s.Max), s.Max != nil)
	set("minLength", s.MinLength, s.MinLength > 0)
	set("maxLength", deref(s.MaxLength), s.MaxLength != nil)
	set("minItems", s.MinItems, s.MinItems > 0)
	set("maxItems", deref(s.MaxItems), s.MaxItems != nil)
	set("required", s.Required, len(s.Required) > 0)
	if s.Items != nil {
		out["items"] = convert(s.Items, depth+1)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for k, v := range s.Properties {
			if v != nil && v.Value != nil && v.Value.ReadOnly {
				continue // the server sets it; never sent
			}
			props[k] = convert(v, depth+1)
		}
		out["properties"] = props
		var req []string
		for _, r := range s.Required {
			if _, ok := props[r]; ok {
				req = append(req, r)
			}
		}
		if len(req) > 0 {
			out["required"] = req
		} else {
			delete(out, "required")
		}
	}
	if ap := s.AdditionalProperties; ap.Has != nil {
		out["additionalProperties"] = *ap.Has
	} else if ap.Schema != nil {
		out["additionalProperties"] = convert(ap.Schema, depth+1)
	}
	for k, list := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
		if len(list) == 0 {
			continue
		}
		var items []any
		for _, r := range list {
			items = append(items, convert(r, depth+1))
		}
		out[k] = items
	}
	return out
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// Run implements agentcore.CallableTool: one request for the operation.
func (t *tool) Run(ctx context.Context, tc *agentcore.ToolContext, args map[string]any) (map[string]any, error) {
	args = tc.Redactor().Object(args)
	for _, r := range t.required {
		if _, ok := args[r]; !ok {
			return nil, fmt.Errorf("missing required argument %q", r)
		}
	}
	vals := map[string]string{}
	q := url.Values{}
	h := http.Header{}
	var body any
	bodyProps := map[string]any{}
	for _, k := range sortedKeys(args) {
		v := args[k]
		a, ok := t.args[k]
		if !ok {
			return nil, fmt.Errorf("unknown argument %q", k)
		}
		switch a.in {
		case openapi3.ParameterInPath:
			vals[a.name] = scalar(v)
		case openapi3.ParameterInQuery:
			if list, ok := v.([]any); ok {
				for _, x := range list {
					q.Add(a.name, scalar(x))
				}
			} else {
				q.Set(a.name, scalar(v))
			}
		case openapi3.ParameterInHeader:
			h.Set(a.name, scalar(v))
		case "body":
			bodyProps[a.name] = v
		case "bodyAll":
			body = v
		}
	}
	p, err := expandPath(t.path, vals)
	if err != nil {
		return nil, err
	}
	if len(bodyProps) > 0 {
		body = bodyProps
	}
	if body == nil && t.bodyJSON && slices.Contains(t.required, "body") {
		return nil, errors.New(`missing required argument "body"`)
	}
	return t.c.do(ctx, t.method, p, q, h, body)
}

// expandPath fills the path parameters of template, each value escaped
// (so '/', '?' and '#' stay inside their segment). A segment a value
// fills may not end up empty, "." or "..", which a server would read as
// another path than the template's.
func expandPath(template string, vals map[string]string) (string, error) {
	segs := strings.Split(template, "/")
	for i, seg := range segs {
		if !strings.Contains(seg, "{") {
			continue
		}
		for name, v := range vals {
			seg = strings.ReplaceAll(seg, "{"+name+"}", url.PathEscape(v))
		}
		if strings.Contains(seg, "{") {
			return "", fmt.Errorf("missing path parameter in %s", template)
		}
		switch percentDot(seg) {
		case "", ".", "..":
			return "", fmt.Errorf("path parameters may not make the segment %q of %s (empty, \".\" or \"..\")", seg, template)
		}
		segs[i] = seg
	}
	return strings.Join(segs, "/"), nil
}

// percentDot reads the escaped dots of a segment as dots, as a
// normalizing server does.
func percentDot(seg string) string {
	return strings.NewReplacer("%2E", ".", "%2e", ".").Replace(seg)
}

// scalar renders a parameter value: strings as they are, the rest as JSON.
func scalar(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// url is the base URL with the escaped path p added and the query
// parameters of q that the base URL does not pin.
func (c *caller) url(p string, q url.Values) string {
	u := *c.base
	query := u.RawQuery
	u.RawQuery = ""
	pinned, _ := url.ParseQuery(query)
	for k := range pinned {
		q.Del(k)
	}
	if len(q) > 0 {
		if query != "" {
			query += "&"
		}
		query += q.Encode()
	}
	target := u.String() + p
	if query != "" {
		target += "?" + query
	}
	return target
}

// caller sends the operations' requests to the base URL.
type caller struct {
	// base is the configured base URL without a trailing slash; its
	// query parameters are pinned.
	base    *url.URL
	headers map[string]string
	timeout time.Duration
	limit   int64
	client  *http.Client
}

func (c *caller) do(ctx context.Context, method, p string, q url.Values, h http.Header, body any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	target := c.url(p, q)
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("the body is not JSON: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, httptool.CallError(ctx, c.timeout, err)
	}
	defer resp.Body.Close()
	return httptool.ReadResult(ctx, c.timeout, resp, c.limit)
}
