package openaiwire

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// EncoderConfig configures an Encoder. Zero fields mean the defaults.
type EncoderConfig struct {
	// ID is the response id shared by every chunk (default NewCompletionID()).
	ID string
	// Model is the virtual model id the client asked for.
	Model string
	// Created is the response's Unix time, the same on every chunk
	// (default: now).
	Created int64
	// IncludeUsage adds the final usage chunk (stream_options.include_usage).
	IncludeUsage bool
	// ClientTools maps the runtime name of each function the client
	// executes to the name the client knows it by (for a request tool the
	// same name; for an action declared on a sub-agent, e.g.
	// "billing__refund"). Calls to other functions are internal and never
	// shown.
	ClientTools map[string]string
	// NewToolCallID generates ids for client tool calls whose runtime id is
	// not a valid client id (default NewToolCallID).
	NewToolCallID func() string
	// Streamed is for a streamed response: the chunks are not also folded
	// into the completion (which would keep the whole answer for as long
	// as the stream is open), and Completion must not be called.
	Streamed bool
}

// EmittedToolCall is a client tool call the Encoder has sent, for the caller
// to remember so a later tool message can resume the paused invocation.
type EmittedToolCall struct {
	// Index is the tool call's index in the response.
	Index int
	// ID is the tool_call_id the client received; FunctionCallID the
	// runtime's FunctionCall.ID (the same unless that was empty or not a
	// valid client id).
	ID, FunctionCallID string
	// Name is the runtime function name, ClientName the name the client saw.
	Name, ClientName string
	// Author and InvocationID are those of the event that made the call.
	Author, InvocationID string
}

// Encoder turns the runtime events of one user turn into OpenAI chunks. The
// streaming path writes the chunks as they come; the non-streaming path
// folds the events in (Fold) and calls Completion at the end. It is pure:
// no I/O, and the only sources of variation are the config's id generator
// and clock defaults.
//
// Rules:
//   - role "assistant" is set only on the first delta of the response;
//   - partial events' non-thought text becomes content deltas; a
//     non-partial event of the same model turn (same author and branch)
//     sends only the text not already streamed (normally nothing, or the
//     whole text when the turn had no partials); thought text is never sent;
//   - function calls in non-partial events whose name is in ClientTools
//     become tool-call deltas: two chunks per call, the first with index,
//     id, type, name and empty arguments, the second with index and the
//     arguments JSON; indexes count up across the response. Function calls
//     in partial events are ignored (the turn's final event repeats them);
//     other function calls and all function responses are not shown;
//   - an event transferring control adds a chunk with an empty delta whose
//     agentgate extension names the target;
//   - every chunk carries agentgate{author, invocation_id} of its event;
//   - events authored by "user" are ignored.
//
// Which events reach the encoder is the caller's choice (the gateway leaves
// out the inner events of agents called as tools). An Encoder is used by
// one goroutine at a time.
type Encoder struct {
	cfg       EncoderConfig
	roleSent  bool
	finished  bool
	ext       Extension          // author and invocation of the latest event
	streamed  streamedTurns      // text sent by partials of unfinished turns
	seenCalls map[string]bool    // runtime ids of client calls already sent
	lastEnd   genai.FinishReason // of the latest non-partial event that had one
	calls     []EmittedToolCall
	// acc is what the chunks add up to (unless the response is
	// streamed): text, tool calls and transfers folded in by Event or
	// Fold as they come, the rest set by Completion.
	acc    Accumulator
	events []ChatCompletionChunk // what Event returns, reused by the next call
	// texts and choices hold what Event's text chunks point to, reused by
	// its next call as events is: a streamed delta allocates no chunk of
	// its own.
	texts   []string
	choices []ChunkChoice
	// finish and ending are what the chunk that ends the response
	// points to (see end).
	finish FinishReason
	ending [1]ChunkChoice
	// first holds events, texts and choices until an event needs more
	// than one of each (a turn's text is one chunk an event): the arrays
	// the first Event would allocate, made with the encoder.
	first struct {
		events  [1]ChatCompletionChunk
		texts   [1]string
		choices [1]ChunkChoice
	}
}

type turnKey struct{ author, branch string }

// NewEncoder returns an encoder for one response.
func NewEncoder(cfg EncoderConfig) *Encoder {
	e := new(Encoder)
	e.Init(cfg)
	return e
}

