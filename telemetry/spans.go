package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
)

// Attribute keys: the GenAI semantic conventions', and agentgate's own.
const (
	keyOperation       = "gen_ai.operation.name"
	keyProvider        = "gen_ai.provider.name"
	keyAgentName       = "gen_ai.agent.name"
	keyAgentDesc       = "gen_ai.agent.description"
	keyConversation    = "gen_ai.conversation.id"
	keyRequestModel    = "gen_ai.request.model"
	keyResponseModel   = "gen_ai.response.model"
	keyFinishReasons   = "gen_ai.response.finish_reasons"
	keyInputTokens     = "gen_ai.usage.input_tokens"
	keyOutputTokens    = "gen_ai.usage.output_tokens"
	keyToolName        = "gen_ai.tool.name"
	keyToolDesc        = "gen_ai.tool.description"
	keyToolType        = "gen_ai.tool.type"
	keyToolCallID      = "gen_ai.tool.call.id"
	keyToolArgs        = "gen_ai.tool.call.arguments"
	keyToolResult      = "gen_ai.tool.call.result"
	keyInputMessages   = "gen_ai.input.messages"
	keyOutputMessages  = "gen_ai.output.messages"
	keySystemInstr     = "gen_ai.system_instructions"
	keyErrorType       = "error.type"
	keyUserID          = "user.id"
	keyInvocation      = "agentgate.invocation.id"
	keyApp             = "agentgate.app"
	keyBranch          = "agentgate.branch"
	keyEventID         = "agentgate.event.id"
	keyStream          = "agentgate.stream"
	eventTransfer      = "agentgate.transfer"
	keyTransferFrom    = "agentgate.transfer.from"
	keyTransferTo      = "agentgate.transfer.to"
	operationInvoke    = "invoke_agent"
	operationChat      = "chat"
	operationExecTool  = "execute_tool"
	errorTypeModelCode = "agentgate.model_error"
)

// scopeAttrs are the attributes every span of a scope carries.
func scopeAttrs(s agentcore.TraceScope, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs,
		attribute.String(keyAgentName, s.Agent()),
		attribute.String(keyConversation, s.SessionID()),
		attribute.String(keyInvocation, s.InvocationID()),
		attribute.String(keyApp, s.AppName()))
	if u := s.UserID(); u != "" {
		attrs = append(attrs, attribute.String(keyUserID, u))
	}
	if b := s.Branch(); b != "" {
		attrs = append(attrs, attribute.String(keyBranch, b))
	}
	return attrs
}

