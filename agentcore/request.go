package agentcore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// buildRequest assembles one model request in the seed's order: system
// instruction (static prefix, or global + instruction + roster), output
// schema, tools, then the history per include_contents.
func (a *LlmAgent) buildRequest(ctx context.Context, inv *Invocation, tools *turnTools) (*modelRequest, error) {
	mr := &modelRequest{}
	cfg := &mr.cfg
	if a.cfg.GenerateConfig != nil {
		*cfg = *a.cfg.GenerateConfig
		cfg.Tools = append([]*genai.Tool(nil), cfg.Tools...)
	}
	req := &mr.req
	req.Model, req.Agent, req.Config = a.cfg.Model.Name(), a.cfg.Name, cfg

	dynamic, err := a.dynamicInstruction(ctx, inv)
	if err != nil {
		return nil, err
	}
	o := inv.sh.overrides
	if o != nil && o.Instruction != "" && a == inv.sh.root {
		dynamic = joinNonEmpty("\n\n", dynamic, o.Instruction)
	}
	if tools != noTools {
		// A call that offers no tools has no roster (no transfer tool)
		// and no toolset that failed to tell of.
		if roster := a.roster(inv, tools); roster != "" {
			dynamic = joinNonEmpty("\n\n", dynamic, roster)
		}
		if note := unavailableNote(tools.unavailable); note != "" {
			dynamic = joinNonEmpty("\n\n", dynamic, note)
		}
	}
	if len(a.cfg.Parameters) > 0 {
		if note := a.paramsNote(inv); note != "" {
			dynamic = joinNonEmpty("\n\n", dynamic, note)
		}
	}
	contents := a.contents(inv, mr.contents[:0])
	if a.cfg.StaticInstruction != "" {
		cfg.SystemInstruction = mr.system(a.cfg.StaticInstruction)
		if dynamic != "" {
			contents = append(contents, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: dynamic}}})
		}
	} else if dynamic != "" {
		cfg.SystemInstruction = mr.system(dynamic)
	}
	req.Contents = contents

	if a.cfg.OutputSchema != nil {
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = a.cfg.OutputSchema
	}
	schema := o != nil && a == inv.sh.root && a.cfg.OutputSchema == nil
	if o != nil {
		applyOverrides(cfg, o, schema)
		req.Options = model.Options{ReasoningEffort: o.Options.ReasoningEffort, Verbosity: o.Options.Verbosity,
			ServiceTier: o.Options.ServiceTier}
		if schema && cfg.ResponseJsonSchema != nil {
			req.Options.SchemaName, req.Options.SchemaStrict = o.Options.SchemaName, o.Options.SchemaStrict
		}
	}
	if len(tools.list) > 0 {
		if err := a.offerTools(ctx, inv, tools, req, o); err != nil {
			return nil, err
		}
	}
	return mr, nil
}

// offerTools declares tools' functions in req and lets the tools that
// process requests adjust it: buildRequest's step for a call that offers
// tools (o: the turn's overrides, nil when none).
func (a *LlmAgent) offerTools(ctx context.Context, inv *Invocation, tools *turnTools, req *model.Request, o *Overrides) error {
	cfg := req.Config
	var decls []*genai.FunctionDeclaration
	var own []string // the names of the functions that are not the client's
	client := false  // a function of the client is offered
	for _, t := range tools.list {
		if ct, ok := t.(CallableTool); ok {
			if d := declarationFor(ct, inv); d != nil {
				decls = append(decls, d)
				if _, isClient := t.(*ClientTool); isClient {
					client = true
				} else {
					own = append(own, d.Name)
				}
			}
		}
	}
	if len(decls) > 0 {
		cfg.Tools = append(cfg.Tools, &genai.Tool{FunctionDeclarations: decls})
	}
	if o != nil && client {
		if o.ToolConfig != nil {
			cfg.ToolConfig = clientToolConfig(o.ToolConfig, own)
		}
		req.Options.ParallelToolCalls = o.Options.ParallelToolCalls
	}
	var rc *ReadonlyContext
	for _, t := range tools.list {
		if rp, ok := t.(RequestProcessor); ok {
			if rc == nil {
				rc = &ReadonlyContext{inv: inv}
			}
			if err := rp.ProcessRequest(ctx, rc, req); err != nil {
				return fmt.Errorf("tool %s: %w", t.Name(), err)
			}
		}
	}
	return nil
}