// Init makes e, a zero Encoder, the encoder NewEncoder(cfg) returns, in
// place: for an encoder that lives in a larger allocation of its
// caller's (a turn's).
func (e *Encoder) Init(cfg EncoderConfig) {
	if cfg.ID == "" {
		cfg.ID = NewCompletionID()
	}
	if cfg.Created == 0 {
		cfg.Created = time.Now().Unix()
	}
	if cfg.NewToolCallID == nil {
		cfg.NewToolCallID = NewToolCallID
	}
	e.cfg = cfg
	e.events, e.texts, e.choices = e.first.events[:0], e.first.texts[:0], e.first.choices[:0]
}

// Start returns the role chunk ({"role": "assistant", "content": ""}) so it
// can be flushed before the first event, attributed to author and
// invocationID. It returns nothing once any chunk has been made.
func (e *Encoder) Start(author, invocationID string) []ChatCompletionChunk {
	if e.roleSent || e.finished {
		return nil
	}
	e.ext = Extension{Author: author, InvocationID: invocationID}
	return []ChatCompletionChunk{e.chunk(Delta{}, nil, e.ext)}
}

// Event returns the chunks for one runtime event, possibly none. After
// Finish it returns nothing. The slice, and the text and choices of its
// content chunks, are the encoder's: they hold until the next call to
// Event, which reuses them (as bufio.Scanner's Bytes does); a caller that
// keeps chunks longer copies them.
func (e *Encoder) Event(ev *sessions.Event) []ChatCompletionChunk {
	return e.event(ev, true)
}

// Fold is Event for a response that is only answered whole (Completion):
// it folds the event into the completion and makes none of its chunks,
// which such a response would throw away. It is not for an encoder
// configured with Streamed.
func (e *Encoder) Fold(ev *sessions.Event) { e.event(ev, false) }

// event is Event, which makes the chunks only when chunks is set; what
// they add up to is folded into the completion (e.acc) as it goes, unless
// the response is streamed.
func (e *Encoder) event(ev *sessions.Event, chunks bool) []ChatCompletionChunk {
	if e.finished || ev == nil || ev.Author == "user" {
		return nil
	}
	e.ext = Extension{Author: ev.Author, InvocationID: ev.InvocationID}
	var out []ChatCompletionChunk
	if chunks {
		out = e.events[:0]
		e.texts, e.choices = e.texts[:0], e.choices[:0]
	}
	key := turnKey{ev.Author, ev.Branch}
	var text string
	if ev.Partial {
		text = e.streamed.partial(key, ev.Text())
	} else {
		text = e.streamed.final(key, ev.Text())
	}
	if text != "" {
		if !e.cfg.Streamed {
			e.acc.addText(text)
		}
		if chunks {
			out = append(out, e.text(text))
		}
	}
	if !ev.Partial {
		for _, fc := range ev.FunctionCalls() {
			out = e.toolCall(out, ev, fc, chunks)
		}
		if ev.FinishReason != "" {
			e.lastEnd = ev.FinishReason
		}
	}
	if to := ev.Actions.TransferToAgent; to != "" {
		if !e.cfg.Streamed {
			e.acc.transfer = to
		}
		if chunks {
			ext := e.ext
			ext.TransferToAgent = to
			out = append(out, e.chunk(Delta{}, nil, ext))
		}
	}
	if chunks {
		e.events = out
	}
	return out
}

// streamedTurns is the text partials sent of the model turns not finished
// yet: rarely more than one (parallel branches), so the first is held in
// place, and its buffer is kept for the next turn once it finished (a
// response's turns one after the other fill one buffer), where a turn
// apart took two allocations (the turn and the slice of them) besides its
// text.
type streamedTurns struct {
	first streamedTurn
	inUse bool // first is a turn not finished yet
	more  []*streamedTurn
}

// streamedTurn is the text the partials of one unfinished turn sent.
type streamedTurn struct {
	key  turnKey
	text []byte
}

// find returns key's turn, nil when it has none.
func (ts *streamedTurns) find(key turnKey) *streamedTurn {
	if ts.inUse && ts.first.key == key {
		return &ts.first
	}
	for _, t := range ts.more {
		if t.key == key {
			return t
		}
	}
	return nil
}

// partial records text, sent by a partial event of key's turn, and
// returns it.
func (ts *streamedTurns) partial(key turnKey, text string) string {
	if text == "" {
		return ""
	}
	t := ts.find(key)
	switch {
	case t != nil:
	case !ts.inUse:
		ts.inUse, ts.first.key, ts.first.text = true, key, ts.first.text[:0]
		t = &ts.first
	default:
		t = &streamedTurn{key: key}
		ts.more = append(ts.more, t)
	}
	if t.text == nil {
		// Room for a short answer's partials at once, rather than a
		// buffer of each size up to it.
		t.text = make([]byte, 0, max(firstStreamed, len(text)))
	}
	t.text = append(t.text, text...)
	return text
}

