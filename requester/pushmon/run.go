package pushmon

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/internal/uuidv4"
)

// job is the I/O one Tick does for one watch.
type job struct {
	w      *Watch
	taskID string
	poll   bool
	// rereg is the config to register again, nil for none.
	rereg *a2a.TaskPushNotificationConfig
}

/*
Tick does what is due at Config.Now: it fires the bindings' timers (the
expected transition window, the reconciliation timer), then runs the polls
(GetTask) and the re-registrations they and earlier events asked for, at
most Config.MaxInFlight at once, and applies their answers. It returns once
they are done, with when the next Tick is due (the zero time when no task
is watched).

Run does the same on real timers, without waiting for the calls; a test
with a fake clock calls Tick itself.
A task for which Tick is not called on time has its polling lapse: a
terminal state it then finds late is an orphan unless the webhook carried
it (docs/protocol.md §8.5).
*/
func (m *Monitor) Tick(ctx context.Context) time.Time {
	var wg sync.WaitGroup
	m.tick(ctx, &wg)
	wg.Wait()
	return m.NextTick()
}

// tick fires the timers due and starts the jobs due, each counted in wg.
func (m *Monitor) tick(ctx context.Context, wg *sync.WaitGroup) {
	m.mu.Lock()
	now := m.cfg.Now()
	var jobs []job
	for _, w := range m.byTask {
		if !w.bound || w.ended {
			continue
		}
		if wake := w.wake(); !wake.IsZero() && !now.Before(wake) {
			m.apply(w, step(w.b.Tick(now)))
		}
		if j, ok := m.takeJob(w); ok {
			jobs = append(jobs, j)
		}
	}
	m.unlock()
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.sem <- struct{}{}
			defer func() { <-m.sem }()
			m.runJob(ctx, j)
		}()
	}
}

// takeJob takes the I/O due for w.
func (m *Monitor) takeJob(w *Watch) (job, bool) {
	if w.ended || w.busy || !(w.pollDue || w.reregDue) {
		return job{}, false
	}
	j := job{w: w, taskID: w.taskID, poll: w.pollDue}
	if w.reregDue {
		// Once per task: if this config dies too, polling carries the task.
		w.reregistered = true
		j.rereg = newConfig(w.taskID, m.cfg.ReceiverURL)
		// Pushes to it may come before its registration is answered.
		w.tokens = append(w.tokens, j.rereg.Token)
		m.byToken[j.rereg.Token] = w
	}
	w.pollDue, w.reregDue, w.busy = false, false, true
	return j, true
}

// runJob registers again and polls, as j says.
func (m *Monitor) runJob(ctx context.Context, j job) {
	w := j.w
	if j.rereg != nil {
		cctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
		got, err := m.c.CreateTaskPushNotificationConfig(cctx, j.rereg)
		cancel()
		m.mu.Lock()
		m.reregistered(w, j.rereg, got, err)
		if j.poll {
			w.pollDue = false // the poll below is the one asked for
		}
		ended := w.ended
		m.unlock()
		if ended {
			return
		}
	}
	if j.poll {
		cctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
		task, err := m.c.GetTask(cctx, &a2a.GetTaskRequest{ID: j.taskID})
		cancel()
		m.mu.Lock()
		m.polled(w, task, err)
		m.unlock()
	}
	m.mu.Lock()
	w.busy = false
	m.unlock()
}

// reregistered applies the answer to a re-registration.
func (m *Monitor) reregistered(w *Watch, sent, got *a2a.TaskPushNotificationConfig, err error) {
	if w.ended {
		return
	}
	if err != nil {
		m.log.Warn("pushmon: registering the push config again failed; the task is polled", "task", w.taskID, "err", err)
		delete(m.byToken, sent.Token)
		w.tokens = w.tokens[:len(w.tokens)-1]
		return
	}
	w.configID, w.lastReport = sent.ID, DeliveryReport{}
	if got != nil && got.ID != "" {
		w.configID = got.ID
	}
	late := w.task == nil || w.task.Status.State != a2a.TaskStateSubmitted
	m.apply(w, step(w.b.Registered(late, m.cfg.Now())))
}

