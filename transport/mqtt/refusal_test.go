package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestReasonNames: one table names the reason codes of CONNACK, PUBACK,
// SUBACK and DISCONNECT (MQTT v5 §2.4), and every refusal's error names
// its code, the name and what was refused.
func TestReasonNames(t *testing.T) {
	for _, c := range []struct {
		code byte
		name string
	}{
		{0x00, "success"}, {0x01, "granted QoS 1"}, {0x80, "unspecified error"}, {0x86, "bad user name or password"},
		{0x87, "not authorized"}, {0x8E, "session taken over"}, {0x8F, "topic filter invalid"}, {0x90, "topic name invalid"},
		{0x95, "packet too large"}, {0x97, "quota exceeded"}, {0x99, "payload format invalid"}, {0x9A, "retain not supported"},
		{0x9B, "QoS not supported"}, {0x9E, "shared subscriptions not supported"}, {0xA2, "wildcard subscriptions not supported"},
		{0x03, ""}, {0xA3, ""}, {0xFF, ""},
	} {
		if got := ReasonName(c.code); got != c.name {
			t.Errorf("ReasonName(0x%02x) = %q, want %q", c.code, got, c.name)
		}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&PublishError{Topic: "$a2a/v1/request/acme/lab/echo", ReasonCode: 0x90},
			"mqtt: broker refused publish to $a2a/v1/request/acme/lab/echo: 0x90 topic name invalid"},
		{&PublishError{Topic: "t", ReasonCode: 0x97, Reason: "card updates too frequent"},
			"mqtt: broker refused publish to t: 0x97 quota exceeded (card updates too frequent)"},
		{&SubscribeError{Filter: "$a2a/v1/discovery/acme/lab/+", ReasonCode: 0x87},
			"mqtt: broker refused subscription to $a2a/v1/discovery/acme/lab/+: 0x87 not authorized"},
		{&ConnectError{Broker: "mqtt://b:1883", ReasonCode: 0x86, Reason: "bad user name or password"},
			"mqtt: broker mqtt://b:1883 refused the connection: 0x86 bad user name or password (bad user name or password)"},
		{&DisconnectError{ReasonCode: 0x95}, "mqtt: broker disconnected the client: 0x95 packet too large"},
		{&PublishError{Topic: "t", ReasonCode: 0xFE}, "mqtt: broker refused publish to t: 0xfe"},
		{&CapabilityError{Capability: "shared subscriptions", Need: "pools need them"},
			"mqtt: the broker does not offer shared subscriptions (CONNACK): pools need them"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%#v:\n got %s\nwant %s", c.err, got, c.want)
		}
	}
}

// TestRefusalClasses: which errors are refusals, which stop a connection
// for good, and which end a request instead of counting as an attempt the
// retry profile repeats.
func TestRefusalClasses(t *testing.T) {
	stopped := fmt.Errorf("%w: %w", ErrStopped, &SubscribeError{ReasonCode: 0x87})
	for _, c := range []struct {
		name                       string
		err                        error
		refusal, permanent, ending bool
	}{
		{"PUBACK 0x87 not authorized", &PublishError{ReasonCode: 0x87}, true, true, true},
		{"PUBACK 0x90 topic name invalid", &PublishError{ReasonCode: 0x90}, true, true, true},
		{"PUBACK 0x80 unspecified error", &PublishError{ReasonCode: 0x80}, true, false, true},
		{"PUBACK 0x97 quota exceeded: not now", &PublishError{ReasonCode: 0x97}, true, false, false},
		{"PUBACK 0x91 packet identifier in use: not now", &PublishError{ReasonCode: 0x91}, true, false, false},
		{"a packet too large for the broker", &PacketTooLargeError{Size: 2, Max: 1}, true, true, true},
		{"CONNACK 0x86 bad user name or password", &ConnectError{ReasonCode: 0x86}, true, true, false},
		{"CONNACK 0x9B QoS not supported (the Will)", &ConnectError{ReasonCode: 0x9B}, true, true, false},
		{"CONNACK 0x88 server unavailable", &ConnectError{ReasonCode: 0x88}, true, false, false},
		{"CONNACK 0x9F connection rate exceeded", &ConnectError{ReasonCode: 0x9F}, true, false, false},
		{"DISCONNECT 0x8E session taken over", &DisconnectError{ReasonCode: 0x8E}, true, false, false},
		{"a capability missing", &CapabilityError{}, true, true, false},
		{"a wrapped capability missing", fmt.Errorf("starting: %w", &CapabilityError{}), true, true, false},
		{"a connection stopped for good", stopped, true, true, false},
		{"no connection", errors.New("connection down"), false, false, false},
		{"the caller's deadline", context.DeadlineExceeded, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := IsRefusal(c.err); got != c.refusal {
				t.Errorf("IsRefusal = %v, want %v", got, c.refusal)
			}
			if got := isPermanentRefusal(c.err); got != c.permanent {
				t.Errorf("isPermanentRefusal = %v, want %v", got, c.permanent)
			}
			if got := endsRequest(c.err); got != c.ending {
				t.Errorf("endsRequest = %v, want %v", got, c.ending)
			}
		})
	}
}

