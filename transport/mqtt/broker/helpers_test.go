package broker

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
	mqtt "github.com/mochi-mqtt/server/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLong bounds every wait for something the broker must deliver. It is
// generous on purpose: tests never assert on timing, only on what arrives.
const waitLong = 2 * time.Minute

// testContext returns a context that ends after waitLong or with the test.
func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// startBroker starts a broker that is closed when the test ends.
func startBroker(t testing.TB, cfg Config) *Broker {
	t.Helper()
	return startTweaked(t, cfg, nil)
}

func startTweaked(t testing.TB, cfg Config, tweak func(*mqtt.Options)) *Broker {
	t.Helper()
	b, err := start(testContext(t), cfg, tweak)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// client is a raw paho.golang v5 client on its own TCP connection.
type client struct {
	t    testing.TB
	id   string
	conn net.Conn
	pc   *paho.Client
	msgs chan *paho.Publish // filled unless a handler was given

	mu       sync.Mutex
	overflow int
	once     sync.Once
}

// dial connects a client; handler, if not nil, receives every PUBLISH
// (in paho's goroutine) instead of the msgs channel.
func dial(t testing.TB, addr string, cp *paho.Connect, handler func(*paho.Publish)) *client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c := &client{t: t, id: cp.ClientID, conn: conn, msgs: make(chan *paho.Publish, 4096)}
	if handler == nil {
		handler = func(p *paho.Publish) {
			select {
			case c.msgs <- p:
			default:
				c.mu.Lock()
				c.overflow++
				c.mu.Unlock()
			}
		}
	}
	c.pc = paho.NewClient(paho.ClientConfig{
		Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				handler(pr.Packet)
				return true, nil
			},
		},
	})
	if cp.KeepAlive == 0 {
		cp.KeepAlive = 30
	}
	ca, err := c.pc.Connect(testContext(t), cp)
	if err != nil {
		_ = conn.Close()
		t.Fatalf("%s: connect: %v", cp.ClientID, err)
	}
	if ca.ReasonCode != 0 {
		t.Fatalf("%s: CONNACK reason %#x", cp.ClientID, ca.ReasonCode)
	}
	t.Cleanup(func() {
		c.disconnect()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.overflow > 0 {
			t.Errorf("%s: %d messages did not fit the test's buffer", c.id, c.overflow)
		}
	})
	return c
}

// connect dials a plain client with a clean start.
func connect(t testing.TB, addr, id string) *client {
	t.Helper()
	return dial(t, addr, &paho.Connect{ClientID: id, CleanStart: true}, nil)
}

// disconnect sends DISCONNECT (normal) and waits for the client to stop.
func (c *client) disconnect() {
	c.once.Do(func() {
		_ = c.pc.Disconnect(&paho.Disconnect{ReasonCode: 0})
		<-c.pc.Done()
	})
}

// drop closes the TCP connection without DISCONNECT, as a crashed process
// would, and waits for the client to stop.
func (c *client) drop() {
	c.once.Do(func() {
		_ = c.conn.Close()
		<-c.pc.Done()
	})
}

func (c *client) subscribe(filter string, qos byte) {
	c.t.Helper()
	sa, err := c.pc.Subscribe(testContext(c.t), &paho.Subscribe{
		Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: qos}},
	})
	if err != nil {
		c.t.Fatalf("%s: subscribe %s: %v", c.id, filter, err)
	}
	if len(sa.Reasons) != 1 || sa.Reasons[0] != qos {
		c.t.Fatalf("%s: subscribe %s: SUBACK reasons %v", c.id, filter, sa.Reasons)
	}
}

// watch subscribes to filter for live messages only (Retain Handling 2:
// no retained messages at subscription). mochi sends the SUBACK before the
// retained messages, so a publish made as soon as SUBACK arrives can reach
// a plain subscriber twice: live, and then as a retained message.
func (c *client) watch(filter string) {
	c.t.Helper()
	sa, err := c.pc.Subscribe(testContext(c.t), &paho.Subscribe{
		Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1, RetainHandling: 2}},
	})
	if err != nil || len(sa.Reasons) != 1 || sa.Reasons[0] != 1 {
		c.t.Fatalf("%s: subscribe %s: %v (SUBACK %+v)", c.id, filter, err, sa)
	}
}

