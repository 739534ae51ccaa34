package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/auth"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

const jwtSecret = "gateway-test-secret-of-at-least-32-bytes"

// withJWT turns authentication on: HS256 tokens, user in "sub", models in
// "models", userId bound to sub and hidden.
func withJWT(t *testing.T, mod ...func(*auth.Config)) fixtureOpt {
	t.Helper()
	cfg := auth.Config{HMACSecret: jwtSecret, Issuer: "https://idp.test", Audience: "agentgate", Leeway: time.Second,
		ModelsClaim: "models", Parameters: []auth.ClaimParameter{{Claim: "sub", Name: "userId", SendToModel: false}}}
	for _, m := range mod {
		m(&cfg)
	}
	v, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *gateway.Config) { c.Auth = v }
}

// token signs an HS256 token for user; extra claims override the defaults
// (nil deletes one).
func token(t *testing.T, user string, extra map[string]any) string {
	t.Helper()
	c := jwt.MapClaims{"sub": user, "iss": "https://idp.test", "aud": "agentgate", "exp": time.Now().Add(time.Hour).Unix(),
		"iat": time.Now().Add(-time.Minute).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(jwtSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call sends a request with an optional bearer token and JSON body.
func call(t *testing.T, f *fixture, method, path, tok, body string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func chatBody(model, text string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": text}}})
	return string(b)
}

// checkUnauthorized asserts a 401 in the surface's error format.
func checkUnauthorized(t *testing.T, path string, status int, h http.Header, b []byte) {
	t.Helper()
	if status != http.StatusUnauthorized {
		t.Fatalf("%s: status %d, want 401 (%s)", path, status, b)
	}
	if got := h.Get("WWW-Authenticate"); got != `Bearer error="invalid_token"` {
		t.Errorf("%s: WWW-Authenticate = %q", path, got)
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%s: body %s", path, b)
	}
	if strings.HasPrefix(path, "/v1") {
		e, _ := body["error"].(map[string]any)
		if e["code"] != "invalid_api_key" || e["type"] != "invalid_request_error" || e["message"] == "" {
			t.Errorf("%s: OpenAI envelope %s", path, b)
		}
		return
	}
	if msg, ok := body["error"].(string); !ok || msg == "" {
		t.Errorf("%s: native error body %s", path, b)
	}
}

func TestJWTProtectsEveryRoute(t *testing.T) {
	f := newFixture(t, nil, withJWT(t))
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/models", ""},
		{http.MethodGet, "/v1/models/desk", ""},
		{http.MethodPost, "/v1/chat/completions", chatBody("desk", "hi")},
		{http.MethodGet, "/list-apps", ""},
		{http.MethodGet, "/apps/desk/users/me/sessions", ""},
		{http.MethodPost, "/apps/desk/users/me/sessions", `{}`},
		{http.MethodPost, "/run", `{"appName":"desk","userId":"me","sessionId":"s","newMessage":{"parts":[{"text":"hi"}]}}`},
		{http.MethodPost, "/run_sse", `{"appName":"desk","userId":"me","sessionId":"s","newMessage":{"parts":[{"text":"hi"}]}}`},
		{http.MethodGet, "/no/such/route", ""},
		{http.MethodGet, "/v1/no/such/route", ""},
	}
	b64 := base64.RawURLEncoding.EncodeToString
	none := b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64([]byte(`{"sub":"alice","iss":"https://idp.test","aud":"agentgate","exp":9999999999}`)) + "."
	wrongKey, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "iss": "https://idp.test", "aud": "agentgate",
		"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("another-secret-another-secret-another"))
	tokens := map[string]string{
		"missing":         "",
		"malformed":       "not-a-jwt",
		"alg none":        none,
		"wrong signature": wrongKey,
		"expired":         token(t, "alice", map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}),
		"not yet valid":   token(t, "alice", map[string]any{"nbf": time.Now().Add(time.Hour).Unix()}),
		"wrong issuer":    token(t, "alice", map[string]any{"iss": "https://evil.test"}),
		"wrong audience":  token(t, "alice", map[string]any{"aud": "someone-else"}),
		"no user claim":   token(t, "alice", map[string]any{"sub": nil}),
	}
	for name, tok := range tokens {
		for _, r := range routes {
			t.Run(name+" "+r.method+" "+r.path, func(t *testing.T) {
				status, h, b := call(t, f, r.method, r.path, tok, r.body)
				checkUnauthorized(t, r.path, status, h, b)
				if tok != "" && strings.Contains(string(b), tok) {
					t.Errorf("the answer quotes the token: %s", b)
				}
			})
		}
	}
	// A valid token passes everywhere.
	good := token(t, "alice", map[string]any{"models": []string{"desk", "fake", "team/flow"}})
	for _, r := range routes[:8] {
		if status, _, b := call(t, f, r.method, r.path, good, r.body); status == http.StatusUnauthorized || status >= 500 {
			t.Errorf("%s %s with a valid token: %d %s", r.method, r.path, status, b)
		}
	}
}

func TestPublicPaths(t *testing.T) {
	f := newFixture(t, nil, withJWT(t))
	for _, p := range []string{"/healthz", "/readyz"} {
		if status, _, b := call(t, f, http.MethodGet, p, "", ""); status != http.StatusOK {
			t.Errorf("%s without a token: %d %s", p, status, b)
		}
	}
	if status, _, _ := call(t, f, http.MethodGet, "/metrics", "", ""); status == http.StatusUnauthorized {
		t.Error("/metrics needs a token")
	}
	custom := newFixture(t, nil, withJWT(t), func(c *gateway.Config) { c.PublicPaths = []string{"/healthz", "/v1/models/*"} })
	if status, _, b := call(t, custom, http.MethodGet, "/v1/models/desk", "", ""); status != http.StatusOK {
		t.Errorf("/v1/models/desk made public: %d %s", status, b)
	}
	status, h, b := call(t, custom, http.MethodGet, "/readyz", "", "")
	checkUnauthorized(t, "/readyz", status, h, b)
}

// TestAuthFailureIsLoggedWithoutTheToken: the reason is logged, the token
// never is.
func TestAuthFailureIsLoggedWithoutTheToken(t *testing.T) {
	logs := &syncBuffer{}
	f := newFixture(t, nil, withJWT(t), func(c *gateway.Config) { c.Logger = newJSONLogger(logs) })
	expired := token(t, "alice", map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})
	call(t, f, http.MethodGet, "/v1/models", expired, "")
	out := logs.String()
	if !strings.Contains(out, `"reason":"expired"`) {
		t.Errorf("the reason is not logged:\n%s", out)
	}
	for _, seg := range strings.Split(expired, ".") {
		if strings.Contains(out, seg) {
			t.Errorf("the log holds part of the token:\n%s", out)
		}
	}
}

func TestModelsClaim(t *testing.T) {
	f := newFixture(t, nil, withJWT(t))
	tok := token(t, "alice", map[string]any{"models": []string{"desk"}})

	_, _, b := call(t, f, http.MethodGet, "/v1/models", tok, "")
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list.Data) != 1 || list.Data[0].ID != "desk" {
		t.Errorf("/v1/models = %s", b)
	}
	if status, _, _ := call(t, f, http.MethodGet, "/v1/models/fake", tok, ""); status != http.StatusNotFound {
		t.Errorf("/v1/models/fake: %d, want 404", status)
	}
	status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatBody("fake", "hi"))
	if status != http.StatusForbidden || !strings.Contains(string(b), `"code":"model_not_allowed"`) {
		t.Errorf("chat on fake: %d %s", status, b)
	}
	if status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatBody("desk", "hi")); status != http.StatusOK {
		t.Errorf("chat on desk: %d %s", status, b)
	}
	if _, _, b := call(t, f, http.MethodGet, "/list-apps", tok, ""); string(b) != `["desk"]` {
		t.Errorf("/list-apps = %s", b)
	}
	if _, _, b := call(t, f, http.MethodGet, "/list-apps?detailed=true", tok, ""); strings.Contains(string(b), `"fake"`) || !strings.Contains(string(b), `"desk"`) {
		t.Errorf("/list-apps?detailed=true = %s", b)
	}
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, "/run", `{"appName":"fake","userId":"me","sessionId":"s","newMessage":{"parts":[{"text":"hi"}]}}`},
		{http.MethodGet, "/apps/fake/users/me/sessions", ""},
		{http.MethodPost, "/apps/fake/users/me/sessions", `{}`},
	} {
		if status, _, b := call(t, f, r.method, r.path, tok, r.body); status != http.StatusForbidden || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s %s: %d %s, want 403", r.method, r.path, status, b)
		}
	}
	// A token without the claim may use nothing.
	bare := token(t, "bob", nil)
	if _, _, b := call(t, f, http.MethodGet, "/v1/models", bare, ""); !strings.Contains(string(b), `"data":[]`) {
		t.Errorf("/v1/models without a models claim = %s", b)
	}
}

