package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
	mqtt "github.com/mochi-mqtt/server/v2"
)

func TestStartAddrURL(t *testing.T) {
	b := startBroker(t, Config{})
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Errorf("Addr() = %q (%v), want 127.0.0.1 and a bound port", b.Addr(), err)
	}
	if want := "mqtt://" + b.Addr(); b.URL() != want {
		t.Errorf("URL() = %q, want %q", b.URL(), want)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.Dial("tcp", b.Addr()); err == nil {
		c.Close()
		t.Errorf("still accepting connections after Close")
	}
}

func TestStartErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Config{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a canceled context: %v, want context.Canceled", err)
	}
	if _, err := Start(context.Background(), Config{Addr: "127.0.0.1:-1"}); err == nil {
		t.Errorf("Start with a bad address: no error")
	}

	dir := t.TempDir()
	startBroker(t, Config{DataDir: dir})
	if b, err := Start(context.Background(), Config{DataDir: dir}); !errors.Is(err, ErrLocked) {
		if err == nil {
			b.Close()
		}
		t.Errorf("second broker on the same DataDir: %v, want ErrLocked", err)
	}
}

// secretProps are request properties, a bearer token among them.
func secretProps() paho.UserProperties {
	return paho.UserProperties{
		{Key: mqttbind.PropAuthorization, Value: "Bearer secret-token"},
		{Key: mqttbind.PropContextID, Value: "5f0c7b1e-3a8e-4c1a-9b5e-2f1d6c7a8b9c"},
		{Key: "x-extra", Value: "1"},
	}
}

// TestPubackWithoutProperties: the PUBACK of a QoS 1 publish with user
// properties is a plain success, echoing nothing (a2a-authorization above
// all), while subscribers still get the properties.
func TestPubackWithoutProperties(t *testing.T) {
	b := startBroker(t, Config{Status: true})
	topic, err := mqttbind.RequestTopic("o", "u", "a")
	if err != nil {
		t.Fatal(err)
	}
	responder := connect(t, b.Addr(), "o/u/a")
	responder.subscribe(topic, 1)
	requester := connect(t, b.Addr(), "o/u/requester")

	resp := requester.publish(&paho.Publish{
		Topic: topic, QoS: 1, Payload: []byte(`{"jsonrpc":"2.0"}`),
		Properties: &paho.PublishProperties{User: secretProps()},
	})
	if resp.ReasonCode != 0 {
		t.Errorf("PUBACK reason code %#x, want 0x00 (success)", resp.ReasonCode)
	}
	if resp.Properties != nil && (len(resp.Properties.User) > 0 || resp.Properties.ReasonString != "") {
		t.Errorf("PUBACK properties %+v, want none", resp.Properties)
	}

	m := responder.await("the request", func(m *paho.Publish) bool { return m.Topic == topic })
	if got := props(m).Get(mqttbind.PropAuthorization); got != "Bearer secret-token" {
		t.Errorf("request forwarded with %s=%q", mqttbind.PropAuthorization, got)
	}
}

// TestMochiDefaultEchoesPropertiesOnAck pins what mochi does without
// NoInheritedPropertiesOnAck (docs/protocol.md §12), the reason for the
// setting. If it fails, mochi changed: revisit the setting and the package
// doc.
func TestMochiDefaultEchoesPropertiesOnAck(t *testing.T) {
	b := startTweaked(t, Config{}, func(o *mqtt.Options) {
		o.Capabilities.Compatibilities.NoInheritedPropertiesOnAck = false
	})
	topic, err := mqttbind.RequestTopic("o", "u", "a")
	if err != nil {
		t.Fatal(err)
	}
	requester := connect(t, b.Addr(), "o/u/requester")
	resp := requester.publish(&paho.Publish{
		Topic: topic, QoS: 1, Payload: []byte(`{}`),
		Properties: &paho.PublishProperties{User: secretProps()},
	})
	if resp.ReasonCode != 0x01 || resp.Properties == nil ||
		resp.Properties.User.Get(mqttbind.PropAuthorization) != "Bearer secret-token" {
		t.Errorf("mochi default PUBACK: reason %#x, properties %+v; expected reason 0x01 and the token echoed",
			resp.ReasonCode, resp.Properties)
	}
}

