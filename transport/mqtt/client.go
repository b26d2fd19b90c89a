package mqtt

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/statemachines/retry"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Broker, TLS, Username and Password: as in AgentConfig.
	Broker   string
	TLS      *tls.Config
	Username string
	Password []byte
	// Org, Unit and ID name the requester: its Client ID is Org/Unit/ID and
	// its reply topic $a2a/v1/reply/Org/Unit/ID/{random suffix}. Requests go
	// to agents and pools of the same Org and Unit.
	Org, Unit, ID string
	// Retry is the retry and timeout profile (zero value:
	// mqttbind.DefaultRetryProfile()).
	Retry mqttbind.RetryProfile
	// Jitter draws the backoff jitter in [0, 1) (default: math/rand).
	Jitter retry.Jitter
	// Routes persists the handover routing table, so that follow-ups after a
	// restart still go to the agent that took a task over (optional). A
	// route changed or forgotten by a reply is saved or deleted on the
	// connection's goroutine, before the reply reaches its operation (so an
	// operation never returns before its route is stored): keep SaveRoute
	// and DeleteRoute quick, a local write rather than a network round trip.
	Routes handover.Store
	// FinishedRoutes is how many routes of finished tasks (COMPLETED,
	// FAILED, CANCELED, REJECTED) the client keeps, most recent first, for a
	// GetTask after the end; older ones are forgotten, and deleted from
	// Routes. Routes of tasks still going are always kept. Default 1024; a
	// negative value keeps none.
	FinishedRoutes int
	// KeepAlive and ConnectTimeout: as in AgentConfig.
	KeepAlive, ConnectTimeout time.Duration
	// Logger receives protocol errors that have no caller to return to
	// (replies with unknown Correlation Data).
	Logger *slog.Logger
}

// Client is an A2A requester on MQTT. Create it with NewClient; it is safe
// for concurrent use.
type Client struct {
	cfg        ClientConfig
	log        *slog.Logger
	replyTopic string
	conn       *conn
	profile    mqttbind.RetryProfile

	mu       sync.Mutex
	inflight map[string]*exchange // by Correlation Data
	routes   *handover.Table
	// finished are the routed tasks seen in a terminal state, oldest first;
	// finishedSet holds the same ids.
	finished    []string
	finishedSet map[string]struct{}

	ignored atomic.Int64
}

// exchange is one logical operation's set of live attempts.
type exchange struct {
	replies chan *inbound
	// decode decodes and checks the operation's result; it runs on the
	// connection's goroutine and must be safe for concurrent use.
	decode    resultDecoder
	streaming bool
	taskID    string // the task the operation is about ("" for none)
}

// resultDecoder decodes a JSON-RPC result into its generated type and
// checks it against the schema.
type resultDecoder func(json.RawMessage) (any, error)

// decodeWith adapts a generated Parse<Type>JSON function.
func decodeWith[T any](parse func([]byte) (*T, error)) resultDecoder {
	return func(raw json.RawMessage) (any, error) {
		v, err := parse(raw)
		if err != nil {
			return nil, err
		}
		return v, nil
	}
}

// inbound is a correlated reply, decoded once, on the connection's
// goroutine, before the operation's goroutine is woken: the envelope, the
// result into its type, and for a stream item whether it ends the stream
// and its digest (QoS 1 duplicates are dropped by digest).
type inbound struct {
	responders []string
	resp       *jsonrpc.Response // nil when the envelope is malformed
	envErr     error             // why the envelope is malformed
	value      any               // the decoded result
	valueErr   error             // the result breaks its schema
	final      bool              // a stream item that ends the stream
	digest     [32]byte          // a stream item's SHA-256
	// misrouted: the handover table found no valid a2a-responder-agent-id
	// where one is required (a pooled reply): a protocol error.
	misrouted bool
}

