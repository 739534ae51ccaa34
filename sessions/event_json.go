package sessions

import (
	"encoding/json"

	"github.com/agentgate/agentgate/internal/jsonenc"
)

// AppendJSON appends e in ADK's wire form (what MarshalJSON writes) to b.
// What events mostly hold, ids, flags, contents (jsonenc.AppendContent)
// and empty actions, is written without reflection; the rest (usage,
// non-empty action maps, custom metadata) through json.Marshal, member by
// member, so that the whole is byte for byte what the reflection of the
// wire form writes (the tests hold it to that, for every field). A
// streamed answer is one event per delta, and the run logs encode each
// one.
func (e *Event) AppendJSON(b []byte) ([]byte, error) { return e.appendJSON(b, false) }

// StoredJSON is e's JSON as a store keeps it: the wire form of AppendJSON
// less the members that hold nothing (each empty action map, actions
// when all of it is empty, an empty longRunningToolIds). UnmarshalJSON
// reads it back as the same event, its empty maps and slices nil, which
// AppendJSON writes as the wire form again. A store that keeps it sends
// and receives about 130 bytes less per event and decodes five fewer
// empty values on every read.
func (e *Event) StoredJSON() ([]byte, error) { return e.appendJSON(nil, true) }

// appendJSON writes the wire form, or with stored the stored form (see
// StoredJSON).
func (e *Event) appendJSON(b []byte, stored bool) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, e.ID)
	b = append(b, `,"invocationId":`...)
	b = jsonenc.AppendString(b, e.InvocationID)
	b = append(b, `,"author":`...)
	b = jsonenc.AppendString(b, e.Author)
	b = appendStringMember(b, `,"branch":`, e.Branch)
	if e.Content != nil {
		b = append(b, `,"content":`...)
		if b, err = jsonenc.AppendContent(b, e.Content); err != nil {
			return b, err
		}
	}
	if e.Partial {
		b = append(b, `,"partial":true`...)
	}
	if e.TurnComplete {
		b = append(b, `,"turnComplete":true`...)
	}
	b = appendStringMember(b, `,"finishReason":`, string(e.FinishReason))
	b = appendStringMember(b, `,"modelVersion":`, e.ModelVersion)
	b = appendStringMember(b, `,"errorCode":`, e.ErrorCode)
	b = appendStringMember(b, `,"errorMessage":`, e.ErrorMessage)
	if e.UsageMetadata != nil {
		if b, err = appendMarshalled(append(b, `,"usageMetadata":`...), e.UsageMetadata); err != nil {
			return b, err
		}
	}
	if !stored || !e.Actions.empty() {
		if b, err = e.Actions.appendJSON(append(b, `,"actions":`...), stored); err != nil {
			return b, err
		}
	}
	if !stored || len(e.LongRunningToolIDs) > 0 {
		b = append(b, `,"longRunningToolIds":[`...)
		for i, id := range e.LongRunningToolIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, id)
		}
		b = append(b, ']')
	}
	if len(e.CustomMetadata) > 0 {
		if b, err = appendMarshalled(append(b, `,"customMetadata":`...), e.CustomMetadata); err != nil {
			return b, err
		}
	}
	b = append(b, `,"timestamp":`...)
	b = jsonenc.AppendFloat(b, EpochSeconds(e.Timestamp))
	return append(b, '}'), nil
}

// appendJSON writes the actions as their wire form does: the four maps
// always (empty ones as {}), the rest when set; with stored, the empty
// maps are left out too.
func (a *EventActions) appendJSON(b []byte, stored bool) ([]byte, error) {
	var err error
	members := []struct {
		name string
		v    any
		n    int
	}{
		{`"stateDelta":`, a.StateDelta, len(a.StateDelta)},
		{`"artifactDelta":`, a.ArtifactDelta, len(a.ArtifactDelta)},
		{`"requestedAuthConfigs":`, a.RequestedAuthConfigs, len(a.RequestedAuthConfigs)},
		{`"requestedToolConfirmations":`, a.RequestedToolConfirmations, len(a.RequestedToolConfirmations)},
	}
	b = append(b, '{')
	start := len(b)
	// member starts a member after the first with its comma.
	member := func(name string) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, name...)
	}
	for _, m := range members {
		switch {
		case m.n > 0:
			member(m.name)
			if b, err = appendMarshalled(b, m.v); err != nil {
				return b, err
			}
		case !stored:
			member(m.name)
			b = append(b, "{}"...)
		}
	}
	if a.TransferToAgent != "" {
		member(`"transferToAgent":`)
		b = jsonenc.AppendString(b, a.TransferToAgent)
	}
	if a.Escalate {
		member(`"escalate":true`)
	}
	if a.SkipSummarization {
		member(`"skipSummarization":true`)
	}
	if a.Compaction != nil {
		member(`"compaction":`)
		if b, err = appendMarshalled(b, a.Compaction); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendStringMember writes name and s when s is not empty (omitempty).
func appendStringMember(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return jsonenc.AppendString(append(b, name...), s)
}

// appendMarshalled appends v's JSON through json.Marshal.
func appendMarshalled(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}
