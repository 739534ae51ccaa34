package main

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/agentcore/tools/httptool"
	"github.com/agentgate/agentgate/agentcore/tools/mcptoolset"
	"github.com/agentgate/agentgate/agentcore/tools/openapitoolset"
)

// inheritedEnv is what a stdio MCP server inherits from the gateway's
// environment; everything else it gets comes from its config's env. API
// keys and tokens of the gateway never leak into it.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// toolMakers makes the tools and toolsets spec does not know (kind: http,
// toolsets: mcp and openapi) and owns the MCP toolsets it made (the only
// ones holding resources): Close closes them. Agents that name the same
// MCP server the same way (prefix included) share one session, also
// across reloads. A reload brackets its spec.Build with Begin, then Commit
// once the new catalog serves (closing the servers it no longer names) or
// Rollback when it failed.
type toolMakers struct {
	log       *slog.Logger
	lookup    func(string) (string, bool)
	configDir string
	// client, when set, sends the tools' requests (see upstreamClients).
	client *http.Client

	mu sync.Mutex
	// mcp holds the open toolsets by config key; used and prev are the
	// keys named by the current and the previous build.
	mcp        map[string]io.Closer
	used, prev map[string]bool
}

func newToolMakers(log *slog.Logger, lookup func(string) (string, bool), configDir string) *toolMakers {
	return &toolMakers{log: log, lookup: lookup, configDir: configDir, mcp: map[string]io.Closer{}, used: map[string]bool{}}
}

// Begin starts a build: from now on the servers it names are recorded.
func (m *toolMakers) Begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prev, m.used = m.used, map[string]bool{}
}

// Commit closes the MCP toolsets the last build did not name.
func (m *toolMakers) Commit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prev = nil
	return m.sweepLocked()
}

// Rollback forgets a failed build: what only it named is closed, and the
// previous build's servers stay.
func (m *toolMakers) Rollback() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prev != nil {
		m.used, m.prev = m.prev, nil
	}
	return m.sweepLocked()
}

func (m *toolMakers) sweepLocked() error {
	var errs []error
	for k, c := range m.mcp {
		if !m.used[k] {
			errs = append(errs, c.Close())
			delete(m.mcp, k)
		}
	}
	return errors.Join(errs...)
}

// tool implements spec.BuildOptions.Tools.
func (m *toolMakers) tool(_ string, t spec.Tool) (agentcore.Tool, error) {
	if t.Kind != "http" {
		return nil, nil
	}
	return httptool.New(httptool.Config{Name: t.Name, Description: t.Description, Parameters: t.Parameters,
		URL: t.URL, Method: t.Method, Headers: t.Headers, Timeout: t.Timeout, Client: m.client})
}

// toolset implements spec.BuildOptions.Toolsets.
func (m *toolMakers) toolset(_ string, ts spec.Toolset) (agentcore.Toolset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case ts.MCP != nil:
		c := ts.MCP
		key, _ := json.Marshal(struct {
			URL, Command, Prefix string
			Args                 []string
			Headers, Env         map[string]string
			Timeout              string
		}{c.URL, c.Command, ts.Prefix, c.Args, reveal(c.Headers), reveal(c.Env), c.Timeout.String()})
		m.used[string(key)] = true
		if made, ok := m.mcp[string(key)]; ok {
			return made.(agentcore.Toolset), nil
		}
		made, err := mcptoolset.New(mcptoolset.Config{Name: mcpName(ts), URL: c.URL, Headers: reveal(c.Headers),
			Command: c.Command, Args: c.Args, Env: m.childEnv(c.Env), Timeout: c.Timeout, Logger: m.log, HTTPClient: m.client})
		if err != nil {
			return nil, err
		}
		m.mcp[string(key)] = made
		return made, nil
	case ts.OpenAPI != nil:
		c := ts.OpenAPI
		path := c.Spec
		if !filepath.IsAbs(path) {
			path = filepath.Join(m.configDir, path)
		}
		name := ts.Prefix
		if name == "" {
			name = filepath.Base(c.Spec)
		}
		made, err := openapitoolset.New(openapitoolset.Config{Name: name, Spec: path, BaseURL: c.BaseURL,
			Headers: reveal(c.Headers), Timeout: c.Timeout, Client: m.client})
		if err != nil {
			return nil, errors.New("openapi." + err.Error())
		}
		return made, nil
	}
	return nil, nil
}

// Close closes every toolset made.
func (m *toolMakers) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used, m.prev = map[string]bool{}, nil
	return m.sweepLocked()
}

// childEnv is a stdio server's environment: inheritedEnv, then its env.
func (m *toolMakers) childEnv(extra map[string]model.Secret) []string {
	env := []string{}
	for _, k := range inheritedEnv {
		if v, ok := m.lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v.Reveal())
	}
	return env
}

// mcpName names a server for logs and for the model: the prefix, else the
// URL's host or the command's base name.
func mcpName(ts spec.Toolset) string {
	if ts.Prefix != "" {
		return ts.Prefix
	}
	if ts.MCP.Command != "" {
		return filepath.Base(ts.MCP.Command)
	}
	if u, err := url.Parse(ts.MCP.URL); err == nil {
		return u.Host
	}
	return "mcp"
}

func reveal(m map[string]model.Secret) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Reveal()
	}
	return out
}
