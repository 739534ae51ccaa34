package agentcore

import (
	"crypto/rand"
	"encoding/binary"
	"github.com/agentgate/agentgate/internal/randbatch"
	"strings"
	"sync"
	"unsafe"

	"github.com/agentgate/agentgate/sessions"
)

// subInvocationSep joins an invocation id and the name of an agent it calls
// as a tool.
const subInvocationSep = ".sub."

// NewInvocationID is the id of a new top-level invocation made from a
// unique string (a UUID, or a test's id): "e-<unique>".
func NewInvocationID(unique string) string { return "e-" + unique }

// SubInvocationID is the id of the invocation in which agent, called as a
// tool from invocation parent, runs its sub-conversation:
// "<parent>.sub.<agent>". Deeper calls nest: "e-1.sub.outer.sub.inner".
// ParseInvocationID reads it back.
func SubInvocationID(parent, agent string) string {
	return parent + subInvocationSep + agent
}

// ParseInvocationID splits an invocation id into the top-level invocation
// and the agents called as tools that lead from it to id, outermost first:
// "e-1.sub.outer.sub.inner" is ("e-1", [outer inner]); a top-level id is
// itself with no chain. ok is false for an id SubInvocationID cannot have
// built: an empty top-level id, or a link that is not an agent name
// ("e-1.sub.", "e-1.sub.a.b").
func ParseInvocationID(id string) (root string, chain []string, ok bool) {
	root, rest, sub := strings.Cut(id, subInvocationSep)
	if root == "" {
		return "", nil, false
	}
	if !sub {
		return root, nil, true
	}
	chain = strings.Split(rest, subInvocationSep)
	for _, name := range chain {
		if !agentNameRE.MatchString(name) {
			return "", nil, false
		}
	}
	return root, chain, true
}

// newUUID is a random (version 4) UUID in its canonical form, as
// uuid.NewString makes it (crypto/rand's bits), in one allocation.
func newUUID() string { return newPrefixedUUID("") }

// newPrefixedUUID is prefix followed by a new random UUID (see newUUID),
// in one allocation: NewInvocationID(newUUID()) without the second string.
func newPrefixedUUID(prefix string) string {
	u := randomUUID()
	var buf [64]byte
	n := copy(buf[:len(buf)-36], prefix)
	if n < len(prefix) { // a long prefix (never ours): the plain way
		return prefix + string(appendUUID(nil, &u))
	}
	return string(appendUUID(buf[:n], &u))
}

// idArena makes the random ids of one invocation's events (newUUID's
// form) in shared buffers, each with room for a few ids, so that a turn's
// event ids (the user's message's, the reply's) are one allocation
// between them, not one each. An id keeps its whole buffer alive, which
// costs nothing while the events are kept together, as a session keeps
// an invocation's events. The invocation's own id is not made here: it
// outlives the turn on its own (the run records kept by it), and would
// keep the buffer alive. The zero value is ready to use; safe for
// concurrent use (parallel branches make events at once).
type idArena struct {
	mu sync.Mutex
	// room is what is left of the current buffer: bytes beyond the ids
	// handed out, which appends write and nothing else does.
	room []byte
}

// idArenaSize is the room of a buffer: the ids of the two events of a
// turn that calls no function.
const idArenaSize = 2 * 36

// next is a new random UUID, as newUUID makes it, in the arena's buffer.
func (a *idArena) next() string {
	u := batchedUUID() // an event's id names nothing secret
	a.mu.Lock()
	if cap(a.room) < 36 {
		a.room = make([]byte, 0, idArenaSize)
	}
	b := appendUUID(a.room, &u)
	a.room = b[36:36:cap(b)]
	a.mu.Unlock()
	// The id's bytes are written once, here, and never after.
	return unsafe.String(unsafe.SliceData(b), 36)
}

// randomUUID is a new random (version 4) UUID's bytes, from crypto/rand.
func randomUUID() [16]byte {
	var u [16]byte
	_, _ = rand.Read(u[:]) // never fails (crypto/rand)
	return versionUUID(u)
}

// versionUUID marks u's random bits as a version 4 UUID.
func versionUUID(u [16]byte) [16]byte {
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}

// batchedUUID is randomUUID from randbatch's bytes: for the ids of events
// (partial events: one a streamed delta), where a read of crypto/rand
// each was most of what making the event cost. The ids are as random and
// as unique; only ids that name nothing a client must keep secret are made
// so (google/uuid's EnableRandPool is the same pool).
func batchedUUID() [16]byte {
	var u [16]byte
	randbatch.Fill(u[:])
	return versionUUID(u)
}

// eventWithID is an event and the bytes of its random id (newUUID's form)
// in one allocation: the id's string points into id, written once before
// the string is made and never after.
type eventWithID struct {
	ev sessions.Event
	id [36]byte
}

// newEventWithID is a new event whose ID is a random UUID, both in one
// allocation (see eventWithID). The id keeps the whole event alive, so
// only events that are not copied to be kept are made so: partial events
// (see Invocation.newPartialEvent).
func newEventWithID() *sessions.Event {
	e := new(eventWithID)
	e.setID()
	return &e.ev
}

// setID gives e's event a new random id, in e.id.
func (e *eventWithID) setID() {
	u := batchedUUID()
	formatUUID(&e.id, &u)
	e.ev.ID = unsafe.String(&e.id[0], len(e.id))
}

// eventWithContent is eventWithID with room for the copy of its content
// (see contentRoom), all in one allocation: the partial event of a
// transient model response (model.Response.Transient).
type eventWithContent struct {
	eventWithID
	content contentRoom
}

// appendUUID appends u in the canonical form: 8-4-4-4-12 lowercase hex
// digits.
func appendUUID(b []byte, u *[16]byte) []byte {
	var s [36]byte
	formatUUID(&s, u)
	return append(b, s[:]...)
}

// formatUUID writes u in the canonical form into s: 8-4-4-4-12 lowercase
// hex digits.
func formatUUID(s *[36]byte, u *[16]byte) {
	hi, lo := binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:])
	h1, h2 := hexDigits(uint32(hi)), hexDigits(uint32(lo>>32))
	binary.BigEndian.PutUint64(s[0:], hexDigits(uint32(hi>>32)))
	binary.BigEndian.PutUint32(s[9:], uint32(h1>>32))
	binary.BigEndian.PutUint32(s[14:], uint32(h1))
	binary.BigEndian.PutUint32(s[19:], uint32(h2>>32))
	binary.BigEndian.PutUint32(s[24:], uint32(h2))
	binary.BigEndian.PutUint64(s[28:], hexDigits(uint32(lo)))
	s[8], s[13], s[18], s[23] = '-', '-', '-', '-'
}

// hexDigits is x's eight lowercase hex digits, the first in the highest
// byte: each nibble spread to a byte of its own, then '0' added to it,
// and 'a'-'0'-10 more to those above 9, all eight at once.
func hexDigits(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	above9 := (v + 0x0606060606060606) >> 4 & 0x0101010101010101
	return v + 0x3030303030303030 + above9*('a'-'0'-10)
}
