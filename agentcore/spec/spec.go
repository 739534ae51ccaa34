// Package spec turns declarative agent specs (the providers, agents and
// virtual models of config.yaml) into validated agent trees. Every problem
// is reported with the key that holds it, e.g.
// `agents[2].sub_agents: unknown agent "biling"`.
package spec

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/limits"
)

// Provider is one configured model provider.
type Provider struct {
	Name string `yaml:"name"`
	// Type is openai, gemini or scripted.
	Type       string            `yaml:"type"`
	BaseURL    string            `yaml:"base_url"`
	APIKey     model.Secret      `yaml:"api_key"`
	Timeout    time.Duration     `yaml:"timeout"`
	MaxRetries *int              `yaml:"max_retries"`
	Headers    map[string]string `yaml:"headers"`
	// Scripted-only settings.
	Rules      []scripted.Rule `yaml:"rules"`
	Default    string          `yaml:"default"`
	ChunkSize  int             `yaml:"chunk_size"`
	ChunkDelay time.Duration   `yaml:"chunk_delay"`
}

// Agent is one configured agent.
type Agent struct {
	Name string `yaml:"name"`
	// Type is llm (default), sequential, parallel or loop.
	Type              string         `yaml:"type"`
	Model             string         `yaml:"model"`
	Description       string         `yaml:"description"`
	Instruction       string         `yaml:"instruction"`
	GlobalInstruction string         `yaml:"global_instruction"`
	StaticInstruction string         `yaml:"static_instruction"`
	SubAgents         []string       `yaml:"sub_agents"`
	AgentTools        []string       `yaml:"agent_tools"`
	Tools             []Tool         `yaml:"tools"`
	DisableTransfer   bool           `yaml:"disable_transfer"`
	IncludeContents   string         `yaml:"include_contents"`
	OutputKey         string         `yaml:"output_key"`
	OutputSchema      map[string]any `yaml:"output_schema"`
	MaxIterations     int            `yaml:"max_iterations"`
	Temperature       *float32       `yaml:"temperature"`
	MaxOutputTokens   int32          `yaml:"max_output_tokens"`
	Parameters        []Parameter    `yaml:"parameters"`
	Endpoint          *Endpoint      `yaml:"endpoint"`
	Toolsets          []Toolset      `yaml:"toolsets"`
}

// Parameter declares a conversation parameter an agent uses.
// SendToModel defaults to true.
type Parameter struct {
	Name                  string `yaml:"name"`
	Description           string `yaml:"description"`
	SendToModel           *bool  `yaml:"send_to_model"`
	ForbidModelGeneration bool   `yaml:"forbid_model_generation"`
}

// Endpoint places an agent on another server, called over A2A.
type Endpoint struct {
	// A2A is the remote agent's URL (its card is found under it).
	A2A         string       `yaml:"a2a"`
	BearerToken model.Secret `yaml:"bearer_token"`
	// Timeout bounds one call of the remote agent.
	Timeout time.Duration `yaml:"timeout"`
	// PollInterval spaces task polls when the agent does not stream.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Streaming forces message/stream (true) or polling (false); unset
	// follows the agent card.
	Streaming *bool `yaml:"streaming"`
}

// Tool is one entry of an agent's tools list.
type Tool struct {
	Builtin     string            `yaml:"builtin"`
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Parameters  map[string]any    `yaml:"parameters"`
	Kind        string            `yaml:"kind"`
	URL         string            `yaml:"url"`
	Method      string            `yaml:"method"`
	Headers     map[string]string `yaml:"headers"`
	Timeout     time.Duration     `yaml:"timeout"`
	// Confirm makes every call wait for the user's approval (ADK's tool
	// confirmation); ConfirmHint is shown with the request.
	Confirm     bool   `yaml:"confirm"`
	ConfirmHint string `yaml:"confirm_hint"`
}

