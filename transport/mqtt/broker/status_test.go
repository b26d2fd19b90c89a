package broker

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"
)

const (
	online  = mqttbind.StatusOnline
	offline = mqttbind.StatusOffline
)

var lateID atomic.Int64

// lateCard subscribes a new client to filter and returns the retained
// message with payload it receives (the first retained message, for a nil
// payload): mochi's retained path, which sends the stored message to a new
// subscription. (mochi acknowledges a publish before forwarding it, so a
// client subscribing right after a PUBACK may also get the message live:
// those are skipped.)
func lateCard(t *testing.T, b *Broker, filter string, payload []byte) *paho.Publish {
	t.Helper()
	c := connect(t, b.Addr(), fmt.Sprintf("late-%d", lateID.Add(1)))
	c.subscribe(filter, 1)
	m := c.await("the retained card", func(m *paho.Publish) bool {
		return m.Retain && (payload == nil || string(m.Payload) == string(payload))
	})
	c.disconnect()
	return m
}

// TestStatusLifecycle follows docs/protocol.md §3.2 (phase 5) for an agent
// that publishes no status of its own at first (a registry published its
// card), then through connect, graceful disconnect, reconnect with its own
// card, and a dropped connection without a will: every message a subscriber
// gets carries the connection state of the moment, from the broker.
func TestStatusLifecycle(t *testing.T) {
	b := startBroker(t, Config{Status: true})
	topic := discoveryTopic(t, "o", "u", "a")
	filter := discoveryFilter(t, "o", "u")

	watcher := connect(t, b.Addr(), "watcher")
	watcher.watch(filter)

	// Registered by another client, with a stale status of its own that
	// the broker replaces; other properties pass.
	v1 := card("a", "1")
	registry := connect(t, b.Addr(), "registry")
	registry.publish(&paho.Publish{
		Topic: topic, QoS: 1, Retain: true, Payload: v1,
		Properties: &paho.PublishProperties{User: statusProps(online, mqttbind.StatusSourceAgent, "x-extra", "kept")},
	})
	m := watcher.await("the registered card", payloadIs(v1))
	checkStatus(t, m, offline, mqttbind.StatusSourceBroker)
	if got := props(m).Get("x-extra"); got != "kept" {
		t.Errorf("x-extra = %q, want it kept", got)
	}
	checkStatus(t, lateCard(t, b, filter, v1), offline, mqttbind.StatusSourceBroker)

	// 5a: the agent connects and publishes nothing; the broker sends the
	// retained card again, online.
	agent := connect(t, b.Addr(), "o/u/a")
	m = watcher.await("the card sent again on connect", payloadIs(v1))
	checkStatus(t, m, online, mqttbind.StatusSourceBroker)
	if got := props(m).Get("x-extra"); got != "kept" {
		t.Errorf("x-extra = %q after connect, want it kept", got)
	}
	checkStatus(t, lateCard(t, b, filter, v1), online, mqttbind.StatusSourceBroker)

	// 5b: graceful disconnect (DISCONNECT, no card of its own).
	agent.disconnect()
	m = watcher.await("the card sent again on disconnect", payloadIs(v1))
	checkStatus(t, m, offline, mqttbind.StatusSourceBroker)
	checkStatus(t, lateCard(t, b, filter, v1), offline, mqttbind.StatusSourceBroker)

	// Reconnect: the old card goes out online, then the agent's own.
	agent = connect(t, b.Addr(), "o/u/a")
	checkStatus(t, watcher.await("the old card on reconnect", payloadIs(v1)), online, mqttbind.StatusSourceBroker)
	v2 := card("a", "2")
	agent.publish(&paho.Publish{
		Topic: topic, QoS: 1, Retain: true, Payload: v2,
		Properties: &paho.PublishProperties{User: statusProps(online, mqttbind.StatusSourceAgent)},
	})
	checkStatus(t, watcher.await("the agent's card", payloadIs(v2)), online, mqttbind.StatusSourceBroker)

	// 5b, ungraceful: the TCP connection closes without DISCONNECT (no will).
	agent.drop()
	m = watcher.await("the card sent again after the connection dropped", payloadIs(v2))
	checkStatus(t, m, offline, mqttbind.StatusSourceBroker)
	checkStatus(t, lateCard(t, b, filter, v2), offline, mqttbind.StatusSourceBroker)
}

