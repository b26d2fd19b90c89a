package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// run is the execution of one turn of a task: the handler's goroutine, the
// lifecycle machine, and the calls waiting on its events.
//
// The snapshot in task is never changed in place: an event replaces it
// with a new value that shares whatever the event did not alter (copy on
// write). A copy of the struct taken under mu can therefore be read, encoded
// and trimmed without a lock and without a deep clone.
type run struct {
	s *Server
	// ctx is the turn's context, the handler's; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	// ids is the binding of the call that started the turn: under
	// ResponderIDs (HTTP) no reply can name a new responder.
	ids tasklife.IDOrigin
	// principal is the task's Record.Principal: only the caller it names
	// (or any, when "") may cancel the turn or attach to it.
	principal string
	// slotFreed is set by freeSlot.
	slotFreed atomic.Bool

	// order serialises events (the handler's, a handover, a cancel) from
	// the check that the turn goes on to the last send, so no item follows
	// the final one on any stream. Only an event holder changes task, life,
	// responder and over, and it does so under mu as well.
	order sync.Mutex

	// enc is the encoding of task as stored (nil when unknown): the next
	// event's encoding copies its history's messages from it, and a call
	// answered with task reuses it. Only the holder of order reads or
	// changes it.
	enc *taskEnc

	mu        sync.Mutex
	life      tasklife.Task
	task      a2a.Task // latest snapshot (copy on write)
	responder string
	over      bool // the turn ended (terminal or interrupted)
	subs      []*subscriber
	// push are the task's push-notification configs (never changed in
	// place): every event is notified to them. The config methods change
	// them under the event order (Server.changePush).
	push []a2a.TaskPushNotificationConfig

	// turn is the handler's Turn, first the subscriber of the call that
	// started the turn, and firstSubs the array subs starts in: all are
	// allocated with the run.
	turn      Turn
	first     subscriber
	firstSubs [1]*subscriber
}

// Run serves the turn on a goroutine of the server's pool.
func (r *run) Run() { r.s.serveTurn(r.ctx, r, &r.turn) }

// freeSlot gives the turn's worker slot back, once: when the turn ends
// (before its last replies go out, so a requester that sends its next
// message at once finds the slot free) or when the handler returns.
func (r *run) freeSlot() {
	if r.slotFreed.CompareAndSwap(false, true) {
		<-r.s.slots
	}
}

// waitMode says how a call attached to a run is answered.
type waitMode int

const (
	// modeStream sends the task as it stands, then every event.
	modeStream waitMode = iota
	// modeEnd sends the task once, when the turn ends: a blocking
	// SendMessage. The event that ends the turn sends it, from the
	// goroutine that emitted it, so the reply waits for no hand-off.
	modeEnd
	// modeNow answers at once with the task as it stands
	// (returnImmediately); nothing is attached.
	modeNow
)

// subscriber is a call attached to a run: the call that started it, a
// retry of it, or a SubscribeToTask.
type subscriber struct {
	ctx     context.Context
	sink    Sink
	mode    waitMode
	history *int32
	// woken is closed when the turn ends, after the last send, or when
	// the sink fails, whichever comes first (wake); nil for a call that
	// was not attached (the turn was over, or it is answered at once).
	woken chan struct{}
	// enc is the encoding of the snapshot attach took (nil when unknown),
	// for a call answered with it (snapshotReply).
	enc *taskEnc

	mu     sync.Mutex // serialises sends with detach
	gone   bool       // detached: its call returned, nothing more is sent
	err    error      // the sink's first error: nothing more is sent
	closed bool       // woken is closed
}

// send passes one reply to the sink unless the call is gone or its sink
// failed before. A failed sink wakes the call.
func (sub *subscriber) send(rep Reply) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.gone || sub.err != nil {
		return
	}
	if sub.err = sub.sink.Send(sub.ctx, rep); sub.err != nil {
		sub.wakeLocked()
	}
}