// modelRequest is what buildRequest allocates for one model request, in
// one allocation: the request, its config, its system instruction, the
// contents of a short conversation, and what callModel's loop over the
// model's responses records.
type modelRequest struct {
	req      model.Request
	cfg      genai.GenerateContentConfig
	sys      genai.Content
	sysParts [1]*genai.Part
	sysPart  genai.Part
	out      modelOut
	// partials is a streamed call's context (model.WithCopiedPartials).
	partials model.CopiedPartialsContext
	// contents is room for the request's contents (see contents): eight,
	// in what the allocation's size class leaves beyond the rest.
	contents [8]*genai.Content
}

// modelOut is what callModel's loop over a model call's responses
// records. The loop's body is a closure that escapes (to the model): a
// variable it assigns would be an allocation of its own.
type modelOut struct {
	final   *model.Response
	err     error
	stopped bool // the consumer stopped at a partial event
}

// system returns the request's system instruction, text.
func (mr *modelRequest) system(text string) *genai.Content {
	mr.sysPart.Text = text
	mr.sysParts[0] = &mr.sysPart
	mr.sys = genai.Content{Role: genai.RoleUser, Parts: mr.sysParts[:]}
	return &mr.sys
}

// dynamicInstruction is global instruction + instruction, templated (a
// provider's result is used verbatim).
func (a *LlmAgent) dynamicInstruction(ctx context.Context, inv *Invocation) (string, error) {
	if a.plain && (a.cfg.GlobalInstruction != "" || a == inv.sh.root) {
		return a.instruction, nil // joined by NewLlmAgent
	}
	var cc *CallbackContext // made when a template or the provider needs it
	state := func() *CallbackContext {
		if cc == nil {
			cc = newCallbackContext(inv)
		}
		return cc
	}
	global := a.cfg.GlobalInstruction
	if global == "" {
		if root, ok := inv.sh.root.(*LlmAgent); ok {
			global = root.cfg.GlobalInstruction
		}
	}
	var err error
	if strings.Contains(global, "{") {
		if global, err = InjectState(ctx, state(), global); err != nil {
			return "", fmt.Errorf("global_instruction: %w", err)
		}
	}
	instr := a.cfg.Instruction
	if a.cfg.InstructionProvider != nil {
		if instr, err = a.cfg.InstructionProvider(ctx, &state().ReadonlyContext); err != nil {
			return "", fmt.Errorf("instruction provider: %w", err)
		}
	} else if strings.Contains(instr, "{") {
		if instr, err = InjectState(ctx, state(), instr); err != nil {
			return "", fmt.Errorf("instruction: %w", err)
		}
	}
	return joinNonEmpty("\n\n", global, instr), nil
}

// roster advertises the sub-agents and how to transfer to them.
func (a *LlmAgent) roster(inv *Invocation, tools *turnTools) string {
	if !a.canTransfer(inv.sh.index) {
		return ""
	}
	if _, ok := tools.byName[TransferToolName].(*transferTool); !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString("You can hand the conversation to another agent by calling the " + TransferToolName +
		" function with its name when that agent is better suited to answer. Do not answer for it.\n\nAgents you can transfer to:")
	a.writeRoster(&b, inv.sh.index)
	return b.String()
}