// firstStreamed is the room a turn's first partial makes for the text its
// partials send.
const firstStreamed = 256

// final ends key's turn, whose whole text is text, and returns what of it
// the partials did not send (see unsent).
func (ts *streamedTurns) final(key turnKey, text string) string {
	t := ts.find(key)
	if t == nil {
		return text
	}
	rest := unsent(t.text, text)
	if t == &ts.first {
		ts.inUse = false
	} else {
		ts.more = slices.DeleteFunc(ts.more, func(m *streamedTurn) bool { return m == t })
	}
	return rest
}

// unsent returns the part of a turn's final text that its partials did not
// send: the rest after the streamed prefix, or nothing when the final text
// does not start with what was streamed (a callback rewrote it; what the
// client has seen stands).
func unsent(streamed []byte, final string) string {
	// The comparison reads streamed in place: the conversion copies
	// nothing.
	if len(final) < len(streamed) || final[:len(streamed)] != string(streamed) {
		return ""
	}
	return final[len(streamed):]
}

// text is a content chunk of Event's: its text and choice are in e's
// texts and choices (an append that grows them leaves the chunks made
// before on the old arrays, which stay as they were).
func (e *Encoder) text(s string) ChatCompletionChunk {
	e.texts = append(e.texts, s)
	e.choices = append(e.choices, ChunkChoice{})
	return e.chunkIn(Delta{Content: &e.texts[len(e.texts)-1]}, nil, e.ext, e.choices[len(e.choices)-1:])
}

// toolCall appends to out the chunks of a function call, when chunks is
// set and the call is one the client is shown, and folds it into the
// completion unless the response is streamed.
func (e *Encoder) toolCall(out []ChatCompletionChunk, ev *sessions.Event, fc *genai.FunctionCall, chunks bool) []ChatCompletionChunk {
	clientName, id, args, ok := clientCall(fc, e.cfg.ClientTools, &e.seenCalls, e.cfg.NewToolCallID)
	if !ok {
		return out
	}
	idx := len(e.calls)
	e.calls = append(e.calls, EmittedToolCall{Index: idx, ID: id, FunctionCallID: fc.ID, Name: fc.Name,
		ClientName: clientName, Author: ev.Author, InvocationID: ev.InvocationID})
	if !e.cfg.Streamed {
		e.acc.toolCalls = append(e.acc.toolCalls, ToolCall{ID: id, Type: "function",
			Function: FunctionCall{Name: clientName, Arguments: args}})
	}
	if !chunks {
		return out
	}
	head := ToolCallDelta{Index: idx, ID: id, Type: "function", Function: FunctionCallDelta{Name: clientName}}
	body := ToolCallDelta{Index: idx, Function: FunctionCallDelta{Arguments: args}}
	return append(out,
		e.chunk(Delta{ToolCalls: []ToolCallDelta{head}}, nil, e.ext),
		e.chunk(Delta{ToolCalls: []ToolCallDelta{body}}, nil, e.ext))
}

// clientCall decides how a function call is shown: ok is false when it is
// not a client's (not in clientTools) or was shown already (its runtime id
// is in *seen, which it joins); else clientName is the client's name for
// it, id its runtime id or, when that is not a valid client id, a new one,
// and args its arguments as a JSON string ("{}" for none).
func clientCall(fc *genai.FunctionCall, clientTools map[string]string, seen *map[string]bool, newID func() string) (clientName, id, args string, ok bool) {
	clientName, ok = clientTools[fc.Name]
	if !ok {
		return "", "", "", false
	}
	if fc.ID != "" {
		if (*seen)[fc.ID] {
			return "", "", "", false
		}
		if *seen == nil {
			*seen = map[string]bool{}
		}
		(*seen)[fc.ID] = true
	}
	id = fc.ID
	if !ValidToolCallID(id) {
		id = newID()
	}
	args = "{}"
	if len(fc.Args) > 0 {
		if b, err := json.Marshal(fc.Args); err == nil {
			args = string(b)
		}
	}
	return clientName, id, args, true
}

// chunk builds a one-choice chunk, adding the role to the response's first
// delta.
func (e *Encoder) chunk(d Delta, finish *FinishReason, ext Extension) ChatCompletionChunk {
	return e.chunkIn(d, finish, ext, make([]ChunkChoice, 1))
}

