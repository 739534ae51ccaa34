package agentcore

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/genai"
)

// Parameters follow RavenDB's AI-agent model. Agents declare the
// parameters they use (ParamSpec). A conversation carries values (Params)
// from trusted sources (the caller's token) and from the caller. When an
// agent runs, each parameter it declares is resolved by name: from its
// parent agent's values, then from the conversation, then, for an agent
// called as a tool and unless the declaration forbids it, from an extra
// argument the calling model generates. An agent sees only the parameters
// it declares (Invocation.Params). A value reaches a model only when both
// the agent's declaration and the conversation allow it; every hidden
// value is redacted from every model request, whatever carries it.

// ParamSpec declares a parameter an agent uses.
type ParamSpec struct {
	// Name matches [A-Za-z_][A-Za-z0-9_]*.
	Name        string
	Description string
	// HideFromModel keeps the value out of every request to the agent's
	// model (config: send_to_model: false); tools still receive it.
	HideFromModel bool
	// ForbidModelGeneration accepts only inherited values (from the parent
	// agent or the conversation), never one a model generates.
	ForbidModelGeneration bool
}

// ParamDeclarer is implemented by agents that declare parameters. Agents
// that do not (workflow agents) pass their parent's values through to
// their sub-agents unchanged.
type ParamDeclarer interface {
	Parameters() []ParamSpec
}

// Param is one parameter value.
type Param struct {
	Value any
	// SendToModel false hides the value from every model; tools still see
	// it.
	SendToModel bool
	// Trusted values come from the token, never from a model or caller.
	Trusted bool
	// Generated values were written by the calling agent's model.
	Generated bool
}

// Params are parameter values by name: a conversation's, or the resolved
// values of one agent. A nil *Params has none. Params are immutable.
type Params struct {
	values map[string]Param
}

// NewParams returns parameters holding values.
func NewParams(values map[string]Param) *Params {
	return &Params{values: maps.Clone(values)}
}

// Get returns a parameter by name.
func (p *Params) Get(name string) (Param, bool) {
	if p == nil {
		return Param{}, false
	}
	v, ok := p.values[name]
	return v, ok
}

// Names lists the parameter names, sorted.
func (p *Params) Names() []string {
	if p.Len() == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(p.values))
}

// Len is the number of parameters.
func (p *Params) Len() int {
	if p == nil {
		return 0
	}
	return len(p.values)
}

// All iterates over the parameters in name order.
func (p *Params) All() iter.Seq2[string, Param] {
	return func(yield func(string, Param) bool) {
		for _, n := range p.Names() {
			if !yield(n, p.values[n]) {
				return
			}
		}
	}
}

// Over returns p with the values of top laid over it.
func (p *Params) Over(top *Params) *Params {
	if top.Len() == 0 {
		return p
	}
	return p.under(top)
}

// under is Over for a top with values.
func (p *Params) under(top *Params) *Params {
	if p.Len() == 0 {
		return top
	}
	m := maps.Clone(p.values)
	maps.Copy(m, top.values)
	return &Params{values: m}
}

// Error codes of parameter failures, shown to models in function
// responses ({"error": ..., "code": ...}).
const (
	CodeMissingParameter   = "MISSING_PARAMETER"
	CodeForbiddenParameter = "FORBIDDEN_PARAMETER"
)

// ParamError reports a sub-agent that cannot run because of its
// parameters: one it requires has no value it may accept
// (CodeMissingParameter), or a model tried to set one it may not
// (CodeForbiddenParameter).
type ParamError struct {
	Code  string
	Agent string
	Names []string
}

func (e *ParamError) Error() string {
	names := strings.Join(e.Names, ", ")
	if e.Code == CodeForbiddenParameter {
		return fmt.Sprintf("agent %s did not run: parameter %s must come from the conversation, never from a model; call it again without it", e.Agent, names)
	}
	return fmt.Sprintf("agent %s did not run: parameter %s has no value it may accept", e.Agent, names)
}

// ErrorCode implements the coded errors tools return (see errorResult).
func (e *ParamError) ErrorCode() string { return e.Code }

var paramNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidParamName reports whether name may name a parameter.
func ValidParamName(name string) bool { return paramNameRE.MatchString(name) }

