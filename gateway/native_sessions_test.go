package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

// jsonOf decodes a body into a generic value.
func jsonOf(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	return v
}

// errorBody checks an ADK error body {"error": "<non-empty>"}.
func errorBody(t *testing.T, b []byte) string {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(b, &e); err != nil || len(e) != 1 || str(e["error"]) == "" {
		t.Errorf(`body %s is not {"error": "..."}`, b)
	}
	return str(e["error"])
}

func TestNativeInfoRoutes(t *testing.T) {
	f := newNativeFixture(t, nil, func(c *gateway.Config) { c.Version = "1.2.3" })
	tests := []struct {
		path string
		want any
	}{
		{"/health", map[string]any{"status": "ok"}},
		{"/list-apps", []any{"desk", "fake", "team", "desk-live"}},
		{"/list-apps?relative_path=./", []any{"desk", "fake", "team", "desk-live"}},
		{"/list-apps?detailed=true", map[string]any{"apps": []any{
			map[string]any{"name": "desk", "rootAgentName": "coordinator", "description": "The desk.", "language": "yaml", "isComputerUse": false},
			map[string]any{"name": "fake", "rootAgentName": "solo", "description": "A single agent on a fake model.", "language": "yaml", "isComputerUse": false},
			map[string]any{"name": "team", "rootAgentName": "fanout", "description": "", "language": "yaml", "isComputerUse": false},
			map[string]any{"name": "desk-live", "rootAgentName": "coordinator", "description": "Routes.", "language": "yaml", "isComputerUse": false},
		}}},
		{"/dev/apps/desk/eval-sets", []any{}},
		{"/dev/apps/desk/eval_results", []any{}},
		{"/dev/apps/desk/debug/trace/session/s1", []any{}},
		{"/debug/trace/session/s1", []any{}},
		{"/apps/desk/eval_sets", []any{}},
	}
	for _, tc := range tests {
		got := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, tc.path, ""))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
		}
	}
	v := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, "/version", "")).(map[string]any)
	if v["version"] != "1.2.3" || v["language"] != "go" || str(v["language_version"]) == "" {
		t.Errorf("/version %v", v)
	}
	// Development routes we do not serve: 404 in ADK's error shape.
	for _, p := range []string{"/dev/build_graph/desk", "/dev/apps/desk/graph", "/debug/trace/evt-1", "/apps/desk/app-info"} {
		status, b := f.do(http.MethodGet, p, "")
		if status != http.StatusNotFound {
			t.Errorf("GET %s: %d", p, status)
		}
		errorBody(t, b)
	}
}

