package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/internal/gopool"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// AgentConfig configures an Agent.
type AgentConfig struct {
	// Connection is the broker connection.
	Connection
	// Org, Unit and ID name the agent; its Client ID is Org/Unit/ID.
	Org, Unit, ID string
	// Root is the topic root of every topic the agent uses: its card and
	// Will, its request topic, its pool's. The zero Root is the profile's
	// $a2a/v1; another is a deployment choice that requesters and the broker
	// must share (docs/protocol.md §1.5).
	Root mqttbind.Root
	// Card is the Agent Card, published retained on the discovery topic. A
	// spawned instance that serves handed-over tasks has none (nil): it
	// publishes no card and has no Will.
	Card *a2a.AgentCard
	// Pool, when set, also serves the shared pool request topic through
	// $share/{Group}/{Root}/…/pool/{Pool}. Group defaults to
	// mqttbind.DefaultGroupID(Org, Unit, Pool).
	Pool, Group string
	// Server is the runtime that answers requests.
	Server *agent.Server
	// Logger receives what cannot be answered on a reply path (a request
	// without Response Topic or Correlation Data, a failed publish).
	Logger *slog.Logger
}

// Agent is an A2A responder on MQTT. Create it with NewAgent.
type Agent struct {
	cfg          AgentConfig
	log          *slog.Logger
	clientID     string
	discovery    string
	requestTopic string
	poolTopic    string // the pool's request topic, as publishers use it
	poolFilter   string // the $share subscription

	conn *conn
	// connSet is closed once conn is set: requests can arrive while NewAgent
	// is still dialing.
	connSet chan struct{}

	mu           sync.Mutex
	card         *a2a.AgentCard
	unregistered bool
	closing      bool
	inflight     sync.WaitGroup
	// workers serve requests on goroutines kept for reuse.
	workers   *gopool.Pool
	cancelAll context.CancelFunc
	reqCtx    context.Context
}

// NewAgent connects an agent and returns once it is connected, subscribed
// and its card is published online. It fails with ErrBrokerUnreachable when
// the broker cannot be reached within the connect timeout; at once with a
// *ConnectError when the broker refuses the connection, a *SubscribeError
// or *PublishError when it refuses a subscription or the card, a
// *CapabilityError when its CONNACK does not offer what the agent needs
// (QoS 1; shared subscriptions for a Pool; retained messages for a card),
// a *PacketTooLargeError for a card over its maximum packet size; and
// with an *mqttbind.IdentifierError for an identifier that cannot stand in
// a topic. After every reconnect the agent subscribes and announces again,
// and reconnects until both succeed, unless the broker refuses them for
// good: then the agent stops (see Done and the package documentation,
// "Reconnects").
func NewAgent(ctx context.Context, cfg AgentConfig) (*Agent, error) {
	if cfg.Server == nil {
		return nil, errors.New("mqtt: AgentConfig.Server is required")
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, card: cfg.Card, connSet: make(chan struct{}), workers: gopool.New(0)}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if a.discovery, err = cfg.Root.DiscoveryTopic(cfg.Org, cfg.Unit, cfg.ID); err != nil {
		return nil, err
	}
	if a.requestTopic, err = cfg.Root.RequestTopic(cfg.Org, cfg.Unit, cfg.ID); err != nil {
		return nil, err
	}
	if cfg.Pool != "" {
		if a.poolTopic, err = cfg.Root.PoolRequestTopic(cfg.Org, cfg.Unit, cfg.Pool); err != nil {
			return nil, err
		}
		group := cfg.Group
		if group == "" {
			group = mqttbind.DefaultGroupID(cfg.Org, cfg.Unit, cfg.Pool)
		}
		if a.poolFilter, err = cfg.Root.PoolSubscriptionTopic(group, cfg.Org, cfg.Unit, cfg.Pool); err != nil {
			return nil, err
		}
	}
	if cfg.Card != nil {
		if err := cfg.Card.Validate(); err != nil {
			return nil, fmt.Errorf("mqtt: agent card: %w", err)
		}
	}
	a.clientID = cfg.Org + "/" + cfg.Unit + "/" + cfg.ID
	a.reqCtx, a.cancelAll = context.WithCancel(context.Background())

	cc := cfg.Connection.dialConfig(a.clientID, a.log, a.onPublish, a.announce)
	if cfg.Card != nil {
		cc.will = a.will
	}
	a.conn, err = dial(ctx, cc)
	if err != nil {
		a.cancelAll()
		a.workers.Close()
		return nil, err
	}
	close(a.connSet)
	return a, nil
}