// TestCapabilityChecks: a CONNACK without properties offers everything
// (MQTT v5 §3.2.2.3 defaults); each capability the binding needs is
// refused with an error saying what needs it.
func TestCapabilityChecks(t *testing.T) {
	all := capabilitiesOf(&paho.Connack{})
	if want := (BrokerCapabilities{MaximumQoS: 2, RetainAvailable: true, WildcardSubscriptionAvailable: true,
		SharedSubscriptionAvailable: true, SubscriptionIdentifiersAvailable: true, ReceiveMaximum: 65535}); all != want {
		t.Fatalf("defaults %+v, want %+v", all, want)
	}
	for _, c := range []struct {
		name  string
		caps  func(*BrokerCapabilities)
		check func(BrokerCapabilities) error
		want  string
	}{
		{"QoS 1 offered", nil, BrokerCapabilities.checkQoS, ""},
		{"maximum QoS 0", func(b *BrokerCapabilities) { b.MaximumQoS = 0 }, BrokerCapabilities.checkQoS,
			"mqtt: the broker does not offer QoS 1 (its maximum QoS is 0) (CONNACK): the profile needs QoS 1"},
		{"shared subscriptions offered", nil, BrokerCapabilities.needShared, ""},
		{"no shared subscriptions, for a pool", func(b *BrokerCapabilities) { b.SharedSubscriptionAvailable = false }, BrokerCapabilities.needShared,
			"mqtt: the broker does not offer shared subscriptions (CONNACK): pools need them"},
		{"no wildcard subscriptions, for a watch", func(b *BrokerCapabilities) { b.WildcardSubscriptionAvailable = false }, BrokerCapabilities.needWildcard,
			"mqtt: the broker does not offer wildcard subscriptions (CONNACK): a watch subscribes {root}/discovery/{org}/{unit}/+"},
		{"no retained messages, for a card", func(b *BrokerCapabilities) { b.RetainAvailable = false }, BrokerCapabilities.needRetain,
			"mqtt: the broker does not offer retained messages (CONNACK): agent cards are retained"},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps := all
			if c.caps != nil {
				c.caps(&caps)
			}
			err := c.check(caps)
			var ce *CapabilityError
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (!errors.As(err, &ce) || err.Error() != c.want):
				t.Fatalf("err = %v, want %s", err, c.want)
			}
		})
	}
}