// AgentStart implements agentcore.Tracer: an invoke_agent span.
func (t *Telemetry) AgentStart(ctx context.Context, s agentcore.TraceScope) context.Context {
	attrs := scopeAttrs(s, make([]attribute.KeyValue, 0, 8))
	attrs = append(attrs, attribute.String(keyOperation, operationInvoke))
	if d := s.AgentDescription(); d != "" {
		attrs = append(attrs, attribute.String(keyAgentDesc, d))
	}
	ctx, _ = t.tracer.Start(ctx, operationInvoke+" "+s.Agent(),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx
}

// AgentEnd implements agentcore.Tracer.
func (t *Telemetry) AgentEnd(ctx context.Context, s agentcore.TraceScope, err error) {
	span := trace.SpanFromContext(ctx)
	fail(span, s, err)
	span.End()
}

// Transfer implements agentcore.Tracer: an agentgate.transfer event on the
// agent's span.
func (t *Telemetry) Transfer(ctx context.Context, from, to string) {
	trace.SpanFromContext(ctx).AddEvent(eventTransfer, trace.WithAttributes(
		attribute.String(keyTransferFrom, from), attribute.String(keyTransferTo, to)))
}

// ModelStart implements agentcore.Tracer: a chat span, named by the model
// id sent upstream.
func (t *Telemetry) ModelStart(ctx context.Context, c *agentcore.ModelCall) context.Context {
	attrs := scopeAttrs(c.TraceScope, make([]attribute.KeyValue, 0, 10))
	attrs = append(attrs, attribute.String(keyOperation, operationChat), attribute.String(keyRequestModel, c.Model),
		attribute.Bool(keyStream, c.Stream))
	if c.Provider != "" {
		attrs = append(attrs, attribute.String(keyProvider, c.Provider))
	}
	ctx, span := t.tracer.Start(ctx, operationChat+" "+c.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if t.capture && span.IsRecording() && c.Request != nil {
		// The request as sent: hidden values are redacted already.
		if c.Request.Config != nil && c.Request.Config.SystemInstruction != nil {
			span.SetAttributes(attribute.String(keySystemInstr, jsonString(parts(c.Request.Config.SystemInstruction))))
		}
		msgs := make([]message, 0, len(c.Request.Contents))
		for _, m := range c.Request.Contents {
			if m != nil {
				msgs = append(msgs, message{Role: role(m.Role), Parts: parts(m)})
			}
		}
		span.SetAttributes(attribute.String(keyInputMessages, jsonString(msgs)))
	}
	return ctx
}

// ModelEnd implements agentcore.Tracer: token usage as the provider
// reported it, finish reason, and the answer when content is captured.
func (t *Telemetry) ModelEnd(ctx context.Context, c *agentcore.ModelCall, r agentcore.ModelResult) {
	span := trace.SpanFromContext(ctx)
	defer span.End()
	if r.EventID != "" {
		span.SetAttributes(attribute.String(keyEventID, r.EventID))
	}
	if resp := r.Response; resp != nil {
		if u := resp.UsageMetadata; u != nil {
			span.SetAttributes(attribute.Int(keyInputTokens, int(u.PromptTokenCount)),
				attribute.Int(keyOutputTokens, int(u.CandidatesTokenCount)))
		}
		finish := finishReason(resp.FinishReason, resp.Content)
		if finish != "" {
			span.SetAttributes(attribute.StringSlice(keyFinishReasons, []string{finish}))
		}
		if resp.ModelVersion != "" {
			span.SetAttributes(attribute.String(keyResponseModel, resp.ModelVersion))
		}
		if resp.ErrorCode != "" {
			span.SetAttributes(attribute.String(keyErrorType, errorTypeModelCode))
			span.SetStatus(codes.Error, resp.ErrorCode+": "+c.RedactText(resp.ErrorMessage))
		}
		if t.capture && span.IsRecording() && resp.Content != nil {
			out := c.RedactContent(resp.Content)
			span.SetAttributes(attribute.String(keyOutputMessages,
				jsonString([]message{{Role: "assistant", Parts: parts(out), FinishReason: finish}})))
		}
	}
	fail(span, c.TraceScope, r.Err)
}

// ToolStart implements agentcore.Tracer: an execute_tool span.
func (t *Telemetry) ToolStart(ctx context.Context, c *agentcore.ToolCall) context.Context {
	attrs := scopeAttrs(c.TraceScope, make([]attribute.KeyValue, 0, 10))
	attrs = append(attrs, attribute.String(keyOperation, operationExecTool), attribute.String(keyToolName, c.Tool),
		attribute.String(keyToolType, "function"))
	if c.CallID != "" {
		attrs = append(attrs, attribute.String(keyToolCallID, c.CallID))
	}
	if c.Description != "" {
		attrs = append(attrs, attribute.String(keyToolDesc, c.Description))
	}
	ctx, span := t.tracer.Start(ctx, operationExecTool+" "+c.Tool,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if t.capture && span.IsRecording() {
		span.SetAttributes(attribute.String(keyToolArgs, jsonString(c.Redact(argsOrEmpty(c.Args)))))
	}
	return ctx
}

// ToolEnd implements agentcore.Tracer.
func (t *Telemetry) ToolEnd(ctx context.Context, c *agentcore.ToolCall, result map[string]any, err error) {
	span := trace.SpanFromContext(ctx)
	if t.capture && span.IsRecording() && result != nil {
		span.SetAttributes(attribute.String(keyToolResult, jsonString(c.Redact(result))))
	}
	fail(span, c.TraceScope, err)
	span.End()
}

// fail records err on span (its message redacted for the scope).
func fail(span trace.Span, s agentcore.TraceScope, err error) {
	if err == nil {
		return
	}
	msg := s.RedactText(err.Error())
	span.SetAttributes(attribute.String(keyErrorType, errorType(err)))
	span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.message", msg)))
	span.SetStatus(codes.Error, msg)
}

// errorType names an error's kind for error.type: its Go type, or
// context cancellation and deadlines by name.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "_OTHER"
}

// finishReason is the conventions' finish reason: "tool_call" for a turn
// that calls functions, else the provider's reason in lower case.
func finishReason(r genai.FinishReason, c *genai.Content) string {
	if c != nil {
		for _, p := range c.Parts {
			if p != nil && p.FunctionCall != nil {
				return "tool_call"
			}
		}
	}
	return strings.ToLower(string(r))
}

// message and part are the GenAI conventions' JSON shape of messages
// (gen_ai.input.messages, gen_ai.output.messages).
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  any    `json:"response,omitempty"`
}

func role(r string) string {
	if r == genai.RoleModel {
		return "assistant"
	}
	if r == "" {
		return "user"
	}
	return r
}

func parts(c *genai.Content) []part {
	out := make([]part, 0, len(c.Parts))
	for _, p := range c.Parts {
		switch {
		case p == nil:
		case p.FunctionCall != nil:
			out = append(out, part{Type: "tool_call", ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: argsOrEmpty(p.FunctionCall.Args)})
		case p.FunctionResponse != nil:
			out = append(out, part{Type: "tool_call_response", ID: p.FunctionResponse.ID, Name: p.FunctionResponse.Name, Response: p.FunctionResponse.Response})
		case p.Thought && p.Text != "":
			out = append(out, part{Type: "reasoning", Content: p.Text})
		case p.Text != "":
			out = append(out, part{Type: "text", Content: p.Text})
		case p.ExecutableCode != nil:
			out = append(out, part{Type: "text", Content: p.ExecutableCode.Code})
		case p.CodeExecutionResult != nil:
			out = append(out, part{Type: "text", Content: p.CodeExecutionResult.Output})
		}
	}
	return out
}

func argsOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `"unencodable: ` + err.Error() + `"`
	}
	return string(b)
}