// ClientID returns the agent's MQTT Client ID, Org/Unit/ID.
func (a *Agent) ClientID() string { return a.clientID }

// RequestTopic returns the agent's direct request topic.
func (a *Agent) RequestTopic() string { return a.requestTopic }

// BrokerCapabilities returns what the broker's CONNACK offered the
// agent's latest connection (MQTT v5 §3.2.2.3).
func (a *Agent) BrokerCapabilities() BrokerCapabilities { return a.conn.capabilities() }

// will is the Last Will of each CONNECT: the card as it is then.
func (a *Agent) will() (*paho.WillMessage, *paho.WillProperties) {
	a.mu.Lock()
	card, unregistered := a.card, a.unregistered
	a.mu.Unlock()
	if card == nil || unregistered {
		return nil, nil
	}
	payload, err := card.MarshalJSON()
	if err != nil {
		return nil, nil
	}
	return &paho.WillMessage{Topic: a.discovery, Payload: payload, QoS: 1, Retain: true},
		&paho.WillProperties{User: statusProps(mqttbind.StatusOffline, mqttbind.StatusSourceLWT)}
}

// announce checks that the broker offers what the agent needs (shared
// subscriptions for a pool, retained messages for a card), subscribes the
// request topics, then publishes the card online: after every
// (re)connect, so that nobody sees the agent online before it listens.
func (a *Agent) announce(ctx context.Context, cm *autopaho.ConnectionManager, caps BrokerCapabilities) error {
	filters := []string{a.requestTopic}
	if a.poolFilter != "" {
		if err := caps.needShared(); err != nil {
			return err
		}
		filters = append(filters, a.poolFilter)
	}
	a.mu.Lock()
	hasCard := a.card != nil
	a.mu.Unlock()
	if hasCard {
		if err := caps.needRetain(); err != nil {
			return err
		}
	}
	if err := subscribe(ctx, cm, filters...); err != nil {
		return err
	}
	return a.publishCard(ctx, cm, caps, mqttbind.StatusOnline)
}

func (a *Agent) publishCard(ctx context.Context, cm *autopaho.ConnectionManager, caps BrokerCapabilities, status string) error {
	a.mu.Lock()
	card, unregistered := a.card, a.unregistered
	a.mu.Unlock()
	if card == nil || unregistered {
		return nil
	}
	p, err := a.cardPublish(card, status)
	if err != nil {
		return err
	}
	return publishVia(ctx, cm, caps, p)
}

// cardPublish is the retained publish of a card.
func (a *Agent) cardPublish(card *a2a.AgentCard, status string) (*paho.Publish, error) {
	payload, err := card.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &paho.Publish{Topic: a.discovery, QoS: 1, Retain: true, Payload: payload,
		Properties: &paho.PublishProperties{ContentType: "application/json", User: statusProps(status, mqttbind.StatusSourceAgent)}}, nil
}

// UpdateCard replaces the card and republishes it, in full, online. The Will
// carries the new card from the next connection on. Once Done is closed it
// fails with an error wrapping ErrStopped. A card over the broker's
// maximum packet size (CONNACK) is refused with a *PacketTooLargeError
// before anything is sent, and the agent keeps its card.
func (a *Agent) UpdateCard(ctx context.Context, card *a2a.AgentCard) error {
	if err := card.Validate(); err != nil {
		return fmt.Errorf("mqtt: agent card: %w", err)
	}
	if p, err := a.cardPublish(card, mqttbind.StatusOnline); err != nil {
		return err
	} else if err := a.conn.capabilities().checkSize(p); err != nil {
		return err
	}
	a.mu.Lock()
	a.card = card
	a.unregistered = false
	a.mu.Unlock()
	if err := a.conn.stoppedError(); err != nil {
		return err
	}
	return a.publishCard(ctx, a.conn.cm, a.conn.capabilities(), mqttbind.StatusOnline)
}