// TestPublishSize: the size checked against the broker's Maximum Packet
// Size is the encoded PUBLISH's, and the quick bound is never below it.
func TestPublishSize(t *testing.T) {
	secs := uint32(60)
	for _, c := range []struct {
		name string
		p    *paho.Publish
	}{
		{"bare", &paho.Publish{Topic: "t", QoS: 1}},
		{"a request", &paho.Publish{Topic: "$a2a/v1/request/acme/lab/echo", QoS: 1, Payload: bytes.Repeat([]byte("x"), 200),
			Properties: &paho.PublishProperties{ResponseTopic: "$a2a/v1/reply/acme/lab/req/abc", CorrelationData: []byte("0123456789"),
				ContentType: "application/json", MessageExpiry: &secs,
				User: paho.UserProperties{{Key: mqttbind.PropContextID, Value: "c"}, {Key: mqttbind.PropAuthorization, Value: "Bearer t"}}}}},
		{"a remaining length of 3 bytes", &paho.Publish{Topic: "t", QoS: 1, Payload: bytes.Repeat([]byte("x"), 20000)}},
		{"a remaining length of 4 bytes", &paho.Publish{Topic: "t", QoS: 1, Payload: bytes.Repeat([]byte("x"), 3<<20)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pk := c.p.Packet()
			pk.QoS = 1
			var buf bytes.Buffer
			if _, err := pk.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			if got := publishSize(c.p); got != buf.Len() {
				t.Errorf("publishSize = %d, encoded %d bytes", got, buf.Len())
			}
			exact := BrokerCapabilities{MaximumPacketSize: uint32(buf.Len())}
			if err := exact.checkSize(c.p); err != nil {
				t.Errorf("refused at its own size: %v", err)
			}
			var te *PacketTooLargeError
			less := BrokerCapabilities{MaximumPacketSize: uint32(buf.Len() - 1)}
			if err := less.checkSize(c.p); !errors.As(err, &te) || te.Size != buf.Len() || te.Max != buf.Len()-1 {
				t.Errorf("a byte over the limit: %v", err)
			}
		})
	}
}

// secured is a broker with a password file (users of writeUsers), and an
// ACL file when deny is set, for the refusal tests: the embedded broker
// (its refusals counted) and mosquitto.
type secured struct {
	name string
	url  string
	// denials returns the embedded broker's refusal counts (nil for
	// mosquitto).
	denials func() broker.Denials
}

// securedBroker names a secured broker and starts it; call start in the
// broker's own subtest, so that a missing mosquitto fails its subtest
// alone.
type securedBroker struct {
	name  string
	start func(t *testing.T) secured
}