// Toolset is one entry of an agent's toolsets list: exactly one source of
// tools (an MCP server or an OpenAPI document), with an optional name
// prefix and allow-list.
type Toolset struct {
	MCP     *MCPToolset     `yaml:"mcp"`
	OpenAPI *OpenAPIToolset `yaml:"openapi"`
	// Prefix is prepended to each tool name with an underscore.
	Prefix string `yaml:"prefix"`
	// Allow keeps only the tools with these names (before the prefix).
	Allow []string `yaml:"allow"`
}

// MCPToolset is an MCP server reached over streamable HTTP (URL) or
// started as a child process speaking stdio (Command).
type MCPToolset struct {
	URL     string                  `yaml:"url"`
	Headers map[string]model.Secret `yaml:"headers"`
	Command string                  `yaml:"command"`
	Args    []string                `yaml:"args"`
	Env     map[string]model.Secret `yaml:"env"`
	// Timeout bounds connecting, listing and each call.
	Timeout time.Duration `yaml:"timeout"`
}

// OpenAPIToolset turns the operations of an OpenAPI 3 document on disk into
// tools called over HTTP.
type OpenAPIToolset struct {
	Spec    string                  `yaml:"spec"`
	BaseURL string                  `yaml:"base_url"`
	Headers map[string]model.Secret `yaml:"headers"`
	Timeout time.Duration           `yaml:"timeout"`
}

// VirtualModel serves an agent tree as a model (and a native-API app).
type VirtualModel struct {
	ID          string `yaml:"id"`
	Agent       string `yaml:"agent"`
	Description string `yaml:"description"`
	// RouteNextTurn is active (default: the agent that spoke last) or root.
	RouteNextTurn string `yaml:"route_next_turn"`
	// StreamSubAgents streams the events of agents called as tools on the
	// native surface by default (a request may also ask for it).
	StreamSubAgents bool `yaml:"stream_sub_agents"`
	// OnDisconnect is what becomes of a streamed native run whose client
	// goes away: cancel (default) or continue (it runs to its end, its
	// events kept for a client to re-attach).
	OnDisconnect string `yaml:"on_disconnect"`
	// Multitask is what a turn sent while the session has a run going
	// does by default: reject (default), enqueue or interrupt (see
	// Multitask).
	Multitask Multitask `yaml:"multitask"`
	// ClientInstructions is what becomes of a client's system and
	// developer messages (and instructions): ignore (default) or append
	// (to the root agent's instruction).
	ClientInstructions string `yaml:"client_instructions"`
	// Compaction summarizes the model's long sessions (off when absent).
	Compaction *CompactionSpec `yaml:"compaction"`
	// Limits bounds each user's turns on this model, besides the global
	// limits (the stricter applies); absent: none of its own.
	Limits *limits.Limits `yaml:"limits"`
}

// Multitask is what a new turn on a session that has a run going does
// (double texting).
type Multitask string

// The multitask strategies.
const (
	// MultitaskReject refuses the turn (once the session stayed busy for
	// the wait the caller allows).
	MultitaskReject Multitask = "reject"
	// MultitaskEnqueue runs the turn after those going or waiting, in the
	// order they came.
	MultitaskEnqueue Multitask = "enqueue"
	// MultitaskInterrupt cancels the runs going or waiting, then runs the
	// turn.
	MultitaskInterrupt Multitask = "interrupt"
)

// ParseMultitask reads a strategy's name; ok is false for anything else
// (the empty string included).
func ParseMultitask(name string) (m Multitask, ok bool) {
	switch m := Multitask(name); m {
	case MultitaskReject, MultitaskEnqueue, MultitaskInterrupt:
		return m, true
	}
	return "", false
}

// CompactionSpec is a virtual model's session compaction: every Interval
// user turns, Model (<provider>/<model>) summarizes the previous summary
// and those turns, with Overlap turns before them.
type CompactionSpec struct {
	Interval int    `yaml:"interval"`
	Overlap  int    `yaml:"overlap"`
	Model    string `yaml:"model"`
}

// Set is everything that defines the trees.
type Set struct {
	Providers []Provider
	Agents    []Agent
	Models    []VirtualModel
}