// TestOwnershipAcrossUsers: sessions belong to the token's user on both
// surfaces; the same X-Session-Id from another user never reaches them.
func TestOwnershipAcrossUsers(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		yield(textFinal("noted"), nil)
	}, withJWT(t))
	models := map[string]any{"models": []string{"fake", "desk"}}
	alice, bob := token(t, "alice", models), token(t, "bob", models)

	// The request's "user" field does not choose the session's owner.
	status, h, b := call(t, f, http.MethodPost, "/v1/chat/completions", alice,
		`{"model":"fake","user":"bob","messages":[{"role":"user","content":"alice's diary: the code is 1234"}]}`, "X-Session-Id", "s1")
	if status != http.StatusOK || h.Get("X-Session-Id") != "s1" {
		t.Fatalf("alice's turn: %d %s", status, b)
	}
	status, _, b = call(t, f, http.MethodPost, "/v1/chat/completions", bob, chatBody("fake", "what did alice say?"), "X-Session-Id", "s1")
	if status != http.StatusOK {
		t.Fatalf("bob's turn: %d %s", status, b)
	}
	reqs := f.fakes["solo"].requests()
	bobReq, _ := json.Marshal(reqs[len(reqs)-1].Contents)
	if strings.Contains(string(bobReq), "diary") {
		t.Errorf("bob's turn saw alice's history: %s", bobReq)
	}

	get := func(tok, user string) (int, map[string]any) {
		status, _, b := call(t, f, http.MethodGet, "/apps/fake/users/"+user+"/sessions/s1", tok, "")
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return status, m
	}
	if status, s := get(alice, "alice"); status != http.StatusOK || s["userId"] != "alice" || len(s["events"].([]any)) != 2 {
		t.Errorf("alice reads her s1: %d %v", status, s)
	}
	if status, s := get(alice, "me"); status != http.StatusOK || s["userId"] != "alice" {
		t.Errorf("alice reads me/s1: %d %v", status, s)
	}
	if status, s := get(bob, "me"); status != http.StatusOK || s["userId"] != "bob" || strings.Contains(asJSON(s), "diary") {
		t.Errorf("bob reads his own s1: %d %v", status, s)
	}
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/apps/fake/users/alice/sessions/s1", ""},
		{http.MethodGet, "/apps/fake/users/alice/sessions", ""},
		{http.MethodDelete, "/apps/fake/users/alice/sessions/s1", ""},
		{http.MethodPatch, "/apps/fake/users/alice/sessions/s1", `{"stateDelta":{"x":1}}`},
		{http.MethodPost, "/apps/fake/users/alice/sessions", `{"sessionId":"planted"}`},
		{http.MethodPost, "/run", `{"appName":"fake","userId":"alice","sessionId":"s1","newMessage":{"parts":[{"text":"hi"}]}}`},
	} {
		status, _, b := call(t, f, r.method, r.path, bob, r.body)
		if status != http.StatusNotFound || !strings.Contains(string(b), `"error"`) {
			t.Errorf("bob %s %s: %d %s, want 404", r.method, r.path, status, b)
		}
	}
	if status, s := get(alice, "alice"); status != http.StatusOK || len(s["events"].([]any)) != 2 {
		t.Errorf("alice's s1 after bob's attempts: %d %v", status, s)
	}
	// "me" runs on the native surface as the token's user.
	status, _, b = call(t, f, http.MethodPost, "/run", bob, `{"appName":"fake","userId":"me","sessionId":"s1","newMessage":{"parts":[{"text":"again"}]}}`)
	if status != http.StatusOK {
		t.Fatalf("bob runs me/s1: %d %s", status, b)
	}
	if _, s := get(bob, "bob"); len(s["events"].([]any)) != 4 {
		t.Errorf("bob's s1 has %d events, want 4", len(s["events"].([]any)))
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAuthNoneKeepsTheRequestUser: without auth the request names the
// user, and "me" is an ordinary name.
func TestAuthNoneKeepsTheRequestUser(t *testing.T) {
	f := newFixture(t, nil)
	status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", "",
		`{"model":"fake","user":"carol","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "c1")
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, b)
	}
	if status, _, b := call(t, f, http.MethodGet, "/apps/fake/users/carol/sessions/c1", "", ""); status != http.StatusOK {
		t.Errorf("carol's session: %d %s", status, b)
	}
	if d := cmp.Diff(`["desk","fake","team/flow"]`, func() string { _, _, b := call(t, f, http.MethodGet, "/list-apps", "", ""); return string(b) }()); d != "" {
		t.Errorf("/list-apps (-want +got):\n%s", d)
	}
}

// FuzzAuthorizationHeader: whatever the header holds, a protected route
// answers 200 (a valid token) or 401 with the challenge and a JSON error
// that does not echo the header.
func FuzzAuthorizationHeader(f *testing.F) {
	v, err := auth.New(auth.Config{HMACSecret: jwtSecret})
	if err != nil {
		f.Fatal(err)
	}
	cat, err := spec.Build(spec.Set{Providers: []spec.Provider{{Name: "demo", Type: "scripted", Rules: demoRules}},
		Agents: []spec.Agent{{Name: "solo", Model: "demo/x"}}, Models: []spec.VirtualModel{{ID: "m", Agent: "solo"}}}, spec.BuildOptions{})
	if err != nil {
		f.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Catalog: cat, Sessions: sessions.NewMemoryService(sessions.MemoryConfig{}), Auth: v})
	if err != nil {
		f.Fatal(err)
	}
	valid, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "a", "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte(jwtSecret))
	for _, s := range []string{"", "Bearer", "Bearer " + valid, "bearer  " + valid, "Basic Zm9vOmJhcg==", "Bearer a.b.c", "Bearer " + valid + "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
		case http.StatusUnauthorized:
			if rec.Header().Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
				t.Fatalf("401 without the challenge for %q", header)
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("401 body is not JSON: %s", rec.Body)
			}
			if len(header) > 12 && strings.Contains(rec.Body.String(), header) {
				t.Fatalf("the answer echoes the header %q", header)
			}
		default:
			t.Fatalf("status %d for %q", rec.Code, header)
		}
	})
}
