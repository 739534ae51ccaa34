package auth_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/auth"
)

const secret = "0123456789abcdef0123456789abcdef-test-secret"

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// keyring holds one private key of each kind, generated once per run.
type keyring struct {
	rsa, rsa2  *rsa.PrivateKey
	ec256      *ecdsa.PrivateKey
	ec384      *ecdsa.PrivateKey
	ed         ed25519.PrivateKey
	rsaPEM     string // file with rsa's public key
	ecPEM      string // file with ec384's public key (a certificate would do too)
	edPEM      string
	jwks       string // kid "rsa-2" -> rsa2, kid "ec-1" -> ec256
	rsaPEMData []byte
}

var (
	ringOnce sync.Once
	ring     keyring
)

func keys(t *testing.T) *keyring {
	t.Helper()
	ringOnce.Do(func() {
		must := func(err error) {
			if err != nil {
				panic(err)
			}
		}
		var err error
		ring.rsa, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		ring.rsa2, err = rsa.GenerateKey(rand.Reader, 2048)
		must(err)
		ring.ec256, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		ring.ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		must(err)
		_, ring.ed, err = ed25519.GenerateKey(rand.Reader)
		must(err)
		dir, err := os.MkdirTemp("", "authkeys")
		must(err)
		write := func(name string, pub crypto.PublicKey) string {
			der, err := x509.MarshalPKIXPublicKey(pub)
			must(err)
			data := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
			if name == "rsa.pem" {
				ring.rsaPEMData = data
			}
			p := filepath.Join(dir, name)
			must(os.WriteFile(p, data, 0o600))
			return p
		}
		ring.rsaPEM = write("rsa.pem", &ring.rsa.PublicKey)
		ring.ecPEM = write("ec.pem", &ring.ec384.PublicKey)
		ring.edPEM = write("ed.pem", ring.ed.Public())
		b64 := base64.RawURLEncoding.EncodeToString
		doc := map[string]any{"keys": []map[string]any{
			{"kty": "RSA", "kid": "rsa-2", "use": "sig", "alg": "RS256", "n": b64(ring.rsa2.N.Bytes()), "e": b64(big.NewInt(int64(ring.rsa2.E)).Bytes())},
			{"kty": "EC", "kid": "ec-1", "crv": "P-256", "x": b64(pad(ring.ec256.X.Bytes(), 32)), "y": b64(pad(ring.ec256.Y.Bytes(), 32))},
			{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
		}}
		raw, err := json.Marshal(doc)
		must(err)
		ring.jwks = filepath.Join(dir, "jwks.json")
		must(os.WriteFile(ring.jwks, raw, 0o600))
	})
	return &ring
}

func pad(b []byte, n int) []byte {
	return append(make([]byte, n-len(b)), b...)
}

// sign makes a token with method, key, optional kid and claims.
func sign(t *testing.T, m jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claims(extra map[string]any) jwt.MapClaims {
	c := jwt.MapClaims{"sub": "alice", "iss": "https://idp.example", "aud": "agentgate",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Add(-time.Minute).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

func verifier(t *testing.T, mod func(*auth.Config)) *auth.Verifier {
	t.Helper()
	k := keys(t)
	cfg := auth.Config{Issuer: "https://idp.example", Audience: "agentgate", HMACSecret: secret,
		PublicKeyFiles: []string{k.rsaPEM, k.ecPEM, k.edPEM}, JWKSFile: k.jwks, Leeway: 30 * time.Second,
		Now: func() time.Time { return now }}
	if mod != nil {
		mod(&cfg)
	}
	v, err := auth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyValidTokens(t *testing.T) {
	k := keys(t)
	v := verifier(t, nil)
	tests := []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
	}{
		{"HS256", jwt.SigningMethodHS256, []byte(secret), ""},
		{"HS384", jwt.SigningMethodHS384, []byte(secret), ""},
		{"HS512", jwt.SigningMethodHS512, []byte(secret), ""},
		{"RS256 PEM", jwt.SigningMethodRS256, k.rsa, ""},
		{"RS512 PEM", jwt.SigningMethodRS512, k.rsa, ""},
		{"PS256 PEM", jwt.SigningMethodPS256, k.rsa, ""},
		{"ES384 PEM", jwt.SigningMethodES384, k.ec384, ""},
		{"EdDSA PEM", jwt.SigningMethodEdDSA, k.ed, ""},
		{"JWKS kid rsa-2", jwt.SigningMethodRS256, k.rsa2, "rsa-2"},
		{"JWKS kid ec-1", jwt.SigningMethodES256, k.ec256, "ec-1"},
		{"kid unknown to the JWKS falls back to PEM keys", jwt.SigningMethodRS256, k.rsa, "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := sign(t, tc.method, tc.key, tc.kid, claims(nil))
			p, err := v.Authenticate("Bearer " + tok)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if p.User != "alice" {
				t.Errorf("User = %q, want alice", p.User)
			}
		})
	}
}

func TestVerifyRefusals(t *testing.T) {
	k := keys(t)
	v := verifier(t, nil)
	rsaOnly := verifier(t, func(c *auth.Config) {
		c.HMACSecret, c.JWKSFile, c.PublicKeyFiles = "", "", []string{k.rsaPEM}
	})
	other := []byte("another-secret-another-secret-another-secret")
	b64 := base64.RawURLEncoding.EncodeToString
	noneTok := b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(mustJSON(t, claims(nil))) + "."
	noneLib := sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claims(nil))
	// Algorithm confusion: HS256 keyed with the RSA public key's PEM bytes.
	confused := sign(t, jwt.SigningMethodHS256, k.rsaPEMData, "", claims(nil))
	tests := []struct {
		name   string
		v      *auth.Verifier
		header string
		want   auth.Reason
	}{
		{"missing", v, "", auth.ReasonMissing},
		{"basic scheme", v, "Basic YWxpY2U6cHc=", auth.ReasonScheme},
		{"no token", v, "Bearer", auth.ReasonScheme},
		{"malformed", v, "Bearer not.a-token", auth.ReasonMalformed},
		{"garbage segments", v, "Bearer a.b.c", auth.ReasonMalformed},
		{"alg none", v, "Bearer " + noneTok, auth.ReasonAlgorithm},
		{"alg none (library-made)", v, "Bearer " + noneLib, auth.ReasonAlgorithm},
		{"HS256 signed with the RSA public key", rsaOnly, "Bearer " + confused, auth.ReasonAlgorithm},
		{"HS256 signed with the RSA public key, secret configured", v, "Bearer " + confused, auth.ReasonSignature},
		{"wrong secret", v, "Bearer " + sign(t, jwt.SigningMethodHS256, other, "", claims(nil)), auth.ReasonSignature},
		{"wrong RSA key", v, "Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa2, "", claims(nil)), auth.ReasonSignature},
		{"kid names another key", v, "Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-2", claims(nil)), auth.ReasonSignature},
		{"kid with an algorithm its key refuses", v, "Bearer " + sign(t, jwt.SigningMethodPS256, k.rsa2, "rsa-2", claims(nil)), auth.ReasonUnknownKey},
		{"unknown kid, no fitting key", v, "Bearer " + sign(t, jwt.SigningMethodES256, k.ec256, "nope", claims(nil)), auth.ReasonUnknownKey},
		{"ES256 without kid: only a JWKS key fits", v, "Bearer " + sign(t, jwt.SigningMethodES256, k.ec256, "", claims(nil)), auth.ReasonUnknownKey},
		{"expired", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"exp": now.Add(-31 * time.Second).Unix()})), auth.ReasonExpired},
		{"no exp", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"exp": nil})), auth.ReasonExpired},
		{"not yet valid", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"nbf": now.Add(31 * time.Second).Unix()})), auth.ReasonNotYetValid},
		{"issued in the future", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"iat": now.Add(time.Minute).Unix()})), auth.ReasonIssuedAt},
		{"wrong issuer", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"iss": "https://evil.example"})), auth.ReasonIssuer},
		{"no issuer", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"iss": nil})), auth.ReasonIssuer},
		{"wrong audience", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"aud": []string{"other", "api"}})), auth.ReasonAudience},
		{"no user claim", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"sub": nil})), auth.ReasonUserClaim},
		{"empty user claim", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"sub": ""})), auth.ReasonUserClaim},
		{"exp of the wrong type", v, "Bearer " + sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"exp": "tomorrow"})), auth.ReasonClaims},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.v.Authenticate(tc.header)
			if err == nil {
				t.Fatalf("Authenticate accepted the token: %+v", p)
			}
			var ae *auth.Error
			if !errors.As(err, &ae) || !errors.Is(err, auth.ErrUnauthenticated) {
				t.Fatalf("error %v is not an *auth.Error", err)
			}
			if ae.Reason != tc.want {
				t.Errorf("Reason = %q, want %q (%v)", ae.Reason, tc.want, err)
			}
			if tok := strings.TrimPrefix(tc.header, "Bearer "); len(tok) > 20 {
				for _, seg := range strings.Split(tok, ".") {
					if len(seg) > 8 && strings.Contains(err.Error(), seg) {
						t.Errorf("error message quotes the token: %v", err)
					}
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLeeway(t *testing.T) {
	v := verifier(t, nil)
	for name, c := range map[string]map[string]any{
		"expired within leeway":   {"exp": now.Add(-29 * time.Second).Unix()},
		"nbf within leeway":       {"nbf": now.Add(29 * time.Second).Unix()},
		"iat ahead within leeway": {"iat": now.Add(29 * time.Second).Unix()},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(c))); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
	strict := verifier(t, func(c *auth.Config) { c.Leeway = 0 })
	_, err := strict.Verify(sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"exp": now.Add(-time.Second).Unix()})))
	if !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("without leeway an expired token passed: %v", err)
	}
}

