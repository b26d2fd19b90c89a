package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/gopool"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Server applies the responder rules around a Handler. Create it with
// NewServer; it is safe for concurrent use by several transports.
type Server struct {
	h          Handler
	store      taskstore.Store
	contextTTL time.Duration
	now        func() time.Time
	newID      func() string
	// newIDs makes two ids, as two calls of newID would, in that order (a
	// new task's id and its context's): by default in one allocation.
	newIDs       func() (string, string)
	log          *slog.Logger
	extendedCard *a2a.AgentCard
	verifier     Verifier
	limits       jsonrpc.Limits
	slots        chan struct{}
	// waiters bounds the retries waiting at once for a turn another agent
	// runs (awaitTurnEnd): maxTurnWaiters.
	waiters chan struct{}
	offline *Offline
	// push is set by WithPush.
	push *PushConfig
	// stopDrops stops the store telling the server of the tasks it drops
	// (forgetDropped).
	stopDrops func()
	// pool runs the handlers' turns on goroutines kept for reuse.
	pool *gopool.Pool
	// observe is set by WithCallObserver.
	observe func(ctx context.Context, r CallRecord)

	wg sync.WaitGroup

	mu     sync.Mutex
	runs   map[string]*run
	locks  map[string]*taskLock
	closed bool
}

// Option configures a Server.
type Option func(*Server)

// DefaultFinishedRetention is how long the default store keeps a finished
// task (taskstore.KeepFinishedFor): a day, far beyond any retry window.
const DefaultFinishedRetention = 24 * time.Hour

// DefaultContextTTL is the default idle expiry (WithContextTTL) of a
// context and of a task waiting for input or authentication: a day
// (taskstore.DefaultIdleExpiry).
const DefaultContextTTL = taskstore.DefaultIdleExpiry

// WithStore sets the task store. The default is a new taskstore.Memory
// with its default bounds (taskstore.DefaultMaxTasks,
// taskstore.DefaultMaxBytes) that drops tasks finished for longer than
// DefaultFinishedRetention and tasks waiting for input or authentication
// unchanged for longer than the context expiry (WithContextTTL). Give a
// store of your own the same expiry (taskstore.ExpireInterruptedAfter), so
// that what the card publishes (LimitsExtension) holds. Agents that hand
// tasks over to each other share one store.
func WithStore(st taskstore.Store) Option { return func(s *Server) { s.store = st } }

// WithContextTTL sets the idle expiry: a context idle for longer refuses
// new tasks and resumes with the context_expired error, and the default
// store drops a task waiting for input or authentication unchanged for
// longer (a message to it is answered context_expired too:
// docs/protocol.md §5.5). Default DefaultContextTTL, a day; zero or less
// keeps contexts and waiting tasks forever. LimitsExtension publishes it in
// the agent card.
func WithContextTTL(d time.Duration) Option { return func(s *Server) { s.contextTTL = max(d, 0) } }

// WithMaxRequestBytes bounds the size of a request payload (default
// jsonrpc.DefaultMaxRequestBytes, 4 MiB). A larger one is answered
// invalid_request (-32600), naming the limit, before it is decoded
// (DecodeRequest; over HTTP the body limit, transport/http's
// HandlerConfig.MaxBodyBytes, applies first). n <= 0 keeps the default.
func WithMaxRequestBytes(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.limits.MaxRequestBytes = n
		}
	}
}

// WithMaxParts bounds the parts of a message (default
// jsonrpc.DefaultMaxParts, 1,000). A message with more is answered
// invalid_params (-32602), naming the limit; DecodeRequest counts the parts
// before decoding them. n <= 0 keeps the default.
func WithMaxParts(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.limits.MaxParts = n
		}
	}
}

// WithClock sets the time source (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithIDs sets the generator of ids the server makes: message ids, and
// task and context ids where the binding lets the server make them
// (default: random UUIDv4).
func WithIDs(newID func() string) Option {
	return func(s *Server) {
		s.newID = newID
		s.newIDs = func() (string, string) {
			a := newID()
			return a, newID()
		}
	}
}

