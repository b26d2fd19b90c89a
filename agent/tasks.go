package agent

import (
	"context"
	"errors"
	"time"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

func (s *Server) getTask(ctx context.Context, caller Caller, p *a2a.GetTaskRequest, sink Sink) error {
	rec, err := s.taskFor(ctx, caller, p.ID)
	if errors.Is(err, taskstore.ErrNotFound) {
		if t, ok := s.queuedTask(ctx, caller, p.ID); ok {
			trimHistory(&t, p.HistoryLength)
			return sink.Send(ctx, Reply{Result: &t, Final: true})
		}
	}
	if err != nil {
		return fail(ctx, sink, asProtocolError(err))
	}
	t := shown(rec)
	trimHistory(&t, p.HistoryLength)
	return sink.Send(ctx, Reply{Result: &t, Final: true, Responder: rec.Owner})
}

// listTasks serves ListTasks: the tasks the caller may see alone, whatever
// the filter (A2A v1.0 §3.1.4, §13.1), totalSize counting those.
func (s *Server) listTasks(ctx context.Context, caller Caller, p *a2a.ListTasksRequest, sink Sink) error {
	f := taskstore.Filter{ContextID: p.ContextID, State: p.Status, PageToken: p.PageToken, Scoped: true, VisibleTo: caller.Subject}
	if p.PageSize != nil {
		f.PageSize = int(*p.PageSize)
	}
	if p.StatusTimestampAfter != "" {
		t, err := time.Parse(time.RFC3339Nano, p.StatusTimestampAfter)
		if err != nil {
			return fail(ctx, sink, a2a.NewError(a2a.TokenInvalidParams, "statusTimestampAfter: "+err.Error()))
		}
		f.UpdatedAfter = t
	}
	page, err := s.store.List(ctx, f)
	if err != nil {
		return fail(ctx, sink, asProtocolError(err))
	}
	size := f.PageSize
	if size <= 0 {
		size = taskstore.DefaultPageSize
	}
	resp := &a2a.ListTasksResponse{Tasks: []a2a.Task{}, NextPageToken: page.NextPageToken, PageSize: int32(size), TotalSize: int32(page.Total)}
	for _, r := range page.Records {
		t := shown(r)
		if p.IncludeArtifacts == nil || !*p.IncludeArtifacts {
			t.Artifacts = nil
		}
		trimHistory(&t, p.HistoryLength)
		resp.Tasks = append(resp.Tasks, t)
	}
	return sink.Send(ctx, Reply{Result: resp, Final: true})
}

// cancelTask applies CancelTask: a running turn is stopped (its handler's
// context ends) and every stream of the task gets the final CANCELED
// status; a canceled task answers with itself; another terminal task is
// task_not_cancelable. Another caller's task is not found.
func (s *Server) cancelTask(ctx context.Context, caller Caller, p *a2a.CancelTaskRequest, sink Sink) error {
	defer s.lockTask(p.ID).unlock()
	markCanceled := func() (taskstore.Record, error) {
		return s.store.Update(ctx, p.ID, ownedBy(caller, func(rec *taskstore.Record) error {
			rec.Task.Status = &a2a.TaskStatus{State: a2a.TaskStateCanceled, Timestamp: s.timestamp()}
			return nil
		}))
	}
	if r := s.activeRun(p.ID); r != nil && visible(r.principal, caller) {
		rec, ok, err := r.cancelTurn(markCanceled)
		if err != nil {
			return fail(ctx, sink, asProtocolError(err))
		}
		if ok {
			t := shown(rec)
			return sink.Send(ctx, Reply{Result: &t, Final: true, Responder: rec.Owner})
		}
		// The turn ended meanwhile: cancel what the store holds now.
	}
	rec, st, err := s.loadTask(ctx, caller, p.ID)
	if errors.Is(err, taskstore.ErrNotFound) {
		if t, ok := s.cancelQueued(ctx, caller, p.ID); ok {
			return sink.Send(ctx, Reply{Result: &t, Final: true})
		}
		// Delivered meanwhile: cancel what the store holds now.
		rec, st, err = s.loadTask(ctx, caller, p.ID)
	}
	if err != nil {
		return fail(ctx, sink, asProtocolError(err))
	}
	life := tasklife.Restore(rec.Task.ID, rec.Task.ContextID, st)
	step, err := life.Cancel(false)
	if err != nil {
		return fail(ctx, sink, asProtocolError(err))
	}
	if step.From != step.To {
		if rec, err = markCanceled(); err != nil {
			return fail(ctx, sink, asProtocolError(err))
		}
		// No turn runs to emit it: the webhooks get the final status
		// here, as a stream would have.
		ev := &a2a.TaskStatusUpdateEvent{TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: rec.Task.Status}
		s.notify(rec.PushConfigs, &a2a.StreamResponse{Payload: ev})
	}
	t := shown(rec)
	return sink.Send(ctx, Reply{Result: &t, Final: true, Responder: rec.Owner})
}

// subscribeToTask streams the events of a live task, beginning with the
// task itself; a task waiting for input gets the task as one final item.
// Another caller's task is not found, running or not.
func (s *Server) subscribeToTask(ctx context.Context, caller Caller, p *a2a.SubscribeToTaskRequest, sink Sink) error {
	rec, st, err := s.loadTask(ctx, caller, p.ID)
	if err != nil {
		return fail(ctx, sink, asProtocolError(err))
	}
	if st.Terminal() {
		return fail(ctx, sink, a2a.NewError(a2a.TokenUnsupportedOperation, "task "+p.ID+" is in a terminal state ("+st.Wire()+")"))
	}
	if r := s.activeRun(p.ID); r != nil {
		return s.respond(ctx, r, modeStream, nil, sink)
	}
	t := shown(rec)
	return sink.Send(ctx, Reply{Result: &a2a.StreamResponse{Payload: &t}, Final: true, Responder: rec.Owner})
}

// loadTask reads a task for caller (taskFor) and the lifecycle state its
// status stands for.
func (s *Server) loadTask(ctx context.Context, caller Caller, id string) (taskstore.Record, fsm.TaskState, error) {
	rec, err := s.taskFor(ctx, caller, id)
	if err != nil {
		return taskstore.Record{}, 0, err
	}
	st, err := tasklife.StateOf(rec.Task.Status.State)
	return rec, st, err
}