// wake wakes the call waiting in Server.await, once.
func (sub *subscriber) wake() {
	sub.mu.Lock()
	sub.wakeLocked()
	sub.mu.Unlock()
}

func (sub *subscriber) wakeLocked() {
	if !sub.closed && sub.woken != nil {
		sub.closed = true
		close(sub.woken)
	}
}

// detach stops every later send; a send in progress finishes first, so the
// call may return (and its sink go away) as soon as detach does.
func (sub *subscriber) detach() {
	sub.mu.Lock()
	sub.gone = true
	sub.mu.Unlock()
}

// sendError returns the sink's error, once no send can happen any more.
func (sub *subscriber) sendError() error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.err
}

// attach attaches a call to the run as sub, which holds the call's
// context, sink, mode and history. A streaming call is first sent the
// task as it stands (A2A §3.1.2: a stream begins with the Task), under the
// event order, so no event can reach it before that snapshot. It returns
// the snapshot, the responder and whether the turn was already over (then
// nothing is attached).
func (r *run) attach(sub *subscriber) (a2a.Task, string, bool) {
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	snap, responder, over := r.task, r.responder, r.over
	if over || sub.mode == modeNow {
		// The holder of order is the only writer of enc, which is task
		// encoded.
		sub.enc = r.enc
	} else {
		sub.woken = make(chan struct{})
		// Appended in place: the lists deliveries read are shorter.
		r.subs = append(r.subs, sub)
	}
	r.mu.Unlock()
	if sub.mode == modeStream {
		x := &streamTask{task: snap}
		trimHistory(&x.task, sub.history)
		x.resp.Payload = &x.task
		rep := Reply{Result: &x.resp, Final: over, Responder: responder}
		if len(x.task.History) == len(snap.History) {
			// Under the event order enc is snap encoded.
			rep.task = r.enc
		}
		sub.send(rep)
	}
	return snap, responder, over
}

// streamTask is a StreamResponse and the task it holds, allocated
// together.
type streamTask struct {
	resp a2a.StreamResponse
	task a2a.Task
}

// leave detaches a subscriber whose call returned early.
func (r *run) leave(sub *subscriber) {
	r.mu.Lock()
	if i := slices.Index(r.subs, sub); i >= 0 {
		// A new array: the deliveries in progress read the old one
		// (emit, abort and cancelTurn take r.subs without copying it).
		subs := make([]*subscriber, 0, len(r.subs)-1)
		r.subs = append(append(subs, r.subs[:i]...), r.subs[i+1:]...)
	}
	r.mu.Unlock()
	sub.detach()
}

// event is what an event changed: a status, or an artifact with its
// append and lastChunk. Its stream item is made only when a stream or a
// push-notification config is there to carry it.
type event struct {
	status       *a2a.TaskStatus
	artifact     *a2a.Artifact
	append, last bool
}

// item is the event's stream item for the task t.
func (ev event) item(t *a2a.Task) *a2a.StreamResponse {
	if ev.artifact != nil {
		return &a2a.StreamResponse{Payload: &a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID,
			Artifact: ev.artifact, Append: ev.append, LastChunk: ev.last}}
	}
	return &a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: ev.status}}
}

// emit makes a change (apply), stores its effect on the task and delivers
// the event.
func (r *run) emit(ctx context.Context, ch change) error {
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return ErrTurnEnded
	}
	next, life := r.task, r.life
	r.mu.Unlock()
	// Only the holder of order changes the run, so the snapshot read above
	// is still the latest while the store is written.
	ev, final, err := r.apply(ch, &next, &life)
	if err != nil {
		return err
	}
	enc, err := r.s.replaceTask(ctx, next, r.enc)
	if err != nil {
		return err
	}
	r.enc = enc
	r.mu.Lock()
	r.task, r.life = next, life
	r.over = final
	// Never changed in place (leave): read without a copy.
	subs := r.subs
	responder, push := r.responder, r.push
	r.mu.Unlock()
	if final {
		r.freeSlot()
	}
	var item *a2a.StreamResponse
	if r.s.push != nil && len(push) > 0 || streams(subs) {
		item = ev.item(&next)
	}
	// The Notifier queues without blocking: the push goes out in event
	// order, before a slow stream can hold it back.
	r.s.notify(push, item)
	deliver(subs, item, final, next, enc, responder)
	return nil
}