func TestNativeSessionCRUD(t *testing.T) {
	f := newNativeFixture(t, nil)
	base := "/apps/desk/users/u1/sessions"

	// Create with a chosen id and state, in camelCase.
	got := jsonOf(t, f.mustDo(http.StatusOK, http.MethodPost, base, `{"sessionId":"s1","state":{"a":1,"temp:x":2},"ignored":true}`)).(map[string]any)
	if _, ok := got["lastUpdateTime"].(float64); !ok {
		t.Errorf("lastUpdateTime %v is not epoch seconds", got["lastUpdateTime"])
	}
	delete(got, "lastUpdateTime")
	want := map[string]any{"id": "s1", "appName": "desk", "userId": "u1", "state": map[string]any{"a": float64(1)}, "events": []any{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created session (-want +got):\n%s", diff)
	}
	// snake_case, and a generated id for an empty or null body.
	f.mustDo(http.StatusOK, http.MethodPost, base, `{"session_id":"s2"}`)
	for _, body := range []string{"", "null", "{}"} {
		s := jsonOf(t, f.mustDo(http.StatusOK, http.MethodPost, base, body)).(map[string]any)
		if str(s["id"]) == "" {
			t.Errorf("body %q: no generated id", body)
		}
	}
	// Duplicate id.
	status, b := f.do(http.MethodPost, base, `{"sessionId":"s1"}`)
	if status != http.StatusConflict || !strings.Contains(errorBody(t, b), "s1") {
		t.Errorf("duplicate: %d %s", status, b)
	}
	// The deprecated create: the whole body is the state.
	s := jsonOf(t, f.mustDo(http.StatusOK, http.MethodPost, base+"/s3", `{"visits":5}`)).(map[string]any)
	if s["id"] != "s3" || !cmp.Equal(s["state"], map[string]any{"visits": float64(5)}) {
		t.Errorf("deprecated create: %v", s)
	}
	f.mustDo(http.StatusOK, http.MethodPost, base+"/s4", "")
	if status, _ := f.do(http.MethodPost, base+"/s3", `{}`); status != http.StatusConflict {
		t.Errorf("deprecated create of an existing id: %d", status)
	}

	// Get: ADK's session plus subSessions.
	got = jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, base+"/s1", "")).(map[string]any)
	if got["id"] != "s1" || !cmp.Equal(got["subSessions"], []any{}) || !cmp.Equal(got["events"], []any{}) {
		t.Errorf("get: %v", got)
	}
	status, b = f.do(http.MethodGet, base+"/nope", "")
	if status != http.StatusNotFound || !strings.Contains(errorBody(t, b), "nope") {
		t.Errorf("get missing: %d %s", status, b)
	}

	// Patch: recorded as a user event with invocation id p-<uuid>.
	patched := f.mustDo(http.StatusOK, http.MethodPatch, base+"/s1", `{"state_delta":{"b":"two","user:pref":"x"}}`)
	var sess sessions.Session
	if err := json.Unmarshal(patched, &sess); err != nil {
		t.Fatal(err)
	}
	if sess.State["b"] != "two" || sess.State["a"] != float64(1) || len(sess.Events) != 1 {
		t.Fatalf("patched session %s", patched)
	}
	ev := sess.Events[0]
	if ev.Author != "user" || !strings.HasPrefix(ev.InvocationID, "p-") || len(ev.InvocationID) != 38 || ev.Content != nil {
		t.Errorf("patch event %+v", ev)
	}
	if diff := cmp.Diff(map[string]any{"b": "two", "user:pref": "x"}, ev.Actions.StateDelta); diff != "" {
		t.Errorf("patch stateDelta (-want +got):\n%s", diff)
	}
	// user: state reaches the user's other sessions.
	other := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, base+"/s2", "")).(map[string]any)
	if other["state"].(map[string]any)["user:pref"] != "x" {
		t.Errorf("user: scope not shared: %v", other["state"])
	}
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{base + "/nope", `{"stateDelta":{"a":1}}`, 404},
		{base + "/s1", `{}`, 400},
		{base + "/s1", `{"stateDelta":"x"}`, 400},
		{base + "/s1", `{"stateDelta":{"~parameters":1}}`, 400},
		{base + "/s1", `not json`, 400},
	} {
		status, b := f.do(http.MethodPatch, tc.path, tc.body)
		if status != tc.status {
			t.Errorf("PATCH %s %s: %d, want %d", tc.path, tc.body, status, tc.status)
		}
		errorBody(t, b)
	}

	// List: a bare array of sessions without events; the gateway's own
	// sessions are hidden.
	if _, err := f.store.Create(context.Background(), sessions.CreateRequest{AppName: "desk", UserID: "u1", SessionID: "~call-abc"}); err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, base, ""), &list); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range list {
		ids[str(s["id"])] = true
		if !cmp.Equal(s["events"], []any{}) {
			t.Errorf("listed session %v carries events", s["id"])
		}
	}
	if len(list) != 7 || !ids["s1"] || !ids["s4"] || ids["~call-abc"] {
		t.Errorf("listed %v", ids)
	}
	if status, _ := f.do(http.MethodGet, base+"/~call-abc", ""); status != http.StatusNotFound {
		t.Errorf("reserved session readable: %d", status)
	}
	// Another user sees none of them.
	if got := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, "/apps/desk/users/u2/sessions", "")); !cmp.Equal(got, []any{}) {
		t.Errorf("u2 lists %v", got)
	}

	// Delete answers null; then the session is gone.
	if b := f.mustDo(http.StatusOK, http.MethodDelete, base+"/s1", ""); string(b) != "null" {
		t.Errorf("delete body %q", b)
	}
	if status, b := f.do(http.MethodDelete, base+"/s1", ""); status != http.StatusNotFound {
		t.Errorf("delete again: %d %s", status, b)
	}
	if status, _ := f.do(http.MethodDelete, base+"/~call-abc", ""); status != http.StatusNotFound {
		t.Errorf("delete of a reserved session: %d", status)
	}
}

