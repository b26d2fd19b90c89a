package mqtt

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Connection is the broker connection.
	Connection
	// Org, Unit and ID name the requester: its Client ID is Org/Unit/ID and
	// its reply topic {Root}/reply/Org/Unit/ID/{random suffix}. Requests go
	// to agents and pools of the same Org and Unit.
	Org, Unit, ID string
	// Root is the topic root of the agents and pools the client asks, and
	// of its reply topic. The zero Root is the profile's $a2a/v1; another
	// is a deployment choice that agents and the broker must share
	// (docs/protocol.md §1.5).
	Root mqttbind.Root
	// Requester configures the requester: the retry profile (zero value:
	// mqttbind.DefaultRetryProfile()), the handover routes store, the bound
	// on finished routes and the logger (which also receives replies with
	// unknown Correlation Data).
	Requester requester.Config
}

// Client is an A2A requester on MQTT: a requester.Client (every A2A method,
// the retry profile, handover and stall recovery) over this binding's
// transport. Create it with NewClient; it is safe for concurrent use.
type Client struct {
	*requester.Client
	tr *clientTransport
}

// NewClient connects a requester and subscribes its reply topic before it
// returns, so no reply can be missed. It fails as NewAgent does: with
// ErrBrokerUnreachable, or at once with a *ConnectError, *SubscribeError
// or *CapabilityError. After every reconnect it subscribes again, and
// reconnects until the subscription is granted, unless the broker refuses
// it for good: then the client stops (see Done and the package
// documentation, "Reconnects").
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	log := cfg.Requester.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tr := &clientTransport{org: cfg.Org, unit: cfg.Unit, root: cfg.Root, log: log, inflight: map[string]func(*requester.Reply){}}
	var err error
	if tr.replyTopic, err = cfg.Root.ReplyTopic(cfg.Org, cfg.Unit, cfg.ID, uuid.NewString()); err != nil {
		return nil, err
	}
	rc, err := requester.New(tr, cfg.Requester)
	if err != nil {
		return nil, err
	}
	tr.conn, err = dial(ctx, cfg.Connection.dialConfig(cfg.Org+"/"+cfg.Unit+"/"+cfg.ID, log, tr.onPublish,
		func(ctx context.Context, cm *autopaho.ConnectionManager, _ BrokerCapabilities) error {
			return subscribe(ctx, cm, tr.replyTopic)
		}))
	if err != nil {
		return nil, err
	}
	return &Client{Client: rc, tr: tr}, nil
}

// ReplyTopic returns the client's reply topic.
func (c *Client) ReplyTopic() string { return c.tr.replyTopic }

// BrokerCapabilities returns what the broker's CONNACK offered the
// client's latest connection (MQTT v5 §3.2.2.3).
func (c *Client) BrokerCapabilities() BrokerCapabilities { return c.tr.conn.capabilities() }

// Done returns a channel that is closed when the client's connection has
// stopped for good on its own: after a reconnect, the broker refused the
// subscription of its reply topic in a way that retrying cannot change
// (not authorized, an invalid filter: see the package documentation,
// "Reconnects"), typically because the broker's ACL changed. The client
// then reconnects no more, and every request fails: its attempts are not
// sent (their errors wrap ErrStopped). The refusal is logged once, at
// ERROR, on Requester.Logger, and Err returns it. Close does not close the
// channel; after Done is closed, Close returns nil at once.
func (c *Client) Done() <-chan struct{} { return c.tr.conn.done }

// Err returns why the client stopped once Done is closed: the
// *SubscribeError or *ConnectError the broker refused with (errors.As
// reads its reason code), or the *CapabilityError its CONNACK now causes.
// It returns nil before Done is closed, and for a client that Close
// stopped.
func (c *Client) Err() error { return c.tr.conn.err() }

// IgnoredReplies counts replies dropped as protocol errors: unknown or
// missing Correlation Data, a reply that is not JSON-RPC, a pooled reply
// without a2a-responder-agent-id.
func (c *Client) IgnoredReplies() int64 { return c.Client.IgnoredReplies() + c.tr.ignored.Load() }

// clientTransport is the requester.Transport of this binding: an attempt is
// a QoS 1 publish to the target's request topic with fresh Correlation Data
// (also the JSON-RPC id) and the client's Response Topic; replies are routed
// back by their Correlation Data.
type clientTransport struct {
	org, unit  string
	root       mqttbind.Root
	replyTopic string
	conn       *conn
	log        *slog.Logger

	mu       sync.Mutex
	inflight map[string]func(*requester.Reply) // by Correlation Data

	ignored atomic.Int64
	// lastTopic is the request topic of the latest target (see topic).
	lastTopic atomic.Pointer[requestTopic]
}

// Binding: MQTT error data, requester-made task ids, the profile's retry
// defaults, and a target for every new task.
func (t *clientTransport) Binding() requester.Binding {
	return requester.Binding{Errors: jsonrpc.BindingMQTT, IDs: tasklife.RequesterIDs,
		Retry: mqttbind.DefaultRetryProfile(), NeedsTarget: true}
}

// Close disconnects normally.
func (t *clientTransport) Close(ctx context.Context) error { return t.conn.close(ctx) }

// errNoTopic is returned for an attempt with no target.
var errNoTopic = errors.New("mqtt: no agent or pool to publish to")

