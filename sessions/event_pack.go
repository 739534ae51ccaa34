package sessions

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"time"

	"google.golang.org/genai"
)

// AppendPacked appends e to b in a compact binary form, when e is a plain
// text event: ids, author, branch, timestamp, the partial and turnComplete
// flags, finish reason, model version, error code and message, content of
// text parts alone (with their thought flag), and usage of token counts
// alone, with nothing else set. Those are most of what a run streams (a delta each),
// and they pack into about a third of their JSON. It reports whether it
// packed e; b is unchanged when not. UnpackEvent reads the form back.
// The Redis run log keeps it (a run's frames, shared by replicas that may
// run different versions): a change to the form must leave what earlier
// versions wrote readable, or come under a new tag there
// (sessions/redis.framePacked).
func (e *Event) AppendPacked(b []byte) ([]byte, bool) {
	if !e.packable() {
		return b, false
	}
	return e.appendPacked(b, true), true
}

// appendPacked is AppendPacked for an event that is packable; stamped
// false packs e as if its Timestamp were zero (the memory store keeps the
// timestamps apart).
func (e *Event) appendPacked(b []byte, stamped bool) []byte {
	stamped = stamped && !e.Timestamp.IsZero()
	var flags byte
	if e.Partial {
		flags |= packPartial
	}
	if e.TurnComplete {
		flags |= packTurnComplete
	}
	if e.Content != nil {
		flags |= packContent
	}
	if stamped {
		flags |= packTimestamp
	}
	if e.UsageMetadata != nil {
		flags |= packUsage
	}
	b = append(b, flags)
	strs := e.packedStrings()
	b = appendPackedStrings(b, strs[:]...)
	if stamped {
		b = appendUvarints(b, uint64(e.Timestamp.UnixMicro())) // before 1970: 10 bytes
	}
	if e.Content != nil {
		b = appendPackedStrings(b, e.Content.Role)
		b = appendUvarints(b, uint64(len(e.Content.Parts)))
		for _, p := range e.Content.Parts {
			thought := byte(0)
			if p.Thought {
				thought = 1
			}
			b = appendPackedStrings(append(b, thought), p.Text)
		}
	}
	if u := e.UsageMetadata; u != nil {
		counts := packedCounts(u)
		b = appendUvarints(b, counts[:]...)
	}
	return b
}

// packedStrings are the strings AppendPacked packs first, in order.
func (e *Event) packedStrings() [8]string {
	return [8]string{e.ID, e.InvocationID, e.Author, e.Branch, string(e.FinishReason), e.ModelVersion, e.ErrorCode, e.ErrorMessage}
}

// packedCounts are the token counts AppendPacked packs of a usage, in
// order, as the uvarints it packs (of their 32 bits).
func packedCounts(u *genai.GenerateContentResponseUsageMetadata) [6]uint64 {
	var out [6]uint64
	for i, n := range [6]int32{u.PromptTokenCount, u.CandidatesTokenCount, u.TotalTokenCount, u.CachedContentTokenCount,
		u.ThoughtsTokenCount, u.ToolUsePromptTokenCount} {
		out[i] = uint64(uint32(n))
	}
	return out
}

// packedLen is how many bytes AppendPacked packs e in, 0 when it cannot
// pack it; stamped false counts e as if its Timestamp were zero (the
// memory store packs its events without). It lets the store make room
// for a session's first batch once, where AppendPacked, which appends a
// field at a time, would grow the bytes from nothing a few times over.
func (e *Event) packedLen(stamped bool) int {
	if !e.packable() {
		return 0
	}
	n := 1
	for _, s := range e.packedStrings() {
		n += packedStringLen(s)
	}
	if stamped && !e.Timestamp.IsZero() {
		n += uvarintLen(uint64(e.Timestamp.UnixMicro()))
	}
	if e.Content != nil {
		n += packedStringLen(e.Content.Role) + uvarintLen(uint64(len(e.Content.Parts)))
		for _, p := range e.Content.Parts {
			n += 1 + packedStringLen(p.Text)
		}
	}
	if u := e.UsageMetadata; u != nil {
		for _, c := range packedCounts(u) {
			n += uvarintLen(c)
		}
	}
	return n
}

// The flags of a packed event.
const (
	packPartial = 1 << iota
	packTurnComplete
	packContent
	packTimestamp
	packUsage
)

// packable reports whether AppendPacked can pack e: nothing set but the
// fields it keeps. A field genai adds to Part is caught by the tests,
// which set each field in turn.
func (e *Event) packable() bool {
	a := &e.Actions
	if u := e.UsageMetadata; u != nil && (len(u.CacheTokensDetails) > 0 || len(u.CandidatesTokensDetails) > 0 ||
		len(u.PromptTokensDetails) > 0 || len(u.ToolUsePromptTokensDetails) > 0 || u.TrafficType != "") {
		return false
	}
	if len(a.StateDelta) > 0 || len(a.ArtifactDelta) > 0 || len(a.RequestedAuthConfigs) > 0 ||
		len(a.RequestedToolConfirmations) > 0 || a.TransferToAgent != "" || a.Escalate || a.SkipSummarization ||
		a.Compaction != nil || len(e.LongRunningToolIDs) > 0 || len(e.CustomMetadata) > 0 {
		return false
	}
	if e.Content != nil {
		for _, p := range e.Content.Parts {
			if p == nil || !textOnly(p) {
				return false
			}
		}
	}
	return true
}

// appendPackedStrings appends each of ss with its length before it. It
// and appendUvarints are kept out of line, and take all the values of a
// kind that appendPacked has at hand in one call: inlined at each of
// their call sites they made appendPacked over twice the size, and an
// event packed on a cold turn (the store's, the run log's) fetches every
// line of it.
//
//go:noinline
func appendPackedStrings(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	return b
}