func TestPrincipalClaims(t *testing.T) {
	v := verifier(t, func(c *auth.Config) {
		c.UserClaim = "uid"
		c.ModelsClaim = "models"
		c.Parameters = []auth.ClaimParameter{
			{Claim: "uid", Name: "userId", SendToModel: false},
			{Claim: "tenant", Name: "tenant", SendToModel: true},
			{Claim: "level", Name: "level", SendToModel: true},
			{Claim: "absent", Name: "absent"},
		}
	})
	tests := []struct {
		name  string
		extra map[string]any
		want  *auth.Principal
	}{
		{"array of models", map[string]any{"uid": "u-1", "models": []string{"a", "b"}, "tenant": "acme", "level": 3},
			&auth.Principal{User: "u-1", Models: []string{"a", "b"}, Params: map[string]auth.Param{
				"userId": {Value: "u-1"}, "tenant": {Value: "acme", SendToModel: true}, "level": {Value: int64(3), SendToModel: true}}}},
		{"space-separated models", map[string]any{"uid": "u-2", "models": "a  c"},
			&auth.Principal{User: "u-2", Models: []string{"a", "c"}, Params: map[string]auth.Param{"userId": {Value: "u-2"}}}},
		{"no models claim: no model", map[string]any{"uid": "u-3"},
			&auth.Principal{User: "u-3", Models: []string{}, Params: map[string]auth.Param{"userId": {Value: "u-3"}}}},
		{"numeric user", map[string]any{"uid": 42},
			&auth.Principal{User: "42", Models: []string{}, Params: map[string]auth.Param{"userId": {Value: int64(42)}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := v.Verify(sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(tc.extra)))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, p); d != "" {
				t.Errorf("principal (-want +got):\n%s", d)
			}
		})
	}
	_, err := v.Verify(sign(t, jwt.SigningMethodHS256, []byte(secret), "", claims(map[string]any{"uid": "u", "models": []any{"a", 1}})))
	var ae *auth.Error
	if !errors.As(err, &ae) || ae.Reason != auth.ReasonModelsClaim {
		t.Errorf("bad models claim: err = %v, want reason models_claim", err)
	}
	if d := cmp.Diff([]string{"userId", "tenant", "level", "absent"}, v.BoundParameters()); d != "" {
		t.Errorf("BoundParameters (-want +got):\n%s", d)
	}
	all := &auth.Principal{User: "x"}
	if !all.CanUse("anything") {
		t.Error("a principal without a models list may use every model")
	}
	if (&auth.Principal{Models: []string{}}).CanUse("a") {
		t.Error("an empty models list allows nothing")
	}
}

