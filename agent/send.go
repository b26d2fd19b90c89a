package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// send handles SendMessage and SendStreamingMessage: admission by the
// responder rules, then a new turn, a resumed one, or the answer to a retry.
// A new task is its caller's (Record.Principal); the caller sees, to
// resume, retry or join, only the tasks and context it may see
// (docs/protocol.md §15).
func (s *Server) send(ctx context.Context, c Call, p *a2a.SendMessageRequest, streaming bool, sink Sink) error {
	msg := *p.Message
	var history *int32
	immediately := false
	if cfg := p.Configuration; cfg != nil {
		history = cfg.HistoryLength
		immediately = cfg.ReturnImmediately
	}
	// Transports decode within the limits (DecodeRequest); this holds for
	// one that did not.
	if max := s.limits.MaxParts; max > 0 && len(msg.Parts) > max {
		return fail(ctx, sink, jsonrpc.TooManyParts(len(msg.Parts), max))
	}
	if c.IDs == tasklife.RequesterIDs && msg.TaskID != "" && !uuidv4.WellFormed(msg.TaskID) {
		return fail(ctx, sink, a2a.NewError(a2a.TokenInvalidParams, "message.taskId must be a UUID: the requester makes Task.id in this binding"))
	}
	if msg.ContextID != "" && c.IDs == tasklife.RequesterIDs && !uuidv4.WellFormed(msg.ContextID) {
		return fail(ctx, sink, a2a.NewError(a2a.TokenInvalidParams, "message.contextId must be a UUID"))
	}
	// A push-notification config is stored with the task the message
	// creates or resumes, in the same write (docs/protocol.md §8.2, §8.8);
	// one this agent cannot serve is refused, never ignored.
	pushCfg, perr := s.pushForMessage(c, p)
	if perr != nil {
		return fail(ctx, sink, perr)
	}

	held := s.lockTask(msg.TaskID)
	locked := true
	defer func() {
		if locked {
			held.unlock()
		}
	}()

	var rec *taskstore.Record
	// hidden is set when the message names another caller's task: it is
	// admitted as for a task the agent does not hold, and refused.
	hidden := false
	if msg.TaskID != "" {
		// Admission reads the task's id, context, state and message ids:
		// its body is not decoded (a retry, a resume, reads it again).
		r, err := taskstore.GetHead(ctx, s.store, msg.TaskID)
		switch {
		case err == nil && !visible(r.Principal, c.Caller):
			hidden = true
		case err == nil:
			rec = &r
		case errors.Is(err, taskstore.ErrExpired), !errors.Is(err, taskstore.ErrNotFound):
			return fail(ctx, sink, storeError(err))
		}
	}
	ctxID := msg.ContextID
	var taskRec *tasklife.TaskRecord
	if rec != nil {
		st, err := tasklife.StateOf(rec.Task.Status.State)
		if err != nil {
			return fail(ctx, sink, a2a.NewError(a2a.TokenInternalError, "stored task "+rec.Task.ID+": "+err.Error()))
		}
		taskRec = &tasklife.TaskRecord{ID: rec.Task.ID, ContextID: rec.Task.ContextID, State: st, MessageIDs: rec.MessageIDs}
		ctxID = rec.Task.ContextID
	}
	var ctxRec *tasklife.ContextRecord
	var ctxInfo taskstore.ContextInfo
	if ctxID != "" {
		info, err := s.store.Context(ctx, ctxID)
		if err == nil {
			// The context as the caller sees it: its tasks alone. A
			// context of other callers' tasks is, to it, a new one.
			var ok bool
			if info, ok = info.VisibleTo(c.Caller.Subject); !ok {
				err = taskstore.ErrNotFound
			}
		}
		switch {
		case err == nil:
			ctxInfo = info
			ctxRec = &tasklife.ContextRecord{ID: info.ID, LastActive: info.LastActive}
		case errors.Is(err, taskstore.ErrExpired), !errors.Is(err, taskstore.ErrNotFound):
			return fail(ctx, sink, storeError(err))
		}
	}
	now := s.now()
	adm, err := tasklife.Admit(tasklife.Request{TaskID: msg.TaskID, ContextID: msg.ContextID, MessageID: msg.MessageID},
		taskRec, ctxRec, tasklife.Policy{IDs: c.IDs, ContextTTL: s.contextTTL}, now)
	if err != nil {
		var e *a2a.Error
		if !errors.As(err, &e) {
			e = a2a.NewError(a2a.TokenInternalError, err.Error())
		}
		return fail(ctx, sink, e)
	}
	if hidden {
		// Where the requester makes task ids (MQTT) an unknown id would
		// start a new task; this one is taken, by another caller.
		return fail(ctx, sink, taskNotFound(msg.TaskID))
	}

	if adm.Verdict == tasklife.VerdictRetry {
		held.unlock()
		locked = false
		return s.attach(ctx, rec.Task.ID, streaming, immediately, history, sink)
	}

	// An agent that does not accept work now queues or refuses the
	// message (docs/protocol.md §7). A queued message carries its push
	// config as checked, with its id: the requester reads it with
	// GetTaskPushNotificationConfig while the message waits, and the
	// task is created with that config when it is delivered.
	gated := p
	if pushCfg != nil && s.offline != nil && c.queued == nil {
		q, conf := *p, *p.Configuration
		conf.TaskPushNotificationConfig = pushCfg
		q.Configuration = &conf
		gated = &q
	}
	if handled, err := s.reachGate(ctx, c, gated, &msg, sink); handled {
		return err
	}

	// A new or resumed turn needs a worker slot: without one the answer is
	// responder_unavailable at once, and nothing is stored. A message from
	// the offline queue waits for one.
	if c.queued != nil {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		select {
		case s.slots <- struct{}{}:
		default:
			return fail(ctx, sink, a2a.NewError(a2a.TokenResponderUnavailable, "the agent is busy; retry later"))
		}
	}
	started := false
	defer func() {
		if !started {
			<-s.slots
		}
	}()

	var current taskstore.Record
	// enc is the created task's encoding, when the store took it.
	var enc *taskEnc
	resumed := adm.Verdict == tasklife.VerdictResume
	if resumed {
		life := tasklife.Restore(taskRec.ID, taskRec.ContextID, taskRec.State)
		if _, err := life.Resume(); err != nil {
			return fail(ctx, sink, asProtocolError(err))
		}
		msg.TaskID, msg.ContextID = rec.Task.ID, rec.Task.ContextID
		// The change holds a copy of its own: msg stays off the heap on
		// the path that creates a task.
		added := msg
		replaced := false
		current, err = s.store.Update(ctx, rec.Task.ID, ownedBy(c.Caller, func(r *taskstore.Record) error {
			// Checked again under the store's lock: agents sharing the
			// store (a pool on PostgreSQL) may have taken the same
			// message, or another one, since the task was read.
			if slices.Contains(r.MessageIDs, added.MessageID) {
				return errAcceptedElsewhere
			}
			if st, err := tasklife.StateOf(r.Task.Status.State); err != nil || st != taskRec.State {
				if err == nil {
					life := tasklife.Restore(r.Task.ID, r.Task.ContextID, st)
					_, err = life.Resume()
				}
				if err != nil {
					return asProtocolError(err)
				}
			}
			if pushCfg != nil {
				cfg := *pushCfg
				cfg.TaskID = r.Task.ID
				var err error
				if replaced, err = s.putPushConfig(r, cfg); err != nil {
					return err
				}
			}
			r.MessageIDs = append(r.MessageIDs, added.MessageID)
			r.Task.History = append(r.Task.History, added)
			r.Task.Status = &a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: s.timestamp()}
			return nil
		}))
		if errors.Is(err, errAcceptedElsewhere) {
			// A retry of a message another agent sharing the store
			// resumed the task with: answered as any retry is.
			held.unlock()
			locked = false
			return s.attach(ctx, rec.Task.ID, streaming, immediately, history, sink)
		}
		if err != nil {
			var e *a2a.Error
			if !errors.Is(err, taskstore.ErrExpired) && errors.As(err, &e) {
				return fail(ctx, sink, e)
			}
			return fail(ctx, sink, storeError(err))
		}
		if replaced {
			// Nothing queued for the old webhook goes out.
			s.push.Notifier.Forget(current.Task.ID, pushCfg.ID)
		}
	} else {
		switch {
		case msg.TaskID == "" && msg.ContextID == "":
			msg.TaskID, msg.ContextID = s.newIDs()
		case msg.TaskID == "":
			msg.TaskID = s.newID()
		case msg.ContextID == "":
			msg.ContextID = s.newID()
		}
		// Submitted when admitted: the clock is read once.
		parts := &newTask{status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: stamp(now)},
			history: [1]a2a.Message{msg}, messageIDs: [1]string{msg.MessageID}}
		task := a2a.Task{ID: msg.TaskID, ContextID: msg.ContextID, Status: &parts.status, History: parts.history[:]}
		created := taskstore.Record{Task: task, MessageIDs: parts.messageIDs[:], Principal: c.Caller.Subject}
		if pushCfg != nil {
			cfg := *pushCfg
			cfg.TaskID = task.ID
			created.PushConfigs = []a2a.TaskPushNotificationConfig{cfg}
		}
		current, enc, err = s.createTask(ctx, created)
		if errors.Is(err, taskstore.ErrExists) {
			if !visible(current.Principal, c.Caller) {
				// Created meanwhile by another caller.
				return fail(ctx, sink, taskNotFound(msg.TaskID))
			}
			// Created meanwhile by another responder sharing the store: a
			// retry of the same task.
			held.unlock()
			locked = false
			return s.attach(ctx, current.Task.ID, streaming, immediately, history, sink)
		}
		if err != nil {
			return fail(ctx, sink, storeError(err))
		}
	}

	prior := priorTasks(ctxInfo, current.Task.ID)
	started = true
	locked = false
	return s.start(current, enc, msg, resumed, c.Caller, c.IDs, prior,
		origin{ctx: ctx, sink: sink, mode: waitModeOf(streaming, immediately), history: history, queued: c.queued}, held)
}

