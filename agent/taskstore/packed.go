package taskstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// packed is a record as the Memory store keeps it: the task in its wire
// form (one byte slice, which the garbage collector does not scan however
// many tasks are kept) beside the bookkeeping the store reads without
// decoding it.
type packed struct {
	task       []byte
	id         string
	contextID  string
	state      a2a.TaskState
	messageIDs []string
	owner      string
	created    time.Time
	updated    time.Time
	// push holds the push-notification configs and their delivery
	// reports in their wire form (pushWire); nil when there are none.
	push []byte
}

// pushWire is the stored form of a record's push-notification configs
// and delivery reports.
type pushWire struct {
	Configs    []a2a.TaskPushNotificationConfig `json:"configs,omitempty"`
	Deliveries []PushDelivery                   `json:"deliveries,omitempty"`
}

// scratch holds encoding buffers between packs: a task is encoded into one,
// then copied out at its exact size.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// pack encodes r. The task must encode (a handler's metadata must be JSON).
func pack(r Record) (packed, error) {
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	b, err := r.Task.AppendJSON((*buf)[:0])
	if err != nil {
		return packed{}, fmt.Errorf("taskstore: %w", err)
	}
	*buf = b
	p := packed{task: bytes.Clone(b), id: r.Task.ID, contextID: r.Task.ContextID, messageIDs: append([]string(nil), r.MessageIDs...),
		owner: r.Owner, created: r.Created, updated: r.Updated}
	if r.Task.Status != nil {
		p.state = r.Task.Status.State
	}
	if len(r.PushConfigs) > 0 || len(r.PushDeliveries) > 0 {
		if p.push, err = json.Marshal(pushWire{Configs: r.PushConfigs, Deliveries: r.PushDeliveries}); err != nil {
			return packed{}, fmt.Errorf("taskstore: push configs: %w", err)
		}
	}
	return p, nil
}

// unpack decodes a record: a copy of its own for the caller.
func (p *packed) unpack() (Record, error) {
	r := Record{MessageIDs: append([]string(nil), p.messageIDs...), Owner: p.owner, Created: p.created, Updated: p.updated}
	if err := r.Task.UnmarshalJSON(p.task); err != nil {
		return Record{}, err
	}
	if len(p.push) > 0 {
		var w pushWire
		if err := json.Unmarshal(p.push, &w); err != nil {
			return Record{}, fmt.Errorf("taskstore: push configs: %w", err)
		}
		r.PushConfigs, r.PushDeliveries = w.Configs, w.Deliveries
	}
	return r, nil
}

// head is the part of a record List filters and sorts by, without the
// task's body.
func (p *packed) head() Record {
	return Record{Task: a2a.Task{ID: p.id, ContextID: p.contextID, Status: &a2a.TaskStatus{State: p.state}},
		Owner: p.owner, Created: p.created, Updated: p.updated}
}

// size is what the task counts against MaxBytes: its encoding, its ids,
// and the encoding of its push-notification configs and reports.
func (p *packed) size() int64 {
	n := len(p.task) + len(p.id) + len(p.contextID) + len(p.owner) + len(p.push)
	for _, m := range p.messageIDs {
		n += len(m)
	}
	return int64(n)
}