func TestVerifierPrintsNoKey(t *testing.T) {
	v := verifier(t, func(c *auth.Config) { c.PublicKeyFiles, c.JWKSFile = nil, "" })
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("verifier", "v", v)
	for _, out := range []string{fmt.Sprintf("%v %+v %s %#v", v, v, v, v), logs.String()} {
		if strings.Contains(out, secret) || !strings.Contains(out, "HS256") {
			t.Errorf("printed verifier: %s", out)
		}
	}
}

func TestAlgorithmsFollowKeys(t *testing.T) {
	k := keys(t)
	tests := []struct {
		name string
		mod  func(*auth.Config)
		want []string
	}{
		{"secret", func(c *auth.Config) { c.PublicKeyFiles, c.JWKSFile = nil, "" }, []string{"HS256", "HS384", "HS512"}},
		{"rsa", func(c *auth.Config) { c.HMACSecret, c.JWKSFile, c.PublicKeyFiles = "", "", []string{k.rsaPEM} },
			[]string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}},
		{"ec and ed", func(c *auth.Config) { c.HMACSecret, c.JWKSFile, c.PublicKeyFiles = "", "", []string{k.ecPEM, k.edPEM} },
			[]string{"ES384", "EdDSA"}},
		{"jwks", func(c *auth.Config) { c.HMACSecret, c.PublicKeyFiles = "", nil }, []string{"RS256", "ES256"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, verifier(t, tc.mod).Algorithms()); d != "" {
				t.Errorf("Algorithms (-want +got):\n%s", d)
			}
		})
	}
}

