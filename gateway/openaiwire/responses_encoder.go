package openaiwire

import (
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// ResponsesEncoderConfig configures a ResponsesEncoder. Zero fields mean the
// defaults.
type ResponsesEncoderConfig struct {
	// ClientTools maps runtime function names to the names the client
	// knows, as EncoderConfig.ClientTools does for chat.
	ClientTools map[string]string
	// NewToolCallID generates call ids for client calls whose runtime id is
	// not a valid client id (default NewToolCallID).
	NewToolCallID func() string
	// NewItemID generates output item ids from a prefix, "msg" or "fc"
	// (default NewItemID).
	NewItemID func(prefix string) string
	// Now is the clock for completed_at (default time.Now).
	Now func() time.Time
}

// ResponsesEncoder turns the runtime events of one user turn into the
// Responses API's streaming events and, from the same events, the response
// object: a streamed response sends what Start, Event and the ending
// (Finish, Fail) return; a response that is not streamed calls the same
// methods and sends Response() at the end. Like Encoder it is pure: no I/O,
// one goroutine at a time.
//
// Rules:
//   - the response begins with response.created and response.in_progress;
//   - a model turn's text (partial events' deltas, and whatever of the
//     turn's non-partial event the partials did not send; thought text
//     never) is one message item authored by the turn's agent:
//     output_item.added, content_part.added, output_text.delta…, then at
//     the end of the turn output_text.done, content_part.done,
//     output_item.done. Text of another turn (a parallel branch) closes the
//     open item first, and its rest comes as a new item;
//   - each client function call (ClientTools; in non-partial events only)
//     is a function_call item: output_item.added, one
//     function_call_arguments.delta with the whole arguments,
//     function_call_arguments.done, output_item.done;
//   - a transfer is added to the response's agentgate.transfers, and the
//     first item of the agent receiving it carries transferred_from;
//   - the ending closes the open item and sends response.completed,
//     response.incomplete (the latest model turn hit its token limit or a
//     content filter) or response.failed, with the response's usage;
//   - every event has the next sequence_number, from 0; events authored by
//     "user" are ignored.
//
// Which events reach the encoder is the caller's choice, as for Encoder.
type ResponsesEncoder struct {
	cfg      ResponsesEncoderConfig
	resp     *Response
	seq      int64
	started  bool
	finished bool
	open     *openItem     // the message item text goes to, nil when none
	streamed streamedTurns // text sent by partials of unfinished turns
	received map[string]string
	lastEnd  genai.FinishReason
	calls    []EmittedToolCall
	seen     map[string]bool // runtime ids of client calls already sent
	events   []ResponseEvent // what the last call returned, reused
}

// openItem is the message item being streamed.
type openItem struct {
	key   turnKey
	index int
	text  strings.Builder
}

// NewResponsesEncoder returns an encoder that fills resp (from
// ResponsesRequest.NewResponse). The encoder owns resp from here on:
// callers read it through Response.
func NewResponsesEncoder(resp *Response, cfg ResponsesEncoderConfig) *ResponsesEncoder {
	if cfg.NewToolCallID == nil {
		cfg.NewToolCallID = NewToolCallID
	}
	if cfg.NewItemID == nil {
		cfg.NewItemID = NewItemID
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if resp.Output == nil {
		resp.Output = []OutputItem{}
	}
	if resp.Agentgate.Transfers == nil {
		resp.Agentgate.Transfers = []Transfer{}
	}
	return &ResponsesEncoder{cfg: cfg, resp: resp}
}

// SetSession records the session the turn runs on, for the response's
// agentgate.session_id.
func (e *ResponsesEncoder) SetSession(id string) { e.resp.Agentgate.SessionID = nullable(id) }

// SetInvocation records the turn's invocation id, which the first event
// also sets.
func (e *ResponsesEncoder) SetInvocation(id string) { e.resp.Agentgate.InvocationID = id }

// Start returns response.created and response.in_progress, once.
func (e *ResponsesEncoder) Start() []ResponseEvent {
	out := e.events[:0]
	if !e.started && !e.finished {
		out = e.start(out)
	}
	e.events = out
	return out
}

func (e *ResponsesEncoder) start(out []ResponseEvent) []ResponseEvent {
	e.started = true
	snap := *e.resp
	snap.Output = []OutputItem{}
	snap.Agentgate.Transfers = slices.Clone(e.resp.Agentgate.Transfers)
	out = e.emit(out, ResponseEvent{Type: EventCreated, Response: &snap})
	return e.emit(out, ResponseEvent{Type: EventInProgress, Response: &snap})
}

func (e *ResponsesEncoder) emit(out []ResponseEvent, ev ResponseEvent) []ResponseEvent {
	ev.SequenceNumber = e.seq
	e.seq++
	return append(out, ev)
}

// Event returns the events for one runtime event, possibly none (Start's
// first, when it was not called). The slice is the encoder's: it holds the
// events until the next call, which reuses it. After the ending it returns
// nothing.
func (e *ResponsesEncoder) Event(ev *sessions.Event) []ResponseEvent {
	out := e.events[:0]
	if e.finished || ev == nil || ev.Author == "user" {
		e.events = out
		return out
	}
	if !e.started {
		out = e.start(out)
	}
	if e.resp.Agentgate.InvocationID == "" {
		e.resp.Agentgate.InvocationID = ev.InvocationID
	}
	key := turnKey{ev.Author, ev.Branch}
	if ev.Partial {
		if text := e.streamed.partial(key, ev.Text()); text != "" {
			out = e.text(out, key, text)
		}
	} else {
		if text := e.streamed.final(key, ev.Text()); text != "" {
			out = e.text(out, key, text)
		}
		if e.open != nil && e.open.key == key {
			out = e.closeOpen(out, StatusCompleted)
		}
		for _, fc := range ev.FunctionCalls() {
			out = e.toolCall(out, ev, fc)
		}
		if ev.FinishReason != "" {
			e.lastEnd = ev.FinishReason
		}
	}
	if to := ev.Actions.TransferToAgent; to != "" {
		e.resp.Agentgate.Transfers = append(e.resp.Agentgate.Transfers, Transfer{From: ev.Author, To: to})
		if e.received == nil {
			e.received = map[string]string{}
		}
		e.received[to] = ev.Author
	}
	e.events = out
	return out
}

// text sends text of key's turn, opening its message item when needed.
func (e *ResponsesEncoder) text(out []ResponseEvent, key turnKey, text string) []ResponseEvent {
	if e.open != nil && e.open.key != key {
		out = e.closeOpen(out, StatusCompleted)
	}
	if e.open == nil {
		item := OutputItem{Type: ItemMessage, ID: e.cfg.NewItemID("msg"), Status: StatusInProgress, Role: RoleAssistant,
			Content: []OutputContent{}, Agentgate: e.itemExtension(key.author)}
		var idx int
		out, idx = e.addItem(out, item)
		e.open = &openItem{key: key, index: idx}
		out = e.emit(out, ResponseEvent{Type: EventPartAdded, ItemID: item.ID, OutputIndex: idx,
			Part: &OutputContent{Type: PartOutputText}})
	}
	e.open.text.WriteString(text)
	return e.emit(out, ResponseEvent{Type: EventTextDelta, ItemID: e.resp.Output[e.open.index].ID,
		OutputIndex: e.open.index, Delta: text})
}

// itemExtension is the agentgate member of author's next item: the first
// one after a transfer to author names where it came from.
func (e *ResponsesEncoder) itemExtension(author string) ItemExtension {
	ext := ItemExtension{Author: author}
	if from, ok := e.received[author]; ok {
		ext.TransferredFrom = from
		delete(e.received, author)
	}
	return ext
}

// addItem appends item to the output and sends output_item.added with a
// copy of it.
func (e *ResponsesEncoder) addItem(out []ResponseEvent, item OutputItem) ([]ResponseEvent, int) {
	idx := len(e.resp.Output)
	e.resp.Output = append(e.resp.Output, item)
	return e.emit(out, ResponseEvent{Type: EventItemAdded, OutputIndex: idx, Item: &item}), idx
}

// closeOpen ends the open message item with status.
func (e *ResponsesEncoder) closeOpen(out []ResponseEvent, status string) []ResponseEvent {
	o := e.open
	if o == nil {
		return out
	}
	e.open = nil
	item := &e.resp.Output[o.index]
	text := o.text.String()
	item.Status = status
	item.Content = []OutputContent{{Type: PartOutputText, Text: text}}
	done := *item
	out = e.emit(out, ResponseEvent{Type: EventTextDone, ItemID: item.ID, OutputIndex: o.index, Text: text})
	out = e.emit(out, ResponseEvent{Type: EventPartDone, ItemID: item.ID, OutputIndex: o.index, Part: &done.Content[0]})
	return e.emit(out, ResponseEvent{Type: EventItemDone, OutputIndex: o.index, Item: &done})
}

func (e *ResponsesEncoder) toolCall(out []ResponseEvent, ev *sessions.Event, fc *genai.FunctionCall) []ResponseEvent {
	clientName, id, args, ok := clientCall(fc, e.cfg.ClientTools, &e.seen, e.cfg.NewToolCallID)
	if !ok {
		return out
	}
	out = e.closeOpen(out, StatusCompleted)
	item := OutputItem{Type: ItemFunctionCall, ID: e.cfg.NewItemID("fc"), Status: StatusInProgress, CallID: id,
		Name: clientName, Agentgate: e.itemExtension(ev.Author)}
	out, idx := e.addItem(out, item)
	e.calls = append(e.calls, EmittedToolCall{Index: idx, ID: id, FunctionCallID: fc.ID, Name: fc.Name,
		ClientName: clientName, Author: ev.Author, InvocationID: ev.InvocationID})
	out = e.emit(out, ResponseEvent{Type: EventArgumentsDelta, ItemID: item.ID, OutputIndex: idx, Delta: args})
	out = e.emit(out, ResponseEvent{Type: EventArgumentsDone, ItemID: item.ID, OutputIndex: idx, Arguments: args})
	stored := &e.resp.Output[idx]
	stored.Arguments, stored.Status = args, StatusCompleted
	done := *stored
	return e.emit(out, ResponseEvent{Type: EventItemDone, OutputIndex: idx, Item: &done})
}

// Finish ends a turn that ran to its end: the open item is closed, usage
// set from the given record (the sum over the tree), and the response is
// completed, or incomplete when the latest model turn stopped at its token
// limit (reason "max_output_tokens") or a content filter
// ("content_filter"). It returns response.completed or
// response.incomplete, once.
func (e *ResponsesEncoder) Finish(usage *genai.GenerateContentResponseUsageMetadata) []ResponseEvent {
	status, reason := StatusCompleted, ""
	switch e.lastEnd {
	case genai.FinishReasonMaxTokens:
		status, reason = StatusIncomplete, "max_output_tokens"
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety:
		status, reason = StatusIncomplete, "content_filter"
	}
	if len(e.calls) > 0 {
		status, reason = StatusCompleted, "" // paused on client tools: the answer so far is whole
	}
	return e.end(status, reason, nil, usage)
}

// Fail ends a turn that failed: the open item is closed as incomplete, the
// response's error set from err (its Code, else its Type, and its
// Message), and response.failed returned, once.
func (e *ResponsesEncoder) Fail(err *Error, usage *genai.GenerateContentResponseUsageMetadata) []ResponseEvent {
	return e.end(StatusFailed, "", &ResponseError{Code: orDefault(err.Code, err.Type), Message: err.Message}, usage)
}

// Cancel ends a turn that was cancelled: the open item is closed as
// incomplete and response.failed returned with status "cancelled", once.
func (e *ResponsesEncoder) Cancel(usage *genai.GenerateContentResponseUsageMetadata) []ResponseEvent {
	return e.end(StatusCancelled, "", nil, usage)
}

func (e *ResponsesEncoder) end(status, reason string, rerr *ResponseError, usage *genai.GenerateContentResponseUsageMetadata) []ResponseEvent {
	out := e.events[:0]
	if e.finished {
		e.events = out
		return out
	}
	if !e.started {
		out = e.start(out)
	}
	itemStatus := StatusCompleted
	if status != StatusCompleted {
		itemStatus = StatusIncomplete
	}
	out = e.closeOpen(out, itemStatus)
	e.finished = true
	u := ResponseUsageFrom(usage)
	e.resp.Usage, e.resp.Status, e.resp.Error = &u, status, rerr
	if reason != "" {
		e.resp.IncompleteDetails = &IncompleteDetails{Reason: reason}
	}
	typ := EventFailed
	switch status {
	case StatusCompleted:
		now := e.cfg.Now().Unix()
		e.resp.CompletedAt = &now
		typ = EventCompleted
	case StatusIncomplete:
		typ = EventIncomplete
	}
	out = e.emit(out, ResponseEvent{Type: typ, Response: e.resp})
	e.events = out
	return out
}

// Revoke takes back the ending Finish just returned, before it was sent,
// for a response that ran to its end but cannot be kept as its request
// asked (store true, and storing it failed): the response fails with err
// instead. It returns the events to send in place of Finish's: the same,
// but response.failed last, with the same sequence number. It returns
// nothing unless the last call was Finish.
func (e *ResponsesEncoder) Revoke(err *Error) []ResponseEvent {
	out := e.events
	if !e.finished || len(out) == 0 {
		return nil
	}
	last := &out[len(out)-1]
	if last.Type != EventCompleted && last.Type != EventIncomplete {
		return nil
	}
	r := e.resp
	r.Status, r.Error = StatusFailed, &ResponseError{Code: orDefault(err.Code, err.Type), Message: err.Message}
	r.CompletedAt, r.IncompleteDetails = nil, nil
	last.Type = EventFailed
	return out
}

// Response returns the response object so far; after the ending, the
// whole response. The encoder keeps updating it until the ending.
func (e *ResponsesEncoder) Response() *Response { return e.resp }

// ToolCalls returns the client function calls sent so far, in output order
// (Index is the output index).
func (e *ResponsesEncoder) ToolCalls() []EmittedToolCall {
	return append([]EmittedToolCall(nil), e.calls...)
}

// Started reports whether Start's events (or an ending's) were made.
func (e *ResponsesEncoder) Started() bool { return e.started }

// Finished reports whether the response has ended.
func (e *ResponsesEncoder) Finished() bool { return e.finished }