func (c *client) publish(p *paho.Publish) *paho.PublishResponse {
	c.t.Helper()
	resp, err := c.pc.Publish(testContext(c.t), p)
	if err != nil {
		c.t.Fatalf("%s: publish %s: %v", c.id, p.Topic, err)
	}
	return resp
}

// await returns the first message that matches, dropping the others.
func (c *client) await(what string, match func(*paho.Publish) bool) *paho.Publish {
	c.t.Helper()
	ctx := testContext(c.t)
	for {
		select {
		case m := <-c.msgs:
			if match(m) {
				return m
			}
			c.t.Logf("%s: while waiting for %s, skipped %s %.40q %v", c.id, what, m.Topic, m.Payload, props(m))
		case <-ctx.Done():
			c.t.Fatalf("%s: waiting for %s: %v", c.id, what, ctx.Err())
			return nil
		}
	}
}

// props returns a message's user properties (nil when it has none).
func props(m *paho.Publish) paho.UserProperties {
	if m.Properties == nil {
		return nil
	}
	return m.Properties.User
}

// statusProps builds the user properties an agent or a will sets.
func statusProps(status, source string, extra ...string) paho.UserProperties {
	u := paho.UserProperties{
		{Key: mqttbind.PropStatus, Value: status},
		{Key: mqttbind.PropStatusSource, Value: source},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		u = append(u, paho.UserProperty{Key: extra[i], Value: extra[i+1]})
	}
	return u
}

// checkStatus fails unless m carries exactly one a2a-status equal to
// status and one a2a-status-source equal to source.
func checkStatus(t testing.TB, m *paho.Publish, status, source string) {
	t.Helper()
	u := props(m)
	got, gotSrc := u.GetAll(mqttbind.PropStatus), u.GetAll(mqttbind.PropStatusSource)
	if len(got) != 1 || got[0] != status || len(gotSrc) != 1 || gotSrc[0] != source {
		t.Errorf("%s %q: %s=%v %s=%v, want %s / %s",
			m.Topic, m.Payload, mqttbind.PropStatus, got, mqttbind.PropStatusSource, gotSrc, status, source)
	}
}

// card returns a small Agent Card; version tells publications apart.
func card(name, version string) []byte {
	return fmt.Appendf(nil, `{"name":%q,"description":"test agent","version":%q,`+
		`"supportedInterfaces":[{"url":"mqtt://127.0.0.1","protocolBinding":"MQTTv5+JSONRPCv2","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
		`"skills":[{"id":"echo","name":"echo","description":"echoes","tags":["test"]}]}`, name, version)
}

// mustRoot returns the topic root s names (docs/protocol.md §1.5).
func mustRoot(t testing.TB, s string) mqttbind.Root {
	t.Helper()
	root, err := mqttbind.ParseRoot(s)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// mustTopic returns a topic built by an mqttbind.Root method, failing the
// test on its error: mustTopic(t)(root.DiscoveryTopic(org, unit, agent)).
func mustTopic(t testing.TB) func(string, error) string {
	return func(topic string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return topic
	}
}

func discoveryTopic(t testing.TB, org, unit, agent string) string {
	t.Helper()
	topic, err := mqttbind.DiscoveryTopic(org, unit, agent)
	if err != nil {
		t.Fatal(err)
	}
	return topic
}

func discoveryFilter(t testing.TB, org, unit string) string {
	t.Helper()
	f, err := mqttbind.DiscoveryFilterTopic(org, unit)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func payloadIs(p []byte) func(*paho.Publish) bool {
	return func(m *paho.Publish) bool { return string(m.Payload) == string(p) }
}
