package agent

import (
	"encoding/json"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/jsonsize"
	"github.com/a2abind/a2abind/internal/scratch"
	"github.com/a2abind/a2abind/jsonrpc"
)

// envelopeRoom is the room an encoding keeps before the task for the head
// of the reply that carries it, {"jsonrpc":"2.0","id":…,"result":{"task":
// (40 bytes and the id's): a request id of up to 88 bytes (a UUID string
// takes 38) fits.
const envelopeRoom = 128

// envelopeMin is the estimated size from which an encoding keeps the rooms
// for the reply's envelope: a smaller task is copied into its reply (a
// copy that costs less than the rooms would cost the store, kept beside
// every small task).
const envelopeMin = 16 << 10

// taskOpen and taskClose wrap a task into a SendMessageResponse or a
// StreamResponse: both hold it in a "task" member.
const (
	taskOpen  = `{"task":`
	taskClose = `}`
)

// envelopeTail is the room an encoding keeps after the task for the end of
// the reply: the response's closing brace and the result's.
const envelopeTail = len(taskClose) + len(jsonrpc.ResultTail)

// taskEnc is a task's wire encoding (what a2a.Task.AppendJSON makes, byte
// for byte) with what the next encoding of the same turn can reuse: where
// the history's messages and the artifacts lie in it, and what identifies
// each.
//
// The encoding lies in a buffer allocated at about its size before it was
// made (package jsonsize), with room before and after it for the envelope
// of the one reply that may be laid around it (envelope). The store keeps
// b; nothing within b is ever written again, and the rooms around it are
// written once, by the reply that claims them.
type taskEnc struct {
	// b is the encoding, buf[room:len(buf)], its capacity clipped to its
	// length.
	b []byte
	// buf is the buffer the encoding lies in: room bytes, then b; its
	// capacity goes on past b, at least envelopeTail bytes when the reply
	// can use it.
	buf []byte
	// room is the room before b: envelopeRoom, or none for a task
	// estimated smaller than envelopeMin.
	room int
	// hist are where the history's messages lie, arts the artifacts.
	hist elems[a2a.Message]
	arts elems[a2a.Artifact]
	// histEnds and artEnds hold the ends of a short history (three
	// messages) and of one artifact (elems.ends), allocated with the
	// encoding.
	histEnds [3]int
	artEnds  [1]int
	// claimed is set by the reply that wrote its envelope around b.
	claimed atomic.Bool
}

// elems says where the elements of an array member lie in an encoding:
// from start to the end of each, comma separated, and the elements
// encoded: the snapshot's own list, which is never changed in place (a
// turn's snapshots are copy on write), so it still tells what was
// encoded.
type elems[T any] struct {
	start int
	ends  []int
	list  []T
}

// common returns how many of the first elements of list are those l
// encoded, as same tells: those, and the commas between them, are
// l.prefix.
func (l *elems[T]) common(list []T, same func(a, b *T) bool) int {
	k := 0
	for k < len(list) && k < len(l.list) && same(&list[k], &l.list[k]) {
		k++
	}
	return k
}

// prefix returns the bytes of the first k elements in enc, l's encoding.
func (l *elems[T]) prefix(enc []byte, k int) []byte {
	if k == 0 {
		return nil
	}
	return enc[l.start:l.ends[k-1]]
}

// sameMessage reports whether two messages of a turn's histories encode
// alike: they have the same id (a history is only appended to, and its
// messages are never changed in place).
func sameMessage(a, b *a2a.Message) bool { return a.MessageID == b.MessageID }

// sameArtifact reports whether two artifacts of a turn's snapshots encode
// alike: they have the same key.
func sameArtifact(a, b *a2a.Artifact) bool { return keyOfArtifact(a) == keyOfArtifact(b) }

// artifactKey identifies an artifact of a turn's snapshots: an artifact is
// never changed in place, and one whose parts grow gets a new parts array
// (run.artifact), so an artifact with the key of one encoded before
// encodes to the same bytes.
type artifactKey struct {
	id, name, description string
	parts                 *a2a.Part
	nparts                int
	metadata              unsafe.Pointer
	extensions            *string
	nextensions           int
}