// publishCards publishes n retained cards on $a2a/v1/discovery/o/u/agent-N
// (QoS 1, 64 publishes in flight) and returns how long it took.
func publishCards(t *testing.T, addr string, n int) time.Duration {
	t.Helper()
	pub := connect(t, addr, "publisher")
	ctx := testContext(t)
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	next := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range next {
				agent := fmt.Sprintf("agent-%05d", i)
				topic, err := mqttbind.DiscoveryTopic("o", "u", agent)
				if err == nil {
					_, err = pub.pc.Publish(ctx, &paho.Publish{
						Topic: topic, QoS: 1, Retain: true, Payload: card(agent, "1"),
						Properties: &paho.PublishProperties{User: statusProps(mqttbind.StatusOnline, mqttbind.StatusSourceAgent)},
					})
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("publishing %d cards: %v", n, err)
	}
	elapsed := time.Since(start)
	pub.disconnect()
	return elapsed
}

// cardCount counts distinct discovery topics a subscriber receives.
type cardCount struct {
	mu       sync.Mutex
	topics   map[string]bool
	bad      []string // cards without offline/broker (when checked)
	check    bool
	sentinel chan int // receives the count when the sentinel arrives
}

func newCardCount(checkStatus bool) *cardCount {
	return &cardCount{topics: make(map[string]bool), check: checkStatus, sentinel: make(chan int, 1)}
}

func (c *cardCount) handle(m *paho.Publish) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Topic == sentinelTopic {
		// mochi acknowledges a publish before forwarding it, so the setter's
		// sentinel can also arrive live, ahead of everything: only the
		// retained one marks the end.
		if m.Retain {
			c.sentinel <- len(c.topics)
		}
		return
	}
	c.topics[m.Topic] = true
	if c.check && (props(m).Get(mqttbind.PropStatus) != mqttbind.StatusOffline ||
		props(m).Get(mqttbind.PropStatusSource) != mqttbind.StatusSourceBroker) && len(c.bad) < 5 {
		c.bad = append(c.bad, m.Topic)
	}
}

// sentinelTopic carries a retained QoS 0 message. Subscribed in the same
// SUBSCRIBE after the wildcard, its message is queued behind every card
// mochi sends for the wildcard: when it arrives, every card mochi kept has
// arrived.
const sentinelTopic = "test/sentinel"

// subscribeCards subscribes to every card of o/u and returns how many
// arrived (once the sentinel has) and how long it took.
func subscribeCards(t *testing.T, addr string, count *cardCount) (int, time.Duration) {
	t.Helper()
	setter := connect(t, addr, "sentinel-setter")
	setter.publish(&paho.Publish{Topic: sentinelTopic, QoS: 1, Retain: true, Payload: []byte("end")})
	setter.disconnect()

	sub := dial(t, addr, &paho.Connect{ClientID: "watcher", CleanStart: true}, count.handle)
	start := time.Now()
	// One SUBSCRIBE: mochi sends the retained messages of its filters in
	// order. (A second SUBSCRIBE would risk 0x91: see
	// TestMochiSharesPacketIDsAcrossDirections.)
	sa, err := sub.pc.Subscribe(testContext(t), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: discoveryFilter(t, "o", "u"), QoS: 1},
		{Topic: sentinelTopic, QoS: 0},
	}})
	if err != nil || len(sa.Reasons) != 2 || sa.Reasons[0] != 1 || sa.Reasons[1] != 0 {
		t.Fatalf("subscribe: %v (SUBACK %+v)", err, sa)
	}
	select {
	case n := <-count.sentinel:
		return n, time.Since(start)
	case <-testContext(t).Done():
		t.Fatalf("the sentinel never arrived")
		return 0, 0
	}
}

