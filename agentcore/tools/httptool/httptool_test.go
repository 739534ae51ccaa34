package httptool_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/tools/httptool"
	"github.com/agentgate/agentgate/agentcore/tools/internal/tooltest"
)

// recorded is one request an upstream received.
type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// upstream is an httptest server that records requests and answers with
// handler.
func upstream(t *testing.T, handler http.HandlerFunc) (*httptest.Server, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)})
		mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), got...)
	}
}

func jsonReply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func mustTool(t *testing.T, cfg httptool.Config) *httptool.Tool {
	t.Helper()
	tl, err := httptool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestThroughAgent: the model calls the tool; the arguments arrive as the
// JSON body, the parameters the agent declares (hidden ones too) as
// headers, the configured headers as given, and the reply reaches the
// model.
func TestThroughAgent(t *testing.T) {
	srv, got := upstream(t, jsonReply(200, `{"order": "A-17", "status": "shipped"}`))
	tl := mustTool(t, httptool.Config{Name: "order_status", Description: "Looks up an order.", URL: srv.URL + "/orders/status?v=2",
		Headers:    map[string]string{"Authorization": "Bearer s3cret"},
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"order": map[string]any{"type": "string"}}}})
	h := tooltest.New(t, tooltest.Config{Tools: []agentcore.Tool{tl}, Rules: []scripted.Rule{
		{Agent: "agent", AfterTool: "order_status", Reply: "Order {response.order} is {response.status}."},
		{Agent: "agent", Call: &scripted.Call{Name: "order_status", Args: map[string]any{"order": "A-17", "verbose": true}}},
	}, Params: []agentcore.ParamSpec{{Name: "userId", HideFromModel: true}, {Name: "plan"}, {Name: "seats"}, {Name: "note"}}})
	params := agentcore.NewParams(map[string]agentcore.Param{
		"userId":     {Value: "u-42", SendToModel: false, Trusted: true},
		"plan":       {Value: map[string]any{"tier": "gold"}, SendToModel: true},
		"seats":      {Value: 3, SendToModel: true},
		"note":       {Value: "two\nlines", SendToModel: true},
		"undeclared": {Value: "not this agent's", SendToModel: true},
	})
	evs := h.Turn("where is my order?", params)
	if got, want := tooltest.FinalText(evs), "Order A-17 is shipped."; got != want {
		t.Errorf("final text = %q, want %q", got, want)
	}
	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/orders/status" || r.Query != "v=2" {
		t.Errorf("request line = %s %s?%s", r.Method, r.Path, r.Query)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	if diff := cmp.Diff(map[string]any{"order": "A-17", "verbose": true}, body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	wantHeaders := map[string]string{
		"Authorization":                "Bearer s3cret",
		"Content-Type":                 "application/json",
		"X-Agentgate-Param-Userid":     "u-42",
		"X-Agentgate-Param-Plan":       `{"tier":"gold"}`,
		"X-Agentgate-Param-Seats":      "3",
		"X-Agentgate-Param-Note":       `"two\nlines"`,
		"X-Agentgate-Param-Undeclared": "",
	}
	for k, want := range wantHeaders {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
}

// TestParamHeaderCase: the header keeps the parameter's own case on the
// wire.
func TestParamHeaderCase(t *testing.T) {
	h := http.Header{}
	httptool.SetParamHeaders(h, agentcore.NewParams(map[string]agentcore.Param{"userId": {Value: "u1"}, "bad name": {Value: "skipped"}}))
	if diff := cmp.Diff(http.Header{"X-Agentgate-Param-userId": {"u1"}}, h); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	httptool.SetParamHeaders(h, nil) // no parameters: nothing added, no panic
}

func TestReplies(t *testing.T) {
	big := `{"x": "` + strings.Repeat("a", 200) + `"}`
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    map[string]any
		wantErr string
	}{
		{name: "object", handler: jsonReply(200, `{"ok": true}`), want: map[string]any{"ok": true}},
		{name: "array wrapped", handler: jsonReply(201, `[1, 2]`), want: map[string]any{"result": []any{1.0, 2.0}}},
		{name: "vendor json", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
			_, _ = io.WriteString(w, `{"a": 1}`)
		}, want: map[string]any{"a": 1.0}},
		{name: "empty 204", handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }, want: map[string]any{"status": 204.0}},
		{name: "non-2xx carries the body", handler: jsonReply(404, `{"detail": "no such order"}`),
			wantErr: `the endpoint answered HTTP 404 Not Found: {"detail": "no such order"}`},
		{name: "5xx", handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) },
			wantErr: "the endpoint answered HTTP 503 Service Unavailable"},
		{name: "not JSON", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>hi</html>")
		}, wantErr: "the reply is not JSON (text/html)"},
		{name: "JSON type but broken", handler: jsonReply(200, `{"a":`), wantErr: "the reply is not valid JSON"},
		{name: "too large", handler: jsonReply(200, big), wantErr: "the reply is larger than 100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := upstream(t, tt.handler)
			tl := mustTool(t, httptool.Config{Name: "t", URL: srv.URL, MaxResponseBytes: 100})
			got, err := tl.Run(context.Background(), nil, map[string]any{})
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Compare through JSON: the status is an int.
			raw, _ := json.Marshal(got)
			var norm map[string]any
			_ = json.Unmarshal(raw, &norm)
			if diff := cmp.Diff(tt.want, norm); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// slowUpstream never answers before the request gives up.
func slowUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	return srv
}