func keyOfArtifact(a *a2a.Artifact) artifactKey {
	k := artifactKey{id: a.ArtifactID, name: a.Name, description: a.Description, nparts: len(a.Parts),
		metadata: reflect.ValueOf(a.Metadata).UnsafePointer(), nextensions: len(a.Extensions)}
	if len(a.Parts) > 0 {
		k.parts = &a.Parts[0]
	}
	if len(a.Extensions) > 0 {
		k.extensions = &a.Extensions[0]
	}
	return k
}

// encodeTask encodes t. The messages of a turn's history and its artifacts
// are never changed in place (the run's snapshots are copy on write), the
// history is only appended to, and an artifact whose parts grow gets new
// parts, so the first messages and artifacts of t that prev encoded, as
// their ids and identities say, are copied from prev instead of encoded
// again: a long text sent once is encoded once for the store at creation,
// and copied for each later event; so is an artifact once sent. prev may
// be nil.
//
// A small task (jsonsize.PlainTask, up to smallTask bytes) is encoded into a
// scratch buffer and copied into one of its size: reading its strings to
// estimate their escapes would cost about as much as encoding them. A
// larger one is encoded into a buffer allocated once, at the estimate of
// the encoding's size (jsonsize) with the envelope's rooms around it from
// envelopeMin on. When the estimate fell short (a text whose escapes the
// estimate did not see) the encoder grew the buffer; an encoding left with
// more than an eighth of its size unused (and 256 bytes) is then copied
// to a buffer of its size, so the store does not keep the slack.
func encodeTask(t *a2a.Task, prev *taskEnc) (*taskEnc, error) {
	if prev == nil {
		prev = &taskEnc{}
	}
	head := *t
	head.Artifacts, head.History, head.Metadata = nil, nil, nil
	// The first artifacts and messages prev encoded are copied.
	nArts, nHist := prev.arts.common(t.Artifacts, sameArtifact), prev.hist.common(t.History, sameMessage)
	oldArts, oldHist := prev.arts.prefix(prev.b, nArts), prev.hist.prefix(prev.b, nHist)
	e := &taskEnc{}

	if n := jsonsize.PlainTask(t, nArts, nHist); n >= 0 && n+len(oldArts)+len(oldHist) <= smallTask {
		sp := scratch.Get()
		b, err := e.appendTask(*sp, 0, &head, t, prev, nArts, nHist, oldArts, oldHist)
		if err != nil {
			scratch.Put(sp, *sp)
			return nil, err
		}
		tail := 0
		if len(b) >= envelopeMin {
			// Escapes made it large: it gets the rooms.
			e.room, tail = envelopeRoom, envelopeTail
		}
		out := make([]byte, e.room+len(b), e.room+len(b)+tail)
		copy(out[e.room:], b)
		scratch.Put(sp, b)
		e.buf = out
		e.b = out[e.room:len(out):len(out)]
		return e, nil
	}

	size := jsonsize.TaskHead(&head)
	if t.Artifacts != nil {
		size += len(`,"artifacts":[]`) + len(oldArts) + 1
		for i := nArts; i < len(t.Artifacts); i++ {
			size += jsonsize.Artifact(&t.Artifacts[i]) + 1
		}
	}
	if t.History != nil {
		size += len(`,"history":[]`) + len(oldHist) + 1 + jsonsize.Messages(t.History[nHist:])
	}
	if t.Metadata != nil {
		size += len(`,"metadata":`) + jsonsize.Any(t.Metadata)
	}
	tail := 0
	if size >= envelopeMin {
		e.room, tail = envelopeRoom, envelopeTail
	}
	b, err := e.appendTask(make([]byte, e.room, e.room+size+tail), e.room, &head, t, prev, nArts, nHist, oldArts, oldHist)
	if err != nil {
		return nil, err
	}
	if n := len(b) - e.room; cap(b)-len(b) > n/8+tail+256 {
		// The estimate fell short and the buffer grew past the task's
		// size: the store keeps it at about its size.
		b = append(make([]byte, 0, len(b)+tail), b...)
	}
	e.buf = b
	e.b = b[e.room:len(b):len(b)]
	return e, nil
}

