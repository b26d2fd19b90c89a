package agent

import (
	"bytes"

	"github.com/a2abind/a2abind/gen/runtime"
	"github.com/a2abind/a2abind/generated/a2a"
)

// taskEnc is a task's wire encoding (what a2a.Task.AppendJSON makes, byte
// for byte) with what the next encoding of the same turn can reuse: the
// bytes of the history's messages and their ids.
type taskEnc struct {
	b []byte
	// hist is the span of b holding the history's messages, comma
	// separated, without the brackets.
	hist [2]int
	// ids are the ids of the messages encoded in hist, in order.
	ids []string
}

// encodeTask encodes t. The messages of a turn's history are never changed
// in place (the run's snapshots are copy on write) and only appended to,
// so when t's history begins with the messages prev encoded, as their ids
// say, their bytes are copied from prev instead of encoded again: a long
// text sent once is encoded once for the store at creation, and copied
// for each later event. prev may be nil.
func encodeTask(t *a2a.Task, prev *taskEnc) (*taskEnc, error) {
	head := *t
	head.History, head.Metadata = nil, nil
	size := 1024
	if prev != nil {
		size += len(prev.b)
	}
	b, err := head.AppendJSON(make([]byte, 0, size))
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the closing brace: history and metadata come last
	e := &taskEnc{}
	if t.History != nil {
		b = append(b, `,"history":[`...)
		e.hist[0] = len(b)
		e.ids = make([]string, 0, len(t.History))
		n := 0
		if prev != nil && prev.ids != nil && len(prev.ids) <= len(t.History) {
			n = len(prev.ids)
			for i, id := range prev.ids {
				if t.History[i].MessageID != id {
					n = 0
					break
				}
			}
			if n > 0 {
				b = append(b, prev.b[prev.hist[0]:prev.hist[1]]...)
				e.ids = append(e.ids, prev.ids...)
			}
		}
		for i := n; i < len(t.History); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = t.History[i].AppendJSON(b); err != nil {
				return nil, err
			}
			e.ids = append(e.ids, t.History[i].MessageID)
		}
		e.hist[1] = len(b)
		b = append(b, ']')
	}
	if t.Metadata != nil {
		b = append(b, `,"metadata":`...)
		if b, err = runtime.AppendAny(b, t.Metadata); err != nil {
			return nil, err
		}
	}
	b = append(b, '}')
	if cap(b)-len(b) > len(b)/8 {
		// The store keeps it: at about its size.
		b = bytes.Clone(b)
	}
	e.b = b
	return e, nil
}