// TestTenThousandRetainedCards: one wildcard subscriber receives all of
// 10,000 retained cards, each with the broker's status.
func TestTenThousandRetainedCards(t *testing.T) {
	const n = 10000
	b := startBroker(t, Config{Status: true})
	pubTime := publishCards(t, b.Addr(), n)
	count := newCardCount(true)
	got, subTime := subscribeCards(t, b.Addr(), count)
	t.Logf("embedded broker: published %d retained cards in %v, one subscription received %d in %v",
		n, pubTime.Round(time.Millisecond), got, subTime.Round(time.Millisecond))
	if got != n {
		t.Errorf("received %d of %d retained cards; broker: %s; the filter matches %d retained messages now",
			got, n, brokerStats(b), len(b.srv.Topics.Messages(discoveryFilter(t, "o", "u"))))
	}
	count.mu.Lock()
	defer count.mu.Unlock()
	if len(count.bad) > 0 {
		t.Errorf("cards without offline / broker status, e.g. %v", count.bad)
	}
}

// TestMochiDefaultsDropRetainedCards pins docs/protocol.md §12: at mochi's
// default limits the same subscription receives about 8,192 of 10,000 cards
// (MaximumInflight), silently.
// If it fails, mochi's defaults changed: revisit DefaultMaxInflight,
// DefaultMaxPendingWrites and the package doc.
func TestMochiDefaultsDropRetainedCards(t *testing.T) {
	const n = 10000
	b := startTweaked(t, Config{}, func(o *mqtt.Options) {
		defaults := mqtt.NewDefaultServerCapabilities()
		o.Capabilities.MaximumInflight = defaults.MaximumInflight
		o.Capabilities.MaximumClientWritesPending = defaults.MaximumClientWritesPending
		o.Capabilities.ReceiveMaximum = defaults.ReceiveMaximum
	})
	publishCards(t, b.Addr(), n)
	got, _ := subscribeCards(t, b.Addr(), newCardCount(false))
	t.Logf("mochi defaults: received %d of %d retained cards; broker: %s", got, n, brokerStats(b))
	if got >= n {
		t.Errorf("mochi defaults delivered every card; expected about 8,192")
	}
}

