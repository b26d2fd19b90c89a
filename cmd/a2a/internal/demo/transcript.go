package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// sniffer prints a readable transcript of what crosses the broker under
// the topic root ({root}/#, $a2a/v1/# in the profile): topic, key
// properties and a short payload summary.
type sniffer struct {
	w     io.Writer
	root  mqttbind.Root
	start time.Time
	cm    *autopaho.ConnectionManager
	stop  context.CancelFunc

	mu    sync.Mutex
	lines []string
	msgs  []Message
	last  time.Time // when the latest message was recorded
	on    bool

	// scope is "ORG/UNIT" of the demo's topics, which the transcript
	// leaves out (shortTopic); printed remembers the latest line printed
	// for each discovery topic, so that a message that changes nothing
	// is not printed again.
	scope   string
	printed map[string]string

	marker   string
	markers  chan string
	url      *url.URL
	conn     a2amqtt.Connection // TLS and credentials
	clientID string
}

// startSniffer records what crosses the broker under root.
func startSniffer(ctx context.Context, conn a2amqtt.Connection, root mqttbind.Root, clientID string, w io.Writer) (*sniffer, error) {
	return startSnifferAt(ctx, conn, root, clientID, w, time.Now())
}

// startSnifferAt is startSniffer with the time its transcript counts from.
func startSnifferAt(ctx context.Context, conn a2amqtt.Connection, root mqttbind.Root, clientID string, w io.Writer, start time.Time) (*sniffer, error) {
	u, err := url.Parse(conn.Broker)
	if err != nil {
		return nil, err
	}
	s := &sniffer{w: w, root: root, start: start, on: true, markers: make(chan string, 16), url: u, conn: conn, clientID: clientID,
		printed: map[string]string{}}
	org, unit, _ := strings.Cut(clientID, "/")
	unit, _, _ = strings.Cut(unit, "/")
	s.scope = org + "/" + unit
	s.marker, err = root.EventTopic(org, unit, "transcript")
	if err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	refused := make(chan error, 1)
	runCtx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	cm, err := autopaho.NewConnection(runCtx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		TlsCfg: conn.TLS, ConnectUsername: conn.Username, ConnectPassword: conn.Password,
		// A broker that refuses the CONNECT (credentials) will not change
		// its mind: fail at once rather than at the demo's deadline, with
		// the refusal as the SDK's connections report it.
		OnConnectError: func(err error) {
			var ce *autopaho.ConnackError
			if errors.As(err, &ce) {
				select {
				case refused <- &a2amqtt.ConnectError{Broker: conn.Broker, ReasonCode: ce.ReasonCode, Reason: ce.Reason}:
				default:
				}
			}
		},
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			go func() {
				_, err := cm.Subscribe(runCtx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: root.Wildcard(), QoS: 1}}})
				ready <- err
			}()
		},
		ClientConfig: paho.ClientConfig{ClientID: clientID, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) { s.record(pr.Packet); return true, nil }}}})
	if err != nil {
		cancel()
		return nil, err
	}
	s.cm = cm
	select {
	case err = <-ready:
	case err = <-refused:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

// mute stops printing the transcript (recording goes on): what the
// agents publish as they stop comes after the verdicts.
func (s *sniffer) mute() {
	s.mu.Lock()
	s.on = false
	s.mu.Unlock()
}

func (s *sniffer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s.cm.Disconnect(ctx)
	s.stop()
	<-s.cm.Done()
}

// seen returns the transcript lines recorded so far and forgets them.
func (s *sniffer) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.lines
	s.lines = nil
	return out
}