// Done returns a channel that is closed when the agent's connection has
// stopped for good on its own: after a reconnect, the broker refused the
// agent's subscriptions or its card in a way that retrying cannot change
// (not authorized, an invalid topic or card: see the package
// documentation, "Reconnects"), typically because the broker's ACL or
// registry changed. The agent then reconnects no more: it receives no
// requests and publishes nothing, and the broker has published its Will
// (the card offline, a2a-status-source=lwt). The refusal is logged once,
// at ERROR, on AgentConfig.Logger, and Err returns it. Close does not
// close the channel. A program that runs an agent until it is told to stop
// should also stop, with Err, when Done is closed.
func (a *Agent) Done() <-chan struct{} { return a.conn.done }

// Err returns why the agent stopped once Done is closed: the
// *SubscribeError, *PublishError or *ConnectError the broker refused with
// (errors.As reads its reason code), or the *CapabilityError or
// *PacketTooLargeError the broker's CONNACK now causes. It returns nil
// before Done is closed, and for an agent that Close stopped.
func (a *Agent) Err() error { return a.conn.err() }

// Unregister clears the retained card (an empty retained message on the
// discovery topic): subscribers forget the agent. The agent stays connected
// and keeps serving requests; Close will not republish a card.
func (a *Agent) Unregister(ctx context.Context) error {
	a.mu.Lock()
	a.unregistered = true
	a.mu.Unlock()
	return a.conn.publish(ctx, &paho.Publish{Topic: a.discovery, QoS: 1, Retain: true, Payload: nil})
}

// Close stops the agent gracefully: new requests are no longer taken,
// requests in progress finish (or are abandoned when ctx ends), the card is
// republished offline with a2a-status-source=agent, and the connection is
// closed with a normal DISCONNECT, so the Will does not fire (Close
// returns once the broker has closed the connection, at most a second
// after the DISCONNECT: an agent started again at once with the same id
// cannot reach the broker before it), and a new agent may start with the
// same id as soon as Close returns. If the
// connection is down at that moment (the agent is reconnecting), there is
// nothing to republish on: the broker publishes, or has published, the
// Will, the card offline with a2a-status-source=lwt, and Close does not
// report it as an error. After Done is closed (the connection stopped for
// good) Close returns promptly: the requests in progress are cancelled at
// once (their replies could not be sent), nothing is published, and it
// returns nil; Err still says why the agent stopped. The runtime
// (agent.Server) is not closed.
func (a *Agent) Close(ctx context.Context) error {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return nil
	}
	a.closing = true
	a.mu.Unlock()
	stopped := a.conn.stoppedError() != nil
	if stopped {
		a.cancelAll()
	}
	done := make(chan struct{})
	go func() { a.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		a.cancelAll()
		<-done
	}
	a.cancelAll()
	a.workers.Close()
	var err error
	if !stopped {
		err = a.publishCard(ctx, a.conn.cm, a.conn.capabilities(), mqttbind.StatusOffline)
	}
	if isConnectionDown(err) || a.conn.stoppedError() != nil {
		// Down, or stopped for good meanwhile: the Will says offline.
		err = nil
	}
	if cerr := a.conn.close(ctx); err == nil {
		err = cerr
	}
	return err
}

// Kill drops the connection without DISCONNECT, as a crash would: the
// broker publishes the Will once it notices. For tests and demos.
func (a *Agent) Kill() {
	a.mu.Lock()
	a.closing = true
	a.mu.Unlock()
	a.cancelAll()
	a.conn.kill()
	a.inflight.Wait()
	a.workers.Close()
}

// onPublish routes a request to its own goroutine; it never blocks the
// client.
func (a *Agent) onPublish(pr paho.PublishReceived) {
	p := pr.Packet
	pooled := p.Topic == a.poolTopic && a.poolTopic != ""
	if p.Topic != a.requestTopic && !pooled {
		return
	}
	if p.Properties == nil || p.Properties.ResponseTopic == "" || len(p.Properties.CorrelationData) == 0 {
		a.log.Warn("mqtt: request without Response Topic or Correlation Data dropped (no reply path)", "agent", a.clientID, "topic", p.Topic)
		return
	}
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return
	}
	a.inflight.Add(1)
	a.mu.Unlock()
	// Only a request with a Message Expiry needs the time it came.
	var received time.Time
	if p.Properties.MessageExpiry != nil {
		received = time.Now()
	}
	a.workers.Go(func() {
		defer a.inflight.Done()
		a.handle(a.reqCtx, p, pooled, received)
	})
}

// replySink publishes the replies of one request.
type replySink struct {
	a       *Agent
	topic   string
	corr    []byte
	id      []byte
	pooled  bool
	binding jsonrpc.Binding
}