// TestSharedSubscriptionOnDollarTopic: mochi delivers publishes to
// $a2a/v1/request/o/u/pool/p to $share/g/$a2a/v1/request/o/u/pool/p, each
// to exactly one member (the pool story, which mosquitto 2.0.11 cannot
// carry).
func TestSharedSubscriptionOnDollarTopic(t *testing.T) {
	b := startBroker(t, Config{})
	topic, err := mqttbind.PoolRequestTopic("o", "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	filter, err := mqttbind.PoolSubscriptionTopic("g", "o", "u", "p")
	if err != nil {
		t.Fatal(err)
	}

	const n = 20
	got := make(chan string, 2*n)
	member := func(id string) {
		c := dial(t, b.Addr(), &paho.Connect{ClientID: id, CleanStart: true}, func(m *paho.Publish) {
			got <- id + " " + string(m.Payload)
		})
		c.subscribe(filter, 1)
	}
	member("o/u/m1")
	member("o/u/m2")

	requester := connect(t, b.Addr(), "o/u/requester")
	for i := range n {
		requester.publish(&paho.Publish{Topic: topic, QoS: 1, Payload: fmt.Appendf(nil, "request-%d", i)})
	}
	seen := make(map[string]string)
	ctx := testContext(t)
	for len(seen) < n {
		select {
		case s := <-got:
			id, payload, _ := strings.Cut(s, " ")
			if prev, dup := seen[payload]; dup {
				t.Fatalf("%s delivered twice (to %s and %s)", payload, prev, id)
			}
			seen[payload] = id
		case <-ctx.Done():
			t.Fatalf("received %d of %d pool requests", len(seen), n)
		}
	}
	t.Logf("pool requests per member: %v", perMember(seen))
}

func perMember(seen map[string]string) map[string]int {
	m := make(map[string]int)
	for _, id := range seen {
		m[id]++
	}
	return m
}

// TestPersistenceRetainedCard: a retained card, with its properties,
// survives Close and Start on the same DataDir.
func TestPersistenceRetainedCard(t *testing.T) {
	dir := t.TempDir()
	topic := discoveryTopic(t, "o", "u", "a")
	c1 := card("a", "persisted")

	b1, err := Start(context.Background(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	agent := connect(t, b1.Addr(), "o/u/a")
	agent.publish(&paho.Publish{
		Topic: topic, QoS: 1, Retain: true, Payload: c1,
		Properties: &paho.PublishProperties{User: statusProps(online, mqttbind.StatusSourceAgent, "x-extra", "kept")},
	})
	agent.disconnect()
	if err := b1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	b2 := startBroker(t, Config{DataDir: dir})
	m := lateCard(t, b2, discoveryFilter(t, "o", "u"), c1)
	if u := props(m); u.Get(mqttbind.PropStatus) != online ||
		u.Get(mqttbind.PropStatusSource) != mqttbind.StatusSourceAgent || u.Get("x-extra") != "kept" {
		t.Errorf("persisted card properties %v, want them as published", u)
	}
}

// TestPersistenceSession: a persistent session (subscription, and a QoS 1
// message published while its client was away) survives Close and Start.
func TestPersistenceSession(t *testing.T) {
	dir := t.TempDir()
	const topic = "test/session"
	expiry := uint32(3600)
	sessionConnect := func(clean bool) *paho.Connect {
		return &paho.Connect{ClientID: "o/u/s", CleanStart: clean,
			Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}}
	}

	b1, err := Start(context.Background(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := dial(t, b1.Addr(), sessionConnect(true), nil)
	s.subscribe(topic, 1)
	s.disconnect()
	if err := b1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	b2 := startBroker(t, Config{DataDir: dir})
	pub := connect(t, b2.Addr(), "publisher")
	pub.publish(&paho.Publish{Topic: topic, QoS: 1, Payload: []byte("while away")})
	s = dial(t, b2.Addr(), sessionConnect(false), nil)
	s.await("the message queued for the session", payloadIs([]byte("while away")))
}

// TestCloseWithSilentConnection: Close returns while a TCP connection that
// never sent CONNECT is open (mochi's own listener would wait for it
// forever), and leaves no goroutine behind (TestMain checks).
func TestCloseWithSilentConnection(t *testing.T) {
	b, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-testContext(t).Done():
		t.Fatal("Close did not return")
	}
}

// TestMochiSharesPacketIDsAcrossDirections pins a mochi v2.7.9 defect that
// clients of this broker must live with: packet identifiers of the
// client's packets and of the broker's deliveries share one table, so a
// SUBSCRIBE whose identifier equals that of a delivery the client has not
// acknowledged yet is refused with 0x91 (packet identifier in use), though
// MQTT gives each direction its own identifiers. (An inbound QoS 1 PUBLISH
// with such an identifier silently drops the broker's record of its
// delivery instead; mochi issues #519 and #545.) If it fails, mochi fixed
// it: drop the workaround in the sentinel subscription above.
func TestMochiSharesPacketIDsAcrossDirections(t *testing.T) {
	b := startBroker(t, Config{})
	const topic = "test/ids"
	// Manual acknowledgement: deliveries 1..5 stay unacknowledged.
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan *paho.Publish, 10)
	pc := paho.NewClient(paho.ClientConfig{
		Conn:                       conn,
		EnableManualAcknowledgment: true,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				received <- pr.Packet
				return true, nil
			},
		},
	})
	ctx := testContext(t)
	if _, err := pc.Connect(ctx, &paho.Connect{ClientID: "holder", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = pc.Disconnect(&paho.Disconnect{})
		<-pc.Done()
	}()
	// paho numbers its packets 1, 2, 3…: this SUBSCRIBE is 1.
	if _, err := pc.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	pub := connect(t, b.Addr(), "publisher")
	for i := range 5 {
		pub.publish(&paho.Publish{Topic: topic, QoS: 1, Payload: fmt.Appendf(nil, "%d", i)})
	}
	for range 5 {
		select {
		case m := <-received:
			t.Logf("delivery with packet identifier %d, not acknowledged", m.PacketID)
		case <-ctx.Done():
			t.Fatal("deliveries did not arrive")
		}
	}
	// The second SUBSCRIBE is 2, like the second unacknowledged delivery.
	sa, err := pc.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "test/other", QoS: 1}}})
	if err == nil || sa == nil || len(sa.Reasons) != 1 || sa.Reasons[0] != 0x91 {
		t.Errorf("SUBSCRIBE with the identifier of an unacknowledged delivery: %v (SUBACK %+v); "+
			"expected 0x91 from mochi v2.7.9", err, sa)
	}
}

