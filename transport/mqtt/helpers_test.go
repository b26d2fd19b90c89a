package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// testCtx bounds a test's waits generously; nothing asserts on time.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startBroker(t *testing.T, status bool) *broker.Broker {
	t.Helper()
	b, err := broker.Start(testCtx(t), broker.Config{Status: status})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func testCard(name string) *a2a.AgentCard {
	streaming := true
	return &a2a.AgentCard{Name: name, Description: "test agent", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{{URL: "mqtt://127.0.0.1", ProtocolBinding: ProtocolBindingMQTT, ProtocolVersion: ProtocolVersion}},
		Capabilities:        &a2a.AgentCapabilities{Streaming: &streaming},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"}}}}
}

// echoServer completes every task with an artifact echoing the text.
func echoServer(t *testing.T, opts ...agent.Option) *agent.Server {
	t.Helper()
	s := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
		return turn.Artifact(ctx, a2a.Artifact{ArtifactID: "echo", Parts: []a2a.Part{{Content: a2a.PartText(turn.Text())}}}, agent.ArtifactOptions{LastChunk: true})
	}), opts...)
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func startAgent(t *testing.T, cfg AgentConfig) *Agent {
	t.Helper()
	a, err := NewAgent(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

// message is one publish a raw client received.
type message struct {
	topic   string
	payload []byte
	props   map[string][]string
	corr    []byte
	retain  bool
	// response is the Response Topic of a request.
	response string
}

// rawClient is a bare paho client: no SDK on the requester side, so the
// agent is tested against the wire only.
type rawClient struct {
	cm   *autopaho.ConnectionManager
	msgs chan message
	// done is closed when the test ends; loops reading msgs stop on it.
	done     chan struct{}
	stopOnce sync.Once
	// last is the previous message returned per topic, to skip duplicates.
	last map[string]string
}

func (rc *rawClient) stop() { rc.stopOnce.Do(func() { close(rc.done) }) }

// each runs fn for every message until the test ends, in a goroutine it
// waits for at cleanup.
func (rc *rawClient) each(t *testing.T, fn func(message)) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case m := <-rc.msgs:
				fn(m)
			case <-rc.done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		rc.stop()
		wg.Wait()
	})
}

func dialRaw(t *testing.T, brokerURL, clientID string, filters ...string) *rawClient {
	t.Helper()
	return dialRawAs(t, brokerURL, clientID, "", "", filters...)
}

