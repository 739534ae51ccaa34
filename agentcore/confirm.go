package agentcore

import (
	"context"
	"maps"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// RequestConfirmationToolName is the long-running call the runtime makes
// (as ADK does) to ask the client to approve a tool call.
const RequestConfirmationToolName = "adk_request_confirmation"

// Messages a model sees for calls waiting for, or refused, approval.
const (
	msgNeedsConfirmation = "This tool call requires confirmation, please approve or reject."
	msgRejected          = "This tool call is rejected."
)

// ToolConfirmation is the client's answer to a confirmation request.
type ToolConfirmation struct {
	Hint      string
	Confirmed bool
	Payload   any
}

// RequireConfirmation wraps a tool so that every call waits for the user's
// approval: the first call records a request in the event's
// requestedToolConfirmations, the invocation pauses on an
// adk_request_confirmation call, and the client's answer either runs the
// tool or tells the model it was rejected.
func RequireConfirmation(t CallableTool, hint string) CallableTool {
	return &confirmTool{CallableTool: t, hint: hint}
}

type confirmTool struct {
	CallableTool
	hint string
}

var _ Confirmer = (*confirmTool)(nil)

func (c *confirmTool) RequiresConfirmation(map[string]any) (bool, string) { return true, c.hint }

// ToolConfirmation returns the client's answer when this call was approved
// or rejected, nil when none was asked for.
func (c *ToolContext) ToolConfirmation() *ToolConfirmation { return c.confirmation }

// gateConfirmation applies the confirmation step to a call. done reports
// whether the call ends here with resp.
func gateConfirmation(tc *ToolContext, t Tool, args map[string]any) (resp map[string]any, done bool) {
	cf, ok := t.(Confirmer)
	if !ok {
		return nil, false
	}
	need, hint := cf.RequiresConfirmation(args)
	if !need {
		return nil, false
	}
	switch {
	case tc.confirmation == nil:
		if tc.actions.RequestedToolConfirmations == nil {
			tc.actions.RequestedToolConfirmations = map[string]map[string]any{}
		}
		tc.actions.RequestedToolConfirmations[tc.callID] = map[string]any{"hint": hint, "confirmed": false}
		return map[string]any{"error": msgNeedsConfirmation}, true
	case !tc.confirmation.Confirmed:
		return map[string]any{"error": msgRejected}, true
	}
	return nil, false
}

// confirmationRequests builds, for each confirmation a response event
// requested, the long-running adk_request_confirmation call that asks the
// client.
func (inv *Invocation) confirmationRequests(respEv *sessions.Event, calls []*genai.FunctionCall) []*sessions.Event {
	var out []*sessions.Event
	for _, c := range calls {
		req, ok := respEv.Actions.RequestedToolConfirmations[c.ID]
		if !ok {
			continue
		}
		ev := inv.NewEvent()
		id := "adk-" + inv.sh.svc.newID()
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
			ID: id, Name: RequestConfirmationToolName,
			Args: map[string]any{
				"originalFunctionCall": map[string]any{"id": c.ID, "name": c.Name, "args": c.Args},
				"toolConfirmation":     maps.Clone(req),
			},
		}}}}
		ev.LongRunningToolIDs = []string{id}
		out = append(out, ev)
	}
	return out
}

// answeredConfirmations finds this agent's confirmation requests in the
// invocation that the client has answered and whose original call has not
// been run again since: the calls to run now, with their answers.
func (a *LlmAgent) answeredConfirmations(inv *Invocation) ([]*genai.FunctionCall, map[string]*ToolConfirmation) {
	evs := inv.Events()
	type pending struct {
		call *genai.FunctionCall
		hint string
	}
	asked := map[string]pending{} // confirmation call id -> original call
	var calls []*genai.FunctionCall
	var answers map[string]*ToolConfirmation // nil until the first answer
	for _, ev := range evs {
		if ev.InvocationID != inv.id {
			continue
		}
		for _, fc := range ev.FunctionCalls() {
			if fc.Name != RequestConfirmationToolName || ev.Author != a.cfg.Name {
				continue
			}
			orig, _ := fc.Args["originalFunctionCall"].(map[string]any)
			id, _ := orig["id"].(string)
			name, _ := orig["name"].(string)
			args, _ := orig["args"].(map[string]any)
			tcf, _ := fc.Args["toolConfirmation"].(map[string]any)
			hint, _ := tcf["hint"].(string)
			if id != "" && name != "" {
				asked[fc.ID] = pending{call: &genai.FunctionCall{ID: id, Name: name, Args: args}, hint: hint}
			}
		}
		for _, r := range ev.FunctionResponses() {
			p, ok := asked[r.ID]
			if !ok || ev.Author != "user" {
				continue
			}
			confirmed, _ := r.Response["confirmed"].(bool)
			if answers == nil {
				answers = map[string]*ToolConfirmation{}
			}
			answers[p.call.ID] = &ToolConfirmation{Hint: p.hint, Confirmed: confirmed, Payload: r.Response["payload"]}
			calls = append(calls, p.call)
			delete(asked, r.ID)
		}
		// A later response for the original call means it already ran.
		if ev.Author == a.cfg.Name {
			for _, r := range ev.FunctionResponses() {
				if _, ok := answers[r.ID]; ok {
					delete(answers, r.ID)
					for j, c := range calls {
						if c.ID == r.ID {
							calls = append(calls[:j], calls[j+1:]...)
							break
						}
					}
				}
			}
		}
	}
	return calls, answers
}

// runConfirmed runs again the calls the client approved (or rejected) and
// acts on the outcome like any tool turn. cont reports whether the loop
// goes on.
func (a *LlmAgent) runConfirmed(ctx context.Context, inv *Invocation, tools *turnTools, yield func(*sessions.Event, error) bool) (finished, cont bool) {
	calls, answers := a.answeredConfirmations(inv)
	if len(calls) == 0 {
		return true, true
	}
	cinv := *inv
	cinv.confirmations = answers
	return a.afterCalls(ctx, &cinv, calls, tools, nil, yield)
}

// isConfirmationPart reports parts of the confirmation exchange, which are
// between the runtime and the client and never shown to a model.
func isConfirmationPart(p *genai.Part) bool {
	return (p.FunctionCall != nil && p.FunctionCall.Name == RequestConfirmationToolName) ||
		(p.FunctionResponse != nil && p.FunctionResponse.Name == RequestConfirmationToolName)
}
