package sessions

import (
	"encoding/json"
	"maps"
	"math"
	"time"

	"google.golang.org/genai"
)

// Event is one step of a conversation: a user message, a model turn (partial
// or whole), a tool response, or a control marker such as a transfer. Its JSON
// is ADK's wire format (camelCase, timestamps in float epoch seconds, the four
// action maps always present), so the same value is stored, streamed over the
// native surface and read back by ADK's clients.
//
// Events are treated as immutable once appended to a session; code that wants
// to change one makes a copy with Clone.
type Event struct {
	ID           string `json:"id"`
	InvocationID string `json:"invocationId"`
	// Author is the name of the agent that produced the event, or "user".
	Author string `json:"author"`
	// Branch labels events produced under a parallel fan-out:
	// "<parent>.<child>", nested with further dots.
	Branch    string    `json:"branch,omitempty"`
	Timestamp time.Time `json:"-"`

	Content       *genai.Content                              `json:"content,omitempty"`
	Partial       bool                                        `json:"partial,omitempty"`
	TurnComplete  bool                                        `json:"turnComplete,omitempty"`
	FinishReason  genai.FinishReason                          `json:"finishReason,omitempty"`
	ModelVersion  string                                      `json:"modelVersion,omitempty"`
	ErrorCode     string                                      `json:"errorCode,omitempty"`
	ErrorMessage  string                                      `json:"errorMessage,omitempty"`
	UsageMetadata *genai.GenerateContentResponseUsageMetadata `json:"usageMetadata,omitempty"`

	Actions            EventActions `json:"actions"`
	LongRunningToolIDs []string     `json:"longRunningToolIds"`
	// CustomMetadata holds data about the event that is not content, as
	// ADK's custom_metadata (for example the remote task an A2A agent's
	// event belongs to). Values must be JSON-encodable.
	CustomMetadata map[string]any `json:"customMetadata,omitempty"`
}

// EventActions carries the control flow of an event as data: state changes,
// artifact versions, transfers, escalation and requested confirmations.
type EventActions struct {
	// StateDelta holds state changes; keys may carry the app:, user: or temp:
	// scope prefix.
	StateDelta map[string]any `json:"stateDelta"`
	// ArtifactDelta maps an artifact name to the version this event saved.
	ArtifactDelta              map[string]int64          `json:"artifactDelta"`
	RequestedAuthConfigs       map[string]any            `json:"requestedAuthConfigs"`
	RequestedToolConfirmations map[string]map[string]any `json:"requestedToolConfirmations"`
	TransferToAgent            string                    `json:"transferToAgent,omitempty"`
	Escalate                   bool                      `json:"escalate,omitempty"`
	SkipSummarization          bool                      `json:"skipSummarization,omitempty"`
	// Compaction, on a compaction event, is a summary that stands for the
	// events before it up to its EndTimestamp in later model requests.
	Compaction *EventCompaction `json:"compaction,omitempty"`
}

// EventCompaction is ADK's compaction of a session's events: a summary
// (CompactedContent) of the events from StartTimestamp to EndTimestamp.
// A compaction event carries it in its actions; the events it covers stay
// stored. The gateway's summaries are cumulative: each one folds in the
// previous summary, so the latest compaction stands for every event up to
// its EndTimestamp.
type EventCompaction struct {
	StartTimestamp   time.Time
	EndTimestamp     time.Time
	CompactedContent *genai.Content
}

type compactionJSON struct {
	StartTimestamp   float64        `json:"startTimestamp"`
	EndTimestamp     float64        `json:"endTimestamp"`
	CompactedContent *genai.Content `json:"compactedContent,omitempty"`
}

// MarshalJSON writes ADK's form: timestamps in float epoch seconds.
func (c EventCompaction) MarshalJSON() ([]byte, error) {
	return json.Marshal(compactionJSON{StartTimestamp: EpochSeconds(c.StartTimestamp), EndTimestamp: EpochSeconds(c.EndTimestamp),
		CompactedContent: c.CompactedContent})
}

// UnmarshalJSON reads ADK's form (timestamps in float seconds, or integer
// milliseconds as ADK JS and Java write them).
func (c *EventCompaction) UnmarshalJSON(b []byte) error {
	var v compactionJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = EventCompaction{StartTimestamp: fromEpoch(v.StartTimestamp), EndTimestamp: fromEpoch(v.EndTimestamp),
		CompactedContent: v.CompactedContent}
	return nil
}