// WithLogger sets the logger for what cannot be answered on any reply path
// (a handler that panics, a failed store write after the reply) and for
// calls the verifier refuses (at info, method and error only; tokens are
// never logged). Default, and for nil: discard.
func WithLogger(l *slog.Logger) Option {
	return func(s *Server) {
		if l != nil {
			s.log = l
		}
	}
}

// WithExtendedCard serves GetExtendedAgentCard with card; without it the
// method answers extended_agent_card_not_configured.
func WithExtendedCard(card *a2a.AgentCard) Option {
	return func(s *Server) { s.extendedCard = card }
}

// WithVerifier requires every call, over every transport, to carry a bearer
// token that v accepts; the caller v returns becomes the call's Caller. A
// call without a token is answered unauthenticated.
//
// The tasks then belong to their callers (docs/protocol.md §15): a task
// records the Subject of the caller that created it
// (taskstore.Record.Principal), and to any other caller GetTask,
// CancelTask, SubscribeToTask, the push-notification config methods and a
// message naming it answer task_not_found, as for a task the agent does
// not hold; ListTasks lists only the caller's tasks. A task created
// without a Subject is everyone's.
func WithVerifier(v Verifier) Option { return func(s *Server) { s.verifier = v } }

// WithMaxTurns bounds the turns running at once (default 64). A message
// that would start one more is answered at once with responder_unavailable
// (retryable), never queued silently. A turn holds its slot until it ends
// (a terminal or interrupted state): the slot is free before the turn's
// last reply goes out, even if the handler has not returned yet.
func WithMaxTurns(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.slots = make(chan struct{}, n)
		}
	}
}

// NewServer returns a server for h.
func NewServer(h Handler, opts ...Option) *Server {
	s := &Server{h: h, now: time.Now, newID: uuidv4.New, newIDs: uuidv4.Pair, contextTTL: DefaultContextTTL, limits: jsonrpc.DefaultLimits(),
		log: slog.New(slog.DiscardHandler), slots: make(chan struct{}, 64), waiters: make(chan struct{}, maxTurnWaiters),
		runs: map[string]*run{}, locks: map[string]*taskLock{}, pool: gopool.New(0)}
	for _, o := range opts {
		o(s)
	}
	if s.store == nil {
		s.store = taskstore.NewMemory(s.now, taskstore.KeepFinishedFor(DefaultFinishedRetention),
			taskstore.ExpireInterruptedAfter(s.contextTTL))
	}
	if s.push != nil {
		if w, ok := s.store.(taskstore.DropWatcher); ok {
			s.stopDrops = w.WatchDrops(s.forgetDropped)
		}
	}
	if s.offline != nil {
		s.startOffline()
	}
	return s
}

// Store returns the server's task store.
func (s *Server) Store() taskstore.Store { return s.store }

// Limits returns the bounds the server puts on requests (WithMaxRequestBytes,
// WithMaxParts).
func (s *Server) Limits() jsonrpc.Limits { return s.limits }

// ContextTTL returns the idle expiry of contexts and of tasks waiting for
// input or authentication (WithContextTTL); zero when they never expire.
func (s *Server) ContextTTL() time.Duration { return s.contextTTL }

// DecodeRequest decodes a request payload within the server's limits: a
// payload over WithMaxRequestBytes is refused before it is parsed, a
// message of more parts than WithMaxParts before its params are decoded,
// and a schema error lists at most jsonrpc.MaxReportedViolations
// violations. Transports decode with it (see jsonrpc.DecodeRequest for
// what it returns).
func (s *Server) DecodeRequest(payload []byte) (*jsonrpc.Request, json.RawMessage, *a2a.Error) {
	return s.limits.DecodeRequest(payload)
}

// ErrClosed is answered (as internal_error) to calls after Close.
var ErrClosed = errors.New("agent: server closed")

