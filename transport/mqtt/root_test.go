package mqtt

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// plainRoot is the root the tests use for brokers that refuse $ topics.
func plainRoot(t *testing.T) mqttbind.Root {
	t.Helper()
	r, err := mqttbind.ParseRoot(mqtttest.EjabberdRoot)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTopicRootIsUsedForEveryTopic(t *testing.T) {
	root := plainRoot(t)
	b := mqtttest.StartMosquitto(t)
	// A raw subscriber sees every topic under both roots.
	sniff := dialRaw(t, b.URL(), "acme/lab/sniffer", "a2a/v1/#", "$a2a/#")
	srv := echoServer(t)
	a := startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Root: root, Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: srv})
	c := startClient(t, b.URL(), "a", func(cfg *ClientConfig) { cfg.Root = root })
	res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}},
		requester.To(requester.Target{Agent: "b"}))
	if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	a.Kill() // the Will
	kinds := map[string]string{}
	ctx := testCtx(t)
	for len(kinds) < 4 {
		var m message
		select {
		case m = <-sniff.msgs:
		case <-ctx.Done():
			t.Fatalf("seen only %v", kinds)
		}
		if !strings.HasPrefix(m.topic, "a2a/v1/") {
			t.Fatalf("a message on %s: every topic must be under the root a2a/v1", m.topic)
		}
		kind, _, _ := strings.Cut(strings.TrimPrefix(m.topic, "a2a/v1/"), "/")
		if kind == "discovery" && m.props["a2a-status-source"] != nil && m.props["a2a-status-source"][0] == "lwt" {
			kind = "will"
		}
		kinds[kind] = m.topic
	}
	want := map[string]string{"discovery": "a2a/v1/discovery/acme/lab/b", "request": "a2a/v1/request/acme/lab/b", "will": "a2a/v1/discovery/acme/lab/b"}
	for k, topic := range want {
		if kinds[k] != topic {
			t.Errorf("%s on %q, want %q (seen %v)", k, kinds[k], topic, kinds)
		}
	}
	if !strings.HasPrefix(kinds["reply"], "a2a/v1/reply/acme/lab/a/") {
		t.Errorf("reply on %q, want a2a/v1/reply/acme/lab/a/…", kinds["reply"])
	}
}

func TestTopicRootPeersUnderAnotherRootDoNotMeet(t *testing.T) {
	b := mqtttest.StartMosquitto(t)
	srv := echoServer(t)
	startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Root: plainRoot(t), Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: srv})
	// A client of the profile's root asks the same agent id: nobody
	// answers, and it says so after its retry profile.
	c := startClient(t, b.URL(), "a")
	_, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}},
		requester.To(requester.Target{Agent: "b"}))
	if !errors.Is(err, requester.ErrUnreachable) {
		t.Fatalf("a client under $a2a/v1 reached an agent under a2a/v1: %v", err)
	}
}

func TestTopicRootPoolOnMosquitto(t *testing.T) {
	// mosquitto 2.0.11 never delivers $ topics to a $share subscription
	// (docs/protocol.md §12), but a pool under a root without $ works.
	b := mqtttest.StartMosquitto(t)
	root := plainRoot(t)
	store := taskstore.NewMemory(nil)
	for _, id := range []string{"w1", "w2"} {
		srv := agent.NewServer(refHandler(id), agent.WithStore(store))
		t.Cleanup(func() { srv.Close(context.Background()) })
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Root: root, Org: "acme", Unit: "lab", ID: id, Card: testCard(id), Server: srv, Pool: "workers"})
	}
	c := startClient(t, b.URL(), "a", func(cfg *ClientConfig) { cfg.Root = root })
	for range 4 {
		res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("ask job")}}}},
			requester.To(requester.Target{Pool: "workers"}))
		if err != nil || res.Task.Status.State != a2a.TaskStateInputRequired || (res.Responder != "w1" && res.Responder != "w2") {
			t.Fatalf("%+v %v", res, err)
		}
	}
}

