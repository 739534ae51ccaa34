package telemetry

import "go.opentelemetry.io/otel/attribute"

// Conversation is the session attribute, for the external tests.
func Conversation(id string) attribute.KeyValue { return attribute.String(keyConversation, id) }