func securedBrokers(t *testing.T, pw, deny string) []securedBroker {
	t.Helper()
	var acl string
	if deny != "" {
		acl = filepath.Join(t.TempDir(), "acl")
		if err := os.WriteFile(acl, []byte(deny), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	embedded := func(t *testing.T) secured {
		e, err := broker.Start(testCtx(t), broker.Config{PasswordFile: pw, ACLFile: acl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return secured{name: mqtttest.NameEmbedded, url: e.URL(), denials: e.Denials}
	}
	mosquitto := func(t *testing.T) secured {
		opts := []mqtttest.Option{mqtttest.WithPasswordFile(pw)}
		if acl != "" {
			opts = append(opts, mqtttest.WithACLFile(acl))
		}
		return secured{name: mqtttest.NameMosquitto, url: mqtttest.StartMosquitto(t, opts...).URL()}
	}
	return []securedBroker{{mqtttest.NameEmbedded, embedded}, {mqtttest.NameMosquitto, mosquitto}}
}

// TestRefusedConnectFailsAtOnce: a CONNECT the broker refuses (a wrong
// password) fails NewClient, NewAgent and Watch at once with a
// *ConnectError naming the CONNACK reason code, not ErrBrokerUnreachable
// (the broker was reached). The connect timeout is an hour, beyond the
// test's own deadline: an error that waited for it would be the
// deadline's.
func TestRefusedConnectFailsAtOnce(t *testing.T) {
	t.Parallel()
	pw := writeUsers(t, stopAgent, stopClient, stopWatch)
	wrong := func(user string) Connection {
		return Connection{Username: user, Password: []byte("not-the-password"), ConnectTimeout: time.Hour}
	}
	for _, sb := range securedBrokers(t, pw, "") {
		cases := []struct {
			name  string
			start func(t *testing.T, c Connection) error
		}{
			{"client", func(t *testing.T, c Connection) error {
				_, err := NewClient(testCtx(t), ClientConfig{Connection: c, Org: "acme", Unit: "lab", ID: "req"})
				return err
			}},
			{"agent", func(t *testing.T, c Connection) error {
				_, err := NewAgent(testCtx(t), AgentConfig{Connection: c, Org: "acme", Unit: "lab", ID: "echo", Card: testCard("Echo"), Server: echoServer(t)})
				return err
			}},
			{"watch", func(t *testing.T, c Connection) error {
				_, err := Watch(testCtx(t), WatchConfig{Connection: c, Org: "acme", Unit: "lab", ClientID: stopWatch})
				return err
			}},
		}
		t.Run(sb.name, func(t *testing.T) {
			t.Parallel()
			b := sb.start(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					conn := wrong(map[string]string{"client": stopClient, "agent": stopAgent, "watch": stopWatch}[c.name])
					conn.Broker = b.url
					err := c.start(t, conn)
					var ce *ConnectError
					if !errors.As(err, &ce) {
						t.Fatalf("err = %v, want a *ConnectError", err)
					}
					// 0x86 from the embedded broker; mosquitto 2.0.11 says 0x87
					// (MQTT v5 §3.2.2.2 allows either).
					if ce.ReasonCode != 0x86 && ce.ReasonCode != 0x87 {
						t.Errorf("CONNACK 0x%02x, want 0x86 or 0x87", ce.ReasonCode)
					}
					if name := ReasonName(ce.ReasonCode); !strings.Contains(err.Error(), fmt.Sprintf("0x%02x %s", ce.ReasonCode, name)) {
						t.Errorf("%q does not name the reason code", err)
					}
					if errors.Is(err, ErrBrokerUnreachable) || !IsRefusal(err) {
						t.Errorf("%v: unreachable %v, refusal %v; want a refusal of a broker reached",
							err, errors.Is(err, ErrBrokerUnreachable), IsRefusal(err))
					}
				})
			}
		})
	}
}

// TestRefusedPublishEndsTheRequest: a request whose publish the broker
// refuses (its ACL denies the requester the agent's request topic: PUBACK
// 0x87) ends with the named refusal after one publish, never retried as
// if it went unanswered. The retry profile waits an hour before a second
// attempt, beyond the test's deadline: a request retried would end with
// the deadline instead. The embedded broker counts the publishes it
// refused.
func TestRefusedPublishEndsTheRequest(t *testing.T) {
	t.Parallel()
	pw := writeUsers(t, stopAgent, stopClient)
	brokers := securedBrokers(t, pw, "user acme/lab/req\ntopic deny $a2a/v1/request/acme/lab/echo\n")
	for _, sb := range brokers {
		t.Run(sb.name, func(t *testing.T) {
			t.Parallel()
			b := sb.start(t)
			startAgent(t, AgentConfig{Connection: userConnection(b.url, stopAgent), Org: "acme", Unit: "lab", ID: "echo",
				Card: testCard("Echo"), Server: echoServer(t)})
			c := startClient(t, b.url, "req", func(cfg *ClientConfig) {
				cfg.Connection = userConnection(b.url, stopClient)
				cfg.Requester.Retry = mqttbind.RetryProfile{ReplyFirstTimeout: time.Hour, StreamIdleTimeout: time.Hour,
					MaxAttempts: 3, RetryBackoff: []time.Duration{time.Hour}}
			})
			check := func(what string, err error) {
				t.Helper()
				var pe *PublishError
				if !errors.As(err, &pe) || pe.ReasonCode != 0x87 || pe.Topic != "$a2a/v1/request/acme/lab/echo" {
					t.Fatalf("%s: err = %v, want PUBACK 0x87 for $a2a/v1/request/acme/lab/echo", what, err)
				}
				if want := "broker refused publish to $a2a/v1/request/acme/lab/echo: 0x87 not authorized"; !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %q does not say %q", what, err, want)
				}
				if errors.Is(err, requester.ErrUnreachable) {
					t.Errorf("%s: %v counted as unanswered", what, err)
				}
			}
			_, err := c.SendMessage(testCtx(t), requester.TextMessage("hello", "", ""), requester.ToAgent("echo"))
			check("SendMessage", err)
			for _, err := range c.SendStreamingMessage(testCtx(t), requester.TextMessage("hello", "", ""), requester.ToAgent("echo")) {
				check("SendStreamingMessage", err)
				break
			}
			if b.denials != nil {
				if n := b.denials().Publish; n != 2 {
					t.Errorf("the broker refused %d publishes, want 2: one per operation", n)
				}
			}
		})
	}
}

// TestOversizeRefusedLocally: a request or a card larger than the broker's
// Maximum Packet Size (its CONNACK: 1 MiB on both test brokers) is refused
// before it is sent (a broker must drop a connection that sends one,
// DISCONNECT 0x95): the request ends with a *PacketTooLargeError, the
// connection is still the first one, and the next request is answered;
// UpdateCard refuses the card and the agent keeps the one it had.
func TestOversizeRefusedLocally(t *testing.T) {
	t.Parallel()
	forEachBrokerParallel(t, func(t *testing.T, b mqtttest.Broker, _ *recordLog) {
		a := startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "echo",
			Card: testCard("Echo"), Server: echoServer(t)})
		c := startClient(t, b.URL(), "big")
		if limit := c.BrokerCapabilities().MaximumPacketSize; limit != 1<<20 {
			t.Fatalf("the broker's maximum packet size is %d, want 1 MiB", limit)
		}
		_, err := c.SendMessage(testCtx(t), requester.TextMessage(strings.Repeat("x", 2<<20), "", ""), requester.ToAgent("echo"))
		var te *PacketTooLargeError
		if !errors.As(err, &te) || te.Max != 1<<20 || te.Size <= 2<<20 || te.Topic != "$a2a/v1/request/acme/lab/echo" {
			t.Fatalf("err = %v, want a *PacketTooLargeError", err)
		}
		if errors.Is(err, requester.ErrUnreachable) || !IsRefusal(err) {
			t.Errorf("%v: want a refusal, not unreachable", err)
		}
		if res, err := c.SendMessage(testCtx(t), requester.TextMessage("small", "", ""), requester.ToAgent("echo")); err != nil || res.Task == nil {
			t.Fatalf("the next request: %+v %v", res, err)
		}
		c.tr.conn.mu.Lock()
		gen := c.tr.conn.gen
		c.tr.conn.mu.Unlock()
		if gen != 1 {
			t.Errorf("%d connections: the oversize request was sent", gen)
		}

		big := testCard("Echo")
		big.Description = strings.Repeat("d", 3<<19)
		if err := a.UpdateCard(testCtx(t), big); !errors.As(err, &te) || te.Topic != "$a2a/v1/discovery/acme/lab/echo" {
			t.Fatalf("UpdateCard with a 1.5 MiB card: %v, want a *PacketTooLargeError", err)
		}
		a.mu.Lock()
		kept := a.card.Description
		a.mu.Unlock()
		if kept != testCard("Echo").Description {
			t.Error("the agent took the card it could not publish (its Will would carry it)")
		}
	})
}