// joinNonEmpty joins a and b with sep, or is the one that is not empty.
func joinNonEmpty(sep, a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// contents builds the history the model sees. Events of other agents are
// recast as user-role context; each function call is followed by its latest
// response; calls without a response are left out.
//
// The latest compaction event's summary stands in for every event before
// it up to its endTimestamp (see compacted); include_contents none leaves
// the summary out with the rest of the history. The contents are made in
// room when they fit.
func (a *LlmAgent) contents(inv *Invocation, room []*genai.Content) []*genai.Content {
	// The events shown are those of evs that the model may see (shown):
	// picked as they are met, not copied out first.
	evs, summary := compacted(inv.Events())
	shown := func(ev *sessions.Event) bool {
		return !ev.Partial && ev.Content != nil && len(ev.Content.Parts) > 0 && visible(ev.Branch, inv.branch)
	}
	// Room for a content an event (an own call's event takes two: grown
	// then), the summary and the dynamic instruction buildRequest may add:
	// counted only when the events may not fit room.
	out := room
	if cap(out) < len(evs)+2 {
		n := 0
		for _, ev := range evs {
			if shown(ev) {
				n++
			}
		}
		if cap(out) < n+2 {
			out = make([]*genai.Content, 0, n+2)
		}
	}
	if summary != nil && a.cfg.IncludeContents != IncludeNone {
		out = append(out, summary)
	}
	if a.cfg.IncludeContents == IncludeNone {
		start := 0
		for i := len(evs) - 1; i >= 0; i-- {
			ev := evs[i]
			if !shown(ev) {
				continue
			}
			plain := len(ev.FunctionCalls()) == 0 && len(ev.FunctionResponses()) == 0
			if plain && (ev.Author == "user" || ev.Author != a.cfg.Name) {
				start = i
				break
			}
		}
		evs = evs[start:]
	}

	own := func(ev *sessions.Event) bool { return ev.Author == a.cfg.Name || ev.Author == "user" }
	// An event's content, when the model is to see it as it is, goes in
	// the request itself, unless a callback is handed the request to
	// rewrite (see withoutThoughts).
	share := a.cfg.Callbacks.BeforeModel == nil && a.cfg.Callbacks.OnModelError == nil
	// The calls this agent made and the latest response to each, read at
	// the first call or response met (a history of text reads none).
	var ownCalls map[string]bool
	var latest map[string]*genai.FunctionResponse
	readCalls := func() {
		ownCalls, latest = map[string]bool{}, map[string]*genai.FunctionResponse{}
		for _, ev := range evs {
			if !shown(ev) || !own(ev) {
				continue
			}
			for _, c := range ev.FunctionCalls() {
				if ev.Author == a.cfg.Name {
					ownCalls[c.ID] = true
				}
			}
			for _, r := range ev.FunctionResponses() {
				if ownCalls[r.ID] {
					latest[r.ID] = r
				}
			}
		}
	}

	for _, ev := range evs {
		if !shown(ev) {
			continue
		}
		// An event of text (most are) has no call, response or
		// confirmation to look for.
		var calls []*genai.FunctionCall
		var resps []*genai.FunctionResponse
		if hasCallOrResponse(ev.Content) {
			if slices.ContainsFunc(ev.Content.Parts, isConfirmationPart) {
				continue
			}
			calls, resps = ev.FunctionCalls(), ev.FunctionResponses()
		}
		if !own(ev) {
			if c := foreignContent(ev); c != nil {
				out = append(out, c)
			}
			continue
		}
		if ownCalls == nil && len(calls)+len(resps) > 0 {
			readCalls()
		}
		switch {
		case len(calls) > 0 && ev.Author == a.cfg.Name:
			c := &genai.Content{Role: genai.RoleModel}
			r := &genai.Content{Role: genai.RoleUser}
			for _, p := range ev.Content.Parts {
				if p.FunctionCall != nil {
					resp := latest[p.FunctionCall.ID]
					if resp == nil {
						continue
					}
					r.Parts = append(r.Parts, &genai.Part{FunctionResponse: resp})
				}
				c.Parts = append(c.Parts, p)
			}
			if len(c.Parts) > 0 {
				out = append(out, c)
			}
			if len(r.Parts) > 0 {
				out = append(out, r)
			}
		case len(resps) > 0:
			// Responses are placed after their calls; a response to a call
			// this agent did not make is shown as context.
			var ctxText []string
			for _, r := range resps {
				if !ownCalls[r.ID] {
					ctxText = append(ctxText, fmt.Sprintf("[%s] answered `%s`: %s", ev.Author, r.Name, jsonText(r.Response)))
				}
			}
			for _, p := range ev.Content.Parts {
				if p.FunctionResponse == nil && p.Text != "" {
					ctxText = append(ctxText, p.Text)
				}
			}
			if len(ctxText) > 0 {
				out = append(out, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: "For context:\n" + strings.Join(ctxText, "\n")}}})
			}
		default:
			role := genai.RoleUser
			if ev.Author == a.cfg.Name {
				role = genai.RoleModel
			}
			if c := withoutThoughts(role, ev.Content, share); c != nil {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return nil // as before the room was made
	}
	return out
}

