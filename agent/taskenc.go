package agent

import (
	"encoding/json"
	"sync/atomic"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/jsonsize"
	"github.com/a2abind/a2abind/jsonrpc"
)

// envelopeRoom is the room an encoding keeps before the task for the head
// of the reply that carries it, {"jsonrpc":"2.0","id":…,"result":{"task":
// (40 bytes and the id's): a request id of up to 88 bytes (a UUID string
// takes 38) fits.
const envelopeRoom = 128

// taskOpen and taskClose wrap a task into a SendMessageResponse.
const (
	taskOpen  = `{"task":`
	taskClose = `}`
)

// envelopeTail is the room an encoding keeps after the task for the end of
// the reply: the response's closing brace and the result's.
const envelopeTail = len(taskClose) + len(jsonrpc.ResultTail)

// taskEnc is a task's wire encoding (what a2a.Task.AppendJSON makes, byte
// for byte) with what the next encoding of the same turn can reuse: the
// bytes of the history's messages and their ids.
//
// The encoding lies in a buffer allocated at about its size before it was
// made (package jsonsize), with room before and after it for the envelope
// of the one reply that may be laid around it (envelope). The store keeps
// b; nothing within b is ever written again, and the rooms around it are
// written once, by the reply that claims them.
type taskEnc struct {
	// b is the encoding, buf[off:len(buf)], its capacity clipped to its
	// length.
	b []byte
	// buf is the buffer the encoding lies in: envelopeRoom bytes, then b;
	// its capacity goes on past b, at least envelopeTail bytes when the
	// reply can use it.
	buf []byte
	// hist is the span of b holding the history's messages, comma
	// separated, without the brackets.
	hist [2]int
	// ids are the ids of the messages encoded in hist, in order.
	ids []string
	// claimed is set by the reply that wrote its envelope around b.
	claimed atomic.Bool
}

// encodeTask encodes t. The messages of a turn's history are never changed
// in place (the run's snapshots are copy on write) and only appended to,
// so when t's history begins with the messages prev encoded, as their ids
// say, their bytes are copied from prev instead of encoded again: a long
// text sent once is encoded once for the store at creation, and copied
// for each later event. prev may be nil.
//
// The buffer is allocated once, at the estimate of the encoding's size
// (jsonsize) with the envelope's rooms around it. When the estimate fell
// short (a text whose escapes the estimate did not see) the encoder grew
// the buffer; an encoding left with more than an eighth of its size
// unused (and 256 bytes) is then copied to a buffer of its size, so the
// store does not keep the slack.
func encodeTask(t *a2a.Task, prev *taskEnc) (*taskEnc, error) {
	head := *t
	head.History, head.Metadata = nil, nil
	// reused is how many of the history's first messages are copied from
	// prev.
	reused := 0
	if t.History != nil && prev != nil && prev.ids != nil && len(prev.ids) <= len(t.History) {
		reused = len(prev.ids)
		for i, id := range prev.ids {
			if t.History[i].MessageID != id {
				reused = 0
				break
			}
		}
	}
	size := jsonsize.TaskHead(t)
	if t.History != nil {
		size += len(`,"history":[]`) + jsonsize.Messages(t.History[reused:])
		if reused > 0 {
			size += prev.hist[1] - prev.hist[0]
		}
	}
	if t.Metadata != nil {
		size += len(`,"metadata":`) + jsonsize.Any(t.Metadata)
	}
	b, err := head.AppendJSON(make([]byte, envelopeRoom, envelopeRoom+size+envelopeTail))
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the closing brace: history and metadata come last
	e := &taskEnc{}
	if t.History != nil {
		b = append(b, `,"history":[`...)
		e.hist[0] = len(b) - envelopeRoom
		e.ids = make([]string, 0, len(t.History))
		if reused > 0 {
			b = append(b, prev.b[prev.hist[0]:prev.hist[1]]...)
			e.ids = append(e.ids, prev.ids...)
		}
		for i := reused; i < len(t.History); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = t.History[i].AppendJSON(b); err != nil {
				return nil, err
			}
			e.ids = append(e.ids, t.History[i].MessageID)
		}
		e.hist[1] = len(b) - envelopeRoom
		b = append(b, ']')
	}
	if t.Metadata != nil {
		b = append(b, `,"metadata":`...)
		if b, err = runtime.AppendAny(b, t.Metadata); err != nil {
			return nil, err
		}
	}
	b = append(b, '}')
	if n := len(b) - envelopeRoom; cap(b)-len(b) > n/8+envelopeTail+256 {
		// The estimate fell short and the buffer grew past the task's
		// size: the store keeps it at about its size.
		b = append(make([]byte, 0, len(b)+envelopeTail), b...)
	}
	e.buf = b
	e.b = b[envelopeRoom:len(b):len(b)]
	return e, nil
}

// envelope returns the reply to the call with request id that carries the
// task whole as a SendMessageResponse, laid around the encoding in its own
// buffer: the envelope's head is written in the room before the task, its
// tail in the room after it, and the task's bytes are not copied. The
// rooms serve one reply: a second one, or an id too long for the room,
// gets nil, and the caller copies the encoding (encodedTask).
func (e *taskEnc) envelope(id json.RawMessage) []byte {
	head := jsonrpc.ResultHeadLen(id) + len(taskOpen)
	end := len(e.buf) + envelopeTail
	if head > envelopeRoom || cap(e.buf) < end || !e.claimed.CompareAndSwap(false, true) {
		return nil
	}
	start := envelopeRoom - head
	// Both appends fill the room up to the task, exactly (head bytes).
	w := jsonrpc.AppendResultHead(e.buf[start:start], id)
	_ = append(w, taskOpen...)
	out := e.buf[start:end:end]
	copy(out[len(out)-envelopeTail:], taskClose+jsonrpc.ResultTail)
	return out
}
