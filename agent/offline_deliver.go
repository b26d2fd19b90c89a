package agent

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
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
// opens, Idle passes, or, with a queue that is an inbox.Notifier (shared
// with other agents), another agent added records while this one accepts
// work.
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
	var added <-chan struct{} // nil (never ready) without a Notifier
	if n, ok := o.cfg.Queue.(inbox.Notifier); ok {
		added = n.Notify()
	}
	cause := wokenAtStart
	for ctx.Err() == nil {
		o.cause.Store(int32(cause))
		more, err := o.round(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Error("agent: offline queue", "err", err)
			more = false
		}
		if o.roundEnded != nil {
			o.roundEnded(cause)
		}
		if more {
			continue
		}
		cause = o.sleep(ctx, added)
	}
}

// wakeCause is what started a round of the delivery loop.
type wakeCause int32

const (
	wokenAtStart wakeCause = iota // the loop started
	wokenByKick                   // SetAwake
	wokenByTimer                  // Idle passed, or a window opened
	wokenByAdded                  // another agent added records (inbox.Notifier)
	wokenByStop                   // the loop stops
)

// sleep waits until the loop is woken (SetAwake), the next window opens,
// Idle passes, the loop stops, or added receives a value (another agent
// sharing the queue added records) while the agent accepts work, and
// returns which. A value received while it does not is dropped: its wake,
// or the window's opening, delivers the whole queue.
func (o *Offline) sleep(ctx context.Context, added <-chan struct{}) wakeCause {
	s := o.server
	wait := o.cfg.Idle
	now := s.now()
	if sc := o.cfg.Schedule; sc != nil && !o.accepting(now) {
		wait = min(wait, sc.NextOpen(now).Sub(now)+time.Millisecond)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-o.kick:
			return wokenByKick
		case <-t.C:
			return wokenByTimer
		case <-ctx.Done():
			return wokenByStop
		case <-added:
			if o.accepting(s.now()) {
				return wokenByAdded
			}
		}
	}
}

// round purges expired records and, when the agent accepts work, delivers
// the queue until it is empty, the agent sleeps again or the loop stops. It
// reports whether there may be more to do at once.
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
	return len(expired) == o.cfg.DeliveryBatch, o.deliverAll(ctx)
}

// ready is a record taken for delivery, its request decoded and validated.
type ready struct {
	rec      inbox.Record
	req      *a2a.SendMessageRequest
	qm       QueuedMessage
	until    time.Time // how long the replay cache keeps qm.ReplayKey
	replayed bool
}

