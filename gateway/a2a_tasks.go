package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/sessions"
)

// A2A tasks. A task is one invocation: its id is the invocation id, its
// context id the session id, so a paused task is found again from the
// session alone (on any replica). The record below adds what only the
// running process knows: the live state and the text so far. It rides on
// the task's run in the run registry (runs.Spec.Value), which cancels the
// run and keeps the record for taskRetention after it, so tasks/get can
// still answer. With a task store (a2a_taskstore.go) every change of it
// is written there too, for the other replicas.

// taskRetention is how long the run registry keeps a task after its run
// ended, for tasks/get.
const taskRetention = time.Hour

// errTaskCanceled ends a run canceled over tasks/cancel.
var errTaskCanceled = errors.New("the task was canceled")

// a2aTask is one task as this process knows it: the record its runs carry
// in the run registry (runs.Spec.Value).
type a2aTask struct {
	id, contextID, app, user string
	// stored: read from the task store, the record of a task this
	// process does not hold (see a2aFindTask).
	stored bool
	// shown: its id reaches a client before its end (a stream, an answer
	// at once, a follow-up of a task the client has): only such a task's
	// start is written to the task store. A blocking message/send's task
	// is known to nobody until it is answered, at its end.
	shown bool

	mu        sync.Mutex
	state     a2a.TaskState
	status    *a2a.Message
	artifacts []a2a.Artifact
	history   []a2a.Message
	updated   time.Time
	// running is set while a run of the task goes on.
	running bool
}

// snapshot returns the task's wire form, its history cut to the last
// historyLength messages when that is set.
func (t *a2aTask) snapshot(historyLength *int) *a2a.Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked(historyLength)
}

func (t *a2aTask) snapshotLocked(historyLength *int) *a2a.Task {
	out := &a2a.Task{ID: t.id, ContextID: t.contextID, Status: a2a.TaskStatus{State: t.state, Message: t.status,
		Timestamp: t.updated.UTC().Format(time.RFC3339Nano)}, Artifacts: slices.Clone(t.artifacts), History: slices.Clone(t.history)}
	if historyLength != nil && *historyLength >= 0 && len(out.History) > *historyLength {
		out.History = out.History[len(out.History)-*historyLength:]
	}
	return out
}

func (t *a2aTask) isRunning() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

func (t *a2aTask) setState(st a2a.TaskState, msg *a2a.Message, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state, t.status, t.updated = st, msg, now
	if msg != nil {
		t.history = append(t.history, *msg)
	}
}

// answerCalls turns the message that answers a paused task into function
// responses, one per pending call: a data part keyed by a call id answers
// that call; otherwise the message's data (an object) and its text (as
// "text") answer every call.
func answerCalls(msg *a2a.Message, calls []*genai.FunctionCall) *genai.Content {
	ids := map[string]bool{}
	for _, c := range calls {
		ids[c.ID] = true
	}
	perCall := map[string]map[string]any{}
	shared := map[string]any{}
	for _, p := range msg.Parts {
		obj, ok := p.Data.(map[string]any)
		if p.Kind != "data" || !ok {
			continue
		}
		for k, v := range obj {
			if m, isObj := v.(map[string]any); isObj && ids[k] {
				perCall[k] = m
			} else if !ids[k] {
				shared[k] = v
			}
		}
	}
	text := msg.Text()
	out := &genai.Content{Role: genai.RoleUser}
	for _, c := range calls {
		resp, ok := perCall[c.ID]
		if !ok {
			resp = maps.Clone(shared)
			if _, has := resp["text"]; !has && (text != "" || len(resp) == 0) {
				resp["text"] = text
			}
		}
		out.Parts = append(out.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: c.ID, Name: c.Name, Response: resp}})
	}
	return out
}

// messageContent turns an A2A message into the user's content: text parts,
// data as JSON text, files inline or by URI.
func messageContent(msg *a2a.Message) (*genai.Content, error) {
	out := &genai.Content{Role: genai.RoleUser}
	for _, p := range msg.Parts {
		switch p.Kind {
		case "text":
			out.Parts = append(out.Parts, &genai.Part{Text: p.Text})
		case "data":
			b, err := json.Marshal(p.Data)
			if err != nil {
				return nil, err
			}
			out.Parts = append(out.Parts, &genai.Part{Text: string(b)})
		case "file":
			f := p.File
			switch {
			case len(f.Bytes) > 0:
				out.Parts = append(out.Parts, &genai.Part{InlineData: &genai.Blob{Data: f.Bytes, MIMEType: f.MediaType, DisplayName: f.Name}})
			case f.URI != "":
				out.Parts = append(out.Parts, &genai.Part{FileData: &genai.FileData{FileURI: f.URI, MIMEType: f.MediaType, DisplayName: f.Name}})
			}
		}
	}
	if len(out.Parts) == 0 {
		return nil, errors.New("the message has no text, data or file part")
	}
	return out, nil
}

// describeCall says in words what a paused call waits for.
func describeCall(fc *genai.FunctionCall) string {
	switch fc.Name {
	case a2a.InputRequiredToolName:
		if m, _ := fc.Args["message"].(string); m != "" {
			return m
		}
	case agentcore.GetUserChoiceToolName:
		prompt, _ := fc.Args["prompt"].(string)
		var opts []string
		if list, ok := fc.Args["options"].([]any); ok {
			for _, o := range list {
				opts = append(opts, fmt.Sprint(o))
			}
		}
		s := strings.TrimSpace(prompt + " Options: " + strings.Join(opts, ", ") + ".")
		return s
	}
	args, _ := json.Marshal(fc.Args)
	return fmt.Sprintf("The agent waits for the result of %s(%s).", fc.Name, args)
}

// taskRecorder follows the events of one run of a task: the text the task
// answers with (the run's own non-partial events), the deltas a stream
// sends, errors and the calls it pauses on.
type taskRecorder struct {
	invID    string
	text     strings.Builder
	streamed map[string]*strings.Builder // text of partials, by author and branch
	errMsg   string
	paused   []*genai.FunctionCall
}

// event records ev and returns the text to stream for it.
func (r *taskRecorder) event(ev *sessions.Event) string {
	if ev.Author == "user" {
		return ""
	}
	if !ev.Partial && len(ev.LongRunningToolIDs) > 0 {
		for _, fc := range ev.FunctionCalls() {
			if slices.Contains(ev.LongRunningToolIDs, fc.ID) {
				r.paused = append(r.paused, fc)
			}
		}
	}
	if ev.InvocationID != r.invID {
		return ""
	}
	if r.streamed == nil {
		r.streamed = map[string]*strings.Builder{}
	}
	key := ev.Author + "\x00" + ev.Branch
	text := ev.Text()
	if ev.Partial {
		sent := r.streamed[key]
		if sent == nil {
			sent = &strings.Builder{}
			r.streamed[key] = sent
		}
		sent.WriteString(text)
		return text
	}
	if ev.ErrorCode != "" {
		r.errMsg = fmt.Sprintf("Agent %s stopped: %s", ev.Author, ev.ErrorMessage)
	}
	r.text.WriteString(text)
	sent, ok := r.streamed[key]
	delete(r.streamed, key)
	if !ok {
		return text
	}
	if rest, ok := strings.CutPrefix(text, sent.String()); ok {
		return rest
	}
	return ""
}
