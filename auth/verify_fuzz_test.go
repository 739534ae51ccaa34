package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentgate/agentgate/auth"
)

// FuzzVerifyToken signs any header and claims JSON with the configured
// secret, so that the parser gets past the signature and reads both: no
// panic, every refusal is an *auth.Error, and an accepted token has a
// header that is a JSON object without crit and an HS256 alg, and claims
// with a non-empty user and an exp.
func FuzzVerifyToken(f *testing.F) {
	for _, s := range [][2]string{
		{`{"alg":"HS256","typ":"JWT"}`, `{"sub":"alice","exp":4102444800}`},
		{`{"alg":"HS256","crit":["b64"],"b64":false}`, `{"sub":"alice","exp":4102444800}`},
		{`{"alg":"HS256","kid":"k"}`, `{"sub":12,"exp":4102444800,"nbf":1,"iat":1,"aud":["a"],"iss":"i"}`},
		{`{"alg":"none"}`, `{"sub":"alice"}`},
		{`{"alg":"HS256"}`, `{"sub":"alice","exp":"soon"}`},
		{`{"alg":"HS256"}`, `[]`},
		{`null`, `null`},
		{`{"alg":"HS256","alg":"RS256"}`, `{"sub":"","exp":1e300}`},
	} {
		f.Add(s[0], s[1])
	}
	v, err := auth.New(auth.Config{HMACSecret: secret, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	f.Fuzz(func(t *testing.T, header, claims string) {
		input := b64([]byte(header)) + "." + b64([]byte(claims))
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(input))
		p, err := v.Verify(input + "." + b64(mac.Sum(nil)))
		if err != nil {
			var ae *auth.Error
			if !errors.As(err, &ae) {
				t.Fatalf("refusal %v is not an *auth.Error", err)
			}
			return
		}
		var h map[string]any
		if json.Unmarshal([]byte(header), &h) != nil {
			t.Fatalf("accepted a header that is not a JSON object: %q", header)
		}
		if _, ok := h["crit"]; ok || h["alg"] != "HS256" {
			t.Fatalf("accepted header %q", header)
		}
		var c map[string]any
		if json.Unmarshal([]byte(claims), &c) != nil || c["exp"] == nil || p.User == "" {
			t.Fatalf("accepted claims %q (user %q)", claims, p.User)
		}
	})
}