// Close stops every running turn (their contexts end) and waits for the
// handlers to return, or for ctx to end. The store is not closed.
func (s *Server) Close(ctx context.Context) error {
	// The offline queue first: records taken but not yet handed to the
	// handler go back to the queue rather than into turns about to end.
	s.stopOffline()
	s.mu.Lock()
	stopDrops := s.stopDrops
	s.stopDrops = nil
	s.closed = true
	for _, r := range s.runs {
		r.cancel()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		s.pool.Close()
		// The turns have ended: the tasks the store drops from now on are
		// no more this server's to forget.
		if stopDrops != nil {
			stopDrops()
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Serve answers one call, sending its replies to sink, and returns when the
// last one is sent (for a stream, when the stream ends) or ctx ends. The
// error is the sink's or the context's; protocol errors are answered on the
// sink. With WithCallObserver the observer learns of the call when Serve
// returns.
func (s *Server) Serve(ctx context.Context, c Call, sink Sink) error {
	if s.observe == nil || c.Request == nil {
		return s.serve(ctx, c, sink)
	}
	start := time.Now()
	r := CallRecord{Method: c.Request.Method, TaskID: paramsTask(c.Request.Params)}
	err := s.serve(ctx, c, observed(sink, &r))
	r.Duration = time.Since(start)
	s.observe(ctx, r)
	return err
}

func (s *Server) serve(ctx context.Context, c Call, sink Sink) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return sink.Send(ctx, Reply{Err: a2a.NewError(a2a.TokenInternalError, ErrClosed.Error()), Final: true})
	}
	if c.IDs == 0 {
		c.IDs = tasklife.RequesterIDs
	}
	if expired(c) {
		return fail(ctx, sink, errExpired())
	}
	if s.verifier != nil {
		if c.Token == "" {
			s.log.Info("agent: call refused: no bearer token", "method", string(c.Request.Method))
			return fail(ctx, sink, a2a.NewError(a2a.TokenUnauthenticated, "this agent requires a bearer token"))
		}
		caller, err := s.verifier.Verify(ctx, c.Token, c.Request.Method)
		if err != nil {
			var e *a2a.Error
			if !errors.As(err, &e) {
				e = a2a.NewError(a2a.TokenUnauthenticated, "the bearer token was not accepted")
			}
			// The token itself is never logged.
			s.log.Info("agent: call refused by the verifier", "method", string(c.Request.Method), "error", string(e.Token))
			return fail(ctx, sink, e)
		}
		c.Caller = caller
		// Verification takes time: the request may have expired meanwhile.
		if expired(c) {
			return fail(ctx, sink, errExpired())
		}
	}
	if e := checkCapabilities(c); e != nil {
		return fail(ctx, sink, e)
	}
	switch p := c.Request.Params.(type) {
	case *a2a.SendMessageRequest:
		return s.send(ctx, c, p, jsonrpc.Streaming(c.Request.Method), sink)
	case *a2a.GetTaskRequest:
		return s.getTask(ctx, c.Caller, p, sink)
	case *a2a.ListTasksRequest:
		return s.listTasks(ctx, c.Caller, p, sink)
	case *a2a.CancelTaskRequest:
		return s.cancelTask(ctx, c.Caller, p, sink)
	case *a2a.SubscribeToTaskRequest:
		return s.subscribeToTask(ctx, c.Caller, p, sink)
	case *a2a.GetExtendedAgentCardRequest:
		if s.extendedCard == nil {
			return fail(ctx, sink, a2a.NewError(a2a.TokenExtendedAgentCardNotConfigured, ""))
		}
		return sink.Send(ctx, Reply{Result: s.extendedCard, Final: true})
	case *a2a.TaskPushNotificationConfig:
		if e := s.pushRefusal(c); e != nil {
			return fail(ctx, sink, e)
		}
		return s.createPushConfig(ctx, c.Caller, p, sink)
	case *a2a.GetTaskPushNotificationConfigRequest:
		if e := s.pushRefusal(c); e != nil {
			return fail(ctx, sink, e)
		}
		return s.getPushConfig(ctx, c.Caller, p, sink)
	case *a2a.ListTaskPushNotificationConfigsRequest:
		if e := s.pushRefusal(c); e != nil {
			return fail(ctx, sink, e)
		}
		return s.listPushConfigs(ctx, c.Caller, p, sink)
	case *a2a.DeleteTaskPushNotificationConfigRequest:
		if e := s.pushRefusal(c); e != nil {
			return fail(ctx, sink, e)
		}
		return s.deletePushConfig(ctx, c.Caller, p, sink)
	}
	return fail(ctx, sink, a2a.NewError(a2a.TokenMethodNotFound, fmt.Sprintf("no method for params %T", c.Request.Params)))
}

// checkCapabilities refuses a call that the card's capabilities do not
// offer (A2A v1.0 §3.3.4).
func checkCapabilities(c Call) *a2a.Error {
	caps := c.Capabilities
	if caps == nil {
		return nil
	}
	switch c.Request.Method {
	case a2a.MethodSendStreamingMessage, a2a.MethodSubscribeToTask:
		if caps.Streaming == nil || !*caps.Streaming {
			return a2a.NewError(a2a.TokenUnsupportedOperation,
				"this agent does not stream: its card does not declare capabilities.streaming (A2A v1.0 §3.3.4)")
		}
	case a2a.MethodGetExtendedAgentCard:
		if caps.ExtendedAgentCard == nil || !*caps.ExtendedAgentCard {
			return a2a.NewError(a2a.TokenUnsupportedOperation,
				"this agent has no extended card: its card does not declare capabilities.extendedAgentCard (A2A v1.0 §3.3.4)")
		}
	}
	return nil
}

// expired reports whether the call's deadline has passed.
func expired(c Call) bool { return !c.Deadline.IsZero() && !time.Now().Before(c.Deadline) }

func errExpired() *a2a.Error {
	return a2a.NewError(a2a.TokenRequestExpired, "the request expired before it was processed")
}

func fail(ctx context.Context, sink Sink, e *a2a.Error) error {
	return sink.Send(ctx, Reply{Err: e, Final: true})
}

// taskLock serialises the admission of messages for one task id.
type taskLock struct {
	mu   sync.Mutex
	refs int
}

// lockTask takes the admission lock of task id ("" locks nothing), which
// the caller releases with the heldLock's unlock, once.
func (s *Server) lockTask(id string) heldLock {
	if id == "" {
		return heldLock{}
	}
	s.mu.Lock()
	l := s.locks[id]
	if l == nil {
		l = &taskLock{}
		s.locks[id] = l
	}
	l.refs++
	s.mu.Unlock()
	l.mu.Lock()
	return heldLock{s: s, id: id, l: l}
}

// heldLock is a task's admission lock taken by lockTask (a value: no
// closure is allocated to release it).
type heldLock struct {
	s  *Server
	id string
	l  *taskLock
}

// unlock releases the lock.
func (h heldLock) unlock() {
	if h.l == nil {
		return
	}
	h.l.mu.Unlock()
	h.s.mu.Lock()
	h.l.refs--
	if h.l.refs == 0 {
		delete(h.s.locks, h.id)
	}
	h.s.mu.Unlock()
}

func (s *Server) activeRun(id string) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

func (s *Server) timestamp() string { return stamp(s.now()) }

// stamp is the wire form of a status timestamp taken at t.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *Server) agentMessage(t *a2a.Task, text string) a2a.Message {
	return a2a.Message{MessageID: s.newID(), ContextID: t.ContextID, TaskID: t.ID, Role: a2a.RoleAgent,
		Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
}

// origin is the call that starts a turn: it is attached before the
// handler runs, so it misses no event.
type origin struct {
	ctx     context.Context
	sink    Sink
	mode    waitMode
	history *int32
	// queued is set for a message taken from the offline queue.
	queued *QueuedMessage
}

// waitModeOf says how a SendMessage call waits.
func waitModeOf(streaming, immediately bool) waitMode {
	switch {
	case streaming:
		return modeStream
	case immediately:
		return modeNow
	}
	return modeEnd
}

// start runs a turn of the task in rec and answers the call o; the caller
// holds the task's lock (released through held once the turn is
// registered) and a slot, which the turn releases when the handler returns.
// rec is the caller's own: the run keeps its task as the first snapshot.
func (s *Server) start(rec taskstore.Record, enc *taskEnc, msg a2a.Message, resumed bool, caller Caller, ids tasklife.IDOrigin, prior []string, o origin, held heldLock) error {
	st, err := tasklife.StateOf(rec.Task.Status.State)
	if err != nil {
		held.unlock()
		<-s.slots
		return fail(o.ctx, o.sink, asProtocolError(err))
	}
	// A turn's context is its own (not a child of a server-wide one, which
	// every turn would contend on): Close cancels the registered runs.
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{s: s, ctx: ctx, cancel: cancel, ids: ids, principal: rec.Principal,
		life: tasklife.Restore(rec.Task.ID, rec.Task.ContextID, st), task: rec.Task, enc: enc, responder: rec.Owner, push: rec.PushConfigs}
	r.subs = r.firstSubs[:0]
	// The handler gets a task of its own to read and change as it likes.
	r.turn = Turn{Task: cloneTask(rec.Task), Message: msg, Resumed: resumed, Caller: caller, run: r, prior: prior, queued: o.queued}
	s.mu.Lock()
	s.runs[rec.Task.ID] = r
	if s.closed {
		cancel()
	}
	s.mu.Unlock()
	held.unlock()
	sub := &r.first
	*sub = subscriber{ctx: o.ctx, sink: o.sink, mode: o.mode, history: o.history}
	snap, responder, over := r.attach(sub)
	s.wg.Add(1)
	s.pool.Run(r)
	return s.await(o.ctx, r, sub, snap, responder, over)
}

func (s *Server) serveTurn(ctx context.Context, r *run, turn *Turn) {
	defer s.wg.Done()
	defer r.freeSlot()
	defer func() {
		s.mu.Lock()
		if s.runs[turn.Task.ID] == r {
			delete(s.runs, turn.Task.ID)
		}
		s.mu.Unlock()
	}()
	err := s.callHandler(ctx, turn)
	// Settle a turn the handler left open: success completes the task, an
	// error fails it. A canceled task is already settled. The turn's
	// context holds no values: the settling one is a background context.
	settle := context.Background()
	state, what := a2a.TaskStateCompleted, "completing"
	reason := ""
	if err != nil {
		state, what, reason = a2a.TaskStateFailed, "failing", err.Error()
	}
	if e := r.status(settle, state, reason); e != nil && !errors.Is(e, ErrTurnEnded) {
		// The store refused the last state: the calls waiting for the end
		// are answered internal_error rather than left waiting.
		s.log.Error("agent: "+what+" task", "task", turn.Task.ID, "err", e)
		r.abort(e)
	}
	r.cancel()
}

func (s *Server) callHandler(ctx context.Context, turn *Turn) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("agent: handler panicked", "task", turn.Task.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("the agent failed: %v", p)
		}
	}()
	return s.h.ServeTurn(ctx, turn)
}

