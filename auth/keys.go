package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// key is one verification key and the algorithms it may verify.
type key struct {
	// kid is the key id from a JWKS document ("" for PEM files and the
	// shared secret).
	kid string
	// fromJWKS keys are chosen by kid; the others serve tokens whose kid
	// names no JWKS key.
	fromJWKS bool
	// material is what jwt's signing methods take: []byte for HMAC,
	// *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey.
	material any
	algs     []string
}

// Algorithm families. A key only ever verifies the algorithms of its own
// type, so an RSA public key can never be used as an HMAC secret.
var (
	hmacAlgs    = []string{"HS256", "HS384", "HS512"}
	rsaAlgs     = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	ed25519Algs = []string{"EdDSA"}
)

// ecAlg is the one JWS algorithm for an ECDSA curve.
func ecAlg(c elliptic.Curve) (string, error) {
	switch c {
	case elliptic.P256():
		return "ES256", nil
	case elliptic.P384():
		return "ES384", nil
	case elliptic.P521():
		return "ES512", nil
	}
	return "", fmt.Errorf("unsupported ECDSA curve %s", c.Params().Name)
}

// publicKey wraps a parsed public key with the algorithms it verifies.
func publicKey(pub crypto.PublicKey) (key, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return key{}, fmt.Errorf("RSA key of %d bits is too small (at least 2048)", k.N.BitLen())
		}
		return key{material: k, algs: rsaAlgs}, nil
	case *ecdsa.PublicKey:
		alg, err := ecAlg(k.Curve)
		if err != nil {
			return key{}, err
		}
		return key{material: k, algs: []string{alg}}, nil
	case ed25519.PublicKey:
		return key{material: k, algs: ed25519Algs}, nil
	}
	return key{}, fmt.Errorf("unsupported public key type %T", pub)
}

// parsePEM reads every public key (or certificate) block of a PEM file.
// Private keys are refused: the gateway only ever verifies.
func parsePEM(data []byte) ([]key, error) {
	var out []key
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var pub crypto.PublicKey
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				pub = cert.PublicKey
			}
		default:
			if strings.HasSuffix(block.Type, "PRIVATE KEY") {
				return nil, errors.New("holds a private key; give the public key only")
			}
			return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %q: %w", block.Type, err)
		}
		k, err := publicKey(pub)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM public key found")
	}
	return out, nil
}

// jwk is one JSON Web Key (RFC 7517/7518/8037), public members only.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	// RSA
	N string `json:"n"`
	E string `json:"e"`
	// EC and OKP
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	// oct (a shared HMAC secret)
	K string `json:"k"`
	// D is a private member; its presence is refused.
	D string `json:"d"`
}

// parseJWKS reads a JWKS document. Keys whose "use" is not "sig" are
// skipped; every other problem fails the whole document, naming the key.
func parseJWKS(data []byte) ([]key, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JWKS document: %w", err)
	}
	var out []key
	seen := map[string]bool{}
	for i, raw := range doc.Keys {
		var j jwk
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("keys[%d]: %w", i, err)
		}
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		if j.Kid == "" {
			return nil, fmt.Errorf("keys[%d]: kid is required", i)
		}
		if seen[j.Kid] {
			return nil, fmt.Errorf("keys[%d]: duplicate kid %q", i, j.Kid)
		}
		seen[j.Kid] = true
		k, err := j.key()
		if err != nil {
			return nil, fmt.Errorf("keys[%d] (kid %q): %w", i, j.Kid, err)
		}
		if j.Alg != "" {
			if !slices.Contains(k.algs, j.Alg) {
				return nil, fmt.Errorf("keys[%d] (kid %q): alg %s does not fit a %s key", i, j.Kid, j.Alg, j.Kty)
			}
			k.algs = []string{j.Alg}
		}
		k.kid, k.fromJWKS = j.Kid, true
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("no signing key in the JWKS document")
	}
	return out, nil
}

func (j jwk) key() (key, error) {
	if j.D != "" {
		return key{}, errors.New("holds a private key; publish the public key only")
	}
	switch j.Kty {
	case "RSA":
		n, err := b64int(j.N)
		if err != nil {
			return key{}, fmt.Errorf("n: %w", err)
		}
		e, err := b64int(j.E)
		if err != nil {
			return key{}, fmt.Errorf("e: %w", err)
		}
		if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
			return key{}, errors.New("e: out of range")
		}
		return publicKey(&rsa.PublicKey{N: n, E: int(e.Int64())})
	case "EC":
		var curve elliptic.Curve
		switch j.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return key{}, fmt.Errorf("unsupported curve %q", j.Crv)
		}
		x, err := b64bytes(j.X)
		if err != nil {
			return key{}, fmt.Errorf("x: %w", err)
		}
		y, err := b64bytes(j.Y)
		if err != nil {
			return key{}, fmt.Errorf("y: %w", err)
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return key{}, errors.New("x and y must have the curve's size")
		}
		// The uncompressed SEC 1 form lets crypto/ecdh check the point is
		// on the curve.
		raw := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, raw)
		if err != nil {
			return key{}, fmt.Errorf("invalid point: %w", err)
		}
		return publicKey(pub)
	case "OKP":
		if j.Crv != "Ed25519" {
			return key{}, fmt.Errorf("unsupported OKP curve %q", j.Crv)
		}
		x, err := b64bytes(j.X)
		if err != nil {
			return key{}, fmt.Errorf("x: %w", err)
		}
		if len(x) != ed25519.PublicKeySize {
			return key{}, errors.New("x must be 32 bytes")
		}
		return publicKey(ed25519.PublicKey(x))
	case "oct":
		k, err := b64bytes(j.K)
		if err != nil {
			return key{}, fmt.Errorf("k: %w", err)
		}
		if len(k) < minSecretBytes {
			return key{}, fmt.Errorf("k: a shared secret needs at least %d bytes", minSecretBytes)
		}
		return key{material: k, algs: hmacAlgs}, nil
	}
	return key{}, fmt.Errorf("unsupported kty %q", j.Kty)
}

func b64bytes(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("missing")
	}
	return base64.RawURLEncoding.DecodeString(s)
}

func b64int(s string) (*big.Int, error) {
	b, err := b64bytes(s)
	if err != nil {
		return nil, err
	}
	return new(big.Int).SetBytes(b), nil
}
