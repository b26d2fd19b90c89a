package requester

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/statemachines/retry"
)

// Config configures a Client. The zero value is ready to use.
type Config struct {
	// Retry is the retry and timeout profile. Zero value: the transport's
	// (Binding.Retry): over MQTT mqttbind.DefaultRetryProfile(); over HTTP
	// one attempt, no first-reply timeout (the transport retries 429 and
	// 503 itself) and the same stream idle timeout.
	Retry mqttbind.RetryProfile
	// Jitter draws the backoff jitter in [0, 1) (default: math/rand).
	Jitter retry.Jitter
	// Routes persists the handover routing table, so that follow-ups after a
	// restart still go to the agent that took a task over (optional). A
	// route changed or forgotten by a reply is saved or deleted before the
	// reply reaches its operation, on the transport's goroutine (so an
	// operation never returns before its route is stored): keep SaveRoute
	// and DeleteRoute quick, a local write rather than a network round trip.
	Routes handover.Store
	// FinishedRoutes is how many routes of finished tasks (COMPLETED,
	// FAILED, CANCELED, REJECTED) the client keeps, most recent first, for a
	// GetTask after the end; older ones are forgotten, and deleted from
	// Routes. Default 1024 (DefaultFinishedRoutes); a negative value keeps
	// none.
	FinishedRoutes int
	// RouteIdleExpiry is how long the route of a task not seen finished is
	// kept without use (no operation on the task, no reply about it);
	// then it is forgotten, and deleted from Routes, as an abandoned task's.
	// Default DefaultRouteIdleExpiry, 7 days, well beyond an agent's expiry
	// of tasks waiting for input (a day by default, docs/protocol.md §14);
	// a negative value keeps such routes until their task is seen finished.
	RouteIdleExpiry time.Duration
	// PoolFailover lets a pooled task go back to its pool when the member
	// serving it is gone: an operation whose retry profile runs out
	// against the member runs again, once, on the pool's request topic
	// with the same Task.id and messageId, and the member that answers
	// serves the task from then on. Set it only when the pool's members
	// share a task store (agent/taskstore/pgstore; a2a agent --pool P
	// --store postgres://...), so that any of them can continue the
	// task. It is a deployment choice outside the profile, whose retries
	// after selection never go back to the pool (docs/protocol.md
	// §4.6.1). Off (the default), such an operation fails with
	// ErrUnreachable.
	PoolFailover bool
	// Clock is the time source of RouteIdleExpiry (default time.Now).
	Clock func() time.Time
	// Logger receives what has no caller to return to: replies dropped as
	// protocol errors, a route that could not be saved (default: discard).
	Logger *slog.Logger
}

// DefaultFinishedRoutes is Config.FinishedRoutes when it is zero.
const DefaultFinishedRoutes = 1024

// DefaultRouteIdleExpiry is Config.RouteIdleExpiry when it is zero.
const DefaultRouteIdleExpiry = 7 * 24 * time.Hour

// Client is an A2A requester over one Transport. Create it with New (or
// through a transport's constructor, such as transport/mqtt.NewClient); it
// is safe for concurrent use.
type Client struct {
	tr      Transport
	binding Binding
	cfg     Config
	log     *slog.Logger
	profile mqttbind.RetryProfile

	mu     sync.Mutex
	routes *handover.Table
	// finished are the routed tasks seen in a terminal state, oldest first;
	// finishedSet holds the same ids.
	finished    []string
	finishedSet map[string]struct{}
	// going are the routes of tasks not seen finished, by last use.
	going routeAges

	ignored atomic.Int64
	lenient atomic.Int64
}

