package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentgate/agentgate/config"
)

const testSecret = "cmd-test-secret-of-thirty-two-bytes-at-least"

const jwtConfig = `
auth:
  mode: jwt
  jwt:
    hs256_secret: ${SECRET}
    issuer: https://idp.test
    models_claim: models
    parameters:
      - {claim: sub, name: userId, send_to_model: false}
providers: [{name: demo, type: scripted, rules: [{reply: hi}]}]
agents: [{name: desk, model: demo/x, parameters: [{name: userId, send_to_model: false, forbid_model_generation: true}]}]
models: [{id: desk, agent: desk}, {id: other, agent: desk}]
`

func TestJWTConfigEndToEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jwt.yaml")
	if err := os.WriteFile(path, []byte(jwtConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := runGateway(t, []string{"-config", path, "-addr", "127.0.0.1:0"}, map[string]string{"SECRET": testSecret})
	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, gw.base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, _ := get("/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get("/v1/models", ""); code != http.StatusUnauthorized || !strings.Contains(body, "invalid_api_key") {
		t.Errorf("/v1/models without a token: %d %s", code, body)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "iss": "https://idp.test",
		"exp": time.Now().Add(time.Hour).Unix(), "models": []string{"desk"}}).SignedString([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	code, body := get("/v1/models", tok)
	var list struct{ Data []struct{ ID string } }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Data) != 1 || list.Data[0].ID != "desk" {
		t.Errorf("/v1/models with a token: %d %s", code, body)
	}
	gw.stop(t) // the logs go out in batches: all of them once it stopped
	if strings.Contains(gw.stdout.String(), testSecret) || strings.Contains(gw.stdout.String(), tok) {
		t.Errorf("the logs carry the secret or the token:\n%s", gw.stdout.String())
	}
}

func TestBadJWTConfigExitsTwo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jwt.yaml")
	cfg := strings.Replace(jwtConfig, "hs256_secret: ${SECRET}", "hs256_secret: short\n    public_key_files: ["+filepath.Join(dir, "missing.pem")+"]", 1)
	cfg = strings.Replace(cfg, "name: userId, send_to_model: false}", "name: user-id}", 1)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil); code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, stderr.String())
	}
	for _, want := range []string{"auth.jwt.hs256_secret: needs at least 32 bytes", "auth.jwt.public_key_files[0]", "auth.jwt.parameters[0].name"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "short") {
		t.Errorf("stderr shows the secret:\n%s", stderr.String())
	}
}

func TestKeyFilesRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ed.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := newAuthenticator(config.Auth{Mode: "jwt", JWT: config.JWT{PublicKeyFiles: []string{"ed.pem"}}}, dir, nil)
	if err != nil || a == nil {
		t.Fatalf("newAuthenticator: %v", err)
	}
	if a, err := newAuthenticator(config.Auth{Mode: "none"}, dir, nil); a != nil || err != nil {
		t.Errorf("mode none: %v %v", a, err)
	}
}

// TestJWKSURLRotationEndToEnd runs the gateway on an identity provider's
// JWKS URL that rotates its key: a token of the new key is accepted
// without a restart (its unknown kid refreshes the keys), and a token
// whose crit header names an extension is refused.
func TestJWKSURLRotationEndToEnd(t *testing.T) {
	newKey := func(kid string) (ed25519.PrivateKey, []byte) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "OKP", "crv": "Ed25519", "kid": kid,
			"x": base64.RawURLEncoding.EncodeToString(pub)}}})
		return priv, doc
	}
	oldKey, oldDoc := newKey("2026-01")
	newPriv, newDoc := newKey("2026-02")
	var doc atomic.Pointer[[]byte]
	doc.Store(&oldDoc)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(*doc.Load()) }))
	defer idp.Close()
	gw := runConfig(t, `
auth:
  mode: jwt
  jwt:
    jwks_url: `+idp.URL+`
providers: [{name: demo, type: scripted, rules: [{reply: hi}]}]
agents: [{name: desk, model: demo/x}]
models: [{id: desk, agent: desk}]
`, nil)
	status := func(key ed25519.PrivateKey, kid string, header map[string]any) int {
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = kid
		for k, v := range header {
			tok.Header[k] = v
		}
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, gw.base+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+s)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(oldKey, "2026-01", nil); got != http.StatusOK {
		t.Fatalf("old key before rotation: %d", got)
	}
	if got := status(oldKey, "2026-01", map[string]any{"crit": []string{"b64"}, "b64": false}); got != http.StatusUnauthorized {
		t.Errorf("a token with crit: %d, want 401", got)
	}
	doc.Store(&newDoc)
	if got := status(newPriv, "2026-02", nil); got != http.StatusOK {
		t.Errorf("new key after rotation: %d, want 200 without a restart", got)
	}
	if got := status(oldKey, "2026-01", nil); got != http.StatusUnauthorized {
		t.Errorf("removed key: %d, want 401", got)
	}
}
