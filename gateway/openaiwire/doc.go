// Package openaiwire holds the OpenAI Chat Completions wire format and the
// pure conversions between it and the runtime: requests are decoded
// (DecodeRequest), checked (ChatCompletionRequest.Validate, which also
// converts the messages into a Conversation) and converted to genai
// contents, declarations and settings (ToContents,
// ToFunctionDeclarations, ToToolConfig, OutputSchema, GenerationSettings);
// runtime events are encoded into chunks or one completion (Encoder);
// failures are reported in OpenAI's error envelope (Error).
//
// The Responses API (/v1/responses, Open Responses) has its own request
// (DecodeResponsesRequest, ResponsesRequest.Validate, which resolves and
// converts the input items into the same Conversation), its response
// object (ResponsesRequest.NewResponse) and its encoder of semantic
// streaming events (ResponsesEncoder), built from the same pieces as chat:
// content parts, client tool names, usage arithmetic and errors. Package
// responsescheck checks both APIs' Responses output against the
// specification in tests.
//
// The response types are our own, not openai-go's, so that every field is
// present, omitted or null exactly as OpenAI sends it. Nothing here does I/O
// or knows about HTTP servers: the gateway owns routing, headers, SSE
// writing, sessions and the mapping of runtime errors to an *Error.
package openaiwire
