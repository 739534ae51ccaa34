// Package openaiwire holds the OpenAI Chat Completions wire format and the
// pure conversions between it and the runtime: requests are decoded
// (DecodeRequest), checked (ChatCompletionRequest.Validate, which also
// converts the messages into a Conversation) and converted to genai
// contents, declarations and settings (ToContents,
// ToFunctionDeclarations, ToToolConfig, OutputSchema, GenerationSettings);
// runtime events are encoded into chunks or one completion (Encoder);
// failures are reported in OpenAI's error envelope (Error).
//
// The response types are our own, not openai-go's, so that every field is
// present, omitted or null exactly as OpenAI sends it. Nothing here does I/O
// or knows about HTTP servers: the gateway owns routing, headers, SSE
// writing, sessions and the mapping of runtime errors to an *Error.
package openaiwire