// dialRawAs is dialRaw with a user name and password. With a user name,
// each filter is subscribed on its own and a refused one is left out (a
// secured broker may refuse some: the test then checks what is delivered).
func dialRawAs(t *testing.T, brokerURL, clientID, user, password string, filters ...string) *rawClient {
	t.Helper()
	u, _ := url.Parse(brokerURL)
	rc := &rawClient{msgs: make(chan message, 20000), done: make(chan struct{}), last: map[string]string{}}
	ready := make(chan struct{}, 1)
	cfg := autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			go func() {
				if user != "" {
					for _, f := range filters {
						_, _ = cm.Subscribe(context.Background(), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: f, QoS: 1}}})
					}
				} else if len(filters) > 0 {
					var subs []paho.SubscribeOptions
					for _, f := range filters {
						subs = append(subs, paho.SubscribeOptions{Topic: f, QoS: 1})
					}
					if _, err := cm.Subscribe(context.Background(), &paho.Subscribe{Subscriptions: subs}); err != nil {
						t.Error(err)
					}
				}
				ready <- struct{}{}
			}()
		},
		ClientConfig: paho.ClientConfig{ClientID: clientID, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				p := pr.Packet
				m := message{topic: p.Topic, payload: p.Payload, props: userPropMap(p.Properties), retain: p.Retain}
				if p.Properties != nil {
					m.corr = p.Properties.CorrelationData
					m.response = p.Properties.ResponseTopic
				}
				rc.msgs <- m
				return true, nil
			}}}}
	if user != "" {
		cfg.ConnectUsername, cfg.ConnectPassword = user, []byte(password)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cm, err := autopaho.NewConnection(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc.cm = cm
	t.Cleanup(func() {
		rc.stop()
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		cm.Disconnect(dctx)
		cancel()
		<-cm.Done()
	})
	select {
	case <-ready:
	case <-testCtx(t).Done():
		t.Fatal("raw client did not connect")
	}
	return rc
}

// next waits for the next message on a topic. QoS 1 allows a duplicate
// delivery: a message identical to the previous one on the topic (payload,
// Correlation Data and properties) is skipped.
func (rc *rawClient) next(t *testing.T, topic string) message {
	t.Helper()
	ctx := testCtx(t)
	for {
		select {
		case m := <-rc.msgs:
			if m.topic != topic {
				continue
			}
			key := string(m.payload) + "\x00" + string(m.corr) + "\x00" + fmt.Sprint(m.props)
			if rc.last[topic] == key {
				continue
			}
			rc.last[topic] = key
			return m
		case <-ctx.Done():
			t.Fatalf("no message on %s", topic)
		}
	}
}

// request publishes a JSON-RPC request with a reply path.
func (rc *rawClient) request(t *testing.T, topic, replyTopic string, payload []byte, user ...string) []byte {
	t.Helper()
	corr := []byte(uuid.NewString())
	_, err := rc.cm.Publish(testCtx(t), &paho.Publish{Topic: topic, QoS: 1, Payload: payload,
		Properties: &paho.PublishProperties{ResponseTopic: replyTopic, CorrelationData: corr, User: userProps(user...)}})
	if err != nil {
		t.Fatal(err)
	}
	return corr
}

func sendPayload(t *testing.T, m *a2a.Message) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{"message": m}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newMessage(text string) *a2a.Message {
	return &a2a.Message{MessageID: uuid.NewString(), TaskID: uuid.NewString(), ContextID: uuid.NewString(), Role: a2a.RoleUser,
		Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
}

// rpcResponse is a decoded JSON-RPC response.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decodeRPC(t *testing.T, payload []byte) rpcResponse {
	t.Helper()
	var r rpcResponse
	if err := json.Unmarshal(payload, &r); err != nil {
		t.Fatalf("reply is not JSON: %s", payload)
	}
	return r
}

// jsonID returns the raw id of a JSON-RPC request.
func jsonID(payload []byte) string {
	var r struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(payload, &r)
	return string(r.ID)
}

// taskIDOf returns params.message.taskId of a SendMessage request.
func taskIDOf(payload []byte) string {
	var r struct {
		Params struct {
			Message struct {
				TaskID string `json:"taskId"`
			} `json:"message"`
		} `json:"params"`
	}
	json.Unmarshal(payload, &r)
	return r.Params.Message.TaskID
}

// forEachBroker runs fn against the embedded broker and against Debian's
// mosquitto, each started in its own subtest: without mosquitto its
// subtest fails (never skips) and the embedded one still runs.
func forEachBroker(t *testing.T, fn func(t *testing.T, b mqtttest.Broker)) {
	mqtttest.ForEach(t, fn)
}

// site is a broker as the library's users reach it: its connection (URL
// and login) and the topic root agents and clients use there.
type site struct {
	name string
	b    mqtttest.Broker
	conn Connection
	root mqttbind.Root
}

// agent completes cfg with the site's connection and root.
func (s site) agent(cfg AgentConfig) AgentConfig {
	cfg.Connection, cfg.Root = s.conn, s.root
	return cfg
}

// client configures a client of the site (a mod of startClient).
func (s site) client(cfg *ClientConfig) {
	cfg.Connection, cfg.Root = s.conn, s.root
}

// forEachSite runs fn on every broker the stories run on: the embedded
// broker and mosquitto under the profile's root, mosquitto under the root
// a2a/v1, and ejabberd (which refuses $ topics, docs/protocol.md §1.5)
// under a2a/v1 with the login it needs. Each site's broker starts in the
// site's subtest: without mosquitto or ejabberd their subtests fail (never
// skip), and the embedded broker's still runs.
func forEachSite(t *testing.T, fn func(t *testing.T, s site)) {
	plain, err := mqttbind.ParseRoot(mqtttest.EjabberdRoot)
	if err != nil {
		t.Fatal(err)
	}
	plainName := " under " + plain.String()
	sites := []struct {
		name  string
		start func(t *testing.T) site
	}{
		{mqtttest.NameEmbedded, func(t *testing.T) site {
			b := mqtttest.StartEmbedded(t)
			return site{b: b, conn: Connection{Broker: b.URL()}}
		}},
		{mqtttest.NameMosquitto, func(t *testing.T) site {
			b := mqtttest.StartMosquitto(t)
			return site{b: b, conn: Connection{Broker: b.URL()}}
		}},
		{mqtttest.NameMosquitto + plainName, func(t *testing.T) site {
			b := mqtttest.StartMosquitto(t)
			return site{b: b, conn: Connection{Broker: b.URL()}, root: plain}
		}},
		{mqtttest.NameEjabberd + plainName, func(t *testing.T) site {
			ej := mqtttest.StartEjabberd(t)
			return site{b: ej, root: plain,
				conn: Connection{Broker: ej.URL(), Username: mqtttest.EjabberdUsername, Password: []byte(mqtttest.EjabberdPassword)}}
		}},
	}
	for _, c := range sites {
		t.Run(c.name, func(t *testing.T) {
			s := c.start(t)
			s.name = c.name
			fn(t, s)
		})
	}
}

// userPropMap gathers user properties by key, values in the order received.
func userPropMap(p *paho.PublishProperties) map[string][]string {
	m := map[string][]string{}
	if p != nil {
		for _, u := range p.User {
			m[u.Key] = append(m[u.Key], u.Value)
		}
	}
	return m
}