// newTask holds the status, history and message ids of a task a message
// creates, allocated together. The lists are full: an append copies them.
type newTask struct {
	status     a2a.TaskStatus
	history    [1]a2a.Message
	messageIDs [1]string
}

// errAcceptedElsewhere ends the Update of a resume whose message the task
// already holds: another agent sharing the store accepted it first.
var errAcceptedElsewhere = errors.New("agent: message accepted by another agent sharing the store")

// attach answers a retried message to task taskID: from the running turn
// if there is one, else with the task as stored. Nothing is created and
// no handler runs.
func (s *Server) attach(ctx context.Context, taskID string, streaming, immediately bool, history *int32, sink Sink) error {
	if r := s.activeRun(taskID); r != nil {
		return s.respond(ctx, r, waitModeOf(streaming, immediately), history, sink)
	}
	rec, err := s.store.Get(ctx, taskID)
	if err == nil && !immediately {
		// The turn runs on another agent sharing the store (a pool on
		// one PostgreSQL store): the call waits, as it would here, for
		// the turn to end, reading the store.
		rec, err = s.awaitTurnEnd(ctx, rec)
	}
	if err != nil {
		return fail(ctx, sink, asProtocolError(err))
	}
	snap := shown(rec)
	trimHistory(&snap, history)
	if streaming {
		return sink.Send(ctx, Reply{Result: &a2a.StreamResponse{Payload: &snap}, Final: true, Responder: rec.Owner})
	}
	return sink.Send(ctx, Reply{Result: &a2a.SendMessageResponse{Payload: &snap}, Final: true, Responder: rec.Owner})
}