// appendTask appends t to b, which holds room bytes before it: head (t
// without its artifacts, history and metadata), then those, the first
// nArts artifacts and nHist messages as the bytes prev encoded them
// (oldArts, oldHist). It records in e where the artifacts and messages
// lie.
func (e *taskEnc) appendTask(b []byte, room int, head, t *a2a.Task, prev *taskEnc, nArts, nHist int, oldArts, oldHist []byte) ([]byte, error) {
	b, err := head.AppendJSON(b)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the closing brace: artifacts, history and metadata come last
	if t.Artifacts != nil {
		b = append(b, `,"artifacts":[`...)
		if b, e.arts, err = appendElems(b, room, t.Artifacts, nArts, oldArts, prev.arts.ends, e.artEnds[:0]); err != nil {
			return nil, err
		}
		b = append(b, ']')
	}
	if t.History != nil {
		b = append(b, `,"history":[`...)
		if b, e.hist, err = appendElems(b, room, t.History, nHist, oldHist, prev.hist.ends, e.histEnds[:0]); err != nil {
			return nil, err
		}
		b = append(b, ']')
	}
	if t.Metadata != nil {
		b = append(b, `,"metadata":`...)
		if b, err = runtime.AppendAny(b, t.Metadata); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// smallTask is the jsonsize.PlainTask up to which a task is encoded into a scratch
// buffer and copied (encodeTask).
const smallTask = 4 << 10

// appendElems appends the elements of an array member to b, an encoding
// after room bytes: the first n as old (their bytes in the
// previous encoding, whose element ends are oldEnds), the others encoded.
// It returns where they lie in the encoding, their ends in ends (a buffer
// of its own when ends is too short).
func appendElems[T any, PT interface {
	*T
	AppendJSON([]byte) ([]byte, error)
}](b []byte, room int, list []T, n int, old []byte, oldEnds, ends []int) ([]byte, elems[T], error) {
	if cap(ends) < len(list) {
		ends = make([]int, len(list))
	}
	l := elems[T]{start: len(b) - room, ends: ends[:len(list)], list: list}
	if n > 0 {
		b = append(b, old...)
		// Each copied element ends where it did, shifted.
		shift := l.start - (oldEnds[n-1] - len(old))
		for i := range n {
			l.ends[i] = oldEnds[i] + shift
		}
	}
	var err error
	for i := n; i < len(list); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = PT(&list[i]).AppendJSON(b); err != nil {
			return nil, l, err
		}
		l.ends[i] = len(b) - room
	}
	return b, l, nil
}

// envelope returns the reply to the call with request id that carries the
// task whole (a SendMessageResponse or StreamResponse), laid around the
// encoding in its own buffer: the envelope's head is written in the room
// before the task, its tail in the room after it, and the task's bytes are
// not copied. The rooms serve one reply: a second one, an id too long for the room, or a
// small task's encoding, which has no rooms, gets nil, and the caller
// copies the encoding (copyReply).
func (e *taskEnc) envelope(id json.RawMessage) []byte {
	head := jsonrpc.ResultHeadLen(id) + len(taskOpen)
	end := len(e.buf) + envelopeTail
	if head > e.room || cap(e.buf) < end || !e.claimed.CompareAndSwap(false, true) {
		return nil
	}
	start := e.room - head
	// Both appends fill the room up to the task, exactly (head bytes); the
	// capacity stops at the task, so a head longer than ResultHeadLen said
	// lands in a buffer of its own and never over the stored encoding.
	w := jsonrpc.AppendResultHead(e.buf[start:start:e.room], id)
	w = append(w, taskOpen...)
	if len(w) != head || unsafe.SliceData(w) != &e.buf[start] {
		return nil
	}
	out := e.buf[start:end:end]
	copy(out[len(out)-envelopeTail:], taskClose+jsonrpc.ResultTail)
	return out
}

// copyReply returns the reply to the call with request id that carries the
// task whole, in a buffer of its own: the envelope and a copy of the
// encoding (what jsonrpc.EncodeResult makes of a response holding the
// task).
func (e *taskEnc) copyReply(id json.RawMessage) []byte {
	out := make([]byte, 0, jsonrpc.ResultHeadLen(id)+len(taskOpen)+len(e.b)+envelopeTail)
	out = jsonrpc.AppendResultHead(out, id)
	out = append(out, taskOpen...)
	out = append(out, e.b...)
	return append(out, taskClose+jsonrpc.ResultTail...)
}
