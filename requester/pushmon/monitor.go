package pushmon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/pushbind"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Defaults of the bounds in Config.
const (
	// DefaultMaxTasks is Config.MaxTasks when it is zero.
	DefaultMaxTasks = 1024
	// DefaultQueueSize is Config.QueueSize when it is zero.
	DefaultQueueSize = 64
	// DefaultMaxInFlight is Config.MaxInFlight when it is zero.
	DefaultMaxInFlight = 8
	// DefaultCallTimeout is Config.CallTimeout when it is zero.
	DefaultCallTimeout = 30 * time.Second
)

// Errors of the Monitor and its Watches.
var (
	// ErrTooManyTasks: Send refused a task because Config.MaxTasks tasks
	// are tracked already. Nothing was sent.
	ErrTooManyTasks = errors.New("pushmon: too many tasks tracked (Config.MaxTasks)")
	// ErrAlreadyWatched: Send was given a message for a task this Monitor
	// watches already; send it with the requester.Client instead (the
	// task's config stays bound).
	ErrAlreadyWatched = errors.New("pushmon: the task is watched already")
	// ErrConfigPresent: the request carries its own push-notification
	// config; Send registers its own and A2A v1.0 carries one per send.
	ErrConfigPresent = errors.New("pushmon: the request already carries a taskPushNotificationConfig")
	// ErrMonitorClosed ends the Watches of a closed Monitor, and Send on
	// one.
	ErrMonitorClosed = errors.New("pushmon: monitor closed")
	// ErrWatchStopped ends a Watch that was stopped.
	ErrWatchStopped = errors.New("pushmon: watch stopped")
	// ErrTaskLost ends a Watch whose task the agent no longer knows
	// (GetTask answered task_not_found) before its end was seen; the
	// agent's error is wrapped with it.
	ErrTaskLost = errors.New("pushmon: task lost before its end was observed")
)

// Config configures a Monitor.
type Config struct {
	// ReceiverURL is the webhook URL registered for every task: where the
	// Monitor's Receiver is served, as the agent reaches it. Required, an
	// absolute http or https URL.
	ReceiverURL string
	// Now is the clock of every timing (default time.Now). Run waits on
	// real timers for what Now says is due; with a fake clock, call Tick.
	Now func() time.Time
	// Timings are the binding's window, reconciliation intervals and
	// grace: PollInterval while polling is primary, ReconcileInterval while
	// the webhook is (docs/protocol.md §8.6). Zero: pushbind.DefaultConfig
	// (120 s, 15 s, 60 s, 10 s).
	Timings pushbind.Config
	// Card is the agent's card, when known: a card whose
	// capabilities.pushNotifications is not true forbids registering a
	// webhook (docs/protocol.md §8.1), and its tasks are polled only. Nil:
	// register, and fall back to polling if the agent answers
	// push_notification_not_supported.
	Card *a2a.AgentCard
	// MaxTasks bounds the tasks watched at once (Send returns
	// ErrTooManyTasks beyond), and the ended ones remembered so that late
	// pushes about them are acknowledged. Default DefaultMaxTasks (1024).
	MaxTasks int
	// QueueSize bounds the updates queued on a Watch and not read yet (the
	// terminal one always has a place). Default DefaultQueueSize (64).
	QueueSize int
	// MaxBodyBytes bounds the body of a push. Default DefaultMaxBodyBytes
	// (1 MiB).
	MaxBodyBytes int64
	// MaxInFlight bounds the polls and registrations in flight at once
	// (one per task at most). Default DefaultMaxInFlight (8).
	MaxInFlight int
	// CallTimeout bounds each poll and registration, in real time, so that
	// one hung call cannot stop the reconciliation of the others. Default
	// DefaultCallTimeout (30 s).
	CallTimeout time.Duration
	// Logger receives the binding's warnings (late binding, dead binding,
	// orphans) and failed polls (default: discard).
	Logger *slog.Logger
	// OnUpdate, when set, receives every update instead of the Watches'
	// channels, in order across all Watches, one call at a time, before a
	// push is acknowledged. Keep it quick: it holds up the Receiver. It may
	// read a Watch, but must not wait for the Monitor (a Watch's Done).
	OnUpdate func(w *Watch, u Update)
}

