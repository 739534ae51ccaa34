package a2a

import (
	"log/slog"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/spec"
)

// Remotes makes the remote agents of declarative specs (it is
// spec.BuildOptions.Remote) and resolves them, when they are called,
// through one Directory that a config reload updates with Apply.
type Remotes struct {
	client *Client
	dir    *Directory
	log    *slog.Logger
}

// NewRemotes returns remotes calling through client.
func NewRemotes(client *Client, logger *slog.Logger) *Remotes {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Remotes{client: client, dir: NewDirectory(nil), log: logger}
}

// EndpointOf converts a spec's endpoint.
func EndpointOf(e *spec.Endpoint) Endpoint {
	return Endpoint{URL: e.A2A, Token: e.BearerToken, Timeout: e.Timeout, PollInterval: e.PollInterval, Streaming: e.Streaming}
}

// Build makes the agent of a spec with an endpoint; it is meant as
// spec.BuildOptions.Remote.
func (r *Remotes) Build(s spec.Agent) (agentcore.Agent, error) {
	return NewAgent(AgentConfig{Name: s.Name, Description: s.Description, Endpoint: EndpointOf(s.Endpoint), Client: r.client,
		Resolver: r.dir, Logger: r.log})
}

// Apply makes the endpoints of set the ones every remote agent resolves
// from its next call on, in the trees built from set and in older trees
// still running. Call it once set's catalog is served.
func (r *Remotes) Apply(set spec.Set) {
	m := map[string]Endpoint{}
	for _, a := range set.Agents {
		if a.Endpoint != nil {
			m[a.Name] = EndpointOf(a.Endpoint)
		}
	}
	r.dir.Set(m)
}