func TestNativeSessionRequestErrors(t *testing.T) {
	f := newNativeFixture(t, nil)
	base := "/apps/desk/users/u1/sessions"
	tests := []struct {
		method, path, body string
		status             int
	}{
		{"POST", base, `{"sessionId":`, 400},
		{"POST", base, `[1]`, 400},
		{"POST", base, `{"sessionId":5}`, 400},
		{"POST", base, `{"sessionId":"a/b"}`, 400},
		{"POST", base, `{"sessionId":"~mine"}`, 400},
		{"POST", base, `{"state":{"~parameters":1}}`, 400},
		{"POST", base, `{"events":[5]}`, 400},
		{"POST", base + "/x", `[1]`, 400},
		{"POST", base + "/~x", `{}`, 400},
		{"GET", "/apps/nope/users/u1/sessions", "", 404},
		{"POST", "/apps/nope/users/u1/sessions", "", 404},
		{"GET", "/apps/desk/users/u1", "", 404},
		{"GET", "/apps/desk/users//sessions", "", 404},
		{"PUT", base, "", 405},
		{"PUT", base + "/s1", "", 405},
	}
	for _, tc := range tests {
		status, b := f.do(tc.method, tc.path, tc.body)
		if status != tc.status {
			t.Errorf("%s %s %s: %d, want %d (%s)", tc.method, tc.path, tc.body, status, tc.status, b)
		}
		errorBody(t, b)
	}
}

func TestNativeCreateWithEventsAndParameters(t *testing.T) {
	f := newNativeFixture(t, nil)
	body := `{"sessionId":"imp","state":{"k":"v"},"parameters":{"customerId":"c-42"},"events":[
		{"id":"e1","invocationId":"e-old","author":"user","content":{"role":"user","parts":[{"text":"earlier"}]},"timestamp":1765000000.5},
		{"invocationId":"e-old","author":"coordinator","content":{"role":"model","parts":[{"text":"answer"}]},"actions":{"stateDelta":{"seen":true}}}]}`
	var sess sessions.Session
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodPost, "/apps/desk/users/u1/sessions", body), &sess); err != nil {
		t.Fatal(err)
	}
	if len(sess.Events) != 2 || sess.Events[0].ID != "e1" || sess.Events[1].ID == "" || sess.Events[1].Timestamp.IsZero() {
		t.Fatalf("imported events %+v", sess.Events)
	}
	want := map[string]any{"k": "v", "seen": true, gateway.ParametersStateKey: map[string]any{"customerId": map[string]any{"value": "c-42", "sendToModel": true}}}
	if diff := cmp.Diff(want, sess.State); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	// The imported history is the conversation the next turn continues.
	_, events := f.mustRunSSE(runBody("imp", "hi again", ""))
	if len(events) == 0 {
		t.Fatal("no events")
	}
	greeted := 0
	for _, ev := range events {
		if ev["author"] == "greeter" {
			greeted++
		}
	}
	if greeted == 0 {
		t.Errorf("the run on the imported session did not reach the greeter: %v", events)
	}
}