// appendUvarints appends each of vs as a uvarint (see
// appendPackedStrings).
//
//go:noinline
func appendUvarints(b []byte, vs ...uint64) []byte {
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// packedStringLen is how many bytes appendPackedStrings appends for s.
func packedStringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// uvarintLen is how many bytes binary.AppendUvarint appends for v: one
// for each 7 bits of it, and one for 0.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

var errPacked = errors.New("sessions: malformed packed event")

// UnpackEvent returns the event AppendPacked wrote into b (all of b). Its
// JSON is the packed event's: the timestamp keeps the microseconds the
// wire form has.
func UnpackEvent(b []byte) (*Event, error) {
	e := new(Event)
	var a unpackArena
	if err := a.unpack(e, b, string(b)); err != nil {
		return nil, err
	}
	return e, nil
}

// unpackArena is where unpack makes the contents, parts and usages of the
// events it reads, so that reading many events (a session's, from the
// memory store) takes a few allocations, not a few per event. Each one it
// hands out is a slice with no room beyond its length: appending to one
// event's parts does not write over the next event's. The zero
// unpackArena makes each one as it is asked for.
type unpackArena struct {
	contents []onePart
	parts    []genai.Part // of contents of more than one part
	ptrs     []*genai.Part
	usages   []genai.GenerateContentResponseUsageMetadata
}

// onePart is a content with room for one part: most have one.
type onePart struct {
	content genai.Content
	part    [1]genai.Part
	ptr     [1]*genai.Part
}

// newUnpackArena returns an arena with room for contents events with
// content and usages with usage.
func newUnpackArena(contents, usages int) unpackArena {
	return unpackArena{contents: make([]onePart, 0, contents), usages: make([]genai.GenerateContentResponseUsageMetadata, 0, usages)}
}

// take hands out n zero values from the arena slice s, making a new one
// (at least as large as the last) when s has no room left.
func take[T any](s *[]T, n int) []T {
	if len(*s)+n > cap(*s) {
		*s = make([]T, 0, max(n, cap(*s)))
	}
	i := len(*s)
	*s = (*s)[:i+n]
	return (*s)[i : i+n : i+n]
}

// packFlags returns the flags of the packed event b (its first byte).
func packFlags(b []byte) byte { return b[0] }

// unpack makes e the event AppendPacked wrote into b (all of b), whose
// bytes s holds as a string: its strings are cut out of s, which they
// keep alive.
func (a *unpackArena) unpack(e *Event, b []byte, s string) error {
	r := packReader{b: b, s: s}
	flags := r.byte()
	e.Partial, e.TurnComplete = flags&packPartial != 0, flags&packTurnComplete != 0
	e.ID, e.InvocationID, e.Author, e.Branch = r.string(), r.string(), r.string(), r.string()
	e.FinishReason, e.ModelVersion = genai.FinishReason(r.string()), r.string()
	e.ErrorCode, e.ErrorMessage = r.string(), r.string()
	if flags&packTimestamp != 0 {
		e.Timestamp = time.UnixMicro(int64(r.uvarint())).UTC()
	}
	if flags&packContent != 0 {
		one := &take(&a.contents, 1)[0]
		c := &one.content
		c.Role = r.string()
		if n := r.uvarint(); n > 0 && n <= uint64(len(r.b)-r.i) { // each part takes 2 bytes at least
			parts, ptrs := one.part[:], one.ptr[:]
			if n > 1 {
				parts, ptrs = take(&a.parts, int(n)), take(&a.ptrs, int(n))
			}
			for i := range parts {
				parts[i].Thought = r.byte() == 1
				parts[i].Text = r.string()
				ptrs[i] = &parts[i]
			}
			c.Parts = ptrs
		} else if n > 0 {
			r.bad = true
		}
		e.Content = c
	}
	if flags&packUsage != 0 {
		u := &take(&a.usages, 1)[0]
		for _, n := range []*int32{&u.PromptTokenCount, &u.CandidatesTokenCount, &u.TotalTokenCount, &u.CachedContentTokenCount,
			&u.ThoughtsTokenCount, &u.ToolUsePromptTokenCount} {
			*n = int32(uint32(r.uvarint()))
		}
		e.UsageMetadata = u
	}
	if r.bad || r.i < len(r.b) {
		return errPacked
	}
	return nil
}

// packReader reads a packed event from b[i:]; s holds b's bytes as a
// string, which its strings are cut from. bad is set at the first read
// past its end (and the reads after it give zero values).
type packReader struct {
	b   []byte
	s   string
	i   int
	bad bool
}

func (r *packReader) byte() byte {
	if r.i == len(r.b) {
		r.bad = true
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *packReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.i += n
	return v
}

func (r *packReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)-r.i) {
		r.bad = true
		return ""
	}
	s := r.s[r.i : r.i+int(n)]
	r.i += int(n)
	return s
}

// textOnly reports whether p sets no field but Text and Thought. A field
// genai adds is caught by the tests, which set each field in turn.
func textOnly(p *genai.Part) bool {
	return p.MediaResolution == nil && p.CodeExecutionResult == nil && p.ExecutableCode == nil && p.FileData == nil &&
		p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil && len(p.ThoughtSignature) == 0 &&
		p.VideoMetadata == nil && p.ToolCall == nil && p.ToolResponse == nil && len(p.PartMetadata) == 0 &&
		p.AudioTranscription == nil && p.MediaProcessing == "" && p.SpeechMetadata == nil
}
