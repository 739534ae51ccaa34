package main

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/agentgate/agentgate/auth"
	"github.com/agentgate/agentgate/config"
	"github.com/agentgate/agentgate/gateway"
)

// newAuthenticator builds the token verifier for auth.mode jwt (nil for
// none). Key files and the JWKS URL are read now, relative paths from dir
// (the config file's): a missing or bad key stops start-up, one line per
// problem naming its key. A verifier with a JWKS URL refreshes it in the
// background until closed (it is an io.Closer); log gets failed refreshes.
func newAuthenticator(a config.Auth, dir string, log *slog.Logger) (gateway.Authenticator, error) {
	if a.Mode != "jwt" {
		return nil, nil
	}
	j := a.JWT
	resolve := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	keyFiles := make([]string, len(j.PublicKeyFiles))
	for i, f := range j.PublicKeyFiles {
		keyFiles[i] = resolve(f)
	}
	params := make([]auth.ClaimParameter, len(j.Parameters))
	for i, p := range j.Parameters {
		params[i] = auth.ClaimParameter{Claim: p.Claim, Name: p.Name, SendToModel: p.SendToModel == nil || *p.SendToModel}
	}
	v, err := auth.New(auth.Config{Issuer: j.Issuer, Audience: j.Audience, HMACSecret: j.HS256Secret, PublicKeyFiles: keyFiles,
		JWKSFile: resolve(j.JWKSFile), JWKSURL: j.JWKSURL, JWKSRefresh: j.JWKSRefresh, Logger: log, Leeway: j.Leeway, UserClaim: j.UserClaim, ModelsClaim: j.ModelsClaim, Parameters: params})
	if err != nil {
		var lines []error
		for _, l := range strings.Split(err.Error(), "\n") {
			lines = append(lines, errors.New("auth.jwt."+strings.TrimPrefix(l, "auth: ")))
		}
		return nil, errors.Join(lines...)
	}
	return v, nil
}