// TestMochiSendsRetainedDollarTopicsToWildcards pins a mochi v2.7.9 defect
// (package documentation): a new subscription whose filter begins with #
// receives the retained messages of topics beginning with $ ($SYS aside),
// though MQTT v5 §4.7.2 says such a filter matches none of them; live
// messages on them it does not receive. With authentication the delivery
// check withholds them (TestRootWildcardSubscribersReadNoOnesRequests). If
// this fails, mochi fixed it: update the package documentation.
func TestMochiSendsRetainedDollarTopicsToWildcards(t *testing.T) {
	b := startBroker(t, Config{})
	topic := discoveryTopic(t, "o", "u", "a")
	agent := connect(t, b.Addr(), "o/u/a")
	stored := card("a", "retained")
	agent.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: stored})

	all := connect(t, b.Addr(), "all")
	all.subscribe("#", 1)
	all.await("the retained card, which # should not match", func(m *paho.Publish) bool {
		return m.Topic == topic && m.Retain && string(m.Payload) == string(stored)
	})
	// Then a live card, and a sentinel # does match.
	agent.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: card("a", "live")})
	agent.publish(&paho.Publish{Topic: "test/sentinel", QoS: 1, Payload: []byte("sentinel")})
	all.await("the sentinel", func(m *paho.Publish) bool {
		if m.Topic == topic {
			t.Errorf("# received the live card on %s", topic)
		}
		return m.Topic == "test/sentinel"
	})
}

// TestNoMessageExpiryAdded: a message published without Message Expiry
// Interval is forwarded without one (mochi's default maximum would stamp
// one on it, and delete retained messages once that old).
func TestNoMessageExpiryAdded(t *testing.T) {
	for _, mochiDefault := range []bool{false, true} {
		t.Run(fmt.Sprintf("mochiDefault=%v", mochiDefault), func(t *testing.T) {
			var tweak func(*mqtt.Options)
			if mochiDefault {
				tweak = func(o *mqtt.Options) {
					o.Capabilities.MaximumMessageExpiryInterval = mqtt.NewDefaultServerCapabilities().MaximumMessageExpiryInterval
				}
			}
			b := startTweaked(t, Config{}, tweak)
			topic := discoveryTopic(t, "o", "u", "a")
			agent := connect(t, b.Addr(), "o/u/a")
			c := card("a", "1")
			agent.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: c})
			m := lateCard(t, b, discoveryFilter(t, "o", "u"), c)
			var expiry *uint32
			if m.Properties != nil {
				expiry = m.Properties.MessageExpiry
			}
			switch {
			case !mochiDefault && expiry != nil:
				t.Errorf("retained card delivered with Message Expiry Interval %d, published without", *expiry)
			case mochiDefault && (expiry == nil || *expiry < 86000):
				// Pins mochi's behaviour, the reason for the setting.
				t.Errorf("mochi default: Message Expiry Interval %v, expected about 86400 stamped on", expiry)
			case mochiDefault:
				t.Logf("mochi default: retained card published without expiry delivered with Message Expiry Interval %d", *expiry)
			}
		})
	}
}