// polled applies a GetTask answer: the task's state first (the poll is the
// reconciliation channel), then the delivery report of the current config.
func (m *Monitor) polled(w *Watch, task *a2a.Task, err error) {
	if w.ended {
		return
	}
	if err != nil {
		if errors.Is(err, a2a.ErrTaskNotFound) {
			m.end(w, fmt.Errorf("%w: task %s: %w", ErrTaskLost, w.taskID, err))
			return
		}
		m.log.Warn("pushmon: poll failed", "task", w.taskID, "err", err, "next", w.b.NextPoll())
		return
	}
	if task.ID != w.taskID {
		m.log.Warn("pushmon: GetTask answered another task", "task", w.taskID, "answered", task.ID)
		return
	}
	now := m.cfg.Now()
	final := terminal(task.Status.State)
	stale := w.task != nil && newer(w.task.Status, task.Status) // a push got here first
	if key := statusKey(task.Status); (key != w.lastKey && !stale) || final {
		if w.emit(Update{Item: &a2a.StreamResponse{Payload: task}, Source: FromPoll, At: now}, final) {
			w.lastKey = key
		}
	}
	m.merge(w, task)
	m.apply(w, step(w.b.Polled(task.Status.State, parseTime(task.Status.Timestamp), now)))
	if w.ended {
		return
	}
	r, ok := DeliveryReports(task)[w.configID]
	if !ok || r == w.lastReport {
		return
	}
	w.lastReport = r
	state := task.Status.State
	switch r.State {
	case ReportDead, ReportRefused:
		// The agent sends nothing more to this config: as if the receiver
		// had refused a push (docs/protocol.md §8.3, dead).
		code := r.Status
		if code < 400 || code > 499 {
			code = 410
		}
		m.apply(w, step(w.b.Receiver(code, state, now)))
	case ReportFailing, ReportOverflow:
		// Pushes not delivered, or dropped: suspect.
		code := r.Status
		if code < 500 {
			code = 0
		}
		m.apply(w, step(w.b.Receiver(code, state, now)))
	case ReportDelivered:
		// Only what reached this Monitor's Receiver acknowledges the
		// binding.
	default:
		m.log.Debug("pushmon: unknown delivery report state", "task", w.taskID, "state", r.State)
	}
}

/*
Run drives the Monitor in real time until ctx ends or the Monitor is
closed: it calls Tick whenever a binding's timer is due (by Config.Now) or
a push or Send asked for a poll or a registration. It returns ctx's error,
or ErrMonitorClosed.
*/
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	// The calls of one task never hold up the timers of the others: Run
	// does not wait for them (each task has one call in flight at most).
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx) // ends the calls in flight when Run returns
	defer cancel()
	for {
		m.tick(ctx, &wg)
		wait := time.Hour
		if next := m.NextTick(); !next.IsZero() {
			wait = max(next.Sub(m.cfg.Now()), 0)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.stop:
			return ErrMonitorClosed
		case <-m.kick:
		case <-t.C:
		}
	}
}

// NextTick returns when Tick is due next: the earliest binding timer, or
// Config.Now when a poll or registration waits; the zero time when no task
// is watched.
func (m *Monitor) NextTick() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	for _, w := range m.byTask {
		if !w.bound || w.ended {
			continue
		}
		wake := w.wake()
		if !w.busy && (w.pollDue || w.reregDue) {
			wake = m.cfg.Now()
		}
		if !wake.IsZero() && (next.IsZero() || wake.Before(next)) {
			next = wake
		}
	}
	return next
}

// Close ends every Watch with ErrMonitorClosed and stops Run. Pushes are
// answered 503 from then on.
func (m *Monitor) Close() {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.stop)
		for _, w := range m.watching() {
			m.end(w, ErrMonitorClosed)
		}
	}
	m.unlock()
}

// Len returns how many tasks are watched.
func (m *Monitor) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active
}