func TestTimeout(t *testing.T) {
	srv := slowUpstream(t)
	tl := mustTool(t, httptool.Config{Name: "slow", URL: srv.URL, Timeout: 50 * time.Millisecond})
	_, err := tl.Run(context.Background(), nil, nil)
	if err == nil || err.Error() != "the request timed out after 50ms" {
		t.Fatalf("err = %v", err)
	}
}

// TestTimeoutThroughAgent: a failure reaches the model as {"error": ...}
// and the agent goes on.
func TestTimeoutThroughAgent(t *testing.T) {
	srv := slowUpstream(t)
	tl := mustTool(t, httptool.Config{Name: "slow", URL: srv.URL, Timeout: 20 * time.Millisecond})
	h := tooltest.New(t, tooltest.Config{Tools: []agentcore.Tool{tl}, Rules: []scripted.Rule{
		{Agent: "agent", AfterTool: "slow", Reply: "Sorry: {response.error}"},
		{Agent: "agent", Call: &scripted.Call{Name: "slow"}},
	}})
	evs := h.Turn("go", nil)
	if diff := cmp.Diff(map[string]any{"error": "the request timed out after 20ms"}, tooltest.Responses(evs)["slow"]); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if got := tooltest.FinalText(evs); got != "Sorry: the request timed out after 20ms" {
		t.Errorf("final text = %q", got)
	}
}

// TestRedirects: same-host redirects are followed, others refused (the
// other host never sees a request).
func TestRedirects(t *testing.T) {
	other, otherGot := upstream(t, jsonReply(200, `{"from": "other"}`))
	srv, _ := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		case "/here":
			jsonReply(200, `{"from": "here"}`)(w, r)
		}
	})
	got, err := mustTool(t, httptool.Config{Name: "t", URL: srv.URL + "/moved"}).Run(context.Background(), nil, map[string]any{})
	if err != nil || got["from"] != "here" {
		t.Errorf("same-host redirect: %v, %v", got, err)
	}
	_, err = mustTool(t, httptool.Config{Name: "t", URL: srv.URL + "/away"}).Run(context.Background(), nil, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "redirect to another host") {
		t.Errorf("cross-host redirect: err = %v", err)
	}
	if n := len(otherGot()); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
}