// New returns a Client that sends its requests through tr. It restores
// the handover routes from cfg.Routes, if set.
func New(tr Transport, cfg Config) (*Client, error) {
	c := &Client{tr: tr, binding: tr.Binding(), cfg: cfg, log: cfg.Logger, profile: cfg.Retry,
		routes: handover.NewTable(), finishedSet: map[string]struct{}{}, going: newRouteAges()}
	c.routes.PoolFailover = cfg.PoolFailover
	if c.cfg.FinishedRoutes == 0 {
		c.cfg.FinishedRoutes = DefaultFinishedRoutes
	}
	if c.cfg.RouteIdleExpiry == 0 {
		c.cfg.RouteIdleExpiry = DefaultRouteIdleExpiry
	}
	if c.cfg.Clock == nil {
		c.cfg.Clock = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.profile.MaxAttempts == 0 {
		c.profile = c.binding.Retry
	}
	if err := retry.CheckProfile(c.profile); err != nil {
		return nil, err
	}
	if cfg.Routes != nil {
		if err := c.routes.Restore(cfg.Routes); err != nil {
			return nil, fmt.Errorf("requester: restoring handover routes: %w", err)
		}
		// Their idle time runs from now.
		for _, r := range c.routes.Routes() {
			c.touchLocked(r.TaskID)
		}
	}
	return c, nil
}

// Transport returns the client's transport.
func (c *Client) Transport() Transport { return c.tr }

// Close closes the transport.
func (c *Client) Close(ctx context.Context) error { return c.tr.Close(ctx) }

// IgnoredReplies counts replies the client dropped as protocol errors: a
// reply that is not a JSON-RPC response, a pooled reply without a valid
// a2a-responder-agent-id. (A transport counts what it drops before that,
// such as MQTT replies with unknown Correlation Data.)
func (c *Client) IgnoredReplies() int64 { return c.ignored.Load() }

// LenientReplies counts replies read only by rewriting a known departure
// of a peer from A2A v1.0 (DecodeLenient; docs/conformance.md): a non-zero
// count says a peer does not follow the specification.
func (c *Client) LenientReplies() int64 { return c.lenient.Load() }

// Route returns where operations on a task go now (after handovers).
func (c *Client) Route(taskID string) (Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return c.routes.Target(taskID)
}

// Routes returns the routes the client holds now: tasks still going (and
// used within Config.RouteIdleExpiry), and the most recent finished ones
// (Config.FinishedRoutes).
func (c *Client) Routes() []handover.Route {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return c.routes.Routes()
}

// ErrUnreachable wraps the failure of an operation whose retry profile ran
// out without a valid reply (after the fallback to the card agent, if any).
var ErrUnreachable = errors.New("responder unreachable")

// errStalled ends a stream that went idle or ended before its final item:
// the caller recovers with GetTask.
var errStalled = errors.New("requester: stream stalled")

// call is one logical operation to run.
type call struct {
	method    a2a.Method
	params    any
	decode    resultDecoder // the result's type
	taskID    string        // "" for operations not scoped to a task (yet)
	contextID string
	streaming bool
	target    Target // for a task the routing table does not know yet
	opts      callOpts
}

// item is one reply handed to an operation: the result decoded (or why it
// breaks its schema) and the responder named by a2a-responder-agent-id, if
// any.
type item struct {
	value     any
	err       error
	responder string
}

// invalid reports a result that breaks its schema.
func (it item) invalid() error {
	return a2a.NewError(a2a.TokenInvalidAgentResponse, it.err.Error())
}

// run drives one operation under the retry profile, calling onItem for each
// reply (error replies end it with an *a2a.Error). A task-scoped operation
// whose profile runs out against a handover target falls back to the card
// agent once; with Config.PoolFailover, one against the member serving a
// pooled task runs again on the pool, once.
func (c *Client) run(ctx context.Context, r *call, onItem func(item, bool) (bool, error)) error {
	for retarget := 0; ; retarget++ {
		target, err := c.routeFor(r)
		if err != nil {
			return err
		}
		lastToken, err := c.attempts(ctx, r, target, onItem)
		if !errors.Is(err, ErrUnreachable) || r.taskID == "" || retarget > 0 {
			return err
		}
		switch c.fallBack(r.taskID) {
		case fsm.HandoverOutputFallBackToCardAgent:
			c.log.Info("requester: handover target unreachable; falling back to the card agent", "task", r.taskID, "error", lastToken)
		case fsm.HandoverOutputFallBackToPool:
			c.log.Info("requester: pool member unreachable; sending to the pool", "task", r.taskID, "member", target.Agent, "error", lastToken)
		default:
			return err
		}
	}
}

// attempts runs the retry profile against one target.
func (c *Client) attempts(ctx context.Context, r *call, target Target, onItem func(item, bool) (bool, error)) (a2a.Token, error) {
	ex := newExchange(c, r)
	// One stop per attempt; room for the usual one on the stack.
	var stopsBuf [2]func()
	stops := stopsBuf[:0]
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		ex.close()
		for _, stop := range stops {
			stop()
		}
	}()
	op := retry.New(c.profile, c.cfg.Jitter)
	d := op.Start(target, time.Now())
	var lastRefusal error
	for {
		switch d.Action {
		case retry.ActionPublish:
			// The first attempt's request is allocated with the exchange;
			// a later one (ex.req has its id) gets its own.
			req := &ex.req
			if req.ID != "" {
				req = new(Request)
			}
			*req = Request{ID: uuidv4.New(), Method: r.method, Params: r.params, Streaming: r.streaming, Target: d.Target,
				TaskID: r.taskID, ContextID: r.contextID, Bearer: r.opts.bearer, Expiry: r.opts.expiry, Timeout: c.profile.ReplyFirstTimeout}
			stop, err := c.tr.Send(ctx, req, ex.deliver)
			if err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				lastRefusal = err
				c.log.Debug("requester: request not accepted", "attempt", d.Attempt, "err", err)
				d = op.Refused(time.Now())
				continue
			}
			stops = append(stops, stop)
			d = op.Tick(time.Now())
		case retry.ActionFinish:
			if d.Outcome == retry.OutcomeExhausted {
				return d.Token, unreachable(op.Attempts(), d.Token, lastRefusal)
			}
			return d.Token, nil
		case retry.ActionGetTask:
			return "", errStalled
		case retry.ActionWait:
			// A reply delivered within Send is there already; otherwise
			// wait for one.
			in, replies := ex.next()
			if in == nil {
				var wake <-chan time.Time
				if !d.Wake.IsZero() {
					wait := time.Until(d.Wake)
					if timer == nil {
						timer = time.NewTimer(wait)
					} else {
						timer.Reset(wait)
					}
					wake = timer.C
				}
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-wake:
					d = op.Tick(time.Now())
					continue
				case in = <-replies:
				}
			}
			var stop bool
			var err error
			d, stop, err = c.onReply(r, &op, in, ex, onItem)
			if in.refused != nil {
				lastRefusal = in.refused
			}
			if err != nil || stop {
				return "", err
			}
		}
	}
}

