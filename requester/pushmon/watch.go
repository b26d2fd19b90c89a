package pushmon

import (
	"context"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/pushbind"
)

// Source says how an Update reached the Monitor.
type Source uint8

// The sources of updates.
const (
	// FromSend: the task in the SendMessage reply.
	FromSend Source = iota + 1
	// FromPush: a push the Receiver accepted.
	FromPush
	// FromPoll: a task read by a reconciliation poll (GetTask) whose status
	// had not reached the Watch yet.
	FromPoll
)

// String names the source.
func (s Source) String() string {
	switch s {
	case FromSend:
		return "send"
	case FromPush:
		return "push"
	case FromPoll:
		return "poll"
	}
	return "unknown"
}

// Update is one thing a Watch learned about its task.
type Update struct {
	// Item is a task (from the send or a poll), or a pushed status update,
	// artifact update, message or task. It belongs to the receiver of the
	// Update.
	Item *a2a.StreamResponse
	// Source is how it came.
	Source Source
	// At is when the Monitor took it (Config.Now).
	At time.Time
}

// Terminal reports whether the update carries a terminal task state
// (COMPLETED, FAILED, CANCELED, REJECTED).
func (u Update) Terminal() bool { return terminal(stateOf(u.Item)) }

/*
Watch is one task that a Monitor tracks, from Send until the task ends.

Updates yields what the Watch learns, in the order the Monitor took it: the
task of the SendMessage reply, then pushes and polled tasks. A poll that
shows nothing new yields nothing, nor does a reply or poll whose status is
older than one pushed already; a push repeating the last status is
acknowledged and dropped. The channel holds Config.QueueSize updates and
one more for the terminal one, which is never dropped; while it is full,
pushes are answered 503 and polled updates wait for a later poll. It is
closed when the Watch ends. (With Config.OnUpdate set, updates go to the
callback instead and the channel only closes.)

The Watch ends once the task's terminal state is observed (Err nil), found
with no live channel bound (Err is a *pushbind.OrphanError), or when the
task is gone (ErrTaskLost), the Watch is stopped (ErrWatchStopped) or the
Monitor closed (ErrMonitorClosed). Its methods are safe for concurrent use.
*/
type Watch struct {
	m       *Monitor
	updates chan Update
	done    chan struct{}

	// Guarded by m.mu.
	taskID   string // known once the send names it (MQTT) or the reply does
	pushedID string // the task of pushes that came before the reply (HTTP)
	tokens   []string
	configID string // the config whose delivery report counts
	// canRegister: a config may be (re-)registered: the card permits it and
	// the agent did not refuse push notifications.
	canRegister  bool
	reregistered bool
	lastReport   DeliveryReport
	bound        bool // b is set: the send's reply came
	b            pushbind.Binding
	early        []early
	start        time.Time
	task         *a2a.Task // the latest known task (a private copy)
	reply        *requester.Result
	lastKey      string // state and timestamp of the last status yielded
	pollDue      bool
	reregDue     bool
	busy         bool
	tracked      bool // counted in Monitor.active
	terminalSent bool
	ended        bool
	err          error
}

// early is a receiver answer taken before the send's reply created the
// binding.
type early struct {
	code  int
	state a2a.TaskState
	at    time.Time
}

// TaskID returns the task watched.
func (w *Watch) TaskID() string {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.taskID
}

// Updates returns the updates of the task, in order; the channel is closed
// when the Watch ends.
func (w *Watch) Updates() <-chan Update { return w.updates }

// Done is closed when the Watch ends.
func (w *Watch) Done() <-chan struct{} { return w.done }

// Err returns why the Watch ended once Done is closed (nil: the terminal
// state was observed through a live channel), and nil before. A
// *pushbind.OrphanError (errors.Is(err, pushbind.ErrTaskOrphaned)) says the
// terminal state was reached with no live channel bound; the task itself
// is still in Task.
func (w *Watch) Err() error {
	select {
	case <-w.done:
	default:
		return nil
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.err
}

// Task returns a copy of the latest task known: the send's reply, the last
// poll, with the statuses and artifacts pushed since applied; the final
// task once Done is closed. Nil when the agent answered the send with a
// message.
func (w *Watch) Task() *a2a.Task {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.task == nil {
		return nil
	}
	return w.task.Clone()
}

// Reply returns the SendMessage reply.
func (w *Watch) Reply() *requester.Result {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.reply
}

// Binding returns the state of the task's delivery binding
// (docs/protocol.md §8.3): Settled or Orphaned once the task ended, Unbound
// when no config could be registered; the zero state when the send was
// answered with a message, or the Watch ended before the reply.
func (w *Watch) Binding() fsm.PushBindingState {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.b.State()
}

// Wait waits until the Watch ends, and returns the final task and Err.
func (w *Watch) Wait(ctx context.Context) (*a2a.Task, error) {
	select {
	case <-w.done:
		return w.Task(), w.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stop ends the Watch with ErrWatchStopped: the task is no longer polled.
// Its config stays registered at the agent; pushes still coming are
// acknowledged and dropped while the Monitor remembers the task (the last
// Config.MaxTasks ended), then answered 404.
func (w *Watch) Stop() {
	m := w.m
	m.mu.Lock()
	if !w.ended {
		m.end(w, ErrWatchStopped)
	}
	m.unlock()
}

// emit queues u, keeping the last slot for the terminal update; it reports
// false when the queue is full.
func (w *Watch) emit(u Update, final bool) bool {
	if w.ended || w.terminalSent {
		return true
	}
	m := w.m
	if m.cfg.OnUpdate != nil {
		if final {
			w.terminalSent = true
		}
		m.outbox = append(m.outbox, func() { m.cfg.OnUpdate(w, u) })
		return true
	}
	if final {
		w.terminalSent = true
		w.updates <- u // the reserved slot
		return true
	}
	if len(w.updates) >= m.cfg.QueueSize {
		return false
	}
	w.updates <- u
	return true
}