func (s *replySink) Send(ctx context.Context, r agent.Reply) error {
	payload, err := r.Encode(s.id, s.binding)
	if err != nil {
		return err
	}
	responder := r.Responder
	if responder == "" && s.pooled {
		responder = s.a.cfg.ID
	}
	select {
	case <-s.a.connSet:
	case <-ctx.Done():
		return ctx.Err()
	}
	out := &outbound{}
	out.pub = paho.Publish{Topic: s.topic, QoS: 1, Payload: payload, Properties: &out.props}
	out.props = paho.PublishProperties{CorrelationData: s.corr, ContentType: contentJSON}
	if responder != "" {
		out.props.User = append(out.user[:0], paho.UserProperty{Key: mqttbind.PropResponderAgentID, Value: responder})
	}
	if err := s.a.conn.publish(ctx, &out.pub); err != nil {
		s.a.log.Error("mqtt: publishing a reply", "agent", s.a.clientID, "topic", s.topic, "err", err)
		return err
	}
	return nil
}

// handle checks one request's binding metadata, then serves it.
func (a *Agent) handle(ctx context.Context, p *paho.Publish, pooled bool, received time.Time) {
	sink := &replySink{a: a, topic: p.Properties.ResponseTopic, corr: p.Properties.CorrelationData, pooled: pooled, binding: jsonrpc.BindingMQTT}
	answer := func(e *a2a.Error) {
		_ = sink.Send(ctx, agent.Reply{Err: e, Final: true})
	}
	// The runtime checks the payload size before decoding it (and the
	// parts of a message before decoding them): MQTT itself bounds
	// nothing short of the broker's maximum packet size.
	req, id, perr := a.cfg.Server.DecodeRequest(p.Payload)
	sink.id = id
	if perr != nil {
		answer(perr)
		return
	}
	if e := checkRequestProps(p.Properties.User, req); e != nil {
		answer(e)
		return
	}
	call := agent.Call{Request: req, IDs: tasklife.RequesterIDs,
		Token: strings.TrimPrefix(propFirst(p.Properties, mqttbind.PropAuthorization), "Bearer "), Capabilities: a.capabilities()}
	// Message Expiry is the request's remaining lifetime when the broker
	// delivered it; the runtime answers request_expired past it.
	if exp := p.Properties.MessageExpiry; exp != nil {
		call.Deadline = received.Add(time.Duration(*exp) * time.Second)
	}
	if err := a.cfg.Server.Serve(ctx, call, sink); err != nil && ctx.Err() == nil {
		a.log.Error("mqtt: serving a request", "agent", a.clientID, "method", req.Method, "err", err)
	}
}

// capabilities returns what the agent's card declares (nil for an instance
// without a card), for the runtime to enforce.
func (a *Agent) capabilities() *a2a.AgentCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.card == nil {
		return nil
	}
	return a.card.Capabilities
}

// checkRequestProps applies the binding's metadata rules: every known
// a2a-* property well formed and given once, and a2a-context-id equal to the
// payload's contextId. Violations are transport_protocol_error (-32005).
func checkRequestProps(user paho.UserProperties, req *jsonrpc.Request) *a2a.Error {
	ctxProp := ""
	for i, u := range user {
		if !strings.HasPrefix(u.Key, "a2a-") {
			continue
		}
		if _, known := mqttbind.LookupProperty(u.Key); !known {
			continue
		}
		for _, earlier := range user[:i] {
			if earlier.Key == u.Key {
				return a2a.NewError(a2a.TokenTransportProtocolError, "user property "+u.Key+" appears more than once")
			}
		}
		if err := mqttbind.CheckProperty(u.Key, u.Value); err != nil {
			msg := err.Error()
			if u.Key == mqttbind.PropAuthorization {
				msg = "user property " + u.Key + " is not of the form \"Bearer <token>\""
			}
			return a2a.NewError(a2a.TokenTransportProtocolError, msg)
		}
		if u.Key == mqttbind.PropContextID {
			ctxProp = u.Value
		}
	}
	if ctxProp != "" {
		if p, ok := req.Params.(*a2a.SendMessageRequest); ok && p.Message.ContextID != ctxProp {
			return a2a.NewError(a2a.TokenTransportProtocolError,
				"user property "+mqttbind.PropContextID+" ("+ctxProp+") differs from message.contextId ("+p.Message.ContextID+")")
		}
	}
	return nil
}