// chunkIn is chunk with its one choice in choices.
func (e *Encoder) chunkIn(d Delta, finish *FinishReason, ext Extension, choices []ChunkChoice) ChatCompletionChunk {
	if !e.roleSent {
		e.roleSent = true
		d.Role = "assistant"
		if d.Content == nil && len(d.ToolCalls) == 0 {
			empty := ""
			d.Content = &empty
		}
	}
	c := e.base(ext)
	choices[0] = ChunkChoice{Index: 0, Delta: d, FinishReason: finish}
	c.Choices = choices
	return c
}

func (e *Encoder) base(ext Extension) ChatCompletionChunk {
	return ChatCompletionChunk{ID: e.cfg.ID, Object: ObjectChunk, Created: e.cfg.Created, Model: e.cfg.Model, Agentgate: ext}
}

// Finish ends the response: exactly one chunk with an empty delta and the
// finish reason, then, when IncludeUsage is set, the usage chunk (empty
// choices, usage from the given record). The finish reason is "tool_calls"
// when any client tool call was sent; else "length" when the latest model
// turn ended at MAX_TOKENS, "content_filter" when it was blocked (SAFETY,
// RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY); else
// "stop". Both chunks carry the latest event's agentgate extension. Only
// the first call returns chunks.
//
// Finish is for runs that ended normally: after a failure send ErrorFrame
// instead, never a finish reason.
func (e *Encoder) Finish(usage *genai.GenerateContentResponseUsageMetadata) []ChatCompletionChunk {
	if e.finished {
		return nil
	}
	out := []ChatCompletionChunk{e.end()}
	if e.cfg.IncludeUsage {
		u := UsageFrom(usage)
		c := e.base(e.ext)
		c.Choices = []ChunkChoice{}
		c.Usage = &u
		out = append(out, c)
	}
	return out
}

// end ends the response: the chunk with its finish reason (made once:
// its choice is in e.ending).
func (e *Encoder) end() ChatCompletionChunk {
	e.finish = e.FinishReason()
	e.finished = true
	return e.chunkIn(Delta{}, &e.finish, e.ext, e.ending[:])
}

// FinishReason is the finish reason Finish sends, given the events so far.
func (e *Encoder) FinishReason() FinishReason {
	if len(e.calls) > 0 {
		return FinishToolCalls
	}
	switch e.lastEnd {
	case genai.FinishReasonMaxTokens:
		return FinishLength
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety:
		return FinishContentFilter
	}
	return FinishStop
}

// ToolCalls returns the client tool calls sent so far, in index order.
func (e *Encoder) ToolCalls() []EmittedToolCall {
	return append([]EmittedToolCall(nil), e.calls...)
}

// Completion returns the non-streaming response: what the chunks so far add
// up to, ended as Finish would end it when it has not been ended yet, with
// usage from the given record (always present, whatever IncludeUsage says).
// It is not for an encoder configured with Streamed.
func (e *Encoder) Completion(usage *genai.GenerateContentResponseUsageMetadata) *ChatCompletion {
	c := e.complete().Completion()
	c.Usage = UsageFrom(usage)
	return c
}

// AppendCompletion appends the non-streaming response to dst as JSON:
// byte for byte what AppendCompletion(dst, e.Completion(usage)) appends,
// attributed to author and invocationID (as Start attributes the role
// chunk) when no event was, written from the encoder without building the
// ChatCompletion first. It is not for an encoder configured with
// Streamed.
func (e *Encoder) AppendCompletion(dst []byte, usage *genai.GenerateContentResponseUsageMetadata, author, invocationID string) []byte {
	a := e.complete()
	var text string
	msg := a.message(&text, a.toolCalls) // only read: its tool calls need no copy
	u, ext := UsageFrom(usage), a.extension()
	if ext.Author == "" {
		ext.Author, ext.InvocationID = author, invocationID
	}
	b := appendHead(dst, a.id, ObjectCompletion, a.created, a.model)
	b = appendChoice(b, 0, &msg, a.finish)
	return appendCompletionEnd(b, &u, &ext)
}

// complete ends the response, if Finish did not, and returns what its
// chunks add up to.
func (e *Encoder) complete() *Accumulator {
	if !e.finished {
		// Ended as Finish ends it, without its chunks: the completion
		// takes what they would add (the finish reason; their usage is
		// the caller's) from the encoder.
		e.finish = e.FinishReason()
		e.finished = true
	}
	// The rest of what the chunks add up to is the encoder's own: every
	// chunk has the response's id, model and time, and the last one (the
	// finish chunk, or Finish's usage chunk after it) the latest event's
	// extension; text, tool calls and transfers were folded in by Event
	// or Fold.
	a := &e.acc
	a.id, a.model, a.created, a.ext, a.finish = e.cfg.ID, e.cfg.Model, e.cfg.Created, e.ext, e.finish
	return a
}