// ProviderFactory makes the LLM for one model id of a configured provider.
// Real providers (openai, gemini) are registered by the composition root, so
// this package does not import their SDKs.
type ProviderFactory func(p Provider) (func(modelID string) (model.LLM, error), error)

// BuildOptions supply what building needs from outside.
type BuildOptions struct {
	// Factories by provider type; "scripted" is built in.
	Factories map[string]ProviderFactory
	// Tools makes tools of kinds this package does not know (http, ...);
	// it returns nil, nil for kinds it does not handle either.
	Tools func(agent string, t Tool) (agentcore.Tool, error)
	// Toolsets makes the source of a toolsets entry (its MCP server or
	// OpenAPI document); the prefix and allow-list are applied here. Who
	// makes a toolset closes it.
	Toolsets func(agent string, ts Toolset) (agentcore.Toolset, error)
	// Remote makes the agent of a spec with an endpoint (an A2A client
	// agent). Its errors are reported under the spec's endpoint key.
	Remote func(a Agent) (agentcore.Agent, error)
}

// App is one virtual model: an agent tree and how it routes turns.
type App struct {
	ID          string
	Description string
	Root        agentcore.Agent
	RouteToRoot bool
	// StreamSubAgents streams agent-tool events on the native surface.
	StreamSubAgents bool
	// ContinueOnDisconnect keeps a streamed native run going when its
	// client goes away (on_disconnect: continue).
	ContinueOnDisconnect bool
	// Multitask is what a turn sent while its session has a run going does
	// (double texting), unless the request chooses; never empty.
	Multitask Multitask
	// AppendClientInstructions appends a client's system text to the root
	// agent's instruction (client_instructions: append).
	AppendClientInstructions bool
	// Compaction is the model's session compaction, nil when off; the
	// caller adds the Locker.
	Compaction *agentcore.Compaction
	// Limits are the model's own per-user limits (zero: none).
	Limits limits.Values
	// ClientActions maps the name shown to clients
	// ("<agent>__<action>" for agents below the root) to the action's
	// agent and function name.
	ClientActions map[string]ClientAction
}

// ClientAction names a client-executed tool declared on an agent.
type ClientAction struct {
	Agent, Name string
}

// Catalog holds the built apps by id, in config order.
type Catalog struct {
	Apps   []*App
	byID   map[string]*App
	Agents map[string]agentcore.Agent
}