// streams reports whether a stream is among subs.
func streams(subs []*subscriber) bool {
	for _, sub := range subs {
		if sub.mode == modeStream {
			return true
		}
	}
	return false
}

// replaceTask stores t as the task of its record. With a store that takes
// the task's encoding (taskstore.EncodedWriter: the Memory and PostgreSQL stores) the task
// is encoded here, once, reusing prev's encoding of the history (prev may
// be nil), and the encoding is returned for the next event and for the
// replies that carry the task whole; otherwise it returns nil.
func (s *Server) replaceTask(ctx context.Context, t a2a.Task, prev *taskEnc) (*taskEnc, error) {
	ew, ok := s.store.(taskstore.EncodedWriter)
	if !ok {
		return nil, taskstore.ReplaceTask(ctx, s.store, t)
	}
	enc, err := encodeTask(&t, prev)
	if err != nil {
		return nil, fmt.Errorf("taskstore: %w", err)
	}
	return enc, ew.ReplaceTaskEncoded(ctx, t, enc.b)
}

// createTask creates r in the store: with a store that takes the task's
// encoding (taskstore.EncodedWriter) the task is encoded here, and the
// encoding returned for the turn's first event to reuse; otherwise it
// returns nil.
func (s *Server) createTask(ctx context.Context, r taskstore.Record) (taskstore.Record, *taskEnc, error) {
	ew, ok := s.store.(taskstore.EncodedWriter)
	if !ok {
		rec, err := s.store.Create(ctx, r)
		return rec, nil, err
	}
	enc, err := encodeTask(&r.Task, nil)
	if err != nil {
		return taskstore.Record{}, nil, fmt.Errorf("taskstore: %w", err)
	}
	rec, err := ew.CreateEncoded(ctx, r, enc.b)
	if err != nil {
		return rec, nil, err
	}
	return rec, enc, nil
}

// deliver passes an event to the attached calls: the item to the streams
// (it is not nil when there is one) and, when the event ends the turn,
// the task to the calls waiting for the end; then it wakes them. enc, when
// not nil, is snap encoded: the reply of a call whose historyLength leaves
// the task whole reuses it. The caller holds the event order.
func deliver(subs []*subscriber, item *a2a.StreamResponse, final bool, snap a2a.Task, enc *taskEnc, responder string) {
	for _, sub := range subs {
		switch {
		case sub.mode == modeStream:
			sub.send(Reply{Result: item, Final: final, Responder: responder})
		case final:
			sub.send(taskReply(snap, enc, sub.history, responder))
		}
	}
	if final {
		wake(subs)
	}
}

// taskReply is the final reply of a SendMessage call with snap, trimmed to
// the call's historyLength; it carries enc, snap's encoding (may be nil),
// when the trim leaves the task whole.
func taskReply(snap a2a.Task, enc *taskEnc, history *int32, responder string) Reply {
	x := &taskResponse{task: snap}
	trimHistory(&x.task, history)
	x.resp.Payload = &x.task
	rep := Reply{Result: &x.resp, Final: true, Responder: responder}
	if len(x.task.History) == len(snap.History) {
		rep.task = enc
	}
	return rep
}

// taskResponse is a SendMessageResponse and the task it holds, allocated
// together.
type taskResponse struct {
	resp a2a.SendMessageResponse
	task a2a.Task
}

// wake tells every attached call that the turn ended.
func wake(subs []*subscriber) {
	for _, sub := range subs {
		sub.wake()
	}
}