// An imported event is read as encoding/json reads it (escapes, a part
// of another kind, a timestamp in milliseconds), and one that is not an
// event is refused with its index, whatever made it invalid.
func TestNativeCreateEventsDecoded(t *testing.T) {
	f := newNativeFixture(t, nil)
	base := "/apps/desk/users/u1/sessions"
	events := `[{"id":"e\u00e9","author":"user","content":{"role":"user","parts":[{"text":"a \"quote\"\n"}]},"timestamp":1765000000500},
		{"id":"e2","author":"coordinator","content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"x":[1,"y"]}}}]},"timestamp":1765000001}]`
	var sess sessions.Session
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodPost, base, `{"sessionId":"dec","events":`+events+`}`), &sess); err != nil {
		t.Fatal(err)
	}
	var want []*sessions.Event
	if err := json.Unmarshal([]byte(events), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, sess.Events, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("imported events (-encoding/json +got):\n%s", diff)
	}
	for _, bad := range []string{`5`, `"e"`, `{"id":1}`, `{"timestamp":"x"}`, `{"content":{"parts":[{"text":1}]}}`,
		`{"actions":{"stateDelta":{"a":1e999}}}`, `{"usageMetadata":{"promptTokenCount":1.5}}`} {
		status, b := f.do(http.MethodPost, base, `{"events":[{"author":"user"},`+bad+`]}`)
		if msg := errorBody(t, b); status != http.StatusBadRequest || !strings.Contains(msg, "events[1] is not a valid event.") {
			t.Errorf("event %s: %d %s", bad, status, b)
		}
	}
}

// failingAppends is an in-memory store whose appends fail, as a store
// that went away would.
type failingAppends struct{ *sessions.MemoryService }

func (failingAppends) AppendEvent(context.Context, *sessions.Session, *sessions.Event) error {
	return sessions.ErrUnavailable
}

func (failingAppends) AppendEvents(context.Context, *sessions.Session, []*sessions.Event) error {
	return sessions.ErrUnavailable
}

// A session created with events that cannot be stored is not left behind,
// empty or half imported.
func TestNativeCreateWithEventsAllOrNothing(t *testing.T) {
	store := failingAppends{sessions.NewMemoryService(sessions.MemoryConfig{})}
	f := newNativeFixture(t, nil, func(c *gateway.Config) { c.Sessions = store })
	body := `{"sessionId":"imp","events":[
		{"author":"user","content":{"role":"user","parts":[{"text":"earlier"}]}},
		{"author":"coordinator","content":{"role":"model","parts":[{"text":"answer"}]}}]}`
	f.mustDo(http.StatusServiceUnavailable, http.MethodPost, "/apps/desk/users/u1/sessions", body)
	f.mustDo(http.StatusNotFound, http.MethodGet, "/apps/desk/users/u1/sessions/imp", "")
}

func TestNativeSubConversations(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	f.mustRunSSE(runBody("s1", "summarize the news", ""))
	base := "/apps/desk/users/u1/sessions"

	for _, path := range []string{base + "/s1%2Fsummarizer", base + "/s1%2fsummarizer", base + "/s1/summarizer"} {
		var child sessions.Session
		if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, path, ""), &child); err != nil {
			t.Fatal(err)
		}
		if child.ID != "s1/summarizer" || len(child.Events) != 2 || child.Events[0].Text() != "summarize the news" ||
			child.Events[1].Author != "summarizer" || child.Events[1].Text() != "short version of: summarize the news" {
			t.Errorf("GET %s: %+v", path, child)
		}
	}
	got := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, base+"/s1", "")).(map[string]any)
	if !cmp.Equal(got["subSessions"], []any{"s1/summarizer"}) {
		t.Errorf("subSessions %v", got["subSessions"])
	}
	// Listed from the parent, not among the top-level sessions.
	if got := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, base, "")).([]any); len(got) != 1 {
		t.Errorf("top-level list %v", got)
	}
	children := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, base+"?parent=s1", "")).([]any)
	if len(children) != 1 || children[0].(map[string]any)["id"] != "s1/summarizer" || !cmp.Equal(children[0].(map[string]any)["events"], []any{}) {
		t.Errorf("children %v", children)
	}
	if status, _ := f.do(http.MethodGet, base+"?parent=nope", ""); status != http.StatusNotFound {
		t.Errorf("children of a missing session: %d", status)
	}
	// A sub-conversation can be patched, not run, and goes with its parent.
	f.mustDo(http.StatusOK, http.MethodPatch, base+"/s1%2Fsummarizer", `{"stateDelta":{"note":"audited"}}`)
	if status, b, _ := f.runSSE(runBody("s1/summarizer", "x", "")); status != http.StatusBadRequest {
		t.Errorf("run on a sub-conversation: %d %s", status, b)
	}
	f.mustDo(http.StatusOK, http.MethodDelete, base+"/s1", "")
	if status, _ := f.do(http.MethodGet, base+"/s1%2Fsummarizer", ""); status != http.StatusNotFound {
		t.Errorf("sub-conversation outlived its parent: %d", status)
	}
}

