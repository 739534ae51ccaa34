// Package a2a speaks the Agent2Agent (A2A) protocol: its wire types in both
// the v0.3 and the v1 JSON forms, a JSON-RPC client (agent card discovery,
// message/send with task polling, message/stream, tasks/get, tasks/cancel),
// and a remote agent that runs as an agentcore.Agent: a transfer target or
// an agent tool like a local one, whose endpoint is resolved each time it
// is called.
//
// The types here are one neutral form of the protocol. Decoding accepts
// either version (v0.3's kind discriminators and lower-case enums, v1's
// wrapped events and TASK_STATE_* enums); encoding takes the Version to
// write. The gateway's A2A server uses the same types.
package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Version is the A2A protocol version a peer speaks over JSON-RPC.
type Version int

const (
	// V03 is A2A 0.3: slash method names ("message/send"), objects tagged
	// with "kind", lower-case enums, "final" on the last stream event.
	V03 Version = iota
	// V1 is A2A 1.0: PascalCase method names ("SendMessage"), stream
	// events wrapped as {task|message|statusUpdate|artifactUpdate},
	// ProtoJSON enums (TASK_STATE_COMPLETED, ROLE_USER).
	V1
)

func (v Version) String() string {
	if v == V1 {
		return "1.0"
	}
	return "0.3"
}

// Role says who sent a message.
type Role string

// Message roles.
const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// TaskState is the state of a task, in v0.3's spelling.
type TaskState string

// Task states.
const (
	StateSubmitted     TaskState = "submitted"
	StateWorking       TaskState = "working"
	StateInputRequired TaskState = "input-required"
	StateAuthRequired  TaskState = "auth-required"
	StateCompleted     TaskState = "completed"
	StateCanceled      TaskState = "canceled"
	StateFailed        TaskState = "failed"
	StateRejected      TaskState = "rejected"
	StateUnknown       TaskState = "unknown"
)

// Terminal reports whether the task can no longer change.
func (s TaskState) Terminal() bool {
	switch s {
	case StateCompleted, StateCanceled, StateFailed, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether the task waits for the client.
func (s TaskState) Interrupted() bool { return s == StateInputRequired || s == StateAuthRequired }

func parseState(s string) TaskState {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "task_state_")
	s = strings.ReplaceAll(s, "_", "-")
	switch s {
	case "cancelled":
		return StateCanceled
	case "", "unspecified":
		return StateUnknown
	}
	return TaskState(s)
}

func (s TaskState) wire(v Version) string {
	if v == V03 {
		return string(s)
	}
	if s == StateUnknown || s == "" {
		return "TASK_STATE_UNSPECIFIED"
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(string(s), "-", "_"))
}

func parseRole(s string) Role {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "role_")
	if s == "agent" {
		return RoleAgent
	}
	return RoleUser
}

func (r Role) wire(v Version) string {
	if v == V03 {
		return string(r)
	}
	return "ROLE_" + strings.ToUpper(string(r))
}

// Part is one piece of a message or artifact: text, structured data or a
// file (inline bytes or a URL). Exactly one of Text (when IsText), Data or
// File is meaningful.
type Part struct {
	// Kind is "text", "data" or "file".
	Kind     string
	Text     string
	Data     any
	File     *File
	Metadata map[string]any
}

// File is the content of a file part.
type File struct {
	Bytes     []byte
	URI       string
	MediaType string
	Name      string
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Kind: "text", Text: s} }

// DataPart returns a structured-data part.
func DataPart(v any) Part { return Part{Kind: "data", Data: v} }

// Message is one message of a conversation.
type Message struct {
	MessageID        string
	Role             Role
	Parts            []Part
	ContextID        string
	TaskID           string
	ReferenceTaskIDs []string
	Metadata         map[string]any
	Extensions       []string
}

// Text joins the message's text parts.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	return partsText(m.Parts)
}

func partsText(parts []Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Kind == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TaskStatus is a task's state and the message that goes with it.
type TaskStatus struct {
	State   TaskState
	Message *Message
	// Timestamp is ISO 8601 (RFC 3339), empty when unknown.
	Timestamp string
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string
	Name        string
	Description string
	Parts       []Part
	Metadata    map[string]any
}

// Task is the unit of work of a remote agent.
type Task struct {
	ID        string
	ContextID string
	Status    TaskStatus
	Artifacts []Artifact
	History   []Message
	Metadata  map[string]any
}

// ArtifactsText joins the text of the task's artifacts.
func (t *Task) ArtifactsText() string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	for _, a := range t.Artifacts {
		b.WriteString(partsText(a.Parts))
	}
	return b.String()
}

// StatusUpdate is a stream event that changes a task's status.
type StatusUpdate struct {
	TaskID    string
	ContextID string
	Status    TaskStatus
	// Final marks the last event of a v0.3 stream.
	Final    bool
	Metadata map[string]any
}