// deliverAll delivers the queue in two stages: one takes the next batch
// (read, validated in parallel, taken with its replay keys in one
// transaction) while the other hands the batch before it to the handler,
// one turn after the other, in order. When the loop stops, what was taken
// but not handed goes back to the queue (Store.Untake).
//
// Each batch is read after the last Seq of the one before: every record
// of a batch leaves the queue (taken, removed) or was missing when taken,
// that is taken or held at that moment by another agent sharing the
// queue (or canceled). A batch that comes back all missing is not read
// again, so a pass never spins on records another agent holds: it goes on
// with the records after them, and ends when the queue has no more. A
// record another agent puts back (Untake) comes with a notification
// (inbox.Notifier), which starts another pass from the first record.
func (o *Offline) deliverAll(ctx context.Context) error {
	s := o.server
	batches := make(chan []ready, 1)
	prepCtx, stopPrep := context.WithCancel(ctx)
	defer stopPrep()
	var prepErr error
	go func() {
		defer close(batches)
		var after uint64
		for prepCtx.Err() == nil && o.accepting(s.now()) {
			b, last, more, err := o.prepare(prepCtx, s.now(), after)
			after = max(after, last)
			if err != nil {
				prepErr = err
				return
			}
			if len(b) > 0 {
				select {
				case batches <- b:
				case <-prepCtx.Done():
					o.untake(b)
					return
				}
			}
			if !more {
				return
			}
		}
	}()
	var err error
	for b := range batches {
		for i := range b {
			if err == nil && ctx.Err() == nil {
				var handed bool
				handed, err = o.handReady(ctx, &b[i])
				if handed {
					continue
				}
			}
			// Stopping, or the handler could not be reached: the rest goes
			// back to the queue.
			stopPrep()
			o.untake(b[i:])
			break
		}
	}
	if err == nil {
		err = prepErr
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// handReady hands one taken record to the handler (a replay is recorded
// REJECTED instead). It reports whether the record was dealt with; false
// means its turn never started and the record must go back.
func (o *Offline) handReady(ctx context.Context, r *ready) (bool, error) {
	if r.replayed {
		o.record(ctx, r.rec, r.req, a2a.TaskStateRejected, "refused at delivery: a replay of an object already delivered")
		return true, nil
	}
	o.mu.Lock()
	t := o.taken[r.rec.TaskID]
	canceled := t != nil && t.canceled
	if t != nil {
		t.handing = true
	}
	o.mu.Unlock()
	if canceled {
		o.forget(r.rec.TaskID)
		return true, nil
	}
	err := o.hand(ctx, r.rec, r.req, r.qm)
	o.forget(r.rec.TaskID)
	if err == nil {
		return true, nil
	}
	// The turn started if its task exists: it is delivered, whatever
	// happened to the wait for its end.
	if _, gerr := o.server.store.Get(context.WithoutCancel(ctx), r.rec.TaskID); gerr == nil {
		return true, nil
	}
	return false, err
}

// forget drops a taken record whose turn started (or never will).
func (o *Offline) forget(taskID string) {
	o.mu.Lock()
	delete(o.taken, taskID)
	o.mu.Unlock()
}

// untake puts records taken but never handed back in the queue (those
// CancelTask stopped excepted).
func (o *Offline) untake(b []ready) {
	recs := make([]inbox.Record, 0, len(b))
	keys := make([]string, 0, len(b))
	o.mu.Lock()
	for _, r := range b {
		t := o.taken[r.rec.TaskID]
		delete(o.taken, r.rec.TaskID)
		if r.replayed || (t != nil && t.canceled) {
			continue
		}
		recs = append(recs, r.rec)
		keys = append(keys, r.qm.ReplayKey)
	}
	o.mu.Unlock()
	if len(recs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.cfg.Queue.Untake(ctx, recs, keys); err != nil {
		o.server.log.Error("agent: offline queue: putting back records taken but not delivered", "records", len(recs), "err", err)
	}
}

// prepare reads the batch of records after Seq after, validates it at now
// (in parallel), removes the records that fail and takes the others with
// their replay keys in one transaction. last is the last Seq read (0 when
// none was); more reports whether the queue may hold more after it.
func (o *Offline) prepare(ctx context.Context, now time.Time, after uint64) (b []ready, last uint64, more bool, err error) {
	batch, err := o.cfg.Queue.Next(ctx, after, o.cfg.DeliveryBatch)
	if err != nil || len(batch) == 0 {
		return nil, 0, false, err
	}
	last = batch[len(batch)-1].Seq
	more = len(batch) == o.cfg.DeliveryBatch
	checked := make([]ready, len(batch))
	reasons := make([]string, len(batch))
	o.validate(ctx, batch, now, checked, reasons)
	var ok []ready
	var takes []inbox.Taken
	var bad []inbox.Record
	why := map[uint64]string{}
	for i, rec := range batch {
		if reasons[i] != "" {
			bad = append(bad, rec)
			why[rec.Seq] = reasons[i]
			continue
		}
		ok = append(ok, checked[i])
		takes = append(takes, inbox.Taken{Seq: rec.Seq, ReplayKey: checked[i].qm.ReplayKey, Until: checked[i].until})
	}
	if len(bad) > 0 {
		if err := o.drain(ctx, bad, func(r inbox.Record) string { return why[r.Seq] }, a2a.TaskStateRejected); err != nil {
			return nil, last, false, err
		}
	}
	if len(takes) == 0 {
		return nil, last, more, nil
	}
	// Known as taken before they leave the queue, so that GetTask never
	// finds them in neither place.
	o.mu.Lock()
	for _, r := range ok {
		o.taken[r.rec.TaskID] = &takenRecord{rec: r.rec, msg: r.req.Message, push: queuedPush(r.req, r.rec.TaskID)}
	}
	o.mu.Unlock()
	replayed, missing, err := o.cfg.Queue.Take(ctx, takes)
	if err != nil {
		o.mu.Lock()
		for _, r := range ok {
			delete(o.taken, r.rec.TaskID)
		}
		o.mu.Unlock()
		return nil, last, false, err
	}
	out := ok[:0]
	o.mu.Lock()
	for i, r := range ok {
		if missing[i] || replayed[i] {
			delete(o.taken, r.rec.TaskID)
		}
		if missing[i] {
			// Canceled meanwhile (CancelTask removed it), or taken by
			// another agent sharing the queue.
			continue
		}
		r.replayed = replayed[i]
		out = append(out, r)
	}
	o.mu.Unlock()
	return out, last, more, nil
}

// validate decodes and checks each record of a batch at now, on up to
// GOMAXPROCS goroutines: checked[i] is the record ready to take, or
// reasons[i] says why it is refused. A Validator's replay key is kept until
// the object's expiry, at most the record's.
func (o *Offline) validate(ctx context.Context, batch []inbox.Record, now time.Time, checked []ready, reasons []string) {
	one := func(i int) {
		rec := batch[i]
		if !rec.Expires.After(now) {
			reasons[i] = "expired in the offline queue before delivery"
			return
		}
		req, err := decodeQueued(o.server.limits, rec.Payload)
		if err != nil {
			reasons[i] = "the queued record cannot be read: " + err.Error()
			return
		}
		qm := QueuedMessage{Peer: rec.Peer, TaskID: rec.TaskID, ContextID: rec.ContextID, Message: req.Message,
			Enqueued: rec.Enqueued, Expires: rec.Expires}
		key, until, err := o.cfg.Validator.Validate(ctx, qm, now)
		if err != nil {
			reasons[i] = "refused at delivery: " + err.Error()
			return
		}
		if until.IsZero() || until.After(rec.Expires) {
			until = rec.Expires
		}
		qm.ReplayKey = key
		checked[i] = ready{rec: rec, req: req, qm: qm, until: until}
	}
	workers := min(runtime.GOMAXPROCS(0), len(batch))
	if workers <= 1 {
		for i := range batch {
			one(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(batch); i = int(next.Add(1) - 1) {
				one(i)
			}
		}()
	}
	wg.Wait()
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
		o.record(ctx, rec, req, a2a.TaskStateRejected, "refused at delivery: "+sink.err.Error())
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
		req, _ := decodeQueued(o.server.limits, r.Payload)
		o.record(ctx, r, req, state, why(r))
	}
	return nil
}

// record gives a record that was not delivered its final state: a new
// task is stored in that state, with the message, the reason and the push
// config the message carried, for GetTask, and that final status is
// pushed to the config's webhook as a CancelTask of a task with no turn
// pushes it; the task of a resume is left as it stands. req is the
// record's request (nil when it cannot be read).
func (o *Offline) record(ctx context.Context, r inbox.Record, req *a2a.SendMessageRequest, state a2a.TaskState, reason string) {
	var msg *a2a.Message
	if req != nil {
		msg = req.Message
	}
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
	// The task is its sender's, as it would have been had the message
	// been delivered.
	created := taskstore.Record{Task: task, MessageIDs: ids, Principal: r.Peer}
	if cfg := queuedPush(req, r.TaskID); cfg != nil && s.push != nil && cfg.ID != "" && s.checkPushConfig(cfg) == nil {
		created.PushConfigs = []a2a.TaskPushNotificationConfig{*cfg}
	}
	if _, err := s.store.Create(ctx, created); err != nil {
		if !errors.Is(err, taskstore.ErrExists) {
			s.log.Error("agent: offline queue: recording an undelivered message", "task", r.TaskID, "err", err)
		}
		return
	}
	ev := &a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Status: task.Status}
	s.notify(created.PushConfigs, &a2a.StreamResponse{Payload: ev})
}

// queuedPush returns the push-notification config of a queued request
// (nil for none), its taskId set to the record's task. The server gave it
// its id before queuing it (Server.send).
func queuedPush(req *a2a.SendMessageRequest, taskID string) *a2a.TaskPushNotificationConfig {
	if req == nil || req.Configuration == nil || req.Configuration.TaskPushNotificationConfig == nil {
		return nil
	}
	cfg := req.Configuration.TaskPushNotificationConfig.Clone()
	cfg.TaskID = taskID
	return cfg
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
// it to caller: SUBMITTED since it was queued, with its message.
func (s *Server) queuedTask(ctx context.Context, caller Caller, id string) (a2a.Task, bool) {
	rec, msg, _, ok := s.queued(ctx, caller, id)
	if !ok {
		return a2a.Task{}, false
	}
	return submitted(rec, msg), true
}

// queued finds a task still in the offline queue (or taken from it, its
// turn not started): its record, its message and the push-notification
// config the message carries (nil for none), its taskId set. The task of
// a message another caller queued is not found: its sender (inbox.Record's
// Peer) is the principal its task will have.
func (s *Server) queued(ctx context.Context, caller Caller, id string) (inbox.Record, *a2a.Message, *a2a.TaskPushNotificationConfig, bool) {
	o := s.offline
	if o == nil || o.cfg.Queue == nil {
		return inbox.Record{}, nil, nil, false
	}
	o.mu.Lock()
	tr := o.taken[id]
	var taken takenRecord
	if tr != nil && !tr.canceled {
		taken = *tr
	}
	o.mu.Unlock()
	if taken.msg != nil {
		if !visible(taken.rec.Peer, caller) {
			return inbox.Record{}, nil, nil, false
		}
		return taken.rec, taken.msg, taken.push, true
	}
	rec, ok, err := o.cfg.Queue.Lookup(ctx, id)
	if err != nil || !ok || !visible(rec.Peer, caller) {
		return inbox.Record{}, nil, nil, false
	}
	var msg *a2a.Message
	var push *a2a.TaskPushNotificationConfig
	if req, err := decodeQueued(s.limits, rec.Payload); err == nil {
		msg, push = req.Message, queuedPush(req, rec.TaskID)
	}
	return rec, msg, push, true
}

// submitted is a queued record's task as GetTask shows it: SUBMITTED since
// it was queued, with its message.
func submitted(rec inbox.Record, msg *a2a.Message) a2a.Task {
	t := a2a.Task{ID: rec.TaskID, ContextID: rec.ContextID,
		Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: rec.Enqueued.UTC().Format(time.RFC3339Nano)}}
	if msg != nil {
		t.History = []a2a.Message{*msg}
	}
	return t
}

// cancelQueued cancels a task still in the offline queue, queued by a
// sender caller may see as its own (queued): its record is removed, never
// delivered, and the task is stored CANCELED.
func (s *Server) cancelQueued(ctx context.Context, caller Caller, id string) (a2a.Task, bool) {
	o := s.offline
	if o == nil || o.cfg.Queue == nil {
		return a2a.Task{}, false
	}
	o.mu.Lock()
	tr := o.taken[id]
	if tr != nil && !visible(tr.rec.Peer, caller) {
		o.mu.Unlock()
		return a2a.Task{}, false
	}
	stop := tr != nil && !tr.handing && !tr.canceled
	if stop {
		tr.canceled = true
	}
	o.mu.Unlock()
	if stop {
		// Taken from the queue, its turn not started: it never will be.
		o.record(ctx, tr.rec, takenRequest(tr), a2a.TaskStateCanceled, "canceled while queued")
		got, err := s.store.Get(ctx, id)
		return got.Task, err == nil
	}
	rec, ok, err := o.cfg.Queue.Lookup(ctx, id)
	if err != nil || !ok || !visible(rec.Peer, caller) {
		return a2a.Task{}, false
	}
	removed, err := o.cfg.Queue.Remove(ctx, []uint64{rec.Seq})
	if err != nil || len(removed) == 0 {
		return a2a.Task{}, false
	}
	req, _ := decodeQueued(s.limits, rec.Payload)
	o.record(ctx, rec, req, a2a.TaskStateCanceled, "canceled while queued")
	got, err := s.store.Get(ctx, id)
	if err != nil {
		return a2a.Task{}, false
	}
	return got.Task, true
}

// takenRequest is what record needs of a taken record's request: its
// message and push config.
func takenRequest(tr *takenRecord) *a2a.SendMessageRequest {
	req := &a2a.SendMessageRequest{Message: tr.msg}
	if tr.push != nil {
		req.Configuration = &a2a.SendMessageConfiguration{TaskPushNotificationConfig: tr.push}
	}
	return req
}