// App returns the app with that id, or nil.
func (c *Catalog) App(id string) *App { return c.byID[id] }

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9_-]+$`)
	builtins  = []string{agentcore.ExitLoopToolName, agentcore.GetUserChoiceToolName, agentcore.LoadMemoryToolName, agentcore.PreloadMemoryToolName, agentcore.LoadArtifactsToolName, agentcore.GoogleSearchToolName, agentcore.URLContextToolName, agentcore.CodeExecutionToolName}
	toolKinds = []string{"client", "http"}
)

// Build validates the set and builds every app. All problems are returned
// together, one error per problem.
func Build(set Set, opts BuildOptions) (*Catalog, error) {
	b := &builder{set: set, opts: opts, agents: map[string]agentcore.Agent{}, specIdx: map[string]int{}, llms: map[string]model.LLM{}}
	b.providers()
	b.indexAgents()
	if b.checkCycles() {
		for i := range set.Agents {
			if _, ok := b.specIdx[set.Agents[i].Name]; ok {
				b.build(set.Agents[i].Name)
			}
		}
	}
	cat := &Catalog{byID: map[string]*App{}, Agents: b.agents}
	seen := map[string]bool{}
	for i, m := range set.Models {
		key := fmt.Sprintf("models[%d]", i)
		if m.ID == "" {
			b.errf("%s.id: required", key)
			continue
		}
		if seen[m.ID] {
			b.errf("%s.id: duplicate model id %q", key, m.ID)
			continue
		}
		seen[m.ID] = true
		if _, ok := b.specIdx[m.Agent]; !ok {
			b.errf("%s.agent: unknown agent %q", key, m.Agent)
			continue
		}
		switch m.RouteNextTurn {
		case "", "active", "root":
		default:
			b.errf("%s.route_next_turn: must be active or root, not %q", key, m.RouteNextTurn)
		}
		switch m.ClientInstructions {
		case "", "ignore", "append":
		default:
			b.errf("%s.client_instructions: must be ignore or append, not %q", key, m.ClientInstructions)
		}
		switch m.OnDisconnect {
		case "", "cancel", "continue":
		default:
			b.errf("%s.on_disconnect: must be cancel or continue, not %q", key, m.OnDisconnect)
		}
		multitask, ok := ParseMultitask(string(m.Multitask))
		switch {
		case m.Multitask == "":
			multitask = MultitaskReject
		case !ok:
			b.errf("%s.multitask: must be reject, enqueue or interrupt, not %q", key, m.Multitask)
		}
		if err := m.Limits.Validate(key + ".limits"); err != nil {
			b.errs = append(b.errs, err)
		}
		root := b.agents[m.Agent]
		if root == nil {
			continue // its own errors were reported
		}
		if err := agentcore.ValidateTree(root); err != nil {
			b.errf("%s.agent: %v", key, err)
			continue
		}
		app := &App{ID: m.ID, Description: m.Description, Root: root, RouteToRoot: m.RouteNextTurn == "root",
			StreamSubAgents: m.StreamSubAgents, ClientActions: b.clientActions(m.Agent),
			AppendClientInstructions: m.ClientInstructions == "append", ContinueOnDisconnect: m.OnDisconnect == "continue", Multitask: multitask, Limits: m.Limits.Values()}
		if app.Description == "" {
			app.Description = root.Description()
		}
		app.Compaction = b.compaction(key+".compaction", m.Compaction)
		cat.Apps = append(cat.Apps, app)
		cat.byID[m.ID] = app
	}
	if len(set.Models) == 0 {
		b.errf("models: at least one virtual model is required")
	}
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return cat, nil
}

type builder struct {
	set       Set
	opts      BuildOptions
	errs      []error
	factories map[string]func(string) (model.LLM, error)
	agents    map[string]agentcore.Agent
	specIdx   map[string]int
	llms      map[string]model.LLM
	building  map[string]bool
}

func (b *builder) errf(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf(format, args...))
}

func (b *builder) providers() {
	b.factories = map[string]func(string) (model.LLM, error){}
	for i, p := range b.set.Providers {
		key := fmt.Sprintf("providers[%d]", i)
		if !nameRE.MatchString(p.Name) {
			b.errf("%s.name: must match [a-z0-9_-]+, got %q", key, p.Name)
			continue
		}
		if _, dup := b.factories[p.Name]; dup {
			b.errf("%s.name: duplicate provider %q", key, p.Name)
			continue
		}
		if p.Type == "scripted" {
			cfg := scripted.Config{Rules: p.Rules, Default: p.Default, ChunkSize: p.ChunkSize, ChunkDelay: p.ChunkDelay}
			if _, err := scripted.New("check", cfg); err != nil {
				b.errf("%s.%v", key, err)
				continue
			}
			b.factories[p.Name] = func(id string) (model.LLM, error) { return scripted.New(id, cfg) }
			continue
		}
		if len(p.Rules) > 0 || p.Default != "" {
			b.errf("%s.rules: only scripted providers take rules", key)
		}
		f, ok := b.opts.Factories[p.Type]
		if !ok {
			b.errf("%s.type: unknown provider type %q (want openai, gemini or scripted)", key, p.Type)
			continue
		}
		mk, err := f(p)
		if err != nil {
			b.errf("%s: %v", key, err)
			continue
		}
		b.factories[p.Name] = mk
	}
}

func (b *builder) indexAgents() {
	for i, a := range b.set.Agents {
		key := fmt.Sprintf("agents[%d]", i)
		if !nameRE.MatchString(a.Name) {
			b.errf("%s.name: must match [a-z0-9_-]+, got %q", key, a.Name)
			continue
		}
		if _, dup := b.specIdx[a.Name]; dup {
			b.errf("%s.name: duplicate agent %q", key, a.Name)
			continue
		}
		b.specIdx[a.Name] = i
	}
	for i, a := range b.set.Agents {
		key := fmt.Sprintf("agents[%d]", i)
		for _, s := range a.SubAgents {
			if _, ok := b.specIdx[s]; !ok {
				b.errf("%s.sub_agents: unknown agent %q", key, s)
			}
		}
		for _, s := range a.AgentTools {
			if _, ok := b.specIdx[s]; !ok {
				b.errf("%s.agent_tools: unknown agent %q", key, s)
			}
		}
	}
}

// checkCycles rejects specs whose sub_agents or agent_tools lead back to an
// agent on the path; it reports whether there is none.
func (b *builder) checkCycles() bool {
	state := map[string]int{} // 0 new, 1 on path, 2 done
	var path []string
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case 1:
			i := slices.Index(path, name)
			b.errf("agents[%d]: cycle: %s", b.specIdx[name], strings.Join(append(path[i:], name), " -> "))
			return false
		case 2:
			return true
		}
		state[name] = 1
		path = append(path, name)
		a := b.set.Agents[b.specIdx[name]]
		for _, next := range slices.Concat(a.SubAgents, a.AgentTools) {
			if _, known := b.specIdx[next]; !known {
				continue
			}
			if !visit(next) {
				return false
			}
		}
		path = path[:len(path)-1]
		state[name] = 2
		return true
	}
	for _, a := range b.set.Agents {
		if _, known := b.specIdx[a.Name]; known && !visit(a.Name) {
			return false
		}
	}
	return true
}

func (b *builder) llm(key, ref string) model.LLM {
	if m, ok := b.llms[ref]; ok {
		return m
	}
	prov, id, ok := strings.Cut(ref, "/")
	if !ok || prov == "" || id == "" {
		b.errf("%s.model: want <provider>/<model>, got %q", key, ref)
		return nil
	}
	mk, ok := b.factories[prov]
	if !ok {
		b.errf("%s.model: unknown provider %q", key, prov)
		return nil
	}
	m, err := mk(id)
	if err != nil {
		b.errf("%s.model: %v", key, err)
		return nil
	}
	b.llms[ref] = m
	return m
}

// compaction validates a model's compaction settings and builds its
// summarizer; nil when off or invalid (the errors are reported).
func (b *builder) compaction(key string, c *CompactionSpec) *agentcore.Compaction {
	if c == nil {
		return nil
	}
	ok := true
	if c.Interval < 1 {
		b.errf("%s.interval: must be at least 1, got %d", key, c.Interval)
		ok = false
	}
	if c.Overlap < 0 {
		b.errf("%s.overlap: must not be negative, got %d", key, c.Overlap)
		ok = false
	}
	if c.Model == "" {
		b.errf("%s.model: required (<provider>/<model>)", key)
		return nil
	}
	m := b.llm(key, c.Model)
	if m == nil || !ok {
		return nil
	}
	return &agentcore.Compaction{Interval: c.Interval, Overlap: c.Overlap, Model: m}
}

// build constructs the agent named name (and what it references) once.
func (b *builder) build(name string) agentcore.Agent {
	if a, ok := b.agents[name]; ok {
		return a
	}
	i := b.specIdx[name]
	s := b.set.Agents[i]
	key := fmt.Sprintf("agents[%d]", i)
	if s.Endpoint != nil {
		return b.remote(key, s)
	}
	var subs []agentcore.Agent
	okSubs := true
	for _, n := range s.SubAgents {
		if _, known := b.specIdx[n]; !known {
			okSubs = false
			continue
		}
		sa := b.build(n)
		if sa == nil {
			okSubs = false
			continue
		}
		subs = append(subs, sa)
	}
	var built agentcore.Agent
	var err error
	switch s.Type {
	case "sequential", "parallel", "loop":
		if len(s.Parameters) > 0 {
			b.errf("%s.parameters: only llm agents declare parameters (a %s agent hands its parent's values to its sub-agents)", key, s.Type)
		}
		if s.Model != "" || s.Instruction != "" || len(s.Tools) > 0 || len(s.AgentTools) > 0 || len(s.Toolsets) > 0 {
			b.errf("%s: a %s agent takes only sub_agents (and max_iterations for loop)", key, s.Type)
		}
		if !okSubs {
			return nil
		}
		cfg := agentcore.WorkflowConfig{Name: s.Name, Description: s.Description, SubAgents: subs, MaxIterations: s.MaxIterations}
		switch s.Type {
		case "sequential":
			built, err = agentcore.NewSequentialAgent(cfg)
		case "parallel":
			built, err = agentcore.NewParallelAgent(cfg)
		default:
			built, err = agentcore.NewLoopAgent(cfg)
		}
	case "", "llm":
		if s.Model == "" {
			b.errf("%s.model: required for an llm agent", key)
			return nil
		}
		llm := b.llm(key, s.Model)
		tools := b.tools(key, s)
		toolsets := b.toolsets(key, s)
		for _, n := range s.AgentTools {
			if _, known := b.specIdx[n]; !known {
				okSubs = false
				continue
			}
			ta := b.build(n)
			if ta == nil {
				okSubs = false
				continue
			}
			at, err := agentcore.NewAgentTool(ta, agentcore.AgentToolConfig{})
			if err != nil {
				b.errf("%s.agent_tools: %v", key, err)
				continue
			}
			tools = append(tools, at)
		}
		if llm == nil || !okSubs {
			return nil
		}
		var gen *genai.GenerateContentConfig
		if s.Temperature != nil || s.MaxOutputTokens > 0 {
			gen = &genai.GenerateContentConfig{Temperature: s.Temperature, MaxOutputTokens: s.MaxOutputTokens}
		}
		built, err = agentcore.NewLlmAgent(agentcore.LlmConfig{
			Name: s.Name, Description: s.Description, Model: llm, Instruction: s.Instruction,
			GlobalInstruction: s.GlobalInstruction, StaticInstruction: s.StaticInstruction,
			Tools: tools, Toolsets: toolsets, SubAgents: subs, DisableTransfer: s.DisableTransfer, MaxIterations: s.MaxIterations,
			OutputKey: s.OutputKey, OutputSchema: s.OutputSchema, IncludeContents: agentcore.IncludeContents(s.IncludeContents),
			GenerateConfig: gen, Parameters: paramSpecs(s.Parameters),
		})
	default:
		b.errf("%s.type: must be llm, sequential, parallel or loop, not %q", key, s.Type)
		return nil
	}
	if err != nil {
		b.errf("%s: %v", key, err)
		return nil
	}
	b.agents[name] = built
	return built
}

// remote checks the spec of an agent that lives on another server and has
// BuildOptions.Remote make it.
func (b *builder) remote(key string, s Agent) agentcore.Agent {
	// A failure is remembered (nil), so the agents that reference this
	// one do not report it again.
	b.agents[s.Name] = nil
	ep := s.Endpoint
	ok := true
	bad := func(format string, args ...any) { b.errf(format, args...); ok = false }
	if s.Type != "" && s.Type != "llm" {
		bad("%s.type: a remote agent (with an endpoint) cannot be a %s agent", key, s.Type)
	}
	if s.Model != "" || s.Instruction != "" || s.GlobalInstruction != "" || s.StaticInstruction != "" || len(s.SubAgents) > 0 ||
		len(s.AgentTools) > 0 || len(s.Tools) > 0 || len(s.Toolsets) > 0 || s.OutputKey != "" || s.OutputSchema != nil ||
		s.IncludeContents != "" || s.MaxIterations != 0 || s.Temperature != nil || s.MaxOutputTokens != 0 || s.DisableTransfer {
		bad("%s: a remote agent runs on its own server: it takes only name, description, parameters and endpoint", key)
	}
	if ep.A2A == "" {
		bad("%s.endpoint.a2a: required (the remote agent's URL)", key)
	}
	if ep.Timeout < 0 {
		bad("%s.endpoint.timeout: must not be negative", key)
	}
	if ep.PollInterval < 0 {
		bad("%s.endpoint.poll_interval: must not be negative", key)
	}
	if !ok {
		return nil
	}
	if b.opts.Remote == nil {
		b.errf("%s.endpoint: remote (A2A) agents are not available in this build", key)
		return nil
	}
	a, err := b.opts.Remote(s)
	if err != nil {
		if j, isJoin := err.(interface{ Unwrap() []error }); isJoin {
			for _, e := range j.Unwrap() {
				b.errf("%s.endpoint: %v", key, e)
			}
		} else {
			b.errf("%s.endpoint: %v", key, err)
		}
		return nil
	}
	b.agents[s.Name] = a
	return a
}

func (b *builder) tools(key string, s Agent) []agentcore.Tool {
	var out []agentcore.Tool
	for j, t := range s.Tools {
		tkey := fmt.Sprintf("%s.tools[%d]", key, j)
		if t.Builtin != "" {
			if t.Name != "" || t.Kind != "" {
				b.errf("%s: a builtin entry takes no name or kind", tkey)
				continue
			}
			switch t.Builtin {
			case agentcore.ExitLoopToolName:
				out = append(out, agentcore.ExitLoop())
			case agentcore.GetUserChoiceToolName:
				out = append(out, agentcore.GetUserChoice())
			case agentcore.LoadMemoryToolName:
				out = append(out, agentcore.LoadMemory())
			case agentcore.PreloadMemoryToolName:
				out = append(out, agentcore.PreloadMemory(0))
			case agentcore.LoadArtifactsToolName:
				out = append(out, agentcore.LoadArtifacts())
			case agentcore.GoogleSearchToolName, agentcore.URLContextToolName, agentcore.CodeExecutionToolName:
				if typ := b.providerType(s.Model); typ != "gemini" {
					b.errf("%s.builtin: %s runs on Gemini only, but model %q is on a provider of type %q", tkey, t.Builtin, s.Model, typ)
					continue
				}
				out = append(out, map[string]func() agentcore.Tool{agentcore.GoogleSearchToolName: agentcore.GoogleSearch,
					agentcore.URLContextToolName: agentcore.URLContext, agentcore.CodeExecutionToolName: agentcore.CodeExecution}[t.Builtin]())
			default:
				b.errf("%s.builtin: unknown builtin %q (want one of %s)", tkey, t.Builtin, strings.Join(builtins, ", "))
			}
			continue
		}
		if t.Name == "" {
			b.errf("%s.name: required", tkey)
			continue
		}
		params := t.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		switch t.Kind {
		case "client":
			out = append(out, &agentcore.ClientTool{Decl: &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: params}})
		default:
			if b.opts.Tools != nil {
				tl, err := b.opts.Tools(s.Name, t)
				if err != nil {
					b.errf("%s: %v", tkey, err)
					continue
				}
				if tl != nil {
					out = append(out, b.confirmed(tkey, t, tl))
					continue
				}
			}
			b.errf("%s.kind: must be one of %s, not %q", tkey, strings.Join(toolKinds, ", "), t.Kind)
		}
	}
	return out
}

// confirmed wraps a tool whose entry asks for confirmation.
func (b *builder) confirmed(key string, t Tool, tl agentcore.Tool) agentcore.Tool {
	if !t.Confirm {
		return tl
	}
	ct, ok := tl.(agentcore.CallableTool)
	if !ok {
		b.errf("%s.confirm: tool %q cannot be confirmed", key, t.Name)
		return tl
	}
	hint := t.ConfirmHint
	if hint == "" {
		hint = "Allow the agent to call " + t.Name + "?"
	}
	return agentcore.RequireConfirmation(ct, hint)
}

// providerType is the type of the provider a model reference names ("" if
// unknown).
func (b *builder) providerType(ref string) string {
	prov, _, _ := strings.Cut(ref, "/")
	for _, p := range b.set.Providers {
		if p.Name == prov {
			return p.Type
		}
	}
	return ""
}

var prefixRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,31}$`)