/*
Monitor tracks the tasks it sends until each ends, over push notifications
and reconciliation polls, so that none ends unobserved (docs/protocol.md §8).
Create it with New, serve its Receiver at Config.ReceiverURL, and drive it
with Run (real time) or Tick (a fake clock). It is safe for concurrent use.
*/
type Monitor struct {
	c       *requester.Client
	cfg     Config
	log     *slog.Logger
	recv    *Receiver
	allowed bool // the card permits a webhook
	mintIDs bool // the binding has the requester make Task.id (MQTT)

	mu      sync.Mutex
	closed  bool
	byToken map[string]*Watch
	byTask  map[string]*Watch
	active  int
	// recent remembers the last MaxTasks ended watches: their tokens and
	// tasks, so that late pushes are acknowledged, not answered 404.
	recent       []gone
	recentTokens map[string]string // token → task
	recentTasks  map[string]int
	outbox       []func()

	cbMu sync.Mutex
	sem  chan struct{} // the calls in flight
	kick chan struct{}
	stop chan struct{}
}

// New returns a Monitor that sends and polls through c.
func New(c *requester.Client, cfg Config) (*Monitor, error) {
	if c == nil {
		return nil, errors.New("pushmon: a requester.Client is required")
	}
	u, err := url.Parse(cfg.ReceiverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("pushmon: Config.ReceiverURL %q must be an absolute http or https URL", cfg.ReceiverURL)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timings == (pushbind.Config{}) {
		cfg.Timings = pushbind.DefaultConfig()
	}
	if err := cfg.Timings.Check(); err != nil {
		return nil, fmt.Errorf("pushmon: Config.Timings: %w", err)
	}
	for _, b := range []struct {
		v   *int
		def int
	}{{&cfg.MaxTasks, DefaultMaxTasks}, {&cfg.QueueSize, DefaultQueueSize}, {&cfg.MaxInFlight, DefaultMaxInFlight}} {
		if *b.v < 0 {
			return nil, errors.New("pushmon: MaxTasks, QueueSize and MaxInFlight must not be negative")
		}
		if *b.v == 0 {
			*b.v = b.def
		}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{c: c, cfg: cfg, log: cfg.Logger, allowed: true,
		mintIDs: c.Transport().Binding().IDs == tasklife.RequesterIDs,
		byToken: map[string]*Watch{}, byTask: map[string]*Watch{},
		recentTokens: map[string]string{}, recentTasks: map[string]int{},
		sem: make(chan struct{}, cfg.MaxInFlight), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	if card := cfg.Card; card != nil {
		m.allowed = card.Capabilities != nil && card.Capabilities.PushNotifications != nil && *card.Capabilities.PushNotifications
	}
	m.recv = NewReceiver(m, ReceiverConfig{MaxBodyBytes: cfg.MaxBodyBytes, Logger: cfg.Logger})
	return m, nil
}

// Receiver returns the webhook to serve at Config.ReceiverURL.
func (m *Monitor) Receiver() *Receiver { return m.recv }

/*
Send sends req with a fresh push-notification config in it (the receiver
URL, a random token), so that the config is registered atomically with the
task (docs/protocol.md §8.2), and returns the Watch of the task once the
agent answered. The caller's request is not changed; it must not carry a
config of its own (ErrConfigPresent).

A message for a new task is expected; one that names a task (a follow-up)
registers late, which binds best-effort until a push is acknowledged. An
agent that answers push_notification_not_supported gets the message again
without the config, and the task is polled only (Unbound); so is every task
when Config.Card forbids push notifications. A reply holding a message, not
a task, gives a Watch already ended (Err nil, Task nil). The send's errors
are returned as the requester.Client returns them (a *requester.Queued
included: that task is not watched).
*/
func (m *Monitor) Send(ctx context.Context, req *a2a.SendMessageRequest, opts ...requester.CallOption) (*Watch, error) {
	if req == nil || req.Message == nil {
		return nil, a2a.NewError(a2a.TokenInvalidParams, "SendMessageRequest.message is required")
	}
	if req.Configuration != nil && req.Configuration.TaskPushNotificationConfig != nil {
		return nil, ErrConfigPresent
	}
	r := *req
	msg := *req.Message
	if msg.MessageID == "" {
		msg.MessageID = uuidv4.New() // the same for the resend without config
	}
	late := msg.TaskID != ""
	if !late && m.mintIDs {
		msg.TaskID = uuidv4.New()
	}
	r.Message = &msg
	w := &Watch{m: m, updates: make(chan Update, m.cfg.QueueSize+1), done: make(chan struct{}), canRegister: m.allowed}
	if w.canRegister {
		pc := newConfig("", m.cfg.ReceiverURL)
		conf := a2a.SendMessageConfiguration{}
		if req.Configuration != nil {
			conf = *req.Configuration
		}
		conf.TaskPushNotificationConfig = pc
		r.Configuration = &conf
		w.tokens, w.configID = []string{pc.Token}, pc.ID
	}

	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrMonitorClosed
	case msg.TaskID != "" && m.byTask[msg.TaskID] != nil:
		m.mu.Unlock()
		return nil, ErrAlreadyWatched
	case m.active >= m.cfg.MaxTasks:
		m.mu.Unlock()
		return nil, ErrTooManyTasks
	}
	m.active++
	w.tracked = true
	w.start = m.cfg.Now()
	w.taskID = msg.TaskID
	if w.taskID != "" {
		m.byTask[w.taskID] = w
	}
	for _, t := range w.tokens {
		m.byToken[t] = w
	}
	m.mu.Unlock()

	res, err := m.c.SendMessage(ctx, &r, opts...)
	if w.canRegister && errors.Is(err, a2a.ErrPushNotificationNotSupported) {
		m.log.Warn("pushmon: the agent does not take push notifications; the task is polled only", "task", msg.TaskID)
		m.mu.Lock()
		m.dropTokens(w)
		w.canRegister, w.configID = false, ""
		m.mu.Unlock()
		r.Configuration = req.Configuration
		res, err = m.c.SendMessage(ctx, &r, opts...)
	}

	m.mu.Lock()
	defer m.unlock()
	if err != nil {
		m.forget(w)
		return nil, err
	}
	w.reply = res
	if m.closed {
		m.forget(w)
		return nil, ErrMonitorClosed
	}
	if res.Task == nil {
		m.end(w, nil)
		return w, nil
	}
	if err := m.replied(w, res.Task, late); err != nil {
		return nil, err
	}
	return w, nil
}

// replied creates the binding of w from the send's reply.
func (m *Monitor) replied(w *Watch, task *a2a.Task, late bool) error {
	now := m.cfg.Now()
	if w.taskID != task.ID {
		if w.taskID != "" {
			m.log.Warn("pushmon: the agent answered with another task than the message named", "sent", w.taskID, "task", task.ID)
			delete(m.byTask, w.taskID)
		}
		if other := m.byTask[task.ID]; other != nil && other != w {
			// A follow-up over HTTP for a task watched already: the reply
			// is the other watch's business.
			m.end(w, ErrAlreadyWatched)
			return ErrAlreadyWatched
		}
		w.taskID = task.ID
		m.byTask[task.ID] = w
	}
	if w.pushedID != "" && w.pushedID != task.ID {
		m.log.Warn("pushmon: pushes came for another task than the send's; their acknowledgements are dropped", "pushed", w.pushedID, "task", task.ID)
		w.early = nil
	}
	w.b = pushbind.New(task.ID, m.cfg.Timings, w.start)
	w.bound = true
	m.apply(w, step(w.b.CapabilityRead(pushbind.Capability{PushNotifications: w.canRegister, Receiver: true}, w.start)))
	if w.canRegister {
		m.apply(w, step(w.b.Registered(late, w.start)))
	}
	for _, e := range w.early {
		m.apply(w, step(w.b.Receiver(e.code, e.state, e.at)))
	}
	w.early = nil
	if w.ended {
		return nil
	}
	final := terminal(task.Status.State)
	if stale := w.task != nil && newer(w.task.Status, task.Status); !stale || final {
		w.emit(Update{Item: &a2a.StreamResponse{Payload: task}, Source: FromSend, At: now}, final)
		w.lastKey = statusKey(task.Status)
	}
	m.merge(w, task)
	if final {
		m.apply(w, step(w.b.Observed(now)))
		return nil
	}
	m.apply(w, step(w.b.Polled(task.Status.State, parseTime(task.Status.Timestamp), now)))
	return nil
}

// Deliver takes a push the Receiver accepted (the Monitor is the Sink of
// its Receiver): it checks the token, queues the update on the Watch and
// records the acknowledgement in the task's binding.
func (m *Monitor) Deliver(_ context.Context, d *Delivery) error {
	m.mu.Lock()
	err := m.deliver(d)
	m.mu.Unlock()
	m.wake()
	// Handed over before the Receiver answers.
	m.drain(true)
	return err
}

func (m *Monitor) deliver(d *Delivery) error {
	if m.closed {
		return ErrMonitorClosed
	}
	w := m.byToken[d.Token]
	if w == nil {
		if task, ok := m.recentTokens[d.Token]; ok {
			if task == d.TaskID {
				return nil // a late or repeated push after the end
			}
			return ErrBadToken
		}
		if m.byTask[d.TaskID] != nil || m.recentTasks[d.TaskID] > 0 {
			return ErrBadToken
		}
		return ErrUnknownTask
	}
	switch id := w.taskID; {
	case id == "" && w.pushedID == "":
		w.pushedID = d.TaskID
	case id == "" && w.pushedID != d.TaskID, id != "" && id != d.TaskID:
		return ErrBadToken
	}
	if !w.bound && len(w.early) > m.cfg.QueueSize {
		return ErrBusy
	}
	now := m.cfg.Now()
	state := stateOf(d.Item)
	if state == "" && w.task != nil {
		state = w.task.Status.State
	}
	final := terminal(state)
	key, isStatus := itemStatusKey(d.Item)
	if !isStatus || key != w.lastKey {
		if !w.emit(Update{Item: d.Item, Source: FromPush, At: now}, final) {
			m.log.Warn("pushmon: the update queue is full; the push is answered 503", "task", d.TaskID)
			m.record(w, 503, state, now)
			return ErrBusy
		}
		if isStatus {
			w.lastKey = key
		}
		m.mergePush(w, d.TaskID, d.Item)
	}
	m.record(w, 200, state, now)
	return nil
}

// record applies the Receiver's answer to a push to the binding, or keeps
// it until the binding exists.
func (m *Monitor) record(w *Watch, code int, state a2a.TaskState, now time.Time) {
	if !w.bound {
		w.early = append(w.early, early{code: code, state: state, at: now})
		return
	}
	m.apply(w, step(w.b.Receiver(code, state, now)))
}

// stepped is the result of a binding call.
type stepped struct {
	d   pushbind.Decision
	err error
}

func step(d pushbind.Decision, err error) stepped { return stepped{d, err} }

// apply acts on a decision of a binding.
func (m *Monitor) apply(w *Watch, s stepped) {
	d, err := s.d, s.err
	if err != nil {
		m.log.Error("pushmon: binding step refused", "task", w.taskID, "err", err)
		return
	}
	if d.From != d.To {
		m.log.Debug("pushmon: binding", "task", w.taskID, "from", d.From.String(), "to", d.To.String(), "events", fmt.Sprint(d.Events()))
	}
	out := d.Outputs
	if out.Has(fsm.PushBindingOutputWarnLateBinding) {
		m.log.Warn("pushmon: the push config was registered after the task left SUBMITTED; earlier transitions were not pushed", "task", w.taskID)
	}
	if out.Has(fsm.PushBindingOutputRaiseBindingDead) {
		m.log.Warn("pushmon: the webhook binding is dead; polling is primary", "task", w.taskID)
	}
	if out.Has(fsm.PushBindingOutputPollNow) {
		w.pollDue = true
	}
	if out.Has(fsm.PushBindingOutputReRegister) && w.canRegister && !w.reregistered {
		w.reregDue = true
	}
	if d.To.IsEnded() && !w.ended {
		err := w.b.Err()
		if err != nil {
			m.log.Error("pushmon: task orphaned", "task", w.taskID, "err", err)
		}
		m.end(w, err)
	}
}

// end ends w with err.
func (m *Monitor) end(w *Watch, err error) {
	w.ended, w.err = true, err
	w.pollDue, w.reregDue = false, false
	m.forget(w)
	m.remember(w)
	close(w.updates)
	if m.cfg.OnUpdate != nil {
		// After the updates already handed to the callback.
		m.outbox = append(m.outbox, func() { close(w.done) })
	} else {
		close(w.done)
	}
}

// forget removes w from the watches tracked.
func (m *Monitor) forget(w *Watch) {
	if m.byTask[w.taskID] == w {
		delete(m.byTask, w.taskID)
	}
	for _, t := range w.tokens {
		if m.byToken[t] == w {
			delete(m.byToken, t)
		}
	}
	if w.tracked {
		w.tracked = false
		m.active--
	}
	w.early = nil
}

// dropTokens stops accepting pushes for w's configs.
func (m *Monitor) dropTokens(w *Watch) {
	for _, t := range w.tokens {
		delete(m.byToken, t)
	}
	w.tokens = nil
}

// gone is what the Monitor remembers of an ended watch.
type gone struct {
	taskID string
	tokens []string
}

// remember keeps an ended watch's tokens and task, the last MaxTasks.
func (m *Monitor) remember(w *Watch) {
	if w.taskID == "" {
		return
	}
	if len(m.recent) >= m.cfg.MaxTasks {
		old := m.recent[0]
		m.recent = m.recent[1:]
		for _, t := range old.tokens {
			delete(m.recentTokens, t)
		}
		if m.recentTasks[old.taskID]--; m.recentTasks[old.taskID] <= 0 {
			delete(m.recentTasks, old.taskID)
		}
	}
	m.recent = append(m.recent, gone{taskID: w.taskID, tokens: w.tokens})
	for _, t := range w.tokens {
		m.recentTokens[t] = w.taskID
	}
	m.recentTasks[w.taskID]++
}
