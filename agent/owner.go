package agent

import (
	"context"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
)

// Tasks belong to the caller that created them (docs/protocol.md §15; A2A
// v1.0 §13.1): a task records the verified identity of its creator
// (Caller.Subject, taskstore.Record.Principal), and another caller is
// answered for it exactly as for a task the agent does not hold. A task
// created without an identity is everyone's.

// visible reports whether caller may see a task created by principal
// (taskstore.Visible).
func visible(principal string, caller Caller) bool {
	return taskstore.Visible(principal, caller.Subject)
}

// taskFor reads a task for caller: a task it may not see is
// taskstore.ErrNotFound, as one the store does not hold, so that nothing
// tells the two apart (A2A v1.0 §3.3.2: a server must not reveal the
// existence of what the caller may not access).
func (s *Server) taskFor(ctx context.Context, caller Caller, id string) (taskstore.Record, error) {
	rec, err := s.store.Get(ctx, id)
	if err == nil && !visible(rec.Principal, caller) {
		return taskstore.Record{}, taskstore.ErrNotFound
	}
	return rec, err
}

// ownedBy wraps a change of a task's record for caller: a task it may not
// see is not changed, and the change fails with taskstore.ErrNotFound, as
// for a task the store does not hold.
func ownedBy(caller Caller, fn func(*taskstore.Record) error) func(*taskstore.Record) error {
	return func(rec *taskstore.Record) error {
		if !visible(rec.Principal, caller) {
			return taskstore.ErrNotFound
		}
		return fn(rec)
	}
}

// taskNotFound is the answer to a message naming a task id the caller
// cannot resume: one the agent does not hold where the binding makes the
// responder create task ids (tasklife.Admit's answer over HTTP), or
// another caller's task over either binding.
func taskNotFound(id string) *a2a.Error {
	return a2a.NewError(a2a.TokenTaskNotFound, "task "+id+" not found")
}