// validateParamSpecs checks an agent's declarations.
func validateParamSpecs(agent string, specs []ParamSpec) error {
	seen := map[string]bool{}
	for i, s := range specs {
		if !ValidParamName(s.Name) {
			return fmt.Errorf("llm agent %q: parameters[%d]: name must match %s, got %q", agent, i, paramNameRE, s.Name)
		}
		if seen[s.Name] {
			return fmt.Errorf("llm agent %q: parameters[%d]: duplicate parameter %q", agent, i, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// mayDeclareParams reports whether a may declare parameters: an LLM agent
// that declares some, or an agent of another kind that declares its own
// (asked each turn).
func mayDeclareParams(a Agent) bool {
	if l, ok := a.(*LlmAgent); ok {
		return len(l.cfg.Parameters) > 0
	}
	_, ok := a.(ParamDeclarer)
	return ok
}

func declaredParams(a Agent) ([]ParamSpec, bool) {
	d, ok := a.(ParamDeclarer)
	if !ok {
		return nil, false
	}
	return d.Parameters(), true
}

// TreeParams lists the parameters declared anywhere in a tree (agents
// called as tools included), by name: the first declaration met, depth
// first from the root. Callers may supply values for these names only.
func TreeParams(root Agent) map[string]ParamSpec {
	out := map[string]ParamSpec{}
	walkTree(root, func(a Agent) {
		specs, _ := declaredParams(a)
		for _, s := range specs {
			if _, ok := out[s.Name]; !ok {
				out[s.Name] = s
			}
		}
	})
	return out
}

// ParamsStateKey is the session state key holding a conversation's
// parameters (for sub-conversations: the values their agent resolved).
// Keys starting with '~' belong to the gateway: clients cannot write them
// and templates cannot read them.
const ParamsStateKey = "~parameters"

// ParamsToState is the stored form of p: {"name": {"value": v,
// "sendToModel": b, "trusted": b}}.
func ParamsToState(p *Params) map[string]any {
	out := make(map[string]any, p.Len())
	for n, v := range p.All() {
		e := map[string]any{"value": v.Value, "sendToModel": v.SendToModel}
		if v.Trusted {
			e["trusted"] = true
		}
		if v.Generated {
			e["generated"] = true
		}
		out[n] = e
	}
	return out
}

// ParamsFromState reads parameters stored with a session (see
// ParamsToState). Trusted entries are skipped: trusted values come from
// the current caller's token only. An entry that is not in the stored form
// is a plain value shown to models.
func ParamsFromState(v any) *Params {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	out := map[string]Param{}
	for n, e := range m {
		if !ValidParamName(n) {
			continue
		}
		p, trusted := paramFromStored(e)
		if !trusted {
			out[n] = p
		}
	}
	return &Params{values: out}
}

func paramFromStored(e any) (Param, bool) {
	em, ok := e.(map[string]any)
	if !ok {
		return Param{Value: e, SendToModel: true}, false
	}
	val, hasValue := em["value"]
	if !hasValue {
		return Param{Value: e, SendToModel: true}, false
	}
	send, ok := em["sendToModel"].(bool)
	if !ok {
		send = true
	}
	trusted, _ := em["trusted"].(bool)
	return Param{Value: val, SendToModel: send}, trusted
}

// MaskedValue replaces hidden values when parameters are shown to clients.
const MaskedValue = "[hidden]"

// MaskParamsState returns stored parameters (see ParamsToState) with every
// hidden value replaced by MaskedValue, for showing a session over REST.
func MaskParamsState(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for n, e := range m {
		em, ok := e.(map[string]any)
		if _, hasValue := em["value"]; !ok || !hasValue {
			out[n] = e
			continue
		}
		c := maps.Clone(em)
		if send, ok := em["sendToModel"].(bool); ok && !send {
			c["value"] = MaskedValue
		}
		out[n] = c
	}
	return out
}

// paramState is the parameter machinery of one turn: the conversation's
// values, the values of each agent as resolved, and the hidden values every
// model request is redacted of (shared with sub-conversations).
type paramState struct {
	conv *Params
	// rootValues, when set, are the already resolved values of the turn's
	// root agent (an agent called as a tool).
	rootValues *Params
	index      *treeIndex
	secrets    *secretSet
	// own holds a top-level turn's hidden values (secrets points to it).
	own secretSet

	mu sync.Mutex
	// The first agent resolved is held by itself (firstAgent, first),
	// those after it in resolved: a turn of one agent makes no map.
	firstAgent string
	first      *agentParams // nil until the first agent's
	resolved   map[string]*agentParams
}

// agentParams are one agent's resolved values; missing lists declared
// parameters that forbid generation and found no value. They are not
// modified once resolved.
type agentParams struct {
	values  *Params
	hidden  map[string]bool
	missing []string
}

// noParams are the values of an agent that declares none and is handed
// none (shared: never modified).
var noParams = &agentParams{}

// init makes ps the parameter state of a turn; secrets are the calling
// conversation's hidden values (nil: a top-level turn, which starts its
// own).
func (ps *paramState) init(conv, rootValues *Params, index *treeIndex, secrets *secretSet) {
	ps.conv, ps.rootValues, ps.index, ps.secrets = conv, rootValues, index, secrets
	if secrets == nil {
		ps.secrets = &ps.own
		if conv.Len() > 0 { // a conversation without parameters hides nothing
			ps.hideConv()
		}
	}
}

// hideConv adds to a top-level turn's hidden values the conversation's
// values hidden by the conversation, or by any agent that declares the
// name hidden: redacted from every model not allowed to see them.
func (ps *paramState) hideConv() {
	hiddenBy := map[string]bool{}
	walkTree(ps.index.root, func(a Agent) {
		specs, _ := declaredParams(a)
		for _, s := range specs {
			if s.HideFromModel {
				hiddenBy[s.Name] = true
			}
		}
	})
	for n, v := range ps.conv.All() {
		if !v.SendToModel || hiddenBy[n] {
			ps.secrets.add(n, v.Value)
		}
	}
}

// none reports whether every agent of the turn has noParams: the tree
// declares none and its root is handed none.
func (ps *paramState) none() bool { return ps.rootValues == nil && !ps.index.params }

// forAgent resolves a's values (memoised for the turn).
func (ps *paramState) forAgent(a Agent) *agentParams {
	if ps.none() {
		return noParams // no agent of the tree declares any, none handed down
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.resolveLocked(a)
}

func (ps *paramState) resolveLocked(a Agent) *agentParams {
	if ps.first != nil && ps.firstAgent == a.Name() {
		return ps.first
	}
	if r, ok := ps.resolved[a.Name()]; ok {
		return r
	}
	var r *agentParams
	specs, declares := declaredParams(a)
	switch {
	case a == ps.index.root && ps.rootValues != nil:
		r = &agentParams{values: ps.rootValues}
	case !declares:
		// Transparent: a workflow or remote agent hands on its parent's
		// values and hides what the parent hides. A copy: the parent's
		// own record must keep its hidden names.
		if p := ps.index.parent[a.Name()]; p != nil {
			pr := ps.resolveLocked(p)
			r = &agentParams{values: pr.values, hidden: pr.hidden, missing: pr.missing}
		} else {
			r = noParams
		}
	default:
		var parent *Params
		if p := ps.index.parent[a.Name()]; p != nil && a != ps.index.root {
			parent = ps.resolveLocked(p).values
		}
		r = resolve(a.Name(), specs, parent, ps.conv, nil)
	}
	if r.hidden == nil && r.values != nil {
		r.hidden = hiddenFor(specs, r.values)
	}
	for n := range r.hidden {
		v, _ := r.values.Get(n)
		ps.secrets.add(n, v.Value)
	}
	switch {
	case ps.first == nil:
		ps.firstAgent, ps.first = a.Name(), r
	case ps.resolved == nil:
		ps.resolved = map[string]*agentParams{a.Name(): r}
	default:
		ps.resolved[a.Name()] = r
	}
	return r
}

// resolve applies RavenDB's order to each declared parameter: the parent's
// value, the conversation's, then a generated one (when allowed).
func resolve(agent string, specs []ParamSpec, parent, conv *Params, generated map[string]any) *agentParams {
	if len(specs) == 0 {
		return noParams
	}
	vals := map[string]Param{}
	r := &agentParams{}
	for _, s := range specs {
		if v, ok := parent.Get(s.Name); ok {
			vals[s.Name] = v
			continue
		}
		if v, ok := conv.Get(s.Name); ok {
			vals[s.Name] = v
			continue
		}
		if g, ok := generated[s.Name]; ok && !s.ForbidModelGeneration {
			vals[s.Name] = Param{Value: g, SendToModel: true, Generated: true}
			continue
		}
		if s.ForbidModelGeneration {
			r.missing = append(r.missing, s.Name)
		}
	}
	r.values = &Params{values: vals}
	return r
}

// hiddenFor names the values an agent's model may not see: its
// declaration or the value's own setting hides them (the AND gate).
func hiddenFor(specs []ParamSpec, vals *Params) map[string]bool {
	var out map[string]bool
	for n, v := range vals.All() {
		hide := !v.SendToModel
		for _, s := range specs {
			if s.Name == n && s.HideFromModel {
				hide = true
			}
		}
		if hide {
			if out == nil {
				out = map[string]bool{}
			}
			out[n] = true
		}
	}
	return out
}

// missingError is the ParamError for an agent that may not run, or nil.
func (r *agentParams) missingError(agent string) error {
	if len(r.missing) == 0 {
		return nil
	}
	return &ParamError{Code: CodeMissingParameter, Agent: agent, Names: r.missing}
}

// Params are the values of the parameters the current agent declares,
// resolved by name from its parent agent, the conversation, or (for an
// agent called as a tool) its caller's model. Tools read them through
// their ToolContext's Invocation, hidden values included. Nil when the
// agent declares none.
func (inv *Invocation) Params() *Params {
	if inv.sh.pstate == nil {
		return nil
	}
	return inv.sh.pstate.forAgent(inv.agent).values
}

// checkParams reports whether a may run: a *ParamError when a parameter it
// requires has no acceptable value.
func (inv *Invocation) checkParams(a Agent) error {
	if inv.sh.pstate.none() {
		return nil // every agent's values are noParams, which miss none
	}
	return inv.sh.pstate.check(a)
}

// check is checkParams for a turn whose agents may have values.
func (ps *paramState) check(a Agent) error { return ps.forAgent(a).missingError(a.Name()) }

// paramsNote tells the agent's model about its parameters: visible values
// in full, hidden ones by name only.
func (a *LlmAgent) paramsNote(inv *Invocation) string {
	if len(a.cfg.Parameters) == 0 || inv.sh.pstate == nil {
		return ""
	}
	r := inv.sh.pstate.forAgent(a)
	var lines []string
	for _, s := range a.cfg.Parameters {
		v, ok := r.values.Get(s.Name)
		if !ok {
			continue
		}
		line := "- " + s.Name
		if r.hidden[s.Name] {
			line += ": set, value hidden from you (tools receive it; never ask the user for it)"
		} else {
			line += "=" + formatValue(v.Value)
		}
		if s.Description != "" {
			line += " (" + s.Description + ")"
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	return "Parameters:\n" + strings.Join(lines, "\n")
}

// secretSet holds the hidden values of a conversation, each with the name
// of a parameter that holds it. It is shared by a turn and its
// sub-conversations and only grows.
type secretSet struct {
	mu     sync.Mutex
	values map[string]string // value text -> parameter name; nil until the first
	// some: values holds one at least (see empty).
	some atomic.Bool
}

// add records a hidden value: strings as they are, numbers in their JSON
// form, and the string and number leaves of lists and objects. Empty
// strings, booleans and null are not recorded.
func (s *secretSet) add(name string, v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]string{}
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			if t != "" {
				s.values[t] = name
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case bool, nil:
		case float64, float32, int, int32, int64, uint, uint32, uint64, json.Number:
			if b, err := json.Marshal(t); err == nil {
				s.values[string(b)] = name
			}
		default:
			// Any other type: its JSON form, read back as plain values.
			b, err := json.Marshal(t)
			var back any
			if err == nil && json.Unmarshal(b, &back) == nil {
				walk(back)
			}
		}
	}
	walk(v)
	if len(s.values) > 0 {
		s.some.Store(true)
	}
}

// empty reports whether no value is hidden yet, without the lock: every
// model request's redaction asks.
func (s *secretSet) empty() bool { return !s.some.Load() }

// hidesNothing reports whether no agent of the turn has a value to hide
// (none) and no value is hidden yet: every redactor is nil.
func (ps *paramState) hidesNothing() bool { return ps.none() && ps.secrets.empty() }

// redactor returns the redactor for what agent a sends out: every hidden
// value of the conversation but those a's model is allowed to see. Nil
// when there is nothing to redact.
func (ps *paramState) redactor(a Agent) *Redactor {
	r := ps.forAgent(a)
	if ps.secrets.empty() {
		return nil
	}
	allowed := map[string]bool{}
	for n, v := range r.values.All() {
		if !r.hidden[n] {
			if s, ok := v.Value.(string); ok {
				allowed[s] = true
			} else if b, err := json.Marshal(v.Value); err == nil {
				allowed[string(b)] = true
			}
		}
	}
	ps.secrets.mu.Lock()
	defer ps.secrets.mu.Unlock()
	var secrets []hiddenValue
	for v, n := range ps.secrets.values {
		if !allowed[v] {
			secrets = append(secrets, hiddenValue{value: v, name: n})
		}
	}
	return newRedactor(secrets)
}

// Params are the current agent's parameter values (see Invocation.Params).
func (c *ReadonlyContext) Params() *Params { return c.inv.Params() }

// Parameters implements ParamDeclarer.
func (a *LlmAgent) Parameters() []ParamSpec { return slices.Clone(a.cfg.Parameters) }

// contextualDeclarer is a tool whose declaration depends on the running
// invocation (an agent tool adds the parameters its caller's model must
// generate).
type contextualDeclarer interface {
	declarationFor(inv *Invocation) *genai.FunctionDeclaration
}

// declarationFor is the declaration of ct offered in inv.
func declarationFor(ct CallableTool, inv *Invocation) *genai.FunctionDeclaration {
	if cd, ok := ct.(contextualDeclarer); ok {
		return cd.declarationFor(inv)
	}
	return ct.Declaration()
}

// childParams resolves the parameters of the agent a call runs: the
// caller's values, then the conversation's, then the arguments the
// caller's model generated (for parameters that allow it). A model value
// for a parameter that forbids generation fails the call, as does a
// parameter left without a value.
func (t *AgentTool) childParams(parent *Invocation, args map[string]any) (*Params, error) {
	specs, _ := declaredParams(t.agent)
	if len(specs) == 0 || parent.sh.pstate == nil {
		return nil, nil
	}
	var forbidden []string
	generated := map[string]any{}
	for _, s := range specs {
		v, ok := args[s.Name]
		switch {
		case !ok:
		case s.ForbidModelGeneration:
			forbidden = append(forbidden, s.Name)
		default:
			generated[s.Name] = v
		}
	}
	if len(forbidden) > 0 {
		return nil, &ParamError{Code: CodeForbiddenParameter, Agent: t.agent.Name(), Names: forbidden}
	}
	r := resolve(t.agent.Name(), specs, parent.Params(), parent.sh.pstate.conv, generated)
	for _, s := range specs {
		if _, ok := r.values.Get(s.Name); !ok && !s.ForbidModelGeneration {
			r.missing = append(r.missing, s.Name)
		}
	}
	if err := r.missingError(t.agent.Name()); err != nil {
		return nil, err
	}
	return r.values, nil
}

// declarationFor adds to the tool's declaration one required argument per
// parameter of the agent that the caller's model must generate: those that
// allow generation and that neither the caller nor the conversation holds.
func (t *AgentTool) declarationFor(inv *Invocation) *genai.FunctionDeclaration {
	d := t.Declaration()
	specs, _ := declaredParams(t.agent)
	if len(specs) == 0 || inv.sh.pstate == nil {
		return d
	}
	schema, _ := d.ParametersJsonSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	required, _ := schema["required"].([]string)
	if schema == nil || props == nil {
		return d
	}
	schema, props, required = maps.Clone(schema), maps.Clone(props), slices.Clone(required)
	mine, conv := inv.Params(), inv.sh.pstate.conv
	added := false
	for _, s := range specs {
		if _, ok := mine.Get(s.Name); ok || s.ForbidModelGeneration {
			continue
		}
		if _, ok := conv.Get(s.Name); ok {
			continue
		}
		desc := s.Description
		if desc == "" {
			desc = "Parameter " + s.Name + " of " + t.agent.Name() + "."
		}
		props[s.Name] = map[string]any{"type": "string", "description": desc}
		required = append(required, s.Name)
		added = true
	}
	if !added {
		return d
	}
	schema["properties"], schema["required"] = props, required
	c := *d
	c.ParametersJsonSchema = schema
	return &c
}

// paramsState is the initial state of a sub-conversation holding values.
func paramsState(values *Params) map[string]any {
	if values.Len() == 0 {
		return nil
	}
	return map[string]any{ParamsStateKey: ParamsToState(values)}
}
