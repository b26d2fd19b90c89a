package taskstore

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/jsonsize"
	"github.com/a2abind/a2abind/internal/scratch"
)

// packed is a record as the Memory store keeps it: the task in its wire
// form (one byte slice, which the garbage collector does not scan however
// many tasks are kept) beside the bookkeeping the store reads without
// decoding it, and the task's push-notification configs and delivery
// reports as values (few tasks have any; they are copied, not encoded, on
// the way in and out, and a report is set without touching the task).
// Nothing a packed refers to is changed in place.
type packed struct {
	task       []byte
	id         string
	contextID  string
	state      a2a.TaskState
	messageIDs []string
	owner      string
	principal  string
	created    time.Time
	updated    time.Time
	// configs and deliveries are the record's PushConfigs and
	// PushDeliveries, the store's own copies.
	configs    []a2a.TaskPushNotificationConfig
	deliveries []PushDelivery
}

// smallTask is the jsonsize.PlainTask up to which pack encodes a task into
// a scratch buffer and copies it out, with no estimate of its size.
const smallTask = 4 << 10

// pack encodes r. The task must encode (a handler's metadata must be JSON).
// A small task is encoded into a scratch buffer and copied out at its
// size; a larger one into a buffer allocated at its estimated size
// (jsonsize.Task), which becomes the packed task.
func pack(r Record) (packed, error) {
	if n := jsonsize.PlainTask(&r.Task, 0, 0); n < 0 || n > smallTask {
		if size := jsonsize.Task(&r.Task); size > scratch.Keep {
			b, err := r.Task.AppendJSON(make([]byte, 0, size))
			if err != nil {
				return packed{}, fmt.Errorf("taskstore: %w", err)
			}
			if cap(b)-len(b) > len(b)/8+256 {
				// The estimate fell short and the buffer grew past the
				// task's size: the store keeps it at about its size.
				b = bytes.Clone(b)
			}
			return packEncoded(r, b), nil
		}
	}
	sp := scratch.Get()
	b, err := r.Task.AppendJSON(*sp)
	if err != nil {
		scratch.Put(sp, *sp)
		return packed{}, fmt.Errorf("taskstore: %w", err)
	}
	enc := bytes.Clone(b)
	scratch.Put(sp, b)
	return packEncoded(r, enc), nil
}

// packEncoded is pack with enc, r's task encoded, which it keeps.
func packEncoded(r Record, enc []byte) packed {
	p := packed{task: enc, id: r.Task.ID, contextID: r.Task.ContextID, messageIDs: append([]string(nil), r.MessageIDs...),
		owner: r.Owner, principal: r.Principal, created: r.Created, updated: r.Updated,
		configs: cloneConfigs(r.PushConfigs), deliveries: slices.Clone(r.PushDeliveries)}
	if r.Task.Status != nil {
		p.state = r.Task.Status.State
	}
	return p
}

// cloneConfigs returns a copy of cs that shares nothing with it (nil for
// none).
func cloneConfigs(cs []a2a.TaskPushNotificationConfig) []a2a.TaskPushNotificationConfig {
	if len(cs) == 0 {
		return nil
	}
	out := make([]a2a.TaskPushNotificationConfig, len(cs))
	for i := range cs {
		out[i] = cs[i]
		out[i].Authentication = cs[i].Authentication.Clone()
	}
	return out
}

// unpack decodes a record: a copy of its own for the caller.
func (p *packed) unpack() (Record, error) {
	r := Record{MessageIDs: append([]string(nil), p.messageIDs...), Owner: p.owner, Principal: p.principal, Created: p.created, Updated: p.updated,
		PushConfigs: cloneConfigs(p.configs), PushDeliveries: slices.Clone(p.deliveries)}
	if err := r.Task.UnmarshalJSON(p.task); err != nil {
		return Record{}, err
	}
	return r, nil
}

// head is the part of a record List filters and sorts by, without the
// task's body.
func (p *packed) head() Record {
	return Record{Task: a2a.Task{ID: p.id, ContextID: p.contextID, Status: &a2a.TaskStatus{State: p.state}},
		Owner: p.owner, Principal: p.principal, Created: p.created, Updated: p.updated}
}

// size is what the task counts against MaxBytes: its encoding, its ids,
// and about what its push-notification configs and reports take encoded
// (pushSize).
func (p *packed) size() int64 {
	n := len(p.task) + len(p.id) + len(p.contextID) + len(p.owner) + len(p.principal) + pushSize(p.configs, p.deliveries)
	for _, m := range p.messageIDs {
		n += len(m)
	}
	return int64(n)
}

// pushSize is about the length of the JSON encoding of push configs and
// delivery reports: their strings, and a fixed part for the member names,
// numbers and times.
func pushSize(cs []a2a.TaskPushNotificationConfig, ds []PushDelivery) int {
	const configFixed, deliveryFixed = 64, 96
	n := 0
	for i := range cs {
		c := &cs[i]
		n += configFixed + len(c.Tenant) + len(c.ID) + len(c.TaskID) + len(c.URL) + len(c.Token)
		if a := c.Authentication; a != nil {
			n += 32 + len(a.Scheme) + len(a.Credentials)
		}
	}
	for i := range ds {
		n += deliveryFixed + len(ds[i].ConfigID) + len(ds[i].State) + len(ds[i].Reason)
	}
	return n
}