// abort ends a turn whose last event could not be stored: every attached
// call is answered internal_error, so none waits for an end that will not
// come. It does nothing when the turn already ended.
func (r *run) abort(cause error) {
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return
	}
	r.over = true
	subs := r.subs
	r.mu.Unlock()
	r.freeSlot()
	e := a2a.NewError(a2a.TokenInternalError, "the task's state could not be stored: "+cause.Error())
	for _, sub := range subs {
		sub.send(Reply{Err: e, Final: true})
	}
	wake(subs)
}

func (r *run) status(ctx context.Context, state a2a.TaskState, text string) error {
	return r.emit(ctx, change{state: state, text: text})
}

func (r *run) artifact(ctx context.Context, a a2a.Artifact, appendParts, last bool) error {
	if err := a.Validate(); err != nil {
		return err
	}
	// The handler keeps its value; the task gets its own.
	return r.emit(ctx, change{artifact: a.Clone(), append: appendParts, last: last})
}

// change is an event a handler asks for: a status (state, with an
// optional message's text) or, when artifact is set, an artifact the task
// owns, with its append and lastChunk.
type change struct {
	state        a2a.TaskState
	text         string
	artifact     *a2a.Artifact
	append, last bool
}

// apply makes ch's change to t, a copy of the snapshot whose slices and
// pointers are shared with it (it replaces, never changes in place, what
// it alters), and to life. It returns the event, whether it ends the
// turn, or an error that refuses it.
func (r *run) apply(ch change, t *a2a.Task, life *tasklife.Task) (event, bool, error) {
	if own := ch.artifact; own != nil {
		merged := false
		if ch.append {
			for i := range t.Artifacts {
				if t.Artifacts[i].ArtifactID != own.ArtifactID {
					continue
				}
				if !merged {
					t.Artifacts = slices.Clone(t.Artifacts)
				}
				t.Artifacts[i].Parts = append(slices.Clip(t.Artifacts[i].Parts), own.Parts...)
				merged = true
			}
		}
		if !merged {
			t.Artifacts = append(slices.Clip(t.Artifacts), *own)
		}
		return event{artifact: own, append: ch.append, last: ch.last}, false, nil
	}
	step, err := life.Observe(ch.state)
	if err != nil {
		return event{}, false, err
	}
	st := &a2a.TaskStatus{State: ch.state, Timestamp: r.s.timestamp()}
	if ch.text != "" {
		msg := r.s.agentMessage(t, ch.text)
		st.Message = &msg
		t.History = append(slices.Clip(t.History), msg)
	}
	t.Status = st
	return event{status: st}, step.Class().StreamFinal(), nil
}

func (r *run) handover(ctx context.Context, agentID string) error {
	if agentID == "" {
		return errors.New("agent: handover needs an agent id")
	}
	if r.ids == tasklife.ResponderIDs {
		return ErrNoHandover
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
// stream (and the task to every call waiting for the end) and ends the
// handler's context. It reports false, doing nothing, when the turn already
// ended.
func (r *run) cancelTurn(mark func() (taskstore.Record, error)) (taskstore.Record, bool, error) {
	r.order.Lock()
	defer r.order.Unlock()
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return taskstore.Record{}, false, nil
	}
	life := r.life
	r.mu.Unlock()
	if _, err := life.Cancel(false); err != nil {
		return taskstore.Record{}, false, err
	}
	rec, err := mark()
	if err != nil {
		return taskstore.Record{}, false, err
	}
	r.mu.Lock()
	r.life = life
	r.over = true
	r.task = rec.Task
	// The store encoded the canceled task itself.
	r.enc = nil
	subs := r.subs
	responder, push := r.responder, r.push
	r.mu.Unlock()
	r.freeSlot()
	ev := &a2a.TaskStatusUpdateEvent{TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: rec.Task.Status}
	item := &a2a.StreamResponse{Payload: ev}
	r.s.notify(push, item)
	deliver(subs, item, true, rec.Task, nil, responder)
	r.cancel()
	return rec, true, nil
}