// TestCapabilitiesFromConnack: an Agent, a Client and a Watcher keep what
// the broker's CONNACK offered (MQTT v5 §3.2.2.3), each property read or
// defaulted, and log it once at Info on the caller's logger.
func TestCapabilitiesFromConnack(t *testing.T) {
	t.Parallel()
	embedded, err := broker.Start(testCtx(t), broker.Config{MaxPacketSize: 300000, ReceiveMaximum: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { embedded.Close() })
	offers := BrokerCapabilities{MaximumQoS: 2, RetainAvailable: true, WildcardSubscriptionAvailable: true,
		SharedSubscriptionAvailable: true, SubscriptionIdentifiersAvailable: true, MaximumPacketSize: 1 << 20, ReceiveMaximum: 1024}
	mosquitto := func(conf ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			return mqtttest.StartMosquitto(t, mqtttest.WithMosquittoConfig(conf...)).URL()
		}
	}
	// Each broker starts in its case's subtest: a missing mosquitto fails
	// its cases alone.
	for _, c := range []struct {
		name   string
		broker func(t *testing.T) string // its URL
		want   func(*BrokerCapabilities)
	}{
		{"embedded with MaxPacketSize and ReceiveMaximum", func(*testing.T) string { return embedded.URL() }, func(b *BrokerCapabilities) {
			b.MaximumPacketSize, b.ReceiveMaximum = 300000, 50
		}},
		{"embedded, mqtttest's", func(t *testing.T) string { return mqtttest.StartEmbedded(t).URL() }, nil},
		// mosquitto announces its topic alias maximum (10 unless set).
		{"mosquitto, mqtttest's", mosquitto(), func(b *BrokerCapabilities) { b.TopicAliasMaximum = 10 }},
		{"mosquitto with max_qos 1, max_packet_size, max_inflight_messages, max_topic_alias",
			mosquitto("max_qos 1", "max_packet_size 300000", "max_inflight_messages 50", "max_topic_alias 7"),
			func(b *BrokerCapabilities) {
				b.MaximumQoS, b.MaximumPacketSize, b.ReceiveMaximum, b.TopicAliasMaximum = 1, 300000, 50, 7
			}},
		{"mosquitto with retain_available false", mosquitto("retain_available false"),
			func(b *BrokerCapabilities) { b.RetainAvailable, b.TopicAliasMaximum = false, 10 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := c.broker(t)
			want := offers
			if c.want != nil {
				c.want(&want)
			}
			logged := &recordLog{min: slog.LevelInfo}
			log := slog.New(logged)
			cl := startClient(t, url, "caps", func(cfg *ClientConfig) { cfg.Requester.Logger = log })
			w, err := Watch(testCtx(t), WatchConfig{Connection: Connection{Broker: url}, Org: "acme", Unit: "lab", Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close(context.Background()) })
			got := map[string]BrokerCapabilities{"client": cl.BrokerCapabilities(), "watch": w.BrokerCapabilities()}
			if want.RetainAvailable {
				a := startAgent(t, AgentConfig{Connection: Connection{Broker: url}, Org: "acme", Unit: "lab", ID: "caps",
					Card: testCard("Caps"), Server: echoServer(t), Logger: log})
				got["agent"] = a.BrokerCapabilities()
			}
			for who, caps := range got {
				if caps != want {
					t.Errorf("%s: %+v, want %+v", who, caps, want)
				}
			}
			recs := logged.matching("broker capabilities (CONNACK)")
			if len(recs) != len(got) {
				t.Fatalf("logged %d times for %d connections: %+v", len(recs), len(got), recs)
			}
			for _, r := range recs {
				if r.level != slog.LevelInfo || r.attrs["maximum_packet_size"] != uint64(want.MaximumPacketSize) ||
					r.attrs["shared_subscription_available"] != want.SharedSubscriptionAvailable {
					t.Errorf("logged %+v", r)
				}
			}
		})
	}
}

