package openaiwire

import (
	"encoding/json"
	"strconv"
)

// Streaming event types of the Responses API that the ResponsesEncoder
// sends.
const (
	EventCreated        = "response.created"
	EventInProgress     = "response.in_progress"
	EventCompleted      = "response.completed"
	EventFailed         = "response.failed"
	EventIncomplete     = "response.incomplete"
	EventItemAdded      = "response.output_item.added"
	EventItemDone       = "response.output_item.done"
	EventPartAdded      = "response.content_part.added"
	EventPartDone       = "response.content_part.done"
	EventTextDelta      = "response.output_text.delta"
	EventTextDone       = "response.output_text.done"
	EventArgumentsDelta = "response.function_call_arguments.delta"
	EventArgumentsDone  = "response.function_call_arguments.done"
	EventError          = "error"
)

// ResponseEvent is one streaming event. Which fields it has on the wire
// depends on Type:
//   - response.created, .in_progress, .completed, .failed, .incomplete:
//     Response;
//   - response.output_item.added and .done: OutputIndex, Item;
//   - response.content_part.added and .done: ItemID, OutputIndex,
//     ContentIndex, Part;
//   - response.output_text.delta: ItemID, OutputIndex, ContentIndex, Delta
//     (and "logprobs": []); .done: the same with Text;
//   - response.function_call_arguments.delta: ItemID, OutputIndex, Delta;
//     .done: ItemID, OutputIndex, Arguments;
//   - error: Error.
//
// Every event has Type and SequenceNumber.
type ResponseEvent struct {
	Type           string
	SequenceNumber int64
	Response       *Response
	OutputIndex    int
	ContentIndex   int
	ItemID         string
	Item           *OutputItem
	Part           *OutputContent
	Delta          string
	Text           string
	Arguments      string
	Error          *ErrorObject
}

// MarshalJSON writes the members of the event's type.
func (e ResponseEvent) MarshalJSON() ([]byte, error) {
	return appendResponseEvent(nil, &e)
}

// AppendResponseEventFrame appends e as one server-sent event, "event:
// <type>\ndata: <json>\n\n", to dst. Deltas are written without
// reflection: a streamed answer sends one per model delta.
func AppendResponseEventFrame(dst []byte, e *ResponseEvent) ([]byte, error) {
	dst = append(dst, "event: "...)
	dst = append(dst, e.Type...)
	dst = append(dst, "\ndata: "...)
	dst, err := appendResponseEvent(dst, e)
	if err != nil {
		return dst, err
	}
	return append(dst, "\n\n"...), nil
}

func appendResponseEvent(b []byte, e *ResponseEvent) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, e.SequenceNumber, 10)
	var err error
	switch e.Type {
	case EventCreated, EventInProgress, EventCompleted, EventFailed, EventIncomplete:
		b, err = appendMember(b, "response", e.Response)
	case EventItemAdded, EventItemDone:
		b = appendIndex(b, "output_index", e.OutputIndex)
		b, err = appendMember(b, "item", e.Item)
	case EventPartAdded, EventPartDone:
		b = appendItemRef(b, e, true)
		b = append(b, `,"part":`...)
		b = appendOutputContent(b, e.Part)
	case EventTextDelta:
		b = appendItemRef(b, e, true)
		b = append(b, `,"delta":`...)
		b = appendString(b, e.Delta)
		b = append(b, `,"logprobs":[]`...)
	case EventTextDone:
		b = appendItemRef(b, e, true)
		b = append(b, `,"text":`...)
		b = appendString(b, e.Text)
		b = append(b, `,"logprobs":[]`...)
	case EventArgumentsDelta:
		b = appendItemRef(b, e, false)
		b = append(b, `,"delta":`...)
		b = appendString(b, e.Delta)
	case EventArgumentsDone:
		b = appendItemRef(b, e, false)
		b = append(b, `,"arguments":`...)
		b = appendString(b, e.Arguments)
	case EventError:
		b, err = appendMember(b, "error", e.Error)
	}
	return append(b, '}'), err
}

func appendIndex(b []byte, name string, v int) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return strconv.AppendInt(b, int64(v), 10)
}

// appendItemRef writes item_id, output_index and (when content) content_index.
func appendItemRef(b []byte, e *ResponseEvent, content bool) []byte {
	b = append(b, `,"item_id":`...)
	b = appendString(b, e.ItemID)
	b = appendIndex(b, "output_index", e.OutputIndex)
	if content {
		b = appendIndex(b, "content_index", e.ContentIndex)
	}
	return b
}

func appendMember(b []byte, name string, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return append(b, j...), nil
}
