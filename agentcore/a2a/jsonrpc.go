package a2a

import (
	"encoding/json"
	"fmt"
)

// Method is an A2A operation, whatever its name in a version.
type Method int

// The operations.
const (
	MethodUnknown Method = iota
	MethodSend
	MethodStream
	MethodGetTask
	MethodCancelTask
	MethodSubscribe
	MethodListTasks
	MethodPushConfig
	MethodExtendedCard
)

var methodNames = map[string]struct {
	m Method
	v Version
}{
	"message/send":                        {MethodSend, V03},
	"message/stream":                      {MethodStream, V03},
	"tasks/get":                           {MethodGetTask, V03},
	"tasks/cancel":                        {MethodCancelTask, V03},
	"tasks/resubscribe":                   {MethodSubscribe, V03},
	"tasks/list":                          {MethodListTasks, V03},
	"tasks/pushNotificationConfig/set":    {MethodPushConfig, V03},
	"tasks/pushNotificationConfig/get":    {MethodPushConfig, V03},
	"tasks/pushNotificationConfig/list":   {MethodPushConfig, V03},
	"tasks/pushNotificationConfig/delete": {MethodPushConfig, V03},
	"agent/getAuthenticatedExtendedCard":  {MethodExtendedCard, V03},
	"SendMessage":                         {MethodSend, V1},
	"SendStreamingMessage":                {MethodStream, V1},
	"GetTask":                             {MethodGetTask, V1},
	"CancelTask":                          {MethodCancelTask, V1},
	"SubscribeToTask":                     {MethodSubscribe, V1},
	"ListTasks":                           {MethodListTasks, V1},
	"CreateTaskPushNotificationConfig":    {MethodPushConfig, V1},
	"GetTaskPushNotificationConfig":       {MethodPushConfig, V1},
	"ListTaskPushNotificationConfigs":     {MethodPushConfig, V1},
	"DeleteTaskPushNotificationConfig":    {MethodPushConfig, V1},
	"GetExtendedAgentCard":                {MethodExtendedCard, V1},
	"SetTaskPushNotificationConfig":       {MethodPushConfig, V1},
	"ListTaskPushNotificationConfig":      {MethodPushConfig, V1},
}

// ParseMethod maps a JSON-RPC method name of either version to the
// operation and the version it belongs to.
func ParseMethod(name string) (Method, Version, bool) {
	e, ok := methodNames[name]
	return e.m, e.v, ok
}

// MethodName is the name of an operation in a version.
func MethodName(m Method, v Version) string {
	type key struct {
		m Method
		v Version
	}
	names := map[key]string{
		{MethodSend, V03}: "message/send", {MethodStream, V03}: "message/stream", {MethodGetTask, V03}: "tasks/get",
		{MethodCancelTask, V03}: "tasks/cancel", {MethodSubscribe, V03}: "tasks/resubscribe",
		{MethodSend, V1}: "SendMessage", {MethodStream, V1}: "SendStreamingMessage", {MethodGetTask, V1}: "GetTask",
		{MethodCancelTask, V1}: "CancelTask", {MethodSubscribe, V1}: "SubscribeToTask",
	}
	return names[key{m, v}]
}

// JSON-RPC and A2A error codes.
const (
	CodeParseError              = -32700
	CodeInvalidRequest          = -32600
	CodeMethodNotFound          = -32601
	CodeInvalidParams           = -32602
	CodeInternalError           = -32603
	CodeTaskNotFound            = -32001
	CodeTaskNotCancelable       = -32002
	CodePushNotSupported        = -32003
	CodeUnsupportedOperation    = -32004
	CodeContentTypeNotSupported = -32005
	CodeInvalidAgentResponse    = -32006
	CodeExtendedCardNotConfig   = -32007
	CodeVersionNotSupported     = -32009
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("a2a: JSON-RPC error %d: %s", e.Code, e.Message)
}

// Request is a JSON-RPC request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC response; exactly one of Result and Error is set.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// rawResponse is a JSON-RPC response as read by the client.
type rawResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}