// Send publishes one attempt. Its Correlation Data (req.ID) stays live, so
// late replies to it still count, until stop.
func (t *clientTransport) Send(ctx context.Context, req *requester.Request, deliver func(*requester.Reply)) (func(), error) {
	topic, err := t.topic(req.Target)
	if err != nil {
		return nil, err
	}
	corr := req.ID
	// The JSON-RPC id is the Correlation Data as a JSON string, and the
	// Correlation Data is read back from the payload, where EncodeRequest
	// put it: the quoted id needs no buffer of its own past the call.
	var buf [64]byte
	quoted := buf[:0]
	if len(corr)+2 > len(buf) {
		quoted = make([]byte, 0, len(corr)+2)
	}
	quoted = append(append(append(quoted, '"'), corr...), '"')
	payload, err := jsonrpc.EncodeRequest(quoted, req.Method, req.Params)
	if err != nil {
		return nil, err
	}
	out := &outbound{}
	out.pub = paho.Publish{Topic: topic, QoS: 1, Payload: payload, Properties: &out.props}
	out.props = paho.PublishProperties{ResponseTopic: t.replyTopic, CorrelationData: idIn(payload, corr), ContentType: contentJSON}
	out.props.User = out.user[:0]
	if req.ContextID != "" {
		out.props.User = append(out.props.User, paho.UserProperty{Key: mqttbind.PropContextID, Value: req.ContextID})
	}
	if req.Bearer != "" {
		out.props.User = append(out.props.User, paho.UserProperty{Key: mqttbind.PropAuthorization, Value: "Bearer " + req.Bearer})
	}
	if len(out.props.User) == 0 {
		out.props.User = nil
	}
	if out.expiry = uint32(req.Expiry.Seconds()); out.expiry > 0 {
		out.props.MessageExpiry = &out.expiry
	}
	t.mu.Lock()
	t.inflight[corr] = deliver
	t.mu.Unlock()
	stop := func() {
		t.mu.Lock()
		delete(t.inflight, corr)
		t.mu.Unlock()
	}
	if err := t.conn.publish(ctx, &out.pub); err != nil {
		if endsRequest(err) {
			// Refused by the broker, or too large for it: sending it again
			// would get the same answer. The operation ends with the
			// refusal (requester.Reply.Failed), not retried.
			deliver(&requester.Reply{Failed: err})
			return stop, nil
		}
		stop()
		return nil, err
	}
	return stop, nil
}

// contentJSON is the Content Type of every request and reply.
const contentJSON = "application/json"

// outbound is one publish of a request or a reply with its properties, in
// one allocation: the packet, its properties, the Message Expiry they
// point to and room for one user property (a request's a2a-context-id, a
// pooled reply's a2a-responder-agent-id).
type outbound struct {
	pub    paho.Publish
	props  paho.PublishProperties
	expiry uint32
	user   [1]paho.UserProperty
}

// requestIDAt is where EncodeRequest writes a string id's text: right
// after this prefix.
const requestIDAt = len(`{"jsonrpc":"2.0","id":"`)

// idIn returns the bytes of the id corr inside the payload EncodeRequest
// wrote for it, or a copy of corr should the payload not start with it.
func idIn(payload []byte, corr string) []byte {
	if end := requestIDAt + len(corr); len(payload) > end && string(payload[requestIDAt:end]) == corr && payload[end] == '"' {
		return payload[requestIDAt:end:end]
	}
	return []byte(corr)
}

// requestTopic is a target's request topic, kept for the next attempt to
// the same target.
type requestTopic struct {
	target requester.Target
	topic  string
}

// topic returns the request topic of target: its pool's when it names
// one, else its agent's. The topic of the latest target is kept (one
// entry): a client mostly asks the same agent again.
func (t *clientTransport) topic(target requester.Target) (string, error) {
	if last := t.lastTopic.Load(); last != nil && last.target == target {
		return last.topic, nil
	}
	var topic string
	var err error
	switch {
	case target.Pool != "":
		topic, err = t.root.PoolRequestTopic(t.org, t.unit, target.Pool)
	case target.Agent != "":
		topic, err = t.root.RequestTopic(t.org, t.unit, target.Agent)
	default:
		err = errNoTopic
	}
	if err != nil {
		return "", err
	}
	t.lastTopic.Store(&requestTopic{target: target, topic: topic})
	return topic, nil
}

// onPublish hands a reply to the attempt whose Correlation Data it carries;
// a reply with unknown or missing Correlation Data is a protocol error,
// counted and dropped.
func (t *clientTransport) onPublish(pr paho.PublishReceived) {
	p := pr.Packet
	if p.Topic != t.replyTopic {
		return
	}
	var corr []byte
	if p.Properties != nil {
		corr = p.Properties.CorrelationData
	}
	t.mu.Lock()
	deliver := t.inflight[string(corr)]
	t.mu.Unlock()
	if deliver == nil {
		t.ignored.Add(1)
		t.log.Warn("mqtt: reply with unknown or missing Correlation Data ignored (protocol error)", "topic", p.Topic)
		return
	}
	deliver(&requester.Reply{Payload: p.Payload, Responders: propValues(p.Properties, mqttbind.PropResponderAgentID)})
}