// Polling of awaitTurnEnd: the first read after turnPollMin, each next
// one twice as late, at most turnPollMax apart, for at most turnWaitMax;
// at most maxTurnWaiters calls wait at once (past it, a call is answered
// with the task as it stands).
const (
	turnPollMin    = 10 * time.Millisecond
	turnPollMax    = 250 * time.Millisecond
	turnWaitMax    = 5 * time.Minute
	maxTurnWaiters = 1024
)

// awaitTurnEnd reads the task of rec from the store until its turn ended
// (a terminal state, or input or authentication required: tasklife's
// Interrupted), ctx ends, or turnWaitMax passed, and returns the last
// record read: a task whose turn no agent runs any more (its agent died)
// is answered as the store holds it then. With maxTurnWaiters calls
// waiting already, it returns rec at once.
func (s *Server) awaitTurnEnd(ctx context.Context, rec taskstore.Record) (taskstore.Record, error) {
	if turnEnded(rec) {
		return rec, nil
	}
	select {
	case s.waiters <- struct{}{}:
		defer func() { <-s.waiters }()
	default:
		return rec, nil
	}
	ctx, cancel := context.WithTimeout(ctx, turnWaitMax)
	defer cancel()
	wait := turnPollMin
	for !turnEnded(rec) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return rec, nil
		case <-t.C:
		}
		wait = min(2*wait, turnPollMax)
		next, err := s.store.Get(ctx, rec.Task.ID)
		if err != nil {
			if ctx.Err() != nil {
				return rec, nil
			}
			return rec, err
		}
		rec = next
	}
	return rec, nil
}

// turnEnded reports whether the task of rec is in no turn: finished, or
// waiting for input or authentication (or in a state it cannot tell).
func turnEnded(rec taskstore.Record) bool {
	if rec.Task.Status == nil {
		return false
	}
	st, err := tasklife.StateOf(rec.Task.Status.State)
	return err != nil || st.Terminal() || st.IsResumable()
}

// priorTasks returns the ids of the context's other tasks, oldest first.
func priorTasks(info taskstore.ContextInfo, self string) []string {
	out := make([]string, 0, len(info.TaskIDs))
	for _, id := range info.TaskIDs {
		if id != self {
			out = append(out, id)
		}
	}
	return out
}

// storeError answers a message the store refused: at its bounds with
// responder_unavailable (retryable: room comes back as tasks finish or
// expire), for a task that expired waiting for input with context_expired
// (docs/protocol.md §5.5: the requester starts a new conversation), and
// with internal_error otherwise.
func storeError(err error) *a2a.Error {
	switch {
	case errors.Is(err, taskstore.ErrFull):
		return a2a.NewError(a2a.TokenResponderUnavailable,
			"the agent's task store is full: "+strings.TrimPrefix(err.Error(), taskstore.ErrFull.Error()+": "))
	case errors.Is(err, taskstore.ErrExpired):
		return a2a.NewError(a2a.TokenContextExpired, err.Error()+": start a new conversation")
	}
	return a2a.NewError(a2a.TokenInternalError, "task store: "+err.Error())
}

func asProtocolError(err error) *a2a.Error {
	var e *a2a.Error
	if errors.As(err, &e) {
		return e
	}
	return a2a.NewError(a2a.TokenInternalError, err.Error())
}
