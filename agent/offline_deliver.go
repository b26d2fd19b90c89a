package agent

import (
	"context"
	"errors"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// startOffline starts the delivery loop of a server with WithOffline.
func (s *Server) startOffline() {
	o := s.offline
	o.mu.Lock()
	if o.server != nil {
		o.mu.Unlock()
		s.log.Error("agent: an Offline serves one server: this one does not deliver its queue")
		s.offline = nil
		return
	}
	o.server = s
	o.mu.Unlock()
	if o.cfg.Queue == nil {
		close(o.stopped)
		return
	}
	go o.loop()
}

// stopOffline stops the delivery loop and waits for it.
func (s *Server) stopOffline() {
	o := s.offline
	if o == nil || o.server != s {
		return
	}
	o.mu.Lock()
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	o.mu.Unlock()
	<-o.stopped
}

// loop purges expired records and, while the agent accepts work, delivers
// the queue in order; it sleeps until woken (SetAwake), the next window
// opens, or Idle passes.
func (o *Offline) loop() {
	defer close(o.stopped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-o.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	s := o.server
	for ctx.Err() == nil {
		more, err := o.round(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Error("agent: offline queue", "err", err)
			more = false
		}
		if more {
			continue
		}
		wait := o.cfg.Idle
		now := s.now()
		if sc := o.cfg.Schedule; sc != nil && !o.accepting(now) {
			wait = min(wait, sc.NextOpen(now).Sub(now)+time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case <-o.kick:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// round purges expired records and, when the agent accepts work, delivers
// one batch. It reports whether there may be more to do at once.
func (o *Offline) round(ctx context.Context) (bool, error) {
	s := o.server
	now := s.now()
	expired, err := o.cfg.Queue.Expired(ctx, now, o.cfg.DeliveryBatch)
	if err != nil {
		return false, err
	}
	if len(expired) > 0 {
		if err := o.drain(ctx, expired, func(inbox.Record) string { return "expired in the offline queue before delivery" }, a2a.TaskStateFailed); err != nil {
			return false, err
		}
	}
	if !o.accepting(now) {
		return len(expired) == o.cfg.DeliveryBatch, nil
	}
	batch, err := o.cfg.Queue.Next(ctx, 0, o.cfg.DeliveryBatch)
	if err != nil || len(batch) == 0 {
		return len(expired) == o.cfg.DeliveryBatch, err
	}
	return true, o.deliver(ctx, batch, now)
}

// deliver validates a batch at now, removes the records that fail and
// takes the others, with their replay keys, in one transaction; then it
// hands each record taken that is not a replay to the handler, in order.
func (o *Offline) deliver(ctx context.Context, batch []inbox.Record, now time.Time) error {
	s := o.server
	type ready struct {
		rec inbox.Record
		req *a2a.SendMessageRequest
		qm  QueuedMessage
	}
	var ok []ready
	var takes []inbox.Taken
	var bad []inbox.Record
	reasons := map[uint64]string{}
	for _, rec := range batch {
		if !rec.Expires.After(now) {
			bad = append(bad, rec)
			reasons[rec.Seq] = "expired in the offline queue before delivery"
			continue
		}
		req, err := decodeQueued(s.limits, rec.Payload)
		if err != nil {
			bad = append(bad, rec)
			reasons[rec.Seq] = "the queued record cannot be read: " + err.Error()
			continue
		}
		qm := QueuedMessage{Peer: rec.Peer, TaskID: rec.TaskID, ContextID: rec.ContextID, Message: req.Message,
			Enqueued: rec.Enqueued, Expires: rec.Expires}
		key, until, err := o.cfg.Validator.Validate(ctx, qm, now)
		if err != nil {
			bad = append(bad, rec)
			reasons[rec.Seq] = "refused at delivery: " + err.Error()
			continue
		}
		if until.IsZero() || until.After(rec.Expires) {
			until = rec.Expires
		}
		qm.ReplayKey = key
		ok = append(ok, ready{rec: rec, req: req, qm: qm})
		takes = append(takes, inbox.Taken{Seq: rec.Seq, ReplayKey: key, Until: until})
	}
	if len(bad) > 0 {
		if err := o.drain(ctx, bad, func(r inbox.Record) string { return reasons[r.Seq] }, a2a.TaskStateRejected); err != nil {
			return err
		}
	}
	if len(takes) == 0 {
		return nil
	}
	replayed, missing, err := o.cfg.Queue.Take(ctx, takes)
	if err != nil {
		return err
	}
	for i, r := range ok {
		switch {
		case missing[i]:
			// Canceled meanwhile: CancelTask removed it.
			continue
		case replayed[i]:
			o.record(ctx, r.rec, r.req.Message, a2a.TaskStateRejected, "refused at delivery: a replay of an object already delivered")
			continue
		}
		if err := o.hand(ctx, r.rec, r.req, r.qm); err != nil {
			return err
		}
	}
	return nil
}

// hand runs a queued message as the sender would have, had the agent been
// awake: a new task under the ids the sender was given, or the resume of
// the task it named. It waits for a worker slot and for the turn to end (a
// terminal or interrupted state), so that queued messages run one after
// the other, in queue order: a queued resume finds the task its earlier
// queued message left waiting for input.
func (o *Offline) hand(ctx context.Context, rec inbox.Record, req *a2a.SendMessageRequest, qm QueuedMessage) error {
	s := o.server
	if req.Configuration != nil {
		cfg := *req.Configuration
		cfg.ReturnImmediately = false
		req.Configuration = &cfg
	}
	c := Call{Request: &jsonrpc.Request{Method: a2a.MethodSendMessage, Params: req}, IDs: tasklife.RequesterIDs,
		Caller: Caller{Subject: rec.Peer}, queued: &qm}
	var sink firstReply
	if err := s.send(ctx, c, req, false, &sink); err != nil {
		return err
	}
	o.mu.Lock()
	o.delivered++
	o.mu.Unlock()
	s.log.Info("agent: offline queue: delivered", "task", rec.TaskID, "peer", rec.Peer, "message", rec.MessageID, "replay_key", qm.ReplayKey)
	if sink.err != nil {
		o.record(ctx, rec, req.Message, a2a.TaskStateRejected, "refused at delivery: "+sink.err.Error())
	}
	return nil
}

// drain removes records without delivering them and records why on their
// task, so that the sender polling GetTask learns it.
func (o *Offline) drain(ctx context.Context, recs []inbox.Record, why func(inbox.Record) string, state a2a.TaskState) error {
	seqs := make([]uint64, len(recs))
	for i, r := range recs {
		seqs[i] = r.Seq
	}
	removed, err := o.cfg.Queue.Remove(ctx, seqs)
	if err != nil {
		return err
	}
	for _, r := range removed {
		var msg *a2a.Message
		if req, err := decodeQueued(o.server.limits, r.Payload); err == nil {
			msg = req.Message
		}
		o.record(ctx, r, msg, state, why(r))
	}
	return nil
}

// record gives a record that was not delivered its final state: a new
// task is stored in that state, with the message and the reason, for
// GetTask; the task of a resume is left as it stands.
func (o *Offline) record(ctx context.Context, r inbox.Record, msg *a2a.Message, state a2a.TaskState, reason string) {
	s := o.server
	// Counted once the outcome is stored, so that a reader of Stats finds
	// it with GetTask.
	defer func() {
		o.mu.Lock()
		o.drained++
		o.mu.Unlock()
	}()
	s.log.Info("agent: offline queue: record not delivered", "task", r.TaskID, "peer", r.Peer, "reason", reason)
	if _, err := s.store.Get(ctx, r.TaskID); err == nil || !errors.Is(err, taskstore.ErrNotFound) {
		return
	}
	task := a2a.Task{ID: r.TaskID, ContextID: r.ContextID}
	if msg != nil {
		task.History = []a2a.Message{*msg}
	}
	st := &a2a.TaskStatus{State: state, Timestamp: s.timestamp()}
	note := s.agentMessage(&task, reason)
	st.Message = &note
	task.Status = st
	var ids []string
	if msg != nil {
		ids = []string{msg.MessageID}
	}
	if _, err := s.store.Create(ctx, taskstore.Record{Task: task, MessageIDs: ids}); err != nil && !errors.Is(err, taskstore.ErrExists) {
		s.log.Error("agent: offline queue: recording an undelivered message", "task", r.TaskID, "err", err)
	}
}

// decodeQueued decodes a queued record's payload within the limits.
func decodeQueued(l jsonrpc.Limits, payload []byte) (*a2a.SendMessageRequest, error) {
	var req a2a.SendMessageRequest
	if err := req.UnmarshalJSON(payload); err != nil {
		return nil, err
	}
	if req.Message == nil {
		return nil, errors.New("no message")
	}
	if l.MaxParts > 0 && len(req.Message.Parts) > l.MaxParts {
		return nil, errors.New("too many parts")
	}
	return &req, nil
}

// firstReply is the sink of a delivery: it keeps the error of the first
// reply, if any.
type firstReply struct {
	n   int
	err *a2a.Error
}

func (f *firstReply) Send(_ context.Context, r Reply) error {
	if f.n == 0 {
		f.err = r.Err
	}
	f.n++
	return nil
}

// queuedTask returns a task still in the offline queue as GetTask shows
// it: SUBMITTED since it was queued, with its message.
func (s *Server) queuedTask(ctx context.Context, id string) (a2a.Task, bool) {
	o := s.offline
	if o == nil || o.cfg.Queue == nil {
		return a2a.Task{}, false
	}
	rec, ok, err := o.cfg.Queue.Lookup(ctx, id)
	if err != nil || !ok {
		return a2a.Task{}, false
	}
	t := a2a.Task{ID: rec.TaskID, ContextID: rec.ContextID,
		Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: rec.Enqueued.UTC().Format(time.RFC3339Nano)}}
	if req, err := decodeQueued(s.limits, rec.Payload); err == nil {
		t.History = []a2a.Message{*req.Message}
	}
	return t, true
}

// cancelQueued cancels a task still in the offline queue: its record is
// removed, never delivered, and the task is stored CANCELED.
func (s *Server) cancelQueued(ctx context.Context, id string) (a2a.Task, bool) {
	o := s.offline
	if o == nil || o.cfg.Queue == nil {
		return a2a.Task{}, false
	}
	rec, ok, err := o.cfg.Queue.Lookup(ctx, id)
	if err != nil || !ok {
		return a2a.Task{}, false
	}
	removed, err := o.cfg.Queue.Remove(ctx, []uint64{rec.Seq})
	if err != nil || len(removed) == 0 {
		return a2a.Task{}, false
	}
	var msg *a2a.Message
	if req, err := decodeQueued(s.limits, rec.Payload); err == nil {
		msg = req.Message
	}
	o.record(ctx, rec, msg, a2a.TaskStateCanceled, "canceled while queued")
	got, err := s.store.Get(ctx, id)
	if err != nil {
		return a2a.Task{}, false
	}
	return got.Task, true
}