// TestPublishPropertiesWithProblemInfoOff: a client that sent Request
// Problem Information = 0 (paho.golang does whenever ConnectProperties is
// set and RequestProblemInfo left false, autopaho with a session expiry
// among them) still receives the user properties of the messages it
// subscribed to, as MQTT v5 requires; mochi alone drops them (pinned).
func TestPublishPropertiesWithProblemInfoOff(t *testing.T) {
	for _, mochiAlone := range []bool{false, true} {
		t.Run(fmt.Sprintf("mochiAlone=%v", mochiAlone), func(t *testing.T) {
			b := startBroker(t, Config{mochiProblemInfo: mochiAlone})
			topic, err := mqttbind.RequestTopic("o", "u", "a")
			if err != nil {
				t.Fatal(err)
			}
			expiry := uint32(60)
			responder := dial(t, b.Addr(), &paho.Connect{ClientID: "o/u/a", CleanStart: true,
				Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}}, nil)
			responder.subscribe(topic, 1)
			requester := connect(t, b.Addr(), "o/u/requester")
			requester.publish(&paho.Publish{Topic: topic, QoS: 1, Payload: []byte(`{}`),
				Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: mqttbind.PropContextID, Value: "c"}}}})
			m := responder.await("the request", func(m *paho.Publish) bool { return m.Topic == topic })
			got := props(m).Get(mqttbind.PropContextID)
			switch {
			case !mochiAlone && got != "c":
				t.Errorf("request delivered with %s=%q, want c", mqttbind.PropContextID, got)
			case mochiAlone && got != "":
				t.Errorf("mochi alone delivered the user properties; it no longer needs the publishProperties step")
			}
		})
	}
}

// brokerStats describes what mochi counted, for failure messages.
func brokerStats(b *Broker) string {
	info := b.srv.Info.Clone()
	return fmt.Sprintf("%d retained, %d messages dropped, %d in-flight dropped, %d in flight, %d clients connected",
		b.srv.Topics.Retained.Len(), info.MessagesDropped, info.InflightDropped, info.Inflight, info.ClientsConnected)
}

// TestSubscriberWithReceiveMaximumUnderLoad: QoS 1 publishers racing to
// one subscriber that announced a Receive Maximum deliver everything.
// Without the noSendQuota hook mochi v2.7.9 deadlocks on this within
// seconds (its in-flight table's read lock taken twice), at a random
// message count.
func TestSubscriberWithReceiveMaximumUnderLoad(t *testing.T) {
	const publishers, each = 8, 1500
	b := startBroker(t, Config{})
	for _, receiveMax := range []uint16{65535, 10} {
		t.Run(fmt.Sprintf("ReceiveMaximum=%d", receiveMax), func(t *testing.T) {
			var (
				mu   sync.Mutex
				got  = make(map[string]bool)
				done = make(chan struct{})
			)
			topicPrefix := fmt.Sprintf("test/load-%d/", receiveMax)
			sub := dial(t, b.Addr(), &paho.Connect{ClientID: fmt.Sprintf("sub-%d", receiveMax), CleanStart: true,
				Properties: &paho.ConnectProperties{ReceiveMaximum: &receiveMax, RequestProblemInfo: true}},
				func(m *paho.Publish) {
					mu.Lock()
					defer mu.Unlock()
					before := len(got)
					got[m.Topic+" "+string(m.Payload)] = true
					if before == publishers*each-1 && len(got) == publishers*each {
						close(done)
					}
				})
			sub.subscribe(topicPrefix+"#", 1)
			ctx := testContext(t)
			var wg sync.WaitGroup
			for p := range publishers {
				pub := connect(t, b.Addr(), fmt.Sprintf("pub-%d-%d", receiveMax, p))
				wg.Go(func() {
					for i := range each {
						if _, err := pub.pc.Publish(ctx, &paho.Publish{Topic: fmt.Sprint(topicPrefix, p), QoS: 1,
							Payload: fmt.Append(nil, i)}); err != nil {
							t.Errorf("publisher %d: %v", p, err)
							return
						}
					}
				})
			}
			wg.Wait()
			select {
			case <-done:
			case <-ctx.Done():
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("received %d of %d; broker: %s", len(got), publishers*each, brokerStats(b))
			}
		})
	}
}

