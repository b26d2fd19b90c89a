package mqtttest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLong bounds every wait for something a broker must deliver;
// generous, since tests assert on what arrives, never on timing.
const waitLong = 2 * time.Minute

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// client is a raw paho.golang v5 client.
type client struct {
	t    testing.TB
	id   string
	pc   *paho.Client
	msgs chan *paho.Publish
	once sync.Once
}

// connect connects a client with a clean start; handler, if not nil,
// receives every PUBLISH instead of the msgs channel.
func connect(t testing.TB, addr, id string, handler func(*paho.Publish)) *client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c := &client{t: t, id: id, msgs: make(chan *paho.Publish, 1024)}
	if handler == nil {
		handler = func(p *paho.Publish) { c.msgs <- p }
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
	ca, err := c.pc.Connect(testContext(t), &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30})
	if err != nil {
		_ = conn.Close()
		t.Fatalf("%s: connect: %v", id, err)
	}
	if ca.ReasonCode != 0 {
		t.Fatalf("%s: CONNACK reason %#x", id, ca.ReasonCode)
	}
	t.Cleanup(c.disconnect)
	return c
}

func (c *client) disconnect() {
	c.once.Do(func() {
		_ = c.pc.Disconnect(&paho.Disconnect{})
		<-c.pc.Done()
	})
}

func (c *client) subscribe(filter string, qos byte) *paho.Suback {
	c.t.Helper()
	sa, err := c.pc.Subscribe(testContext(c.t), &paho.Subscribe{
		Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: qos}},
	})
	if err != nil {
		c.t.Fatalf("%s: subscribe %s: %v", c.id, filter, err)
	}
	return sa
}

func (c *client) publish(p *paho.Publish) *paho.PublishResponse {
	c.t.Helper()
	resp, err := c.pc.Publish(testContext(c.t), p)
	if err != nil {
		c.t.Fatalf("%s: publish %s: %v", c.id, p.Topic, err)
	}
	return resp
}

// await returns the first message on topic, failing on any other.
func (c *client) await(topic string) *paho.Publish {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		if m.Topic != topic {
			c.t.Fatalf("%s: got a message on %s, waiting for one on %s", c.id, m.Topic, topic)
		}
		return m
	case <-testContext(c.t).Done():
		c.t.Fatalf("%s: nothing arrived on %s", c.id, topic)
		return nil
	}
}