func TestEjabberdRefusals(t *testing.T) {
	ej := mqtttest.StartEjabberd(t)
	login := Connection{Broker: ej.URL(), Username: mqtttest.EjabberdUsername, Password: []byte(mqtttest.EjabberdPassword)}
	srv := echoServer(t)
	cases := []struct {
		name  string
		start func() error
		check func(t *testing.T, err error)
	}{
		{"an agent under the profile's root: its Will on $a2a is refused at CONNECT (0x90)",
			func() error {
				_, err := NewAgent(testCtx(t), AgentConfig{Connection: login, Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: srv})
				return err
			},
			func(t *testing.T, err error) {
				var ce *ConnectError
				if !errors.As(err, &ce) || ce.ReasonCode != 0x90 || !strings.Contains(err.Error(), "topic name invalid") {
					t.Fatalf("%v, want a *ConnectError 0x90 topic name invalid", err)
				}
			}},
		{"a request under the profile's root: refused at once (PUBACK 0x90), not retried as unanswered",
			func() error {
				c, err := NewClient(testCtx(t), ClientConfig{Connection: login, Org: "acme", Unit: "lab", ID: "a"})
				if err != nil {
					return err
				}
				defer c.Close(context.Background())
				_, err = c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}},
					requester.To(requester.Target{Agent: "b"}))
				return err
			},
			func(t *testing.T, err error) {
				var pe *PublishError
				if !errors.As(err, &pe) || pe.ReasonCode != 0x90 || pe.Topic != "$a2a/v1/request/acme/lab/b" || errors.Is(err, requester.ErrUnreachable) {
					t.Fatalf("%v, want a *PublishError 0x90 naming $a2a/v1/request/acme/lab/b", err)
				}
			}},
		{"a pool member under a2a/v1: ejabberd has no shared subscriptions",
			func() error {
				_, err := NewAgent(testCtx(t), AgentConfig{Connection: login, Root: plainRoot(t), Org: "acme", Unit: "lab", ID: "w1", Card: testCard("W"), Server: srv, Pool: "workers"})
				return err
			},
			func(t *testing.T, err error) {
				var ce *CapabilityError
				if !errors.As(err, &ce) || ce.Capability != "shared subscriptions" {
					t.Fatalf("%v, want a *CapabilityError for shared subscriptions", err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, c.start()) })
	}
}

func TestInterfaceLeavesCredentialsOut(t *testing.T) {
	cases := []struct{ name, broker, want string }{
		{"plain", "mqtt://broker.example.com:1883", "mqtt://broker.example.com:1883"},
		{"user and password", "mqtt://alice:s3cr%40t@broker.example.com:1883", "mqtt://broker.example.com:1883"},
		{"user only", "mqtts://alice@broker.example.com:8883", "mqtts://broker.example.com:8883"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Interface(c.broker).URL; got != c.want {
				t.Fatalf("Interface(%q).URL = %q, want %q", c.broker, got, c.want)
			}
		})
	}
}

// TestTopicRootSecuredBrokers: with authentication, the identity rules
// follow the root on both brokers (the embedded broker's Config.Root,
// mosquitto's acl_file from broker.MosquittoACLUnder): an agent and a
// requester of the unit talk under a2a/v1, and an intruder of the unit
// subscribing to # or a2a/v1/# never reads the request with its bearer
// token.
func TestTopicRootSecuredBrokers(t *testing.T) {
	root := plainRoot(t)
	pw := writeUsers(t, "acme/lab/b", "acme/lab/a", "acme/lab/intruder")
	login := func(b mqtttest.Broker, user string) Connection {
		return Connection{Broker: b.URL(), Username: user, Password: []byte("pw-" + user)}
	}
	for _, name := range mqtttest.BrokerNames() {
		t.Run(name, func(t *testing.T) {
			b := mqtttest.Start(t, name, mqtttest.WithPasswordFile(pw), mqtttest.WithRoot(root))
			seen := make(chan string, 100)
			spy := dialRawAs(t, b.URL(), "acme/lab/intruder", "acme/lab/intruder", "pw-acme/lab/intruder", "#", "a2a/v1/#", "+/#", "a2a/v1/discovery/acme/lab/+")
			spy.each(t, func(m message) { seen <- m.topic })
			startAgent(t, AgentConfig{Connection: login(b, "acme/lab/b"), Root: root, Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: echoServer(t)})
			c, err := NewClient(testCtx(t), ClientConfig{Connection: login(b, "acme/lab/a"), Root: root, Org: "acme", Unit: "lab", ID: "a",
				Requester: requester.Config{Retry: fastProfile()}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close(context.Background()) })
			res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}},
				requester.To(requester.Target{Agent: "b"}), requester.WithBearer("secret-token"))
			if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("%+v %v", res, err)
			}
			// What the spy got by now (the request was answered, so it was
			// delivered wherever it would be): never a request or a reply.
			// It did read what its unit may: the agent's card.
			card := false
			for !card {
				select {
				case topic := <-seen:
					if strings.HasPrefix(topic, "a2a/v1/request/") || strings.HasPrefix(topic, "a2a/v1/reply/") {
						t.Fatalf("the intruder read %s", topic)
					}
					card = card || topic == "a2a/v1/discovery/acme/lab/b"
				case <-testCtx(t).Done():
					t.Fatal("the intruder never read the unit's card: its subscriptions were not live")
				}
			}
			for {
				select {
				case topic := <-seen:
					if strings.HasPrefix(topic, "a2a/v1/request/") || strings.HasPrefix(topic, "a2a/v1/reply/") {
						t.Fatalf("the intruder read %s", topic)
					}
					continue
				default:
				}
				break
			}
		})
	}
}
