package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// run is the execution of one turn of a task: the handler's goroutine, the
// lifecycle machine, and the subscribers that stream its events.
type run struct {
	s      *Server
	cancel context.CancelFunc
	done   chan struct{}

	// order serialises events (the handler's and a cancel) from the check
	// that the turn goes on to the last send, so no item follows the final
	// one on any stream.
	order sync.Mutex

	mu        sync.Mutex
	life      tasklife.Task
	task      a2a.Task // latest snapshot
	responder string
	over      bool // the turn ended (terminal or interrupted)
	subs      []*subscriber
}

// subscriber receives the events of a run: the call that started it, a
// retry of it, or a SubscribeToTask.
type subscriber struct {
	sink Sink
	ctx  context.Context
	// streaming subscribers get every event; others only wait for the end.
	streaming bool
	dead      atomic.Bool
	end       chan struct{} // closed when the turn ends
}

// subscribe attaches a call to the run. A streaming subscriber is first
// sent the task as it stands (A2A §3.1.2: a stream begins with the Task),
// under the event order, so no event can reach it before that snapshot. It
// returns the snapshot, the responder and whether the turn was already over.
func (r *run) subscribe(ctx context.Context, sink Sink, streaming bool, history *int32) (*subscriber, a2a.Task, string, bool, error) {
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	sub := &subscriber{sink: sink, ctx: ctx, streaming: streaming, end: make(chan struct{})}
	snap, responder, over := cloneTask(r.task), r.responder, r.over
	if over {
		close(sub.end)
	} else {
		r.subs = append(r.subs, sub)
	}
	r.mu.Unlock()
	if streaming {
		first := snap
		trimHistory(&first, history)
		if err := sink.Send(ctx, Reply{Result: &a2a.StreamResponse{Payload: &first}, Final: over, Responder: responder}); err != nil {
			r.unsubscribe(sub)
			return sub, snap, responder, over, err
		}
	}
	return sub, snap, responder, over, nil
}

// unsubscribe detaches a subscriber.
func (r *run) unsubscribe(sub *subscriber) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.subs {
		if x == sub {
			r.subs = append(r.subs[:i], r.subs[i+1:]...)
			return
		}
	}
}

// emit stores an event's effect on the task and sends the event to every
// streaming subscriber. apply runs under the lock and returns the stream
// item, or an error that refuses the event.
func (r *run) emit(ctx context.Context, apply func(t *a2a.Task, life *tasklife.Task) (*a2a.StreamResponse, bool, error)) error {
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return ErrTurnEnded
	}
	next := cloneTask(r.task)
	life := r.life
	item, final, err := apply(&next, &life)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if _, err := r.s.store.Update(ctx, next.ID, func(rec *taskstore.Record) error {
		rec.Task = next
		return nil
	}); err != nil {
		r.mu.Unlock()
		return err
	}
	r.task = next
	r.life = life
	if final {
		r.over = true
	}
	subs := append([]*subscriber(nil), r.subs...)
	responder := r.responder
	r.mu.Unlock()

	broadcast(subs, Reply{Result: item, Final: final, Responder: responder})
	if final {
		r.finish(subs)
	}
	return nil
}

// broadcast sends a reply to every streaming subscriber still listening; a
// subscriber whose sink fails gets nothing more.
func broadcast(subs []*subscriber, rep Reply) {
	for _, sub := range subs {
		if sub.streaming && !sub.dead.Load() {
			if err := sub.sink.Send(sub.ctx, rep); err != nil {
				sub.dead.Store(true)
			}
		}
	}
}

// finish wakes every subscriber waiting for the end of the turn.
func (r *run) finish(subs []*subscriber) {
	for _, sub := range subs {
		select {
		case <-sub.end:
		default:
			close(sub.end)
		}
	}
}

func (r *run) status(ctx context.Context, state a2a.TaskState, text string) error {
	return r.emit(ctx, func(t *a2a.Task, life *tasklife.Task) (*a2a.StreamResponse, bool, error) {
		step, err := life.Observe(state)
		if err != nil {
			return nil, false, err
		}
		st := &a2a.TaskStatus{State: state, Timestamp: r.s.timestamp()}
		if text != "" {
			msg := r.s.agentMessage(t, text)
			st.Message = &msg
			t.History = append(t.History, msg)
		}
		t.Status = st
		ev := &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: cloneStatus(st)}
		return &a2a.StreamResponse{Payload: ev}, step.Class().StreamFinal(), nil
	})
}

func (r *run) artifact(ctx context.Context, a a2a.Artifact, appendParts, last bool) error {
	if err := a.Validate(); err != nil {
		return err
	}
	return r.emit(ctx, func(t *a2a.Task, _ *tasklife.Task) (*a2a.StreamResponse, bool, error) {
		merged := false
		if appendParts {
			for i := range t.Artifacts {
				if t.Artifacts[i].ArtifactID == a.ArtifactID {
					t.Artifacts[i].Parts = append(t.Artifacts[i].Parts, a.Parts...)
					merged = true
				}
			}
		}
		if !merged {
			t.Artifacts = append(t.Artifacts, a)
		}
		ev := &a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Artifact: &a, Append: appendParts, LastChunk: last}
		return &a2a.StreamResponse{Payload: ev}, false, nil
	})
}

func (r *run) handover(ctx context.Context, agentID string) error {
	if agentID == "" {
		return errors.New("agent: handover needs an agent id")
	}
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return ErrTurnEnded
	}
	id := r.task.ID
	r.mu.Unlock()
	if _, err := r.s.store.Update(ctx, id, func(rec *taskstore.Record) error {
		rec.Owner = agentID
		return nil
	}); err != nil {
		return err
	}
	r.mu.Lock()
	r.responder = agentID
	r.mu.Unlock()
	return nil
}

// cancelTurn cancels the running turn: under the event order it moves the
// lifecycle to CANCELED, lets mark store it, sends the final status to every
// stream and ends the handler's context. It reports false, doing nothing,
// when the turn already ended.
func (r *run) cancelTurn(mark func() (taskstore.Record, error)) (taskstore.Record, bool, error) {
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return taskstore.Record{}, false, nil
	}
	life := r.life
	if _, err := life.Cancel(false); err != nil {
		r.mu.Unlock()
		return taskstore.Record{}, false, err
	}
	rec, err := mark()
	if err != nil {
		r.mu.Unlock()
		return taskstore.Record{}, false, err
	}
	r.life = life
	r.over = true
	r.task = cloneTask(rec.Task)
	subs := append([]*subscriber(nil), r.subs...)
	responder := r.responder
	r.mu.Unlock()
	ev := &a2a.TaskStatusUpdateEvent{TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: cloneStatus(rec.Task.Status)}
	broadcast(subs, Reply{Result: &a2a.StreamResponse{Payload: ev}, Final: true, Responder: responder})
	r.finish(subs)
	r.cancel()
	return rec, true, nil
}

// snapshot returns the latest task and responder.
func (r *run) snapshot() (a2a.Task, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneTask(r.task), r.responder
}