// hasCallOrResponse reports whether c has a function call or a function
// response.
func hasCallOrResponse(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p != nil && (p.FunctionCall != nil || p.FunctionResponse != nil) {
			return true
		}
	}
	return false
}

// withoutThoughts returns a content of role with the parts of c that are
// not thoughts, nil if there are none. With share, a content that is that
// already (its role, no thought) is c itself: contents are not modified
// once made, and the providers copy what they change. Without (a callback
// may rewrite the request in place, which must not reach the session's
// event), and for the rest, one part (the usual case) is held in the new
// content's own room, more in a slice of their number.
func withoutThoughts(role string, c *genai.Content, share bool) *genai.Content {
	parts := c.Parts
	n := 0
	for _, p := range parts {
		if !p.Thought {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if share && n == len(parts) && c.Role == role {
		return c
	}
	var kept []*genai.Part
	var out *genai.Content
	if n == 1 {
		one := new(onePartContent)
		out, kept = &one.c, one.parts[:0]
	} else {
		out, kept = new(genai.Content), make([]*genai.Part, 0, n)
	}
	for _, p := range parts {
		if !p.Thought {
			kept = append(kept, p)
		}
	}
	*out = genai.Content{Role: role, Parts: kept}
	return out
}

// onePartContent is a content and room for its one part, in one
// allocation.
type onePartContent struct {
	c     genai.Content
	parts [1]*genai.Part
}

// SummaryPreamble starts the user-role content that carries a compaction's
// summary in a model request.
const SummaryPreamble = "Summary of the conversation so far:\n"

// compacted returns the events a model request shows, in order, and the
// content standing for those the latest compaction covers (nil when there
// is none): see uncovered. A compaction never covers half of a call and
// its response: the gateway compacts only turns whose calls are all
// answered.
func compacted(evs []*sessions.Event) ([]*sessions.Event, *genai.Content) {
	out, c := uncovered(evs)
	if c == nil {
		return evs, nil
	}
	var text []string
	if c.CompactedContent != nil {
		for _, p := range c.CompactedContent.Parts {
			if p != nil && !p.Thought && p.Text != "" {
				text = append(text, p.Text)
			}
		}
	}
	if len(text) == 0 {
		return out, nil
	}
	return out, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: SummaryPreamble + strings.Join(text, "\n")}}}
}

// uncovered returns the latest compaction in evs (nil when there is
// none) and the events it does not cover, in order: those stored just
// before it with later timestamps (a turn stored them while it was being
// summarized; see sessions.CompactionStart), then those after it. Without
// a compaction, every event. evs is a session read since its latest
// compaction, or whole.
func uncovered(evs []*sessions.Event) ([]*sessions.Event, *sessions.EventCompaction) {
	ci := sessions.LastCompaction(evs)
	if ci < 0 {
		return evs, nil
	}
	start := sessions.CompactionStart(evs, ci)
	if start == ci {
		return evs[ci+1 : len(evs) : len(evs)], evs[ci].Actions.Compaction
	}
	out := make([]*sessions.Event, 0, len(evs)-start-1)
	out = append(out, evs[start:ci]...)
	return append(out, evs[ci+1:]...), evs[ci].Actions.Compaction
}

// foreignContent recasts another agent's event as user-role context.
func foreignContent(ev *sessions.Event) *genai.Content {
	lines := contextLines(ev)
	if len(lines) == 0 {
		return nil
	}
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: "For context:\n" + strings.Join(lines, "\n")}}}
}

