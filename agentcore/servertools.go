package agentcore

import (
	"context"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Names of the Gemini server-side tools.
const (
	GoogleSearchToolName  = "google_search"
	URLContextToolName    = "url_context"
	CodeExecutionToolName = "code_execution"
)

// GoogleSearch returns the passive google_search tool: Gemini grounds its
// answers with Google Search, on Google's servers. It adds the provider's
// own tool to every request and is never dispatched; it only works on
// Gemini models.
func GoogleSearch() Tool {
	return serverTool{name: GoogleSearchToolName, desc: "Google Search grounding, run by Gemini.",
		has:  func(t *genai.Tool) bool { return t.GoogleSearch != nil },
		make: func() *genai.Tool { return &genai.Tool{GoogleSearch: &genai.GoogleSearch{}} }}
}

// URLContext returns the passive url_context tool: Gemini reads the URLs
// the conversation mentions. Gemini 2 and later only.
func URLContext() Tool {
	return serverTool{name: URLContextToolName, desc: "Grounding in the URLs of the conversation, run by Gemini.",
		has:  func(t *genai.Tool) bool { return t.URLContext != nil },
		make: func() *genai.Tool { return &genai.Tool{URLContext: &genai.URLContext{}} }}
}

// CodeExecution returns the passive code_execution tool: Gemini writes and
// runs Python in Google's sandbox.
func CodeExecution() Tool {
	return serverTool{name: CodeExecutionToolName, desc: "Python code execution in Gemini's sandbox.",
		has:  func(t *genai.Tool) bool { return t.CodeExecution != nil },
		make: func() *genai.Tool { return &genai.Tool{CodeExecution: &genai.ToolCodeExecution{}} }}
}

// serverTool is a provider built-in: it declares nothing callable and adds
// its genai tool to the request once.
type serverTool struct {
	name, desc string
	has        func(*genai.Tool) bool
	make       func() *genai.Tool
}

var _ RequestProcessor = serverTool{}

func (s serverTool) Name() string        { return s.name }
func (s serverTool) Description() string { return s.desc }
func (s serverTool) IsLongRunning() bool { return false }

// ProcessRequest implements RequestProcessor.
func (s serverTool) ProcessRequest(_ context.Context, _ *ReadonlyContext, req *model.Request) error {
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	for _, t := range req.Config.Tools {
		if t != nil && s.has(t) {
			return nil
		}
	}
	req.Config.Tools = append(req.Config.Tools, s.make())
	return nil
}
