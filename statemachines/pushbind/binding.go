package pushbind

import (
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// Binding is the delivery-channel state of one task. Create it with New and
// keep one per taskId; it is a small value, cheap to copy. It is not
// safe for concurrent use.
type Binding struct {
	taskID string
	cfg    Config
	state  fsm.PushBindingState
	// via is the state an orphan was found in.
	via fsm.PushBindingState

	webhookAvailable bool
	pollPrimary      bool

	// start is when the binding was created.
	start time.Time
	// lastIssued is when the reconciliation timer last started: creation,
	// or the last PollNow.
	lastIssued time.Time
	// lastPoll is when the last GetTask answer arrived (zero: never).
	lastPoll time.Time
	// lastAck is when the receiver last acknowledged a push; lastAckState
	// is the status that push carried.
	lastAck      time.Time
	lastAckState fsm.TaskState
	// window is the end of the expected transition window (zero: none
	// running).
	window time.Time
}

// New returns the binding of a task created at now: Unbound, polling
// primary, the reconciliation timer running.
func New(taskID string, cfg Config, now time.Time) Binding {
	return Binding{taskID: taskID, cfg: cfg, state: fsm.PushBindingInitial, pollPrimary: true, start: now, lastIssued: now}
}

// TaskID returns the task the binding belongs to.
func (b *Binding) TaskID() string { return b.taskID }

// State returns the binding's state.
func (b *Binding) State() fsm.PushBindingState { return b.state }

// PollPrimary reports whether polling is the primary channel (the short
// reconciliation interval is in force).
func (b *Binding) PollPrimary() bool { return b.pollPrimary }

// WebhookAvailable reports whether the latest card read allows a
// registration: the card's capabilities.pushNotifications was true and the
// client runs a receiver. When false, no (re-)registration may be sent.
func (b *Binding) WebhookAvailable() bool { return b.webhookAvailable }

// NextPoll returns when the reconciliation timer fires next, or the zero
// time once the binding has ended.
func (b *Binding) NextPoll() time.Time {
	if b.state.IsEnded() {
		return time.Time{}
	}
	return b.lastIssued.Add(b.interval())
}

// WindowDeadline returns when the expected transition window runs out, or
// the zero time when none is running.
func (b *Binding) WindowDeadline() time.Time {
	if b.state != fsm.PushBindingStateRegistered && b.state != fsm.PushBindingStateAcknowledged {
		return time.Time{}
	}
	return b.window
}

// Err returns an *OrphanError once the binding is Orphaned, nil otherwise.
func (b *Binding) Err() error {
	if b.state != fsm.PushBindingStateOrphaned {
		return nil
	}
	return &OrphanError{TaskID: b.taskID, Via: b.via}
}

func (b *Binding) interval() time.Duration {
	if b.pollPrimary {
		return b.cfg.PollInterval
	}
	return b.cfg.ReconcileInterval
}

// Capability is what CapabilityRead learned: whether the agent takes push
// notifications and whether the client can receive them.
type Capability struct {
	// PushNotifications is the agent card's
	// capabilities.pushNotifications flag.
	PushNotifications bool
	// Receiver says the client runs a receiver for this task's pushes.
	Receiver bool
}

// CapabilityRead applies a read of the agent card and of the client's own
// receiver (c). Permission only: it never creates, changes or ends a
// binding. In Unbound it asks to register with the send (RegisterWithSend)
// when both c.PushNotifications and c.Receiver hold, and to poll in any
// case.
func (b *Binding) CapabilityRead(c Capability, now time.Time) (Decision, error) {
	d := b.begin(now)
	b.webhookAvailable = c.PushNotifications && c.Receiver
	var held fsm.PushBindingGuardSet
	if b.webhookAvailable {
		held = held.With(fsm.PushBindingGuardWebhookAvailable)
	}
	return b.finish(d, b.fire(&d, fsm.PushBindingEventCapabilityRead, held, now))
}

// Registered applies an accepted TaskPushNotificationConfig for this task.
// late says the task had already left SUBMITTED when the registration was
// accepted: a partial, best-effort binding (docs/protocol.md §8.5, mode 2),
// which stays suspect until the receiver acknowledges a push. A config
// carried in the SendMessage that created the task is never late.
func (b *Binding) Registered(late bool, now time.Time) (Decision, error) {
	d := b.begin(now)
	ev := fsm.PushBindingEventConfigRegistered
	if late {
		ev = fsm.PushBindingEventConfigRegisteredLate
	}
	return b.finish(d, b.fire(&d, ev, 0, now))
}

/*
Receiver applies the receiver's answer to a push for this task: code is the
HTTP status it answered (0 when it did not answer), pushed the task state the
push carried. A 2xx acknowledges the binding; for a terminal state it also
means the terminal state was observed. 404, 410 and any other 4xx make the
binding dead (docs/protocol.md §8.5, mode 3); a 5xx or no answer makes it
suspect.
*/
func (b *Binding) Receiver(code int, pushed a2a.TaskState, now time.Time) (Decision, error) {
	d := b.begin(now)
	st, _ := fsm.TaskStateFromWire(string(pushed))
	var ev fsm.PushBindingEvent
	var held fsm.PushBindingGuardSet
	switch {
	case code >= 200 && code < 300 && st.Terminal():
		ev = fsm.PushBindingEventTerminalObserved
	case code >= 200 && code < 300:
		ev = fsm.PushBindingEventReceiver2xx
	case code == 404:
		ev = fsm.PushBindingEventReceiver404
	case code == 410:
		ev = fsm.PushBindingEventReceiver410
	default:
		ev = fsm.PushBindingEventReceiverOther
		if code >= 400 && code < 500 {
			held = held.With(fsm.PushBindingGuardClientError)
		}
	}
	err := b.fire(&d, ev, held, now)
	if err == nil && ev == fsm.PushBindingEventReceiver2xx {
		b.lastAck, b.lastAckState = now, st
	}
	return b.finish(d, err)
}

/*
Polled applies a GetTask answer for this task that arrived at now: state is
the task's status and statusTime its timestamp (zero when it has none).

A terminal state settles the binding when a live channel was bound when the
task reached it, and orphans it otherwise. Polling counts as live when it
was kept on schedule across the transition: this answer came no later than
the reconciliation interval that scheduled it, plus Grace, after the task
reached the terminal state (statusTime, but never earlier than the previous
answer, which still saw the task live; without a timestamp, the previous
answer or the binding's start). A client that polls on PollNow and on the
timer therefore never gets an orphan report; one whose polling lapsed does.
Timestamps are compared with the caller's clock: a server clock far behind
can only cause a false report, never hide an orphan.

A non-terminal state that the receiver should have been pushed more than
Grace ago, and did not acknowledge, makes a trusted webhook suspect
(PushMissed).
*/
func (b *Binding) Polled(state a2a.TaskState, statusTime time.Time, now time.Time) (Decision, error) {
	interval := b.interval() // the interval that scheduled this poll
	d := b.begin(now)
	st, _ := fsm.TaskStateFromWire(string(state))
	var ev fsm.PushBindingEvent
	var held fsm.PushBindingGuardSet
	if st.Terminal() {
		ev = fsm.PushBindingEventPollTerminal
		reached := statusTime
		if prev := b.lastPoll; reached.IsZero() || reached.Before(prev) {
			reached = prev
		}
		if reached.IsZero() {
			reached = b.start
		}
		if now.Sub(reached) <= interval+b.cfg.Grace {
			held = held.With(fsm.PushBindingGuardPollingLive)
		}
	} else {
		ev = fsm.PushBindingEventPollResult
		if st != fsm.TaskStateSubmitted && st != b.lastAckState && !statusTime.IsZero() && now.Sub(statusTime) > b.cfg.Grace {
			held = held.With(fsm.PushBindingGuardPushMissed)
		}
	}
	err := b.fire(&d, ev, held, now)
	if err == nil {
		b.lastPoll = now
	}
	return b.finish(d, err)
}

// Observed applies the terminal state reaching the client through a live
// channel other than the receiver: a stream item or a blocking SendMessage
// reply. (A terminal push the receiver acknowledged is Receiver with a 2xx.)
func (b *Binding) Observed(now time.Time) (Decision, error) {
	d := b.begin(now)
	return b.finish(d, b.fire(&d, fsm.PushBindingEventTerminalObserved, 0, now))
}

// Tick fires the timers that are due at now: the expected transition window
// (WindowElapsed) and the reconciliation timer (ReconcileTick, which asks to
// poll). Call it at Decision.Wake, or sooner; an early call does nothing.
func (b *Binding) Tick(now time.Time) (Decision, error) {
	d := b.begin(now)
	if b.state.IsEnded() {
		return b.finish(d, nil)
	}
	if next := b.NextPoll(); !now.Before(next) {
		if err := b.fire(&d, fsm.PushBindingEventReconcileTick, 0, now); err != nil {
			return b.finish(d, err)
		}
	}
	return b.finish(d, nil)
}