// TestStatusCrashWithWill: an agent with the Will of docs/protocol.md §3.1
// crashes. The LWT card is retained as the agent set it (offline / lwt), but
// every subscriber receives it, and the card sent after the disconnect, as
// offline / broker; never online.
func TestStatusCrashWithWill(t *testing.T) {
	b := startBroker(t, Config{Status: true})
	topic := discoveryTopic(t, "o", "u", "b")
	filter := discoveryFilter(t, "o", "u")

	watcher := connect(t, b.Addr(), "watcher")
	watcher.watch(filter)

	willCard, liveCard := card("b", "at-connect"), card("b", "live")
	agent := dial(t, b.Addr(), &paho.Connect{
		ClientID: "o/u/b", CleanStart: true,
		WillMessage:    &paho.WillMessage{Topic: topic, QoS: 1, Retain: true, Payload: willCard},
		WillProperties: &paho.WillProperties{User: statusProps(offline, mqttbind.StatusSourceLWT)},
	}, nil)
	agent.publish(&paho.Publish{
		Topic: topic, QoS: 1, Retain: true, Payload: liveCard,
		Properties: &paho.PublishProperties{User: statusProps(online, mqttbind.StatusSourceAgent)},
	})
	checkStatus(t, watcher.await("the live card", payloadIs(liveCard)), online, mqttbind.StatusSourceBroker)

	agent.drop()
	// The LWT itself, then the retained (now LWT) card sent again on
	// disconnect.
	for i := range 2 {
		m := watcher.await(fmt.Sprintf("LWT card #%d", i+1), payloadIs(willCard))
		checkStatus(t, m, offline, mqttbind.StatusSourceBroker)
	}
	checkStatus(t, lateCard(t, b, filter, willCard), offline, mqttbind.StatusSourceBroker)

	stored, ok := b.srv.Topics.Retained.Get(topic)
	if !ok {
		t.Fatal("no retained card")
	}
	if got := userValue(stored.Properties.User, mqttbind.PropStatusSource); got != mqttbind.StatusSourceLWT {
		t.Errorf("retained card has %s=%q, want it kept as the will set it (%s)",
			mqttbind.PropStatusSource, got, mqttbind.StatusSourceLWT)
	}
}

func userValue(u []packets.UserProperty, key string) string {
	for _, p := range u {
		if p.Key == key {
			return p.Val
		}
	}
	return ""
}

// TestStatusSessionTakeover: a second connection with the agent's Client
// ID takes the session over; the first one's disconnect (and its will)
// must not leave the agent offline.
func TestStatusSessionTakeover(t *testing.T) {
	b := startBroker(t, Config{Status: true})
	topic := discoveryTopic(t, "o", "u", "c")
	filter := discoveryFilter(t, "o", "u")

	watcher := connect(t, b.Addr(), "watcher")
	watcher.watch(filter)

	will := func(version string) *paho.Connect {
		return &paho.Connect{
			ClientID: "o/u/c", CleanStart: true,
			WillMessage:    &paho.WillMessage{Topic: topic, QoS: 1, Retain: true, Payload: card("c", version)},
			WillProperties: &paho.WillProperties{User: statusProps(offline, mqttbind.StatusSourceLWT)},
		}
	}
	first := dial(t, b.Addr(), will("first"), nil)
	v1 := card("c", "1")
	first.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: v1})
	checkStatus(t, watcher.await("the first card", payloadIs(v1)), online, mqttbind.StatusSourceBroker)

	second := dial(t, b.Addr(), will("second"), nil)
	<-first.pc.Done() // DISCONNECT 0x8E, session taken over
	v2 := card("c", "2")
	second.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: v2})
	checkStatus(t, watcher.await("the second card", payloadIs(v2)), online, mqttbind.StatusSourceBroker)
	checkStatus(t, lateCard(t, b, filter, v2), online, mqttbind.StatusSourceBroker)
}