func TestMethods(t *testing.T) {
	srv, got := upstream(t, jsonReply(200, `{}`))
	for _, m := range []string{"get", "DELETE", "PUT", "PATCH"} {
		tl := mustTool(t, httptool.Config{Name: "t", URL: srv.URL + "/r?fixed=1", Method: m})
		if _, err := tl.Run(context.Background(), nil, map[string]any{"q": "a b", "n": 2}); err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	for _, r := range got() {
		lines = append(lines, r.Method+" "+r.Query+" "+r.Body)
	}
	want := []string{
		"GET fixed=1&n=2&q=a+b ",
		"DELETE fixed=1&n=2&q=a+b ",
		`PUT fixed=1 {"n":2,"q":"a b"}`,
		`PATCH fixed=1 {"n":2,"q":"a b"}`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		cfg  httptool.Config
		want string
	}{
		{httptool.Config{Name: "bad name", URL: "http://x"}, `name: must match [a-zA-Z0-9_-]{1,64}, got "bad name"`},
		{httptool.Config{Name: "t", URL: "/relative"}, `url: must be an absolute http(s) URL, got "/relative"`},
		{httptool.Config{Name: "t", URL: "ftp://x/y"}, `url: must be an absolute http(s) URL, got "ftp://x/y"`},
		{httptool.Config{Name: "t", URL: "http://x", Method: "TRACE"}, `method: must be one of POST, PUT, PATCH, GET, DELETE, got "TRACE"`},
		{httptool.Config{Name: "t", URL: "http://x", Timeout: -1}, `timeout: must not be negative`},
		{httptool.Config{Name: "t", URL: "http://x", Headers: map[string]string{"a b": "c"}}, `headers: invalid header name "a b"`},
	}
	for _, tt := range tests {
		_, err := httptool.New(tt.cfg)
		if err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

func TestDeclaration(t *testing.T) {
	tl := mustTool(t, httptool.Config{Name: "t", Description: "d", URL: "http://x"})
	d := tl.Declaration()
	want := map[string]any{"type": "object", "properties": map[string]any{}}
	if d.Name != "t" || d.Description != "d" || !cmp.Equal(want, d.ParametersJsonSchema) {
		t.Errorf("declaration = %+v", d)
	}
}

// TestConfiguredQueryIsPinned: a GET tool's query parameters written in
// its URL keep their values; arguments of the same name are left out, the
// others fill the query.
func TestConfiguredQueryIsPinned(t *testing.T) {
	srv, got := upstream(t, jsonReply(200, `{}`))
	tl := mustTool(t, httptool.Config{Name: "search", Method: "GET", URL: srv.URL + "/search?tenant=acme&v=2"})
	if _, err := tl.Run(context.Background(), nil, map[string]any{"tenant": "evil", "v": 3, "q": "cats"}); err != nil {
		t.Fatal(err)
	}
	reqs := got()
	if len(reqs) != 1 || reqs[0].Path != "/search" || reqs[0].Query != "tenant=acme&v=2&q=cats" {
		t.Fatalf("requests: %+v", reqs)
	}
}

// TestConfiguredHeaderIsPinned: a configured header wins over the
// parameter header of the same name (in any case), which a model may
// have generated.
func TestConfiguredHeaderIsPinned(t *testing.T) {
	srv, got := upstream(t, jsonReply(200, `{}`))
	tl := mustTool(t, httptool.Config{Name: "search", URL: srv.URL + "/search",
		Headers: map[string]string{"X-Agentgate-Param-Tenant": "acme"}})
	h := tooltest.New(t, tooltest.Config{Tools: []agentcore.Tool{tl}, Rules: []scripted.Rule{
		{Agent: "agent", AfterTool: "search", Reply: "done"},
		{Agent: "agent", Call: &scripted.Call{Name: "search"}},
	}, Params: []agentcore.ParamSpec{{Name: "tenant"}}})
	h.Turn("search", agentcore.NewParams(map[string]agentcore.Param{"tenant": {Value: "evil", SendToModel: true, Generated: true}}))
	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if vs := reqs[0].Header.Values("X-Agentgate-Param-Tenant"); len(vs) != 1 || vs[0] != "acme" {
		t.Errorf("X-Agentgate-Param-Tenant = %q, want [acme]", vs)
	}
}
