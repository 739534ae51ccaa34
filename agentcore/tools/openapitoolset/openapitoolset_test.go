package openapitoolset_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/tools/internal/tooltest"
	"github.com/agentgate/agentgate/agentcore/tools/openapitoolset"
)

// petstore is a recording fake of the petstore API.
type petstore struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
	auth []string
}

func newPetstore(t *testing.T) *petstore {
	t.Helper()
	p := &petstore{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		line := r.Method + " " + r.URL.RequestURI()
		if tr := r.Header.Get("X-Trace"); tr != "" {
			line += " X-Trace=" + tr
		}
		if len(body) > 0 {
			line += " " + string(body)
		}
		p.mu.Lock()
		p.seen = append(p.seen, line)
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/pets":
			_, _ = io.WriteString(w, `[{"name": "Tom", "species": "cat"}]`)
		case r.Method == "POST" && r.URL.Path == "/v1/pets":
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id": 7, "created": true}`)
		case r.Method == "GET" && r.URL.Path == "/v1/pets/7":
			_, _ = io.WriteString(w, `{"id": 7, "name": "Rex"}`)
		case r.Method == "DELETE":
			w.WriteHeader(204)
		case r.URL.Path == "/v1/pets/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		default:
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"message": "no such pet"}`)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *petstore) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

func load(t *testing.T, cfg openapitoolset.Config) (*openapitoolset.Toolset, map[string]agentcore.CallableTool) {
	t.Helper()
	ts, err := openapitoolset.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ts.Tools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]agentcore.CallableTool{}
	for _, tl := range tools {
		byName[tl.Name()] = tl.(agentcore.CallableTool)
	}
	return ts, byName
}

// TestOperationsBecomeTools: one tool per operation, named by operationId
// or method_path; parameters and JSON body properties in the schema.
func TestOperationsBecomeTools(t *testing.T) {
	ts, tools := load(t, openapitoolset.Config{Spec: "testdata/petstore.yaml", BaseURL: "http://api.invalid/v1"})
	if ts.Name() != "Petstore" {
		t.Errorf("name = %q", ts.Name())
	}
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	// uploadPhoto has only a PNG body: it cannot be a tool.
	if diff := cmp.Diff([]string{"createPet", "delete_pet", "get_pets_petId", "listPets"}, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	tests := map[string]struct {
		desc   string
		schema string
	}{
		"listPets": {desc: "List pets\n\nLists the pets of the store, optionally by species.", schema: `{
			"type": "object",
			"properties": {
				"species": {"type": "string", "enum": ["cat", "dog"]},
				"limit": {"type": "integer", "maximum": 100, "description": "How many at most."},
				"tags": {"type": "array", "items": {"type": "string"}},
				"X-Trace": {"type": "string"}
			}}`},
		"createPet": {desc: "Add a pet", schema: `{
			"type": "object",
			"properties": {
				"name": {"type": "string", "description": "The pet's name."},
				"species": {"type": "string", "enum": ["cat", "dog"]},
				"owner": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}}
			},
			"required": ["name"]}`},
		"get_pets_petId": {desc: "Show one pet", schema: `{
			"type": "object",
			"properties": {"petId": {"type": "string"}},
			"required": ["petId"]}`},
		"delete_pet": {desc: "DELETE /pets/{petId}", schema: `{
			"type": "object",
			"properties": {"petId": {"type": "string"}},
			"required": ["petId"]}`},
	}
	for name, tt := range tests {
		d := tools[name].Declaration()
		var want any
		if err := json.Unmarshal([]byte(tt.schema), &want); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(d.ParametersJsonSchema)
		var got any
		_ = json.Unmarshal(raw, &got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s schema (-want +got):\n%s", name, diff)
		}
		if d.Description != tt.desc || d.Name != name {
			t.Errorf("%s: declaration name %q, description %q", name, d.Name, d.Description)
		}
	}
}

// TestCalledThroughAgent: three operations called by the model, each one
// HTTP request against the base URL with the configured headers.
func TestCalledThroughAgent(t *testing.T) {
	p := newPetstore(t)
	ts, err := openapitoolset.New(openapitoolset.Config{Spec: "testdata/petstore.yaml", BaseURL: p.srv.URL + "/v1",
		Headers: map[string]string{"Authorization": "Bearer pet-key"}})
	if err != nil {
		t.Fatal(err)
	}
	h := tooltest.New(t, tooltest.Config{Toolsets: []agentcore.Toolset{ts}, Rules: []scripted.Rule{
		{Agent: "agent", AfterTool: "listPets", Reply: "pets: {response.result}"},
		{Agent: "agent", AfterTool: "createPet", Reply: "created {response.id}"},
		{Agent: "agent", AfterTool: "get_pets_petId", Reply: "got {response.name}"},
		{Agent: "agent", AfterTool: "delete_pet", Reply: "deleted: {response}"},
		{Agent: "agent", Match: "list", Call: &scripted.Call{Name: "listPets",
			Args: map[string]any{"species": "cat", "limit": 5, "tags": []any{"a", "b"}, "X-Trace": "t-1"}}},
		{Agent: "agent", Match: "create", Call: &scripted.Call{Name: "createPet",
			Args: map[string]any{"name": "Rex", "owner": map[string]any{"email": "a@b.c"}}}},
		{Agent: "agent", Match: "show", Call: &scripted.Call{Name: "get_pets_petId", Args: map[string]any{"petId": "7"}}},
		{Agent: "agent", Match: "delete", Call: &scripted.Call{Name: "delete_pet", Args: map[string]any{"petId": "a/b"}}},
	}})
	var finals []string
	for _, text := range []string{"list", "create", "show", "delete"} {
		finals = append(finals, tooltest.FinalText(h.Turn(text, nil)))
	}
	wantFinals := []string{`pets: [{"name":"Tom","species":"cat"}]`, "created 7", "got Rex", `deleted: {"status":204}`}
	if diff := cmp.Diff(wantFinals, finals); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	wantReqs := []string{
		"GET /v1/pets?limit=5&species=cat&tags=a&tags=b X-Trace=t-1",
		`POST /v1/pets {"name":"Rex","owner":{"email":"a@b.c"}}`,
		"GET /v1/pets/7",
		"DELETE /v1/pets/a%2Fb",
	}
	if diff := cmp.Diff(wantReqs, p.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	for _, a := range p.auth {
		if a != "Bearer pet-key" {
			t.Errorf("Authorization = %q", a)
		}
	}
}

func TestCallErrors(t *testing.T) {
	p := newPetstore(t)
	// Only the slow call gets the short timeout: on a loaded machine a quick
	// answer can take longer than 50ms too.
	_, tools := load(t, openapitoolset.Config{Spec: "testdata/petstore.yaml", BaseURL: p.srv.URL + "/v1", Timeout: time.Minute})
	_, short := load(t, openapitoolset.Config{Spec: "testdata/petstore.yaml", BaseURL: p.srv.URL + "/v1", Timeout: 50 * time.Millisecond})
	tests := []struct {
		tool    string
		args    map[string]any
		wantErr string
		short   bool
	}{
		{"get_pets_petId", map[string]any{"petId": "404"}, `the endpoint answered HTTP 404 Not Found: {"message": "no such pet"}`, false},
		{"get_pets_petId", map[string]any{}, `missing required argument "petId"`, false},
		{"listPets", map[string]any{"color": "red"}, `unknown argument "color"`, false},
		{"createPet", map[string]any{"species": "cat"}, `missing required argument "name"`, false},
		{"get_pets_petId", map[string]any{"petId": "slow"}, "the request timed out after 50ms", true},
	}
	for _, tt := range tests {
		set := tools
		if tt.short {
			set = short
		}
		_, err := set[tt.tool].Run(context.Background(), nil, tt.args)
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("%s(%v): err = %v, want %q", tt.tool, tt.args, err, tt.wantErr)
		}
	}
}

// TestBodyNotFlattened: a body property that collides with a parameter
// keeps the body whole under "body".
func TestBodyNotFlattened(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r.URL.Path+" "+string(body))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	_, tools := load(t, openapitoolset.Config{Spec: "testdata/arraybody.json", BaseURL: srv.URL})
	d := tools["bulk"].Declaration()
	props := d.ParametersJsonSchema.(map[string]any)["properties"].(map[string]any)
	if _, ok := props["body"]; !ok {
		t.Fatalf("no body argument: %v", props)
	}
	if _, err := tools["bulk"].Run(context.Background(), nil, map[string]any{"id": 3, "body": map[string]any{"id": "x"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`/items/3 {"id":"x"}`}, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		cfg  openapitoolset.Config
		want string
	}{
		{openapitoolset.Config{}, "spec: required"},
		{openapitoolset.Config{Spec: "testdata/missing.yaml"}, "spec: reading testdata/missing.yaml"},
		{openapitoolset.Config{Spec: "testdata/arraybody.json"}, "base_url: required, testdata/arraybody.json names no absolute server URL"},
		{openapitoolset.Config{Spec: "testdata/arraybody.json", BaseURL: "ftp://x"}, `base_url: must be an absolute http(s) URL, got "ftp://x"`},
		{openapitoolset.Config{Spec: "testdata/remote_ref.yaml", BaseURL: "http://x"}, "only files on disk are read"},
	}
	for _, tt := range tests {
		_, err := openapitoolset.New(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want it to contain %q", tt.cfg, err, tt.want)
		}
	}
}

// TestServerURLDefault: without base_url the document's first server is
// used, its variables at their defaults.
func TestServerURLDefault(t *testing.T) {
	p := newPetstore(t)
	doc, err := os.ReadFile("testdata/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "petstore.yaml")
	host := strings.TrimPrefix(p.srv.URL, "http://")
	if err := os.WriteFile(path, []byte(strings.Replace(string(doc), "petstore.invalid", host, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, tools := load(t, openapitoolset.Config{Spec: path})
	if _, err := tools["get_pets_petId"].Run(context.Background(), nil, map[string]any{"petId": "7"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GET /v1/pets/7"}, p.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestCallsStayWhereConfigPutThem: a path parameter stays inside its
// segment ('/', '?' and '#' escaped) and may not make it ".", ".." or
// empty (the call fails, nothing is sent); a query parameter the base URL
// pins keeps its configured value whatever the model writes.
func TestCallsStayWhereConfigPutThem(t *testing.T) {
	p := newPetstore(t)
	_, tools := load(t, openapitoolset.Config{Spec: "testdata/petstore.yaml", BaseURL: p.srv.URL + "/v1?species=cat&key=k1"})
	for _, bad := range []string{"..", ".", ""} {
		if _, err := tools["get_pets_petId"].Run(context.Background(), nil, map[string]any{"petId": bad}); err == nil {
			t.Errorf("petId %q: the call was made", bad)
		}
	}
	for _, petID := range []string{"7", "a/../../admin", "7?admin=1#x", "%2E%2E"} {
		_, _ = tools["get_pets_petId"].Run(context.Background(), nil, map[string]any{"petId": petID})
	}
	_, _ = tools["listPets"].Run(context.Background(), nil, map[string]any{"species": "dog", "limit": 3})
	want := []string{
		"GET /v1/pets/7?species=cat&key=k1",
		"GET /v1/pets/a%2F..%2F..%2Fadmin?species=cat&key=k1",
		"GET /v1/pets/7%3Fadmin=1%23x?species=cat&key=k1",
		"GET /v1/pets/%252E%252E?species=cat&key=k1",
		"GET /v1/pets?species=cat&key=k1&limit=3",
	}
	if diff := cmp.Diff(want, p.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