// TestStatusLeavesOtherMessagesAlone: no status on other topics, on an
// unregistration (empty retained payload), or with Config.Status off.
func TestStatusLeavesOtherMessagesAlone(t *testing.T) {
	for _, status := range []bool{true, false} {
		t.Run(fmt.Sprintf("Status=%v", status), func(t *testing.T) {
			b := startBroker(t, Config{Status: status})
			topic := discoveryTopic(t, "o", "u", "d")
			event, err := mqttbind.EventTopic("o", "u", "d")
			if err != nil {
				t.Fatal(err)
			}
			watcher := connect(t, b.Addr(), "watcher")
			watcher.watch(discoveryFilter(t, "o", "u"))
			watcher.watch(event)
			agent := connect(t, b.Addr(), "o/u/d")

			agentProps := statusProps(online, mqttbind.StatusSourceAgent, "x-extra", "kept")
			pub := func(topic string, retain bool, payload []byte) *paho.Publish {
				agent.publish(&paho.Publish{
					Topic: topic, QoS: 1, Retain: retain, Payload: payload,
					Properties: &paho.PublishProperties{User: agentProps},
				})
				return watcher.await(topic, func(m *paho.Publish) bool {
					return m.Topic == topic && string(m.Payload) == string(payload)
				})
			}
			same := func(what string, m *paho.Publish) {
				t.Helper()
				if got := props(m); len(got) != len(agentProps) ||
					got.Get(mqttbind.PropStatus) != online ||
					got.Get(mqttbind.PropStatusSource) != mqttbind.StatusSourceAgent ||
					got.Get("x-extra") != "kept" {
					t.Errorf("%s: properties %v, want them as published: %v", what, got, agentProps)
				}
			}

			same("event", pub(event, false, []byte(`{"kind":"event"}`)))
			c := pub(topic, true, card("d", "1"))
			if status {
				checkStatus(t, c, online, mqttbind.StatusSourceBroker)
			} else {
				same("card with Status off", c)
			}
			same("unregistration", pub(topic, true, nil))
		})
	}
}

// TestStatusIgnoresNonAgentClientIDs: clients whose ID is not
// {org_id}/{unit_id}/{agent_id} never change anyone's status.
func TestStatusIgnoresNonAgentClientIDs(t *testing.T) {
	for _, id := range []string{"o/u", "o/u/a/b", "o//a", "o/u/a b", "plain"} {
		if topic, ok := agentDiscoveryTopic(mqttbind.Root{}, id); ok {
			t.Errorf("agentDiscoveryTopic(%q) = %q, want none", id, topic)
		}
	}
	if topic, ok := agentDiscoveryTopic(mqttbind.Root{}, "o/u/a"); !ok || topic != discoveryTopic(t, "o", "u", "a") {
		t.Errorf("agentDiscoveryTopic(o/u/a) = %q, %v", topic, ok)
	}
}

// TestStatusClientAcceptingTopicAliases: a subscriber that accepts topic
// aliases still gets the topic, and the status, on every card (mochi would
// otherwise send a repeated topic as an alias alone).
func TestStatusClientAcceptingTopicAliases(t *testing.T) {
	b := startBroker(t, Config{Status: true})
	topic := discoveryTopic(t, "o", "u", "e")
	aliases := uint16(10)
	watcher := dial(t, b.Addr(), &paho.Connect{ClientID: "watcher", CleanStart: true,
		Properties: &paho.ConnectProperties{TopicAliasMaximum: &aliases}}, nil)
	watcher.watch(discoveryFilter(t, "o", "u"))
	agent := connect(t, b.Addr(), "o/u/e")
	for _, v := range []string{"1", "2", "3"} {
		c := card("e", v)
		agent.publish(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: c})
		m := watcher.await("card "+v, payloadIs(c))
		if m.Topic != topic {
			t.Errorf("card %s arrived on topic %q (as a topic alias)", v, m.Topic)
		}
		checkStatus(t, m, online, mqttbind.StatusSourceBroker)
	}
}