// respond answers a call attached to a running turn: a stream of its
// events, one reply when the turn ends, or one reply at once.
func (s *Server) respond(ctx context.Context, r *run, mode waitMode, history *int32, sink Sink) error {
	sub := &subscriber{ctx: ctx, sink: sink, mode: mode, history: history}
	snap, responder, over := r.attach(sub)
	return s.await(ctx, r, sub, snap, responder, over)
}

// await returns once an attached call is answered: for a stream and for a
// call waiting for the end, when the turn ends (the event that ends it sends
// the last reply); for a turn already over or a call answered at once, after
// replying with the snapshot taken when it was attached. If ctx ends first
// the call is detached and nothing more is sent to it; if its sink fails,
// the call is detached and returns the sink's error.
func (s *Server) await(ctx context.Context, r *run, sub *subscriber, snap a2a.Task, responder string, over bool) error {
	if sub.mode != modeStream && (over || sub.mode == modeNow) {
		return sub.sink.Send(ctx, taskReply(snap, sub.enc, sub.history, responder))
	}
	// A stream was sent its first item by attach, final if the turn was
	// over.
	if over {
		return sub.sendError()
	}
	select {
	case <-sub.woken:
		// The turn ended, or the sink failed: then the call leaves.
		err := sub.sendError()
		if err != nil {
			r.leave(sub)
		}
		return err
	case <-ctx.Done():
		r.leave(sub)
		return ctx.Err()
	}
}

func trimHistory(t *a2a.Task, n *int32) {
	if n == nil {
		return
	}
	if k := int(*n); k < len(t.History) {
		if k <= 0 {
			t.History = nil
		} else {
			t.History = t.History[len(t.History)-k:]
		}
	}
}