// Accumulator folds chunks into the ChatCompletion they add up to, as
// OpenAI's client-side accumulators do: content concatenated, tool calls
// assembled by index, the finish reason and usage kept, and the agentgate
// extension of the last chunk with the latest transfer seen. The zero value
// is ready to use.
type Accumulator struct {
	id, model string
	created   int64
	// content is the text so far: in text while it is one chunk's (a
	// non-streamed turn's usually is: its string, not a copy), in more
	// once a second chunk adds to it.
	text      string
	more      strings.Builder
	toolCalls []ToolCall
	finish    FinishReason
	usage     *Usage
	ext       Extension
	transfer  string
}

// Add folds one chunk in. Tool-call fragments whose index skips ahead of the
// calls seen so far are dropped.
func (a *Accumulator) Add(c ChatCompletionChunk) {
	a.id, a.model, a.created = c.ID, c.Model, c.Created
	a.ext = c.Agentgate
	if c.Agentgate.TransferToAgent != "" {
		a.transfer = c.Agentgate.TransferToAgent
	}
	if c.Usage != nil {
		u := *c.Usage
		a.usage = &u
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.Delta.Content != nil {
			a.addText(*ch.Delta.Content)
		}
		for _, td := range ch.Delta.ToolCalls {
			if td.Index < 0 || td.Index > len(a.toolCalls) {
				continue
			}
			if td.Index == len(a.toolCalls) {
				a.toolCalls = append(a.toolCalls, ToolCall{})
			}
			tc := &a.toolCalls[td.Index]
			tc.ID = orDefault(td.ID, tc.ID)
			tc.Type = orDefault(td.Type, tc.Type)
			tc.Function.Name = orDefault(td.Function.Name, tc.Function.Name)
			tc.Function.Arguments += td.Function.Arguments
		}
		if ch.FinishReason != nil {
			a.finish = *ch.FinishReason
		}
	}
}

// addText adds s to the content.
func (a *Accumulator) addText(s string) {
	switch {
	case s == "":
	case a.more.Len() > 0:
		a.more.WriteString(s)
	case a.text == "":
		a.text = s
	default:
		a.more.Grow(len(a.text) + len(s))
		a.more.WriteString(a.text)
		a.more.WriteString(s)
		a.text = ""
	}
}

// Completion returns the response so far. Content is null when there are
// tool calls and no text; the finish reason is empty until a chunk set it.
func (a *Accumulator) Completion() *ChatCompletion {
	// The completion, its one choice and the choice's text in one
	// allocation.
	cc := &struct {
		c      ChatCompletion
		choice [1]Choice
		text   string
	}{}
	msg := a.message(&cc.text, append([]ToolCall(nil), a.toolCalls...))
	cc.choice[0] = Choice{Index: 0, Message: msg, FinishReason: a.finish}
	c := &cc.c
	*c = ChatCompletion{ID: a.id, Object: ObjectCompletion, Created: a.created, Model: a.model, Agentgate: a.extension(),
		Choices: cc.choice[:]}
	if a.usage != nil {
		c.Usage = *a.usage
	}
	return c
}

// message is the completion's message, with calls (a.toolCalls, or a copy)
// and its text in *text. Content is null when there are tool calls and no
// text.
func (a *Accumulator) message(text *string, calls []ToolCall) Message {
	msg := Message{Role: "assistant", ToolCalls: calls}
	if *text = cmp.Or(a.text, a.more.String()); *text != "" || len(calls) == 0 {
		msg.Content = text
	}
	return msg
}

// extension is the last chunk's extension, with the latest transfer seen.
func (a *Accumulator) extension() Extension {
	ext := a.ext
	ext.TransferToAgent = a.transfer
	return ext
}

// DoneFrame ends every stream.
const DoneFrame = "data: [DONE]\n\n"

// Frame returns v as one server-sent event: "data: <json>\n\n". Chunks
// go through AppendChunkFrame.
func Frame(v any) ([]byte, error) {
	switch c := v.(type) {
	case ChatCompletionChunk:
		return AppendChunkFrame(nil, &c)
	case *ChatCompletionChunk:
		return AppendChunkFrame(nil, c)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...), nil
}

// ErrorFrame returns the frame for an error after the stream started:
// data: {"error": {"message", "type", "param", "code"}}. Send DoneFrame
// after it.
func ErrorFrame(err *Error) []byte {
	b, _ := Frame(err.Envelope()) // an Envelope always marshals
	return b
}