// TestBrokerWithoutWhatTheProfileNeeds: a broker that does not offer QoS
// 1 (mosquitto max_qos 0) fails NewClient and Watch at once with a
// *CapabilityError, and refuses an agent's CONNECT, whose Will is QoS 1,
// with 0x9B QoS not supported; one without retained messages
// (retain_available false) refuses the agent's retained Will with 0x9A
// retain not supported (MQTT v5 §3.2.2.3.4, §3.2.2.3.5), and takes a
// spawned instance, which has neither card nor Will.
func TestBrokerWithoutWhatTheProfileNeeds(t *testing.T) {
	t.Parallel()
	qos0 := mqtttest.StartMosquitto(t, mqtttest.WithMosquittoConfig("max_qos 0"))
	noRetain := mqtttest.StartMosquitto(t, mqtttest.WithMosquittoConfig("retain_available false"))
	conn := func(b mqtttest.Broker) Connection { return Connection{Broker: b.URL(), ConnectTimeout: time.Hour} }
	client := func(t *testing.T, b mqtttest.Broker) error {
		c, err := NewClient(testCtx(t), ClientConfig{Connection: conn(b), Org: "acme", Unit: "lab", ID: "req"})
		if err == nil {
			c.Close(context.Background())
		}
		return err
	}
	agentWith := func(card bool) func(t *testing.T, b mqtttest.Broker) error {
		return func(t *testing.T, b mqtttest.Broker) error {
			cfg := AgentConfig{Connection: conn(b), Org: "acme", Unit: "lab", ID: "echo", Server: echoServer(t)}
			if card {
				cfg.Card = testCard("Echo")
			}
			a, err := NewAgent(testCtx(t), cfg)
			if err == nil {
				a.Close(context.Background())
			}
			return err
		}
	}
	watch := func(t *testing.T, b mqtttest.Broker) error {
		w, err := Watch(testCtx(t), WatchConfig{Connection: conn(b), Org: "acme", Unit: "lab"})
		if err == nil {
			w.Close(context.Background())
		}
		return err
	}
	qos := "mqtt: the broker does not offer QoS 1 (its maximum QoS is 0) (CONNACK): the profile needs QoS 1"
	for _, c := range []struct {
		name    string
		broker  mqtttest.Broker
		start   func(*testing.T, mqtttest.Broker) error
		connack byte   // the CONNACK refusal, or
		want    string // the capability error ("" with connack 0: no error)
	}{
		{"max_qos 0: client", qos0, client, 0, qos},
		{"max_qos 0: watch", qos0, watch, 0, qos},
		{"max_qos 0: agent", qos0, agentWith(true), 0x9B, ""},
		{"retain_available false: agent", noRetain, agentWith(true), 0x9A, ""},
		{"retain_available false: spawned instance", noRetain, agentWith(false), 0, ""},
		{"retain_available false: client", noRetain, client, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.start(t, c.broker)
			var ce *ConnectError
			var ke *CapabilityError
			switch {
			case c.connack != 0:
				if !errors.As(err, &ce) || ce.ReasonCode != c.connack {
					t.Fatalf("err = %v, want CONNACK 0x%02x", err, c.connack)
				}
			case c.want != "":
				if !errors.As(err, &ke) || err.Error() != c.want {
					t.Fatalf("err = %v, want %s", err, c.want)
				}
			case err != nil:
				t.Fatal(err)
			}
		})
	}
}

