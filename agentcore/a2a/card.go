package a2a

import (
	"strings"
)

// AgentCard describes an agent: who it is, where to call it and what it can
// do. The struct holds the fields of both versions, so one card can be
// served to v0.3 clients (url, protocolVersion, preferredTransport) and v1
// clients (supportedInterfaces) alike.
type AgentCard struct {
	ProtocolVersion      string           `json:"protocolVersion,omitempty"`
	Name                 string           `json:"name"`
	Description          string           `json:"description"`
	URL                  string           `json:"url,omitempty"`
	PreferredTransport   string           `json:"preferredTransport,omitempty"`
	AdditionalInterfaces []AgentInterface `json:"additionalInterfaces,omitempty"`
	// SupportedInterfaces is v1's list, in order of preference.
	SupportedInterfaces []AgentInterface  `json:"supportedInterfaces,omitempty"`
	Provider            *AgentProvider    `json:"provider,omitempty"`
	Version             string            `json:"version"`
	DocumentationURL    string            `json:"documentationUrl,omitempty"`
	Capabilities        AgentCapabilities `json:"capabilities"`
	SecuritySchemes     map[string]any    `json:"securitySchemes,omitempty"`
	// Security is v0.3's list of requirements, SecurityRequirements v1's.
	Security             []map[string]any `json:"security,omitempty"`
	SecurityRequirements []map[string]any `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string         `json:"defaultInputModes"`
	DefaultOutputModes   []string         `json:"defaultOutputModes"`
	Skills               []AgentSkill     `json:"skills"`
	// SupportsAuthenticatedExtendedCard is v0.3's extended-card flag.
	SupportsAuthenticatedExtendedCard bool `json:"supportsAuthenticatedExtendedCard,omitempty"`
}

// AgentInterface is one way to reach an agent.
type AgentInterface struct {
	URL string `json:"url"`
	// Transport is v0.3's name of the binding, ProtocolBinding v1's.
	Transport       string `json:"transport,omitempty"`
	ProtocolBinding string `json:"protocolBinding,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	Tenant          string `json:"tenant,omitempty"`
}

// AgentProvider names who runs the agent.
type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// AgentCapabilities are the optional features an agent supports.
type AgentCapabilities struct {
	Streaming              *bool `json:"streaming,omitempty"`
	PushNotifications      *bool `json:"pushNotifications,omitempty"`
	StateTransitionHistory *bool `json:"stateTransitionHistory,omitempty"`
	ExtendedAgentCard      *bool `json:"extendedAgentCard,omitempty"`
}

// AgentSkill is something the agent is good at.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// JSONRPC picks the JSON-RPC interface to call: the first JSON-RPC entry of
// supportedInterfaces (v1 when its protocolVersion is 1.x), else the v0.3
// url when its preferred transport is JSON-RPC, else a JSON-RPC entry of
// additionalInterfaces. ok is false when the card offers no JSON-RPC.
func (c *AgentCard) JSONRPC() (url string, v Version, ok bool) {
	for _, in := range c.SupportedInterfaces {
		if isJSONRPC(cmpOr(in.ProtocolBinding, in.Transport)) && in.URL != "" {
			if strings.HasPrefix(in.ProtocolVersion, "0.") {
				return in.URL, V03, true
			}
			return in.URL, V1, true
		}
	}
	if c.URL != "" && (c.PreferredTransport == "" || isJSONRPC(c.PreferredTransport)) {
		return c.URL, V03, true
	}
	for _, in := range c.AdditionalInterfaces {
		if isJSONRPC(cmpOr(in.Transport, in.ProtocolBinding)) && in.URL != "" {
			return in.URL, V03, true
		}
	}
	return "", V03, false
}

// Streams reports whether the card says the agent streams.
func (c *AgentCard) Streams() bool {
	return c.Capabilities.Streaming != nil && *c.Capabilities.Streaming
}

func isJSONRPC(binding string) bool {
	b := strings.ToUpper(strings.ReplaceAll(binding, "-", ""))
	return b == "JSONRPC" || b == "JSONRPC2.0"
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