// toolsets checks the shape of an agent's toolsets entries and has
// BuildOptions.Toolsets make them.
func (b *builder) toolsets(key string, s Agent) []agentcore.Toolset {
	var out []agentcore.Toolset
	prefixes := map[string]bool{}
	for j, ts := range s.Toolsets {
		tkey := fmt.Sprintf("%s.toolsets[%d]", key, j)
		ok := true
		bad := func(format string, args ...any) { b.errf(format, args...); ok = false }
		switch {
		case ts.MCP == nil && ts.OpenAPI == nil:
			bad("%s: needs mcp or openapi", tkey)
		case ts.MCP != nil && ts.OpenAPI != nil:
			bad("%s: takes one of mcp or openapi, not both", tkey)
		case ts.MCP != nil:
			m := ts.MCP
			switch {
			case m.URL == "" && m.Command == "":
				bad("%s.mcp: url or command required", tkey)
			case m.URL != "" && m.Command != "":
				bad("%s.mcp: url and command exclude each other", tkey)
			case m.URL != "" && !httpURL(m.URL):
				bad("%s.mcp.url: must be an absolute http(s) URL, got %q", tkey, m.URL)
			case m.URL != "" && (len(m.Args) > 0 || len(m.Env) > 0):
				bad("%s.mcp: args and env go with command, not url", tkey)
			case m.Command != "" && len(m.Headers) > 0:
				bad("%s.mcp.headers: headers go with url, not command", tkey)
			}
			if m.Timeout < 0 {
				bad("%s.mcp.timeout: must not be negative", tkey)
			}
		default:
			o := ts.OpenAPI
			if o.Spec == "" {
				bad("%s.openapi.spec: required (the path of an OpenAPI 3 document)", tkey)
			}
			if o.BaseURL != "" && !httpURL(o.BaseURL) {
				bad("%s.openapi.base_url: must be an absolute http(s) URL, got %q", tkey, o.BaseURL)
			}
			if o.Timeout < 0 {
				bad("%s.openapi.timeout: must not be negative", tkey)
			}
		}
		if ts.Prefix != "" {
			if !prefixRE.MatchString(ts.Prefix) {
				bad("%s.prefix: must match [a-zA-Z][a-zA-Z0-9_]*, at most 32 characters, got %q", tkey, ts.Prefix)
			} else if prefixes[ts.Prefix] {
				bad("%s.prefix: duplicate prefix %q on this agent", tkey, ts.Prefix)
			}
			prefixes[ts.Prefix] = true
		}
		for k, name := range ts.Allow {
			if name == "" {
				bad("%s.allow[%d]: empty tool name", tkey, k)
			}
		}
		if !ok {
			continue
		}
		if b.opts.Toolsets == nil {
			b.errf("%s: toolsets are not available in this build", tkey)
			continue
		}
		made, err := b.opts.Toolsets(s.Name, ts)
		if err != nil {
			b.errf("%s: %v", tkey, err)
			continue
		}
		if made == nil {
			b.errf("%s: toolsets are not available in this build", tkey)
			continue
		}
		out = append(out, agentcore.FilterToolset(made, agentcore.ToolsetOptions{Prefix: ts.Prefix, Allow: ts.Allow}))
	}
	return out
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// clientActions maps the client-visible names of the client actions
// declared in the tree under root: the root's keep their name, others are
// prefixed "<agent>__".
func (b *builder) clientActions(root string) map[string]ClientAction {
	out := map[string]ClientAction{}
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		s := b.set.Agents[b.specIdx[name]]
		for _, t := range s.Tools {
			if t.Kind == "client" && t.Name != "" {
				shown := t.Name
				if name != root {
					shown = name + "__" + t.Name
				}
				out[shown] = ClientAction{Agent: name, Name: t.Name}
			}
		}
		for _, n := range slices.Concat(s.SubAgents, s.AgentTools) {
			walk(n)
		}
	}
	walk(root)
	return out
}