func TestNativeArtifacts(t *testing.T) {
	store := artifact.NewInMemory()
	f := newNativeFixture(t, nil, func(c *gateway.Config) { c.Artifacts = store })
	f.createSession("desk", "s1")
	ctx := context.Background()
	for _, text := range []string{"v1", "v2"} {
		if _, err := store.Save(ctx, artifact.Key{App: "desk", User: "u1", Session: "s1", Name: "notes/today.txt"}, genai.NewPartFromText(text)); err != nil {
			t.Fatal(err)
		}
	}
	base := "/apps/desk/users/u1/sessions/s1/artifacts"
	tests := []struct {
		path string
		want any
	}{
		{base, []any{"notes/today.txt"}},
		{base + "/notes/today.txt", map[string]any{"text": "v2"}},
		{base + "/notes%2Ftoday.txt?version=1", map[string]any{"text": "v1"}},
		{base + "/notes/today.txt/versions", []any{float64(1), float64(2)}},
		{base + "/notes/today.txt/versions/1", map[string]any{"text": "v1"}},
		{base + "/notes/today.txt/versions/latest", map[string]any{"text": "v2"}},
		{base + "/other/versions", []any{}},
	}
	for _, tc := range tests {
		got := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, tc.path, ""))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
		}
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", base + "/other", 404},
		{"GET", base + "/notes/today.txt/versions/9", 404},
		{"GET", base + "/notes/today.txt/versions/zero", 400},
		{"GET", "/apps/desk/users/u1/sessions/nope/artifacts", 404},
		{"POST", base, 405},
	} {
		status, b := f.do(tc.method, tc.path, "")
		if status != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, status, tc.status)
		}
		errorBody(t, b)
	}
	if b := f.mustDo(http.StatusOK, http.MethodDelete, base+"/notes/today.txt", ""); string(b) != "null" {
		t.Errorf("delete body %q", b)
	}
	if got := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, base, "")); !cmp.Equal(got, []any{}) {
		t.Errorf("after delete: %v", got)
	}
}

func TestNativeCORS(t *testing.T) {
	f := newNativeFixture(t, nil, func(c *gateway.Config) { c.CORSOrigins = []string{"http://ui.example"} })
	req, _ := http.NewRequest(http.MethodOptions, f.srv.URL+"/apps/desk/users/u1/sessions/s1", nil)
	req.Header.Set("Origin", "http://ui.example")
	req.Header.Set("Access-Control-Request-Method", "PATCH")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "http://ui.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "PATCH") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/list-apps", nil)
	req.Header.Set("Origin", "http://ui.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "http://ui.example" {
		t.Errorf("list-apps CORS headers %v", resp.Header)
	}
}

func TestNativeBodyTooLarge(t *testing.T) {
	f := newNativeFixture(t, nil, func(c *gateway.Config) { c.MaxBodyBytes = 64 })
	big := `{"sessionId":"s1","state":{"pad":"` + strings.Repeat("x", 100) + `"}}`
	for _, path := range []string{"/apps/desk/users/u1/sessions", "/run_sse"} {
		status, b := f.do(http.MethodPost, path, big)
		if status != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s: %d %s", path, status, b)
		}
		errorBody(t, b)
	}
}