func TestNewRejectsBadKeys(t *testing.T) {
	dir := t.TempDir()
	k := keys(t)
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k.ec256)
	private := write("private.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	smallDER, _ := x509.MarshalPKIXPublicKey(&small.PublicKey)
	smallPEM := write("small.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: smallDER})))
	tests := []struct {
		name string
		cfg  auth.Config
		want string
	}{
		{"no key", auth.Config{}, "no key configured"},
		{"short secret", auth.Config{HMACSecret: "short"}, "hs256_secret: needs at least 32 bytes"},
		{"missing file", auth.Config{PublicKeyFiles: []string{filepath.Join(dir, "nope.pem")}}, "public_key_files[0]"},
		{"private key", auth.Config{PublicKeyFiles: []string{private}}, "private key"},
		{"small RSA key", auth.Config{PublicKeyFiles: []string{smallPEM}}, "too small"},
		{"not PEM", auth.Config{PublicKeyFiles: []string{write("x.pem", "hello")}}, "no PEM public key"},
		{"JWKS private member", auth.Config{JWKSFile: write("p.json", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"`+strings.Repeat("A", 43)+`","d":"AA"}]}`)}, "private key"},
		{"JWKS without kid", auth.Config{JWKSFile: write("k.json", `{"keys":[{"kty":"oct","k":"`+strings.Repeat("A", 43)+`"}]}`)}, "kid is required"},
		{"JWKS duplicate kid", auth.Config{JWKSFile: write("d.json", `{"keys":[{"kty":"oct","kid":"a","k":"`+strings.Repeat("A", 43)+`"},{"kty":"oct","kid":"a","k":"`+strings.Repeat("A", 43)+`"}]}`)}, "duplicate kid"},
		{"JWKS alg mismatch", auth.Config{JWKSFile: write("m.json", `{"keys":[{"kty":"oct","kid":"a","alg":"RS256","k":"`+strings.Repeat("A", 43)+`"}]}`)}, "does not fit"},
		{"JWKS point off the curve", auth.Config{JWKSFile: write("c.json", `{"keys":[{"kty":"EC","kid":"a","crv":"P-256","x":"`+strings.Repeat("A", 43)+`","y":"`+strings.Repeat("A", 43)+`"}]}`)}, "invalid point"},
		{"duplicate parameter", auth.Config{HMACSecret: secret, Parameters: []auth.ClaimParameter{{Claim: "a", Name: "x"}, {Claim: "b", Name: "x"}}}, "duplicate parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := auth.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error reveals the secret: %v", err)
			}
		})
	}
}

func TestJWKSOctKey(t *testing.T) {
	dir := t.TempDir()
	raw := []byte("a-shared-secret-of-thirty-two-bytes!!")
	p := filepath.Join(dir, "oct.json")
	doc := `{"keys":[{"kty":"oct","kid":"hs","alg":"HS256","k":"` + base64.RawURLEncoding.EncodeToString(raw) + `"}]}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := auth.New(auth.Config{JWKSFile: p, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, raw, "hs", claims(nil))); err != nil {
		t.Fatalf("oct key by kid: %v", err)
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodHS384, raw, "hs", claims(nil))); err == nil {
		t.Fatal("an oct key with alg HS256 verified an HS384 token")
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, raw, "", claims(nil))); err == nil {
		t.Fatal("a JWKS key was used for a token without kid")
	}
}

func FuzzAuthenticate(f *testing.F) {
	v, err := auth.New(auth.Config{HMACSecret: secret, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	valid, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil)).SignedString([]byte(secret))
	for _, s := range []string{"", "Bearer", "Bearer " + valid, "bearer " + valid, "Bearer a.b.c", "Basic x", "Bearer ..", "Bearer " + valid + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		p, err := v.Authenticate(header)
		if err == nil {
			if p == nil || p.User == "" {
				t.Fatalf("accepted %q without a user", header)
			}
			return
		}
		if !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("error %v is not ErrUnauthenticated", err)
		}
	})
}