// watching lists the watches not ended, sent or still sending.
func (m *Monitor) watching() []*Watch {
	seen := map[*Watch]bool{}
	var out []*Watch
	for _, w := range m.byTask {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, w := range m.byToken {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// wake lets Run look again at what is due.
func (m *Monitor) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// unlock releases m.mu, lets Run look again at its timers (a change may
// have brought one closer) and hands what was queued to Config.OnUpdate.
func (m *Monitor) unlock() {
	m.mu.Unlock()
	m.wake()
	m.drain(false)
}

// drain calls the callbacks queued, in order, one at a time. With wait
// set it waits for another drainer to finish, so that what the caller
// queued has been handed over when it returns; without, it leaves them to
// that drainer (a callback calling the Monitor must not wait for itself).
func (m *Monitor) drain(wait bool) {
	if m.cfg.OnUpdate == nil {
		return
	}
	for {
		if wait {
			m.cbMu.Lock()
		} else if !m.cbMu.TryLock() {
			return
		}
		for {
			m.mu.Lock()
			batch := m.outbox
			m.outbox = nil
			m.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, f := range batch {
				f()
			}
		}
		m.cbMu.Unlock()
		m.mu.Lock()
		more := len(m.outbox) > 0
		m.mu.Unlock()
		if !more {
			return
		}
	}
}

// wake returns when w's binding timer fires next (zero: none).
func (w *Watch) wake() time.Time {
	next, win := w.b.NextPoll(), w.b.WindowDeadline()
	if next.IsZero() || (!win.IsZero() && win.Before(next)) {
		return win
	}
	return next
}

// newConfig returns a push-notification config for the receiver at url
// with a fresh id and a random token (256 bits).
func newConfig(taskID, url string) *a2a.TaskPushNotificationConfig {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &a2a.TaskPushNotificationConfig{ID: uuidv4.New(), TaskID: taskID, URL: url, Token: base64.RawURLEncoding.EncodeToString(b[:])}
}

// terminal reports whether s is COMPLETED, FAILED, CANCELED or REJECTED.
func terminal(s a2a.TaskState) bool {
	st, ok := fsm.TaskStateFromWire(string(s))
	return ok && st.Terminal()
}

// stateOf returns the task state an item carries ("" for none).
func stateOf(item *a2a.StreamResponse) a2a.TaskState {
	if item == nil {
		return ""
	}
	switch x := item.Payload.(type) {
	case *a2a.Task:
		if x.Status != nil {
			return x.Status.State
		}
	case *a2a.TaskStatusUpdateEvent:
		if x.Status != nil {
			return x.Status.State
		}
	}
	return ""
}

// statusKey identifies a status: its state and timestamp.
func statusKey(s *a2a.TaskStatus) string {
	if s == nil {
		return ""
	}
	return string(s.State) + "@" + s.Timestamp
}

// itemStatusKey returns the status key of an item that carries a status.
func itemStatusKey(item *a2a.StreamResponse) (string, bool) {
	switch x := item.Payload.(type) {
	case *a2a.Task:
		return statusKey(x.Status), true
	case *a2a.TaskStatusUpdateEvent:
		return statusKey(x.Status), true
	}
	return "", false
}

// parseTime reads a status timestamp (zero when absent or malformed).
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// newer reports whether status a is known to be newer than b.
func newer(a, b *a2a.TaskStatus) bool {
	if a == nil || b == nil {
		return false
	}
	ta, tb := parseTime(a.Timestamp), parseTime(b.Timestamp)
	return !ta.IsZero() && !tb.IsZero() && ta.After(tb)
}

// merge makes task the latest known, keeping a pushed status newer than
// its own.
func (m *Monitor) merge(w *Watch, task *a2a.Task) {
	t := task.Clone()
	if w.task != nil && newer(w.task.Status, t.Status) {
		t.Status = w.task.Status
	}
	w.task = t
}

// mergePush applies a pushed item to the latest known task.
func (m *Monitor) mergePush(w *Watch, taskID string, item *a2a.StreamResponse) {
	switch x := item.Payload.(type) {
	case *a2a.Task:
		m.merge(w, x)
	case *a2a.TaskStatusUpdateEvent:
		t := w.known(taskID, x.ContextID)
		if x.Status != nil && !newer(t.Status, x.Status) {
			t.Status = x.Status.Clone()
		}
	case *a2a.TaskArtifactUpdateEvent:
		t := w.known(taskID, x.ContextID)
		if x.Artifact == nil {
			return
		}
		for i := range t.Artifacts {
			if a := &t.Artifacts[i]; a.ArtifactID == x.Artifact.ArtifactID {
				if x.Append {
					a.Parts = append(a.Parts, x.Artifact.Clone().Parts...)
				} else {
					t.Artifacts[i] = *x.Artifact.Clone()
				}
				return
			}
		}
		t.Artifacts = append(t.Artifacts, *x.Artifact.Clone())
	}
}

// known returns the latest known task, making one from a push when none
// is known yet.
func (w *Watch) known(taskID, contextID string) *a2a.Task {
	if w.task == nil {
		w.task = &a2a.Task{ID: taskID, ContextID: contextID, Status: &a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
	}
	return w.task
}