// TestStopsWhenReconnectRefused: a connection that was ready, and whose
// reconnect the broker refuses for good (its password file changed: a
// restart played by a proxy that switches brokers), stops: Done is
// closed, Err is the *ConnectError, no connection is attempted after the
// refused one, and the stop is logged once at ERROR with the reason name.
func TestStopsWhenReconnectRefused(t *testing.T) {
	t.Parallel()
	pw := writeUsers(t, stopAgent, stopClient)
	var changed broker.PasswordFile
	for _, u := range []string{stopAgent, stopClient} {
		if err := changed.Set(u, "a-new-password", 101); err != nil {
			t.Fatal(err)
		}
	}
	newPW := filepath.Join(t.TempDir(), "passwd")
	if err := changed.WriteFile(newPW); err != nil {
		t.Fatal(err)
	}
	embedded := func(t *testing.T, pw string) mqtttest.Broker {
		return mqtttest.StartEmbedded(t, mqtttest.WithPasswordFile(pw))
	}
	mosquitto := func(t *testing.T, pw string) mqtttest.Broker {
		return mqtttest.StartMosquitto(t, mqtttest.WithPasswordFile(pw))
	}
	for _, c := range []struct {
		name   string
		broker func(*testing.T, string) mqtttest.Broker
		user   string
		start  func(*testing.T, Connection, *slog.Logger) (stoppable, error)
	}{
		{"agent on the embedded broker", embedded, stopAgent, func(t *testing.T, c Connection, log *slog.Logger) (stoppable, error) {
			return NewAgent(testCtx(t), AgentConfig{Connection: c, Org: "acme", Unit: "lab", ID: "echo", Card: testCard("Echo"), Server: echoServer(t), Logger: log})
		}},
		{"client on mosquitto", mosquitto, stopClient, func(t *testing.T, c Connection, log *slog.Logger) (stoppable, error) {
			return NewClient(testCtx(t), ClientConfig{Connection: c, Org: "acme", Unit: "lab", ID: "req", Requester: requester.Config{Logger: log}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before, after := c.broker(t, pw), c.broker(t, newPW)
			proxy := startProxy(t, before.Addr())
			logged := &recordLog{min: slog.LevelDebug}
			s, err := c.start(t, userConnection(proxy.URL(), c.user), slog.New(logged))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(context.Background()) })
			proxy.switchTo(after.Addr())
			select {
			case <-s.Done():
			case <-testCtx(t).Done():
				t.Fatalf("not stopped; the log: %+v", logged.matching(""))
			}
			var ce *ConnectError
			if !errors.As(s.Err(), &ce) || (ce.ReasonCode != 0x86 && ce.ReasonCode != 0x87) {
				t.Fatalf("Err() = %v, want CONNACK 0x86 or 0x87", s.Err())
			}
			if n := proxy.connections(); n != 2 {
				t.Errorf("%d connections, want 2: the first, and the refused one", n)
			}
			recs := logged.matching("refused by the broker for good")
			if len(recs) != 1 || recs[0].level != slog.LevelError || recs[0].attrs["reason_name"] != ReasonName(ce.ReasonCode) {
				t.Errorf("the stop was logged as %+v, want one error line naming the reason", recs)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Close(ctx); err != nil {
				t.Errorf("Close after the stop: %v", err)
			}
		})
	}
}