// contextLines tells an event as lines of text: who said what, which tool
// was called with what, and what it returned.
func contextLines(ev *sessions.Event) []string {
	var lines []string
	for _, p := range ev.Content.Parts {
		switch {
		case p == nil || p.Thought:
		case p.FunctionCall != nil:
			lines = append(lines, fmt.Sprintf("[%s] called tool `%s` with parameters: %s", ev.Author, p.FunctionCall.Name, jsonText(p.FunctionCall.Args)))
		case p.FunctionResponse != nil:
			lines = append(lines, fmt.Sprintf("[%s] `%s` tool returned result: %s", ev.Author, p.FunctionResponse.Name, jsonText(p.FunctionResponse.Response)))
		case p.Text != "":
			lines = append(lines, fmt.Sprintf("[%s] said: %s", ev.Author, p.Text))
		}
	}
	return lines
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// applyOverrides lays a client's per-turn settings over a request config.
func applyOverrides(cfg *genai.GenerateContentConfig, o *Overrides, schema bool) {
	if schema && o.OutputSchema != nil {
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = o.OutputSchema
	} else if schema && o.JSONMode {
		cfg.ResponseMIMEType = "application/json"
	}
	if g := o.Generate; g != nil {
		if g.Temperature != nil {
			cfg.Temperature = g.Temperature
		}
		if g.TopP != nil {
			cfg.TopP = g.TopP
		}
		if g.MaxOutputTokens > 0 {
			cfg.MaxOutputTokens = g.MaxOutputTokens
		}
		if len(g.StopSequences) > 0 {
			cfg.StopSequences = g.StopSequences
		}
		if g.Seed != nil {
			cfg.Seed = g.Seed
		}
		if g.PresencePenalty != nil {
			cfg.PresencePenalty = g.PresencePenalty
		}
		if g.FrequencyPenalty != nil {
			cfg.FrequencyPenalty = g.FrequencyPenalty
		}
	}
	if effort := o.Options.ReasoningEffort; effort != "" {
		cfg.ThinkingConfig = thinkingFor(effort)
	}
}

// thinkingFor maps a reasoning effort onto genai's thinking settings:
// none turns thinking off, xhigh is the highest level genai has.
func thinkingFor(effort string) *genai.ThinkingConfig {
	levels := map[string]genai.ThinkingLevel{"minimal": genai.ThinkingLevelMinimal, "low": genai.ThinkingLevelLow,
		"medium": genai.ThinkingLevelMedium, "high": genai.ThinkingLevelHigh, "xhigh": genai.ThinkingLevelHigh}
	if effort == "none" {
		return &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](0)}
	}
	if level, ok := levels[effort]; ok {
		return &genai.ThinkingConfig{ThinkingLevel: level}
	}
	return nil
}

// clientToolConfig is the tool config of a call that offers the client's
// functions besides the agent's own (named own): the client's choice,
// except that NONE withdraws only the client's functions (the model may
// still transfer or call agents as tools) and a choice limited to some of
// the client's functions in AUTO or VALIDATED mode keeps the agent's own.
func clientToolConfig(tc *genai.ToolConfig, own []string) *genai.ToolConfig {
	fc := tc.FunctionCallingConfig
	if fc == nil || len(own) == 0 {
		return tc
	}
	switch {
	case fc.Mode == genai.FunctionCallingConfigModeNone:
		fc = &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeValidated, AllowedFunctionNames: own}
	case len(fc.AllowedFunctionNames) > 0 && (fc.Mode == genai.FunctionCallingConfigModeAuto || fc.Mode == genai.FunctionCallingConfigModeValidated):
		fc = &genai.FunctionCallingConfig{Mode: fc.Mode, AllowedFunctionNames: slices.Concat(fc.AllowedFunctionNames, own)}
	default:
		return tc
	}
	return &genai.ToolConfig{FunctionCallingConfig: fc, RetrievalConfig: tc.RetrievalConfig}
}