// decodeInbound decodes a reply for ex.
func decodeInbound(ex *exchange, payload []byte, responders []string) *inbound {
	in := &inbound{responders: responders}
	in.resp, in.envErr = jsonrpc.DecodeResponse(payload, jsonrpc.BindingMQTT)
	if in.envErr != nil || in.resp.Err != nil {
		return in
	}
	in.value, in.valueErr = ex.decode(in.resp.Result)
	if ex.streaming {
		in.digest = sha256.Sum256(payload)
		if item, ok := in.value.(*a2a.StreamResponse); ok {
			in.final = tasklife.StreamItemFinal(item)
		}
	}
	return in
}

// NewClient connects a requester and subscribes its reply topic before it
// returns, so no reply can be missed.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	c := &Client{cfg: cfg, log: cfg.Logger, inflight: map[string]*exchange{}, routes: handover.NewTable(), profile: cfg.Retry,
		finishedSet: map[string]struct{}{}}
	if c.cfg.FinishedRoutes == 0 {
		c.cfg.FinishedRoutes = DefaultFinishedRoutes
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.profile.MaxAttempts == 0 {
		c.profile = mqttbind.DefaultRetryProfile()
	}
	if err := retry.CheckProfile(c.profile); err != nil {
		return nil, err
	}
	var err error
	if c.replyTopic, err = mqttbind.ReplyTopic(cfg.Org, cfg.Unit, cfg.ID, uuid.NewString()); err != nil {
		return nil, err
	}
	if cfg.Routes != nil {
		if err := c.routes.Restore(cfg.Routes); err != nil {
			return nil, fmt.Errorf("mqtt: restoring handover routes: %w", err)
		}
	}
	c.conn, err = dial(ctx, connConfig{
		broker: cfg.Broker, tls: cfg.TLS, clientID: cfg.Org + "/" + cfg.Unit + "/" + cfg.ID, keepAlive: cfg.KeepAlive,
		connectTimeout: cfg.ConnectTimeout, username: cfg.Username, password: cfg.Password, log: c.log,
		onPublish: c.onPublish,
		onUp: func(ctx context.Context, cm *autopaho.ConnectionManager) error {
			return subscribe(ctx, cm, c.replyTopic)
		},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ReplyTopic returns the client's reply topic.
func (c *Client) ReplyTopic() string { return c.replyTopic }

// IgnoredReplies counts replies dropped as protocol errors: unknown or
// missing Correlation Data, a pooled reply without a2a-responder-agent-id.
func (c *Client) IgnoredReplies() int64 { return c.ignored.Load() }

// Close disconnects normally.
func (c *Client) Close(ctx context.Context) error { return c.conn.close(ctx) }

// Route returns where operations on a task go now (after handovers).
func (c *Client) Route(taskID string) (handover.Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.routes.Target(taskID)
}

func (c *Client) onPublish(pr paho.PublishReceived) {
	p := pr.Packet
	if p.Topic != c.replyTopic {
		return
	}
	var corr []byte
	if p.Properties != nil {
		corr = p.Properties.CorrelationData
	}
	c.mu.Lock()
	ex := c.inflight[string(corr)]
	c.mu.Unlock()
	if ex == nil {
		c.ignored.Add(1)
		c.log.Warn("mqtt: reply with unknown or missing Correlation Data ignored (protocol error)", "topic", p.Topic)
		return
	}
	in := decodeInbound(ex, p.Payload, propValues(p.Properties, mqttbind.PropResponderAgentID))
	c.noteReply(ex, in)
	select {
	case ex.replies <- in:
	default:
		// The operation is not reading (it ended); drop.
	}
}

// Target names where a new task goes: exactly one of Agent and Pool.
type Target struct {
	Agent string
	Pool  string
}

// CallOption adjusts one request.
type CallOption func(*callOpts)

type callOpts struct {
	bearer string
	expiry uint32
}

// WithBearer sends an OAuth 2.0 access token as a2a-authorization.
func WithBearer(token string) CallOption { return func(o *callOpts) { o.bearer = token } }

// WithMessageExpiry sets the MQTT Message Expiry of the request; it must be
// longer than the retry profile's first-reply timeout.
func WithMessageExpiry(d time.Duration) CallOption {
	return func(o *callOpts) { o.expiry = uint32(d / time.Second) }
}

// request is one operation to run.
type request struct {
	method    a2a.Method
	params    any
	decode    resultDecoder // the result's type
	taskID    string        // "" for operations not scoped to a task
	contextID string
	streaming bool
	target    Target // for a task the routing table does not know yet
	opts      callOpts
}

// ErrUnreachable wraps the failure of an operation whose retry profile ran
// out without a valid reply (after the fallback to the card agent, if any).
var ErrUnreachable = errors.New("mqtt: responder unreachable")

// reply is one answer handed to an operation: the result decoded (or why
// it breaks its schema) and the responder named by a2a-responder-agent-id,
// if any.
type reply struct {
	value     any
	err       error
	responder string
}

// invalid reports a result that breaks its schema.
func (r reply) invalid() error {
	return a2a.NewError(a2a.TokenInvalidAgentResponse, r.err.Error())
}

// Output names of the handover table the client acts on.
const (
	fsmPersistRoute  = fsm.HandoverOutputPersistRoute
	fsmFallBack      = fsm.HandoverOutputFallBackToCardAgent
	fsmProtocolError = fsm.HandoverOutputProtocolError
)

// routeFor returns where the operation goes and starts the route of a new
// task.
func (c *Client) routeFor(r *request) (retry.Target, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.taskID != "" {
		if t, ok := c.routes.Target(r.taskID); ok {
			return retry.Target{Agent: t.Agent, Pool: t.Pool}, nil
		}
		var step handover.Step
		var err error
		switch {
		case r.target.Pool != "":
			step, err = c.routes.StartPooled(r.taskID, r.target.Pool)
		case r.target.Agent != "":
			step, err = c.routes.Start(r.taskID, r.target.Agent)
		default:
			return retry.Target{}, fmt.Errorf("mqtt: no route for task %s: name the agent or pool", r.taskID)
		}
		if err != nil {
			return retry.Target{}, err
		}
		c.persist(r.taskID, step)
		return retry.Target{Agent: step.Target.Agent, Pool: step.Target.Pool}, nil
	}
	if r.target.Agent == "" && r.target.Pool == "" {
		return retry.Target{}, errors.New("mqtt: name the agent or pool")
	}
	return retry.Target{Agent: r.target.Agent, Pool: r.target.Pool}, nil
}

// DefaultFinishedRoutes is ClientConfig.FinishedRoutes when it is zero.
const DefaultFinishedRoutes = 1024

// observeLocked notes the state a reply showed for the task an operation
// was about (a reply about another task is ignored): once the task is
// finished its route joins the bounded set of finished routes, and the
// oldest finished route beyond the bound is forgotten. Called with c.mu
// held.
func (c *Client) observeLocked(taskID, replyTaskID string, state a2a.TaskState) {
	if taskID == "" || replyTaskID != taskID {
		return
	}
	st, err := tasklife.StateOf(state)
	if err != nil || !st.Terminal() {
		return
	}
	if _, ok := c.routes.Route(taskID); !ok {
		return
	}
	if _, seen := c.finishedSet[taskID]; seen {
		return
	}
	c.finished = append(c.finished, taskID)
	c.finishedSet[taskID] = struct{}{}
	for len(c.finished) > max(c.cfg.FinishedRoutes, 0) {
		old := c.finished[0]
		c.finished[0] = ""
		c.finished = c.finished[1:]
		delete(c.finishedSet, old)
		c.routes.Forget(old)
		if c.cfg.Routes != nil {
			if err := c.cfg.Routes.DeleteRoute(old); err != nil {
				c.log.Error("mqtt: deleting a finished task's route", "task", old, "err", err)
			}
		}
	}
}

// persist saves a route when the step asks for it. Called with c.mu held.
func (c *Client) persist(taskID string, step handover.Step) {
	if c.cfg.Routes == nil || !step.Outputs.Has(fsmPersistRoute) {
		return
	}
	if r, ok := c.routes.Route(taskID); ok {
		if err := c.cfg.Routes.SaveRoute(r); err != nil {
			c.log.Error("mqtt: saving a handover route", "task", taskID, "err", err)
		}
	}
}

func (c *Client) topicFor(t retry.Target) (string, error) {
	if t.Pool != "" {
		return mqttbind.PoolRequestTopic(c.cfg.Org, c.cfg.Unit, t.Pool)
	}
	return mqttbind.RequestTopic(c.cfg.Org, c.cfg.Unit, t.Agent)
}

// run drives one operation under the retry profile, calling onItem for each
// reply (error replies end it with an *a2a.Error). A task-scoped operation
// whose profile runs out against a handover target falls back to the card
// agent once.
func (c *Client) run(ctx context.Context, r *request, onItem func(reply, bool) (bool, error)) error {
	for fallback := 0; ; fallback++ {
		target, err := c.routeFor(r)
		if err != nil {
			return err
		}
		lastToken, err := c.attempts(ctx, r, target, onItem)
		if !errors.Is(err, ErrUnreachable) || r.taskID == "" || fallback > 0 {
			return err
		}
		c.mu.Lock()
		step, herr := c.routes.Exhausted(r.taskID)
		if herr == nil {
			c.persist(r.taskID, step)
		}
		c.mu.Unlock()
		if herr != nil || !step.Outputs.Has(fsmFallBack) {
			return err
		}
		c.log.Info("mqtt: handover target unreachable; falling back to the card agent", "task", r.taskID, "token", lastToken)
	}
}

// attempts runs the retry profile against one target.
func (c *Client) attempts(ctx context.Context, r *request, target retry.Target, onItem func(reply, bool) (bool, error)) (a2a.Token, error) {
	buf := 4 // a single reply, and the replies to earlier attempts
	if r.streaming {
		buf = 64
	}
	ex := &exchange{replies: make(chan *inbound, buf), decode: r.decode, streaming: r.streaming, taskID: r.taskID}
	var corrs []string
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		c.mu.Lock()
		for _, k := range corrs {
			delete(c.inflight, k)
		}
		c.mu.Unlock()
	}()
	op := retry.New(c.profile, c.cfg.Jitter)
	now := time.Now()
	d := op.Start(target, now)
	var seen map[[32]byte]bool // stream items already delivered (QoS 1 duplicates)
	if r.streaming {
		seen = map[[32]byte]bool{}
	}
	for {
		switch d.Action {
		case retry.ActionPublish:
			corr := uuidv4.New()
			c.mu.Lock()
			c.inflight[corr] = ex
			c.mu.Unlock()
			corrs = append(corrs, corr)
			attempt := d.Attempt
			if err := c.publishRequest(ctx, r, d.Target, corr); err != nil {
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				c.log.Debug("mqtt: request not accepted", "attempt", attempt, "err", err)
				d = op.Refused(time.Now())
				continue
			}
			d = op.Tick(time.Now())
		case retry.ActionFinish:
			switch d.Outcome {
			case retry.OutcomeExhausted:
				if d.Token != "" {
					return d.Token, fmt.Errorf("%w after %d attempts (last error %s)", ErrUnreachable, op.Attempts(), d.Token)
				}
				return "", fmt.Errorf("%w after %d attempts", ErrUnreachable, op.Attempts())
			}
			return d.Token, nil
		case retry.ActionGetTask:
			return "", errStalled
		case retry.ActionWait:
			wait := time.Until(d.Wake)
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-timer.C:
				d = op.Tick(time.Now())
			case in := <-ex.replies:
				var stop bool
				var err error
				d, stop, err = c.onReply(r, &op, in, seen, onItem)
				if err != nil || stop {
					return "", err
				}
			}
		}
	}
}

// noteReply applies what a reply says about the operation's task, on the
// connection's goroutine before the operation is woken: the handover
// table's step for its a2a-responder-agent-id (saved when the step says
// so), and, when the reply shows the task finished, the bound on finished
// routes. A misrouted reply changes nothing but is marked.
func (c *Client) noteReply(ex *exchange, in *inbound) {
	if ex.taskID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	step, err := c.routes.Reply(ex.taskID, in.responders)
	if err == nil {
		c.persist(ex.taskID, step)
		if step.Outputs.Has(fsmProtocolError) {
			in.misrouted = true
			return
		}
	}
	if id, state, ok := taskStateOf(in.value); ok {
		c.observeLocked(ex.taskID, id, state)
	}
}

// taskStateOf returns the task id and state a decoded result shows, if it
// shows one.
func taskStateOf(v any) (string, a2a.TaskState, bool) {
	var t *a2a.Task
	switch v := v.(type) {
	case *a2a.Task:
		t = v
	case *a2a.SendMessageResponse:
		t, _ = v.Payload.(*a2a.Task)
	case *a2a.StreamResponse:
		switch p := v.Payload.(type) {
		case *a2a.Task:
			t = p
		case *a2a.TaskStatusUpdateEvent:
			if p.Status != nil {
				return p.TaskID, p.Status.State, true
			}
		}
	}
	if t == nil || t.Status == nil {
		return "", "", false
	}
	return t.ID, t.Status.State, true
}

// errStalled ends a stream that went idle: the caller recovers with GetTask.
var errStalled = errors.New("mqtt: stream stalled")

// onReply applies one correlated reply to the operation.
func (c *Client) onReply(r *request, op *retry.Operation, in *inbound, seen map[[32]byte]bool, onItem func(reply, bool) (bool, error)) (retry.Decision, bool, error) {
	now := time.Now()
	responder := ""
	if in.misrouted {
		c.ignored.Add(1)
		c.log.Warn("mqtt: reply without a valid a2a-responder-agent-id ignored (protocol error)", "task", r.taskID)
		return op.Tick(now), false, nil
	}
	if len(in.responders) > 0 {
		responder = in.responders[len(in.responders)-1]
	}
	if in.envErr != nil {
		c.ignored.Add(1)
		c.log.Warn("mqtt: malformed reply ignored", "err", in.envErr)
		return op.Tick(now), false, nil
	}
	resp := in.resp
	if resp.Err != nil {
		d := op.Reply(retry.ErrorReply(resp.Err, responder), now)
		if d.Action == retry.ActionFinish {
			return d, true, resp.Err
		}
		return d, false, nil
	}
	if r.streaming {
		if seen[in.digest] {
			return op.Tick(now), false, nil
		}
		seen[in.digest] = true
	}
	final := !r.streaming || in.final
	kind := retry.ReplyItem
	if final {
		kind = retry.ReplyFinal
	}
	d := op.Reply(retry.Reply{Kind: kind, Responder: responder}, now)
	more, err := onItem(reply{value: in.value, err: in.valueErr, responder: responder}, final)
	if err != nil || !more {
		return d, true, err
	}
	return d, final, nil
}

// publishRequest publishes one attempt.
func (c *Client) publishRequest(ctx context.Context, r *request, t retry.Target, corr string) error {
	topic, err := c.topicFor(t)
	if err != nil {
		return err
	}
	// The JSON-RPC id is the Correlation Data as a JSON string: one
	// buffer holds both.
	quoted := make([]byte, 0, len(corr)+2)
	quoted = append(append(append(quoted, '"'), corr...), '"')
	payload, err := jsonrpc.EncodeRequest(quoted, r.method, r.params)
	if err != nil {
		return err
	}
	props := &paho.PublishProperties{ResponseTopic: c.replyTopic, CorrelationData: quoted[1 : len(quoted)-1], ContentType: "application/json",
		User: userProps(mqttbind.PropContextID, r.contextID)}
	if r.opts.bearer != "" {
		props.User = append(props.User, paho.UserProperty{Key: mqttbind.PropAuthorization, Value: "Bearer " + r.opts.bearer})
	}
	if r.opts.expiry > 0 {
		exp := r.opts.expiry
		props.MessageExpiry = &exp
	}
	return c.conn.publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: payload, Properties: props})
}