// ArtifactUpdate is a stream event that adds (or appends to) an artifact.
type ArtifactUpdate struct {
	TaskID    string
	ContextID string
	Artifact  Artifact
	Append    bool
	LastChunk bool
	Metadata  map[string]any
}

// Event is one of the objects a send or a stream answers with: exactly
// one field is set.
type Event struct {
	Task     *Task
	Message  *Message
	Status   *StatusUpdate
	Artifact *ArtifactUpdate
}

// ---- wire forms ----

type wPart struct {
	Kind      string         `json:"kind,omitempty"`
	Text      *string        `json:"text,omitempty"`
	Data      any            `json:"data,omitempty"`
	File      *wFile         `json:"file,omitempty"`
	Raw       []byte         `json:"raw,omitempty"`
	URL       string         `json:"url,omitempty"`
	Filename  string         `json:"filename,omitempty"`
	MediaType string         `json:"mediaType,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type wFile struct {
	Bytes    []byte `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

type wMessage struct {
	Kind             string         `json:"kind,omitempty"`
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []wPart        `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type wStatus struct {
	State     string    `json:"state"`
	Message   *wMessage `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

type wArtifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []wPart        `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

type wTask struct {
	Kind      string         `json:"kind,omitempty"`
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    wStatus        `json:"status"`
	Artifacts []wArtifact    `json:"artifacts,omitempty"`
	History   []wMessage     `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type wStatusUpdate struct {
	Kind      string         `json:"kind,omitempty"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    wStatus        `json:"status"`
	Final     *bool          `json:"final,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type wArtifactUpdate struct {
	Kind      string         `json:"kind,omitempty"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  wArtifact      `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// wWrapped is v1's one-of envelope of send results and stream events.
type wWrapped struct {
	Task           *wTask           `json:"task,omitempty"`
	Message        *wMessage        `json:"message,omitempty"`
	StatusUpdate   *wStatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *wArtifactUpdate `json:"artifactUpdate,omitempty"`
}

func kindFor(v Version, k string) string {
	if v == V03 {
		return k
	}
	return ""
}

func encodeParts(ps []Part, v Version) []wPart {
	out := make([]wPart, 0, len(ps))
	for _, p := range ps {
		w := wPart{Kind: kindFor(v, p.Kind), Metadata: p.Metadata}
		switch p.Kind {
		case "data":
			w.Data = p.Data
			if w.Data == nil {
				w.Data = map[string]any{}
			}
		case "file":
			f := p.File
			if f == nil {
				f = &File{}
			}
			if v == V03 {
				w.File = &wFile{Bytes: f.Bytes, URI: f.URI, MimeType: f.MediaType, Name: f.Name}
			} else {
				w.Raw, w.URL, w.MediaType, w.Filename = f.Bytes, f.URI, f.MediaType, f.Name
			}
		default:
			w.Kind = kindFor(v, "text")
			t := p.Text
			w.Text = &t
		}
		out = append(out, w)
	}
	return out
}

func decodeParts(ws []wPart) []Part {
	out := make([]Part, 0, len(ws))
	for _, w := range ws {
		p := Part{Metadata: w.Metadata}
		switch {
		case w.Kind == "text" || (w.Kind == "" && w.Text != nil):
			p.Kind = "text"
			if w.Text != nil {
				p.Text = *w.Text
			}
		case w.Kind == "data" || (w.Kind == "" && w.Data != nil):
			p.Kind, p.Data = "data", w.Data
		case w.File != nil:
			p.Kind, p.File = "file", &File{Bytes: w.File.Bytes, URI: w.File.URI, MediaType: w.File.MimeType, Name: w.File.Name}
		case w.Raw != nil || w.URL != "":
			p.Kind, p.File = "file", &File{Bytes: w.Raw, URI: w.URL, MediaType: w.MediaType, Name: w.Filename}
		default:
			continue
		}
		out = append(out, p)
	}
	return out
}

func encodeMessage(m *Message, v Version) *wMessage {
	if m == nil {
		return nil
	}
	role := m.Role
	if role == "" {
		role = RoleAgent
	}
	return &wMessage{Kind: kindFor(v, "message"), MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: role.wire(v), Parts: encodeParts(m.Parts, v), Metadata: m.Metadata, Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs}
}

func decodeMessage(w *wMessage) *Message {
	if w == nil {
		return nil
	}
	return &Message{MessageID: w.MessageID, Role: parseRole(w.Role), Parts: decodeParts(w.Parts), ContextID: w.ContextID,
		TaskID: w.TaskID, ReferenceTaskIDs: w.ReferenceTaskIDs, Metadata: w.Metadata, Extensions: w.Extensions}
}

func encodeStatus(s TaskStatus, v Version) wStatus {
	return wStatus{State: s.State.wire(v), Message: encodeMessage(s.Message, v), Timestamp: s.Timestamp}
}

func decodeStatus(w wStatus) TaskStatus {
	return TaskStatus{State: parseState(w.State), Message: decodeMessage(w.Message), Timestamp: w.Timestamp}
}

func encodeArtifact(a Artifact, v Version) wArtifact {
	return wArtifact{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: encodeParts(a.Parts, v), Metadata: a.Metadata}
}

func decodeArtifact(w wArtifact) Artifact {
	return Artifact{ArtifactID: w.ArtifactID, Name: w.Name, Description: w.Description, Parts: decodeParts(w.Parts), Metadata: w.Metadata}
}

func encodeTask(t *Task, v Version) *wTask {
	w := &wTask{Kind: kindFor(v, "task"), ID: t.ID, ContextID: t.ContextID, Status: encodeStatus(t.Status, v), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		w.Artifacts = append(w.Artifacts, encodeArtifact(a, v))
	}
	for i := range t.History {
		w.History = append(w.History, *encodeMessage(&t.History[i], v))
	}
	return w
}

func decodeTask(w *wTask) *Task {
	t := &Task{ID: w.ID, ContextID: w.ContextID, Status: decodeStatus(w.Status), Metadata: w.Metadata}
	for _, a := range w.Artifacts {
		t.Artifacts = append(t.Artifacts, decodeArtifact(a))
	}
	for i := range w.History {
		t.History = append(t.History, *decodeMessage(&w.History[i]))
	}
	return t
}

// EncodeTask returns the wire form of a task (tasks/get, tasks/cancel).
func EncodeTask(t *Task, v Version) any { return encodeTask(t, v) }

// EncodeEvent returns the wire form of a send result or a stream event:
// the bare object tagged with its kind in v0.3, the one-of envelope in v1.
func EncodeEvent(e Event, v Version) any {
	var w wWrapped
	switch {
	case e.Task != nil:
		w.Task = encodeTask(e.Task, v)
	case e.Message != nil:
		w.Message = encodeMessage(e.Message, v)
	case e.Status != nil:
		s := e.Status
		w.StatusUpdate = &wStatusUpdate{Kind: kindFor(v, "status-update"), TaskID: s.TaskID, ContextID: s.ContextID,
			Status: encodeStatus(s.Status, v), Metadata: s.Metadata}
		if v == V03 {
			final := s.Final
			w.StatusUpdate.Final = &final
		}
	case e.Artifact != nil:
		a := e.Artifact
		w.ArtifactUpdate = &wArtifactUpdate{Kind: kindFor(v, "artifact-update"), TaskID: a.TaskID, ContextID: a.ContextID,
			Artifact: encodeArtifact(a.Artifact, v), Append: a.Append, LastChunk: a.LastChunk, Metadata: a.Metadata}
	}
	if v == V1 {
		return w
	}
	switch {
	case w.Task != nil:
		return w.Task
	case w.Message != nil:
		return w.Message
	case w.StatusUpdate != nil:
		return w.StatusUpdate
	case w.ArtifactUpdate != nil:
		return w.ArtifactUpdate
	}
	return nil
}

// DecodeEvent reads a send result or stream event of either version.
func DecodeEvent(raw []byte) (Event, error) {
	var probe struct {
		Kind           string          `json:"kind"`
		Task           json.RawMessage `json:"task"`
		Message        json.RawMessage `json:"message"`
		StatusUpdate   json.RawMessage `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
		ID             string          `json:"id"`
		TaskID         string          `json:"taskId"`
		MessageID      string          `json:"messageId"`
		Status         json.RawMessage `json:"status"`
		Artifact       json.RawMessage `json:"artifact"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return Event{}, fmt.Errorf("a2a: decoding event: %w", err)
	}
	kind, body := probe.Kind, json.RawMessage(raw)
	switch {
	case kind != "":
	case len(probe.Task) > 0:
		kind, body = "task", probe.Task
	case len(probe.StatusUpdate) > 0:
		kind, body = "status-update", probe.StatusUpdate
	case len(probe.ArtifactUpdate) > 0:
		kind, body = "artifact-update", probe.ArtifactUpdate
	case len(probe.Message) > 0 && probe.MessageID == "":
		kind, body = "message", probe.Message
	case len(probe.Artifact) > 0 && probe.TaskID != "":
		kind = "artifact-update"
	case len(probe.Status) > 0 && probe.TaskID != "":
		kind = "status-update"
	case len(probe.Status) > 0 && probe.ID != "":
		kind = "task"
	case probe.MessageID != "":
		kind = "message"
	}
	var err error
	var e Event
	switch kind {
	case "task":
		var w wTask
		if err = json.Unmarshal(body, &w); err == nil {
			e.Task = decodeTask(&w)
		}
	case "message":
		var w wMessage
		if err = json.Unmarshal(body, &w); err == nil {
			e.Message = decodeMessage(&w)
		}
	case "status-update":
		var w wStatusUpdate
		if err = json.Unmarshal(body, &w); err == nil {
			e.Status = &StatusUpdate{TaskID: w.TaskID, ContextID: w.ContextID, Status: decodeStatus(w.Status), Metadata: w.Metadata}
			if w.Final != nil {
				e.Status.Final = *w.Final
			}
		}
	case "artifact-update":
		var w wArtifactUpdate
		if err = json.Unmarshal(body, &w); err == nil {
			e.Artifact = &ArtifactUpdate{TaskID: w.TaskID, ContextID: w.ContextID, Artifact: decodeArtifact(w.Artifact),
				Append: w.Append, LastChunk: w.LastChunk, Metadata: w.Metadata}
		}
	default:
		return Event{}, errors.New("a2a: event is none of task, message, status-update or artifact-update")
	}
	if err != nil {
		return Event{}, fmt.Errorf("a2a: decoding %s: %w", kind, err)
	}
	return e, nil
}

// DecodeTask reads a task of either version.
func DecodeTask(raw []byte) (*Task, error) {
	e, err := DecodeEvent(raw)
	if err != nil {
		return nil, err
	}
	if e.Task == nil {
		return nil, errors.New("a2a: expected a task")
	}
	return e.Task, nil
}

// SendParams are the parameters of message/send and message/stream.
type SendParams struct {
	Message Message
	// AcceptedOutputModes and HistoryLength come from the configuration.
	AcceptedOutputModes []string
	HistoryLength       *int
	// ReturnImmediately asks for the task at once instead of waiting until
	// it ends or is interrupted (v0.3 blocking: false).
	ReturnImmediately bool
	Metadata          map[string]any
	// Tenant is v1's optional tenant.
	Tenant string
}

type wSendConfig struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	Blocking            *bool    `json:"blocking,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
}

type wSendParams struct {
	Tenant        string         `json:"tenant,omitempty"`
	Message       *wMessage      `json:"message"`
	Configuration *wSendConfig   `json:"configuration,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// EncodeSendParams returns the wire form of send parameters.
func EncodeSendParams(p SendParams, v Version) any {
	m := p.Message
	if m.Role == "" {
		m.Role = RoleUser
	}
	w := wSendParams{Message: encodeMessage(&m, v), Metadata: p.Metadata}
	if v == V1 {
		w.Tenant = p.Tenant
	}
	cfg := &wSendConfig{AcceptedOutputModes: p.AcceptedOutputModes, HistoryLength: p.HistoryLength}
	if v == V03 {
		blocking := !p.ReturnImmediately
		cfg.Blocking = &blocking
	} else {
		cfg.ReturnImmediately = p.ReturnImmediately
	}
	w.Configuration = cfg
	return w
}

// DecodeSendParams reads send parameters of either version.
func DecodeSendParams(raw []byte) (SendParams, error) {
	var w wSendParams
	if err := json.Unmarshal(raw, &w); err != nil {
		return SendParams{}, err
	}
	if w.Message == nil {
		return SendParams{}, errors.New("params.message is required")
	}
	p := SendParams{Message: *decodeMessage(w.Message), Metadata: w.Metadata, Tenant: w.Tenant}
	if c := w.Configuration; c != nil {
		p.AcceptedOutputModes, p.HistoryLength = c.AcceptedOutputModes, c.HistoryLength
		p.ReturnImmediately = c.ReturnImmediately || (c.Blocking != nil && !*c.Blocking)
	}
	return p, nil
}

// TaskQuery are the parameters of tasks/get, tasks/cancel and
// tasks/resubscribe.
type TaskQuery struct {
	ID            string
	HistoryLength *int
	Metadata      map[string]any
}

type wTaskQuery struct {
	ID string `json:"id"`
	// Name is the "tasks/{id}" resource name of v1 drafts.
	Name          string         `json:"name,omitempty"`
	HistoryLength *int           `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// EncodeTaskQuery returns the wire form of a task query.
func EncodeTaskQuery(q TaskQuery) any {
	return wTaskQuery{ID: q.ID, HistoryLength: q.HistoryLength, Metadata: q.Metadata}
}

// DecodeTaskQuery reads task query parameters of either version.
func DecodeTaskQuery(raw []byte) (TaskQuery, error) {
	var w wTaskQuery
	if err := json.Unmarshal(raw, &w); err != nil {
		return TaskQuery{}, err
	}
	id := w.ID
	if id == "" {
		id = strings.TrimPrefix(w.Name, "tasks/")
	}
	if id == "" {
		return TaskQuery{}, errors.New("params.id is required")
	}
	return TaskQuery{ID: id, HistoryLength: w.HistoryLength, Metadata: w.Metadata}, nil
}