// unreachable is the error of an operation whose attempts all failed.
func unreachable(attempts int, token a2a.Token, refusal error) error {
	switch {
	case token != "":
		return fmt.Errorf("%w after %d attempts (last error %s)", ErrUnreachable, attempts, token)
	case refusal != nil:
		return fmt.Errorf("%w after %d attempts: %w", ErrUnreachable, attempts, refusal)
	}
	return fmt.Errorf("%w after %d attempts (no reply in time)", ErrUnreachable, attempts)
}

// onReply applies one reply to the operation.
func (c *Client) onReply(r *call, op *retry.Operation, in *inbound, ex *exchange, onItem func(item, bool) (bool, error)) (retry.Decision, bool, error) {
	now := time.Now()
	switch {
	case in.failed != nil:
		return op.Tick(now), true, in.failed
	case in.refused != nil:
		if op.Phase() == retry.PhaseStreaming {
			// The stream broke after items arrived: never republished.
			return op.Tick(now), true, errStalled
		}
		return op.Refused(now), false, nil
	case in.end && in.resp == nil && in.envErr == nil:
		// The attempt ended with no reply at all.
		if op.Phase() == retry.PhaseStreaming {
			return op.Tick(now), true, errStalled
		}
		return op.Refused(now), false, nil
	case in.misrouted:
		c.ignored.Add(1)
		c.log.Warn("requester: reply without a valid a2a-responder-agent-id ignored (protocol error)", "task", r.taskID)
		return op.Tick(now), false, nil
	case in.envErr != nil && in.end:
		// The attempt's last reply, and not a JSON-RPC response: nothing
		// else will come for it.
		c.ignored.Add(1)
		return op.Tick(now), true, a2a.NewError(a2a.TokenInvalidAgentResponse, in.envErr.Error())
	case in.envErr != nil:
		c.ignored.Add(1)
		c.log.Warn("requester: malformed reply ignored", "err", in.envErr)
		return op.Tick(now), false, nil
	}
	responder := ""
	if len(in.responders) > 0 {
		responder = in.responders[len(in.responders)-1]
	}
	if e := in.resp.Err; e != nil {
		reply := retry.ErrorReply(e, responder)
		if od, ok := jsonrpc.OfflineDetails(e); ok {
			// The offline details, from the offline object or from the
			// ErrorInfo metadata of the HTTP binding alike.
			reply.Queued = od.Queued
			reply.RetryAfter = 0
			if od.RetryAfterSec != nil {
				reply.RetryAfter = time.Duration(*od.RetryAfterSec) * time.Second
			}
			if q := queuedFrom(e, od); q != nil {
				// Stored by the agent: never sent again (docs/protocol.md
				// §7.7); the caller polls GetTask.
				return op.Reply(reply, now), true, q
			}
		}
		d := op.Reply(reply, now)
		switch {
		case d.Action == retry.ActionFinish && d.Outcome == retry.OutcomeExhausted:
			// The last of the attempts got a retry-eligible error: both
			// the exhaustion and the token are in the chain.
			return d, true, fmt.Errorf("%w after %d attempts: %w", ErrUnreachable, op.Attempts(), e)
		case d.Action == retry.ActionFinish:
			return d, true, e
		}
		return d, false, nil
	}
	if r.streaming && !ex.firstSight(in.digest) {
		return op.Tick(now), false, nil
	}
	if r.taskID == "" && in.taskID != "" {
		// A server-made task id, learnt from the first item: a stalled
		// stream recovers with it.
		r.taskID = in.taskID
	}
	final := !r.streaming || in.final
	kind := retry.ReplyItem
	if final {
		kind = retry.ReplyFinal
	}
	d := op.Reply(retry.Reply{Kind: kind, Responder: responder}, now)
	more, err := onItem(item{value: in.value, err: in.valueErr, responder: responder}, final)
	switch {
	case err != nil || !more:
		return d, true, err
	case !final && in.end:
		// A stream whose last reply was not its final item.
		return d, true, errStalled
	}
	return d, final, nil
}