// IsCompaction reports whether e is a compaction event.
func (e *Event) IsCompaction() bool { return e != nil && e.Actions.Compaction != nil }

type eventAlias Event

type eventJSON struct {
	*eventAlias
	Timestamp float64 `json:"timestamp"`
}

// MarshalJSON writes the ADK wire form: empty action maps as {}, a nil
// longRunningToolIds as [], and the timestamp as float epoch seconds (see
// AppendJSON).
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil) }

// empty reports whether a holds nothing.
func (a *EventActions) empty() bool {
	return len(a.StateDelta) == 0 && len(a.ArtifactDelta) == 0 && len(a.RequestedAuthConfigs) == 0 &&
		len(a.RequestedToolConfirmations) == 0 && a.TransferToAgent == "" && !a.Escalate && !a.SkipSummarization &&
		a.Compaction == nil
}

// UnmarshalJSON reads the ADK wire form, accepting the timestamp in float
// epoch seconds (Python) or integer milliseconds (ADK JS).
func (e *Event) UnmarshalJSON(b []byte) error {
	var v eventJSON
	v.eventAlias = (*eventAlias)(e)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	e.Timestamp = fromEpoch(v.Timestamp)
	return nil
}

// EpochSeconds renders t as ADK writes times on the wire: float seconds
// since the epoch, to the microsecond; 0 for the zero time.
func EpochSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMicro()) / 1e6
}

// fromEpoch reads float seconds, or milliseconds when the value is too large
// to be seconds (after the year 5000).
func fromEpoch(v float64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	if v > 1e11 {
		v /= 1000
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

// Clone returns a copy of e whose maps and slices can be changed without
// touching e. Content is shared: contents are never mutated after creation.
func (e *Event) Clone() *Event {
	c := new(Event)
	e.cloneInto(c)
	return c
}

// cloneInto makes c Clone's copy of e, so that a copy made in an
// allocation of many (a memory store's read) is Clone's.
func (e *Event) cloneInto(c *Event) {
	*c = *e
	c.Actions.StateDelta = maps.Clone(e.Actions.StateDelta)
	c.Actions.ArtifactDelta = maps.Clone(e.Actions.ArtifactDelta)
	c.Actions.RequestedAuthConfigs = maps.Clone(e.Actions.RequestedAuthConfigs)
	c.Actions.RequestedToolConfirmations = maps.Clone(e.Actions.RequestedToolConfirmations)
	if e.LongRunningToolIDs != nil {
		c.LongRunningToolIDs = append([]string(nil), e.LongRunningToolIDs...)
	}
	c.CustomMetadata = maps.Clone(e.CustomMetadata)
}

// FunctionCalls returns the function calls in the event's content.
func (e *Event) FunctionCalls() []*genai.FunctionCall {
	if e == nil || e.Content == nil {
		return nil
	}
	var out []*genai.FunctionCall
	for _, p := range e.Content.Parts {
		if p != nil && p.FunctionCall != nil {
			out = append(out, p.FunctionCall)
		}
	}
	return out
}

// FunctionResponses returns the function responses in the event's content.
func (e *Event) FunctionResponses() []*genai.FunctionResponse {
	if e == nil || e.Content == nil {
		return nil
	}
	var out []*genai.FunctionResponse
	for _, p := range e.Content.Parts {
		if p != nil && p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out
}

// Text returns the concatenated non-thought text parts of the event.
func (e *Event) Text() string {
	if e == nil || e.Content == nil {
		return ""
	}
	// A lone text part's text as it is ("+" would call the runtime's
	// concatenation for it: a streamed delta's event each).
	var s string
	for _, p := range e.Content.Parts {
		switch {
		case p == nil || p.Thought:
		case s == "":
			s = p.Text
		default:
			s += p.Text
		}
	}
	return s
}

// IsFinalResponse reports whether the event ends an agent's turn: it is not
// partial and holds no function calls or responses (or it skips
// summarization, or it pauses on a long-running call).
func (e *Event) IsFinalResponse() bool {
	if e.Actions.SkipSummarization || len(e.LongRunningToolIDs) > 0 {
		return true
	}
	return !e.Partial && len(e.FunctionCalls()) == 0 && len(e.FunctionResponses()) == 0
}