// sync waits until everything published before it has reached the
// transcript: it publishes a marker through the broker and waits for it.
func (s *sniffer) sync(ctx context.Context) error {
	token := fmt.Sprintf("sync-%d", time.Now().UnixNano())
	if _, err := s.cm.Publish(ctx, &paho.Publish{Topic: s.marker, QoS: 1, Payload: []byte(token)}); err != nil {
		return err
	}
	for {
		select {
		case got := <-s.markers:
			if got == token {
				return s.quiet(ctx, 100*time.Millisecond)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// quiet waits until nothing has been recorded for d: a broker may
// acknowledge a publish before it has fanned it out, so a message sent just
// before the marker can still be on its way.
func (s *sniffer) quiet(ctx context.Context, d time.Duration) error {
	for {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		wait := d - time.Since(last)
		if wait <= 0 {
			return nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// seen waits until the transcript has recorded a card on the discovery
// topic with the given a2a-status and (unless "") a2a-status-source since
// the last takeMessages,
// so that a story's presence messages are recorded within the story.
func (s *sniffer) seen(ctx context.Context, discoveryTopic, status, source string) error {
	for {
		s.mu.Lock()
		for _, m := range s.msgs {
			if m.Topic != discoveryTopic {
				continue
			}
			st, src := "", ""
			for _, p := range m.Props {
				switch p[0] {
				case mqttbind.PropStatus:
					st = p[1]
				case mqttbind.PropStatusSource:
					src = p[1]
				}
			}
			if st == status && (source == "" || src == source) {
				s.mu.Unlock()
				return nil
			}
		}
		s.mu.Unlock()
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("the transcript never saw %s %s: %w", discoveryTopic, status, ctx.Err())
		}
	}
}

// sawPayload waits until the transcript holds a publish on topic with
// payload: a barrier for a story whose next step must come after it in
// the transcript (the broker orders one publisher's messages, not two
// publishers').
func (s *sniffer) sawPayload(ctx context.Context, topic string, payload []byte) error {
	for {
		s.mu.Lock()
		for _, m := range s.msgs {
			if m.Topic == topic && bytes.Equal(m.Payload, payload) {
				s.mu.Unlock()
				return nil
			}
		}
		s.mu.Unlock()
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("the transcript never saw %q on %s: %w", payload, topic, ctx.Err())
		}
	}
}

// Message is one publish seen on the broker.
type Message struct {
	Topic   string
	QoS     byte
	Retain  bool
	Props   [][2]string // user properties, in order
	Corr    []byte
	Reply   string // Response Topic
	Payload []byte
}

// takeMessages returns the messages recorded so far and forgets them.
func (s *sniffer) takeMessages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.msgs
	s.msgs = nil
	return out
}

func (s *sniffer) record(p *paho.Publish) {
	if p.Topic == s.marker || strings.HasPrefix(p.Topic, s.marker+"-") {
		select {
		case s.markers <- string(p.Payload):
		default:
		}
		return
	}
	m := Message{Topic: p.Topic, QoS: p.QoS, Retain: p.Retain, Payload: append([]byte(nil), p.Payload...)}
	if pr := p.Properties; pr != nil {
		m.Corr, m.Reply = pr.CorrelationData, pr.ResponseTopic
		for _, u := range pr.User {
			m.Props = append(m.Props, [2]string{u.Key, u.Value})
		}
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.last = time.Now()
	s.mu.Unlock()
	short := s.shortTopic(p.Topic)
	what := short + propSummary(p) + "  " + s.payloadSummary(p)
	line := fmt.Sprintf("  %7.3fs  %s", time.Since(s.start).Seconds(), what)
	s.mu.Lock()
	if strings.HasPrefix(short, "discovery/") {
		// A card republished unchanged (a Will and the broker's own
		// offline for one disconnect) is one event: printed once.
		if s.printed[p.Topic] == what {
			s.mu.Unlock()
			return
		}
		s.printed[p.Topic] = what
	}
	s.lines = append(s.lines, line)
	on := s.on
	s.mu.Unlock()
	if on {
		fmt.Fprintln(s.w, line)
	}
}

// shortTopic is a topic as the transcript shows it (Legend): without the
// root, and, for the demo's org and unit, without them either:
// discovery/ID, request/ID, request/pool/P, event/ID, and reply/ID for a
// reply topic of requester ID, its reply id left out.
func (s *sniffer) shortTopic(t string) string {
	rest, ok := s.root.Relative(t)
	if !ok {
		return t
	}
	kind, tail, ok := strings.Cut(rest, "/")
	if !ok || s.scope == "" {
		return rest
	}
	if tail, ok = strings.CutPrefix(tail, s.scope+"/"); !ok {
		return rest
	}
	if kind == "reply" {
		id, _, _ := strings.Cut(tail, "/")
		return kind + "/" + id
	}
	return kind + "/" + tail
}

// Legend explains the topics of the transcript (shortTopic) of a demo
// whose topics are under root, for org and unit.
func Legend(root mqttbind.Root, org, unit string) string {
	base := root.String() + "/%s/" + org + "/" + unit + "/"
	return "legend: the transcript writes topics short\n" +
		fmt.Sprintf("  %-16s %s\n", "discovery/ID", fmt.Sprintf(base, "discovery")+"ID  (agent ID's card and status)") +
		fmt.Sprintf("  %-16s %s\n", "request/ID", fmt.Sprintf(base, "request")+"ID  (requests to agent ID; request/pool/P: to pool P)") +
		fmt.Sprintf("  %-16s %s\n", "reply/ID", fmt.Sprintf(base, "reply")+"ID/REPLY-ID  (replies to requester ID)") +
		fmt.Sprintf("  %-16s %s\n", "event/ID", fmt.Sprintf(base, "event")+"ID") +
		"  [corr=…] the first 8 characters of the Correlation Data; task ids likewise shortened\n"
}

func propSummary(p *paho.Publish) string {
	var parts []string
	if p.Retain {
		parts = append(parts, "retained")
	}
	if pr := p.Properties; pr != nil {
		if len(pr.CorrelationData) > 0 {
			c := string(pr.CorrelationData)
			if len(c) > 8 {
				c = c[:8]
			}
			parts = append(parts, "corr="+c)
		}
		for _, u := range pr.User {
			switch u.Key {
			case mqttbind.PropStatus, mqttbind.PropStatusSource, mqttbind.PropResponderAgentID:
				parts = append(parts, strings.TrimPrefix(u.Key, "a2a-")+"="+u.Value)
			case mqttbind.PropAuthorization:
				parts = append(parts, "authorization=<redacted>")
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, " ") + "]"
}

func (s *sniffer) payloadSummary(p *paho.Publish) string {
	if strings.HasPrefix(s.shortTopic(p.Topic), "discovery/") {
		if len(p.Payload) == 0 {
			return "card cleared"
		}
		var card a2a.AgentCard
		if err := card.UnmarshalJSON(p.Payload); err != nil {
			return "not a card"
		}
		return "card " + card.Name
	}
	return rpcSummary(p.Payload)
}

// rpcSummary summarises a JSON-RPC request or response, whatever carried
// it (an MQTT publish, an HTTP body, a Server-Sent Event).
func rpcSummary(payload []byte) string {
	var off struct {
		Error         string `json:"error"`
		Queued        bool   `json:"queued"`
		TaskID        string `json:"taskId"`
		RetryAfterSec *int   `json:"retryAfterSec"`
		Kind          string `json:"kind"`
	}
	// An offline answer's body (docs/protocol.md §7.2, §7.4): not a
	// JSON-RPC envelope.
	if json.Unmarshal(payload, &off) == nil && (off.Error == "agent_asleep" || off.Error == "asleep_queue_full") {
		out := fmt.Sprintf("%s queued=%v", off.Error, off.Queued)
		if off.TaskID != "" {
			out += " task=" + short(off.TaskID)
		}
		if off.RetryAfterSec != nil {
			out += fmt.Sprintf(" retryAfterSec=%d", *off.RetryAfterSec)
		}
		if off.Kind != "" {
			out += " kind=" + off.Kind
		}
		return out
	}
	var env struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		return fmt.Sprintf("%d bytes", len(payload))
	}
	switch {
	case env.Method != "":
		var sm a2a.SendMessageRequest
		if env.Method == string(a2a.MethodSendMessage) || env.Method == string(a2a.MethodSendStreamingMessage) {
			if sm.UnmarshalJSON(env.Params) == nil && sm.Message != nil {
				task := short(sm.Message.TaskID)
				if task == "" {
					task = "-" // a new task over HTTP: the server makes its id
				}
				return fmt.Sprintf("%s %q task=%s", env.Method, clip(agent.TextOf(sm.Message)), task)
			}
		}
		return env.Method
	case env.Error != nil:
		return fmt.Sprintf("error %d %s", env.Error.Code, clip(env.Error.Message))
	}
	var item a2a.StreamResponse
	if item.UnmarshalJSON(env.Result) == nil {
		return describeItem(item)
	}
	var resp a2a.SendMessageResponse
	if resp.UnmarshalJSON(env.Result) == nil {
		if t, ok := resp.Payload.(*a2a.Task); ok {
			return "task " + short(t.ID) + " " + StateOf(t.Status)
		}
	}
	var t a2a.Task
	if t.UnmarshalJSON(env.Result) == nil && t.ID != "" {
		return "task " + short(t.ID) + " " + StateOf(t.Status)
	}
	return "result"
}

func describeItem(item a2a.StreamResponse) string {
	switch x := item.Payload.(type) {
	case *a2a.Task:
		return "task " + short(x.ID) + " " + StateOf(x.Status)
	case *a2a.TaskStatusUpdateEvent:
		return "status " + StateOf(x.Status)
	case *a2a.TaskArtifactUpdateEvent:
		return fmt.Sprintf("artifact %q", clip(PartsText(x.Artifact.Parts)))
	case *a2a.Message:
		return "message"
	}
	return "result"
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func clip(s string) string {
	if len(s) > 48 {
		return s[:45] + "..."
	}
	return s
}

// probeShared checks that the broker delivers a topic under the root to a
// $share subscription, as pools need: mosquitto 2.0.11 does not when the
// root begins with $, as the profile's does (docs/protocol.md §12). The
// probe subscribes on a connection of its own, so that the transcript's
// own {root}/# subscription cannot answer for it.
func (s *sniffer) probeShared(ctx context.Context) error {
	got := make(chan struct{}, 1)
	topic := s.marker + "-pool-probe"
	filter := "$share/a2a-probe/" + topic
	subscribed := make(chan error, 1)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cm, err := autopaho.NewConnection(pctx, autopaho.ClientConfig{ServerUrls: []*url.URL{s.url}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		TlsCfg: s.conn.TLS, ConnectUsername: s.conn.Username, ConnectPassword: s.conn.Password,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			go func() {
				_, err := cm.Subscribe(pctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
				subscribed <- err
			}()
		},
		ClientConfig: paho.ClientConfig{ClientID: s.clientID + "-probe", OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				select {
				case got <- struct{}{}:
				default:
				}
				return true, nil
			}}}})
	if err != nil {
		return err
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer dcancel()
		cm.Disconnect(dctx)
	}()
	select {
	case err := <-subscribed:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	if _, err := s.cm.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: []byte("probe")}); err != nil {
		return err
	}
	select {
	case <-got:
		return nil
	case <-time.After(2 * time.Second):
		return s.noSharedDelivery()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noSharedDelivery is the error of a broker that did not deliver the
// probe to its $share subscription.
func (s *sniffer) noSharedDelivery() error {
	msg := "this broker does not deliver topics under " + s.root.String() + " to $share subscriptions, so pools cannot work on it under that root"
	if strings.HasPrefix(s.root.String(), "$") {
		msg += " (mosquitto 2.0.11 never delivers topics beginning with $ to them, and carries pools under a root without $, such as a2a/v1: docs/protocol.md §1.5, §12; the embedded broker and EMQX carry pools)"
	}
	return &UnservedError{Reason: msg, Summary: "the broker does not deliver topics under " + s.root.String() + " to $share subscriptions"}
}