// TestCloseWhileClientsLeave: Close returns while clients are
// disconnecting. mochi's own Close can deadlock here (its clients table's
// read lock taken twice while a leaving client waits for the write lock).
func TestCloseWhileClientsLeave(t *testing.T) {
	for range 5 {
		b, err := Start(context.Background(), Config{Status: true})
		if err != nil {
			t.Fatal(err)
		}
		var clients []*client
		for i := range 30 {
			clients = append(clients, connect(t, b.Addr(), fmt.Sprintf("o/u/agent-%d", i)))
		}
		for _, c := range clients {
			go c.disconnect()
		}
		done := make(chan error, 1)
		go func() { done <- b.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-testContext(t).Done():
			t.Fatal("Close did not return")
		}
		for _, c := range clients {
			c.disconnect() // waits for the goroutine above
		}
	}
}

// TestTakeoverWillLandsFirst: an agent reconnecting while its old
// connection is still open (a session takeover) publishes its card at
// once; the old connection's Will (the LWT card) must not land after it.
// mochi alone sends the old Will whenever the old connection's goroutine
// gets to it, so the LWT card can replace the new card (seen here once in
// about a hundred runs of TestStatusSessionTakeover under the race
// detector, before the orderedTakeover hook).
func TestTakeoverWillLandsFirst(t *testing.T) {
	b := startBroker(t, Config{})
	topic := discoveryTopic(t, "o", "u", "a")
	will := &paho.WillMessage{Topic: topic, QoS: 1, Retain: true, Payload: card("a", "will")}
	willProps := &paho.WillProperties{User: statusProps(offline, mqttbind.StatusSourceLWT)}
	var old *client
	for i := range 20 {
		c := dial(t, b.Addr(), &paho.Connect{ClientID: "o/u/a", CleanStart: true,
			WillMessage: will, WillProperties: willProps}, nil)
		live := card("a", fmt.Sprint(i))
		c.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: live,
			Properties: &paho.PublishProperties{User: statusProps(online, mqttbind.StatusSourceAgent)}})
		if old != nil {
			<-old.pc.Done() // taken over
		}
		// The old connection is gone: its Will, if any, landed before the
		// new card.
		m := lateCard(t, b, discoveryFilter(t, "o", "u"), nil)
		if string(m.Payload) != string(live) {
			t.Errorf("takeover %d: the retained card is %.40q, want the new connection's card", i, m.Payload)
		}
		old = c
	}
}

// TestRetainedPublishRacingSubscribe: cards retained while new wildcard
// subscriptions receive the retained cards. Under the race detector this
// fails without the retainGuard hook (mochi reads the topic tree's
// retained paths with no lock).
func TestRetainedPublishRacingSubscribe(t *testing.T) {
	testRetainRace(t, Config{})
}

func testRetainRace(t *testing.T, cfg Config) {
	b := startBroker(t, cfg)
	filter := discoveryFilter(t, "o", "u")
	ctx := testContext(t)
	var wg sync.WaitGroup
	for p := range 4 {
		pub := connect(t, b.Addr(), fmt.Sprintf("o/u/agent-%d", p))
		wg.Go(func() {
			for i := range 200 {
				topic, err := mqttbind.DiscoveryTopic("o", "u", fmt.Sprintf("agent-%d-%d", p, i%20))
				if err == nil {
					_, err = pub.pc.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: card("x", fmt.Sprint(i))})
				}
				if err != nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
		})
	}
	for s := range 4 {
		sub := dial(t, b.Addr(), &paho.Connect{ClientID: fmt.Sprintf("watcher-%d", s), CleanStart: true}, func(*paho.Publish) {})
		wg.Go(func() {
			for range 50 {
				if _, err := sub.pc.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 0}}}); err != nil {
					t.Errorf("subscribe: %v", err)
					return
				}
				if _, err := sub.pc.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{filter}}); err != nil {
					t.Errorf("unsubscribe: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
