package broker

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
)

// TestRepublishedCardIsNotAnUpdate: under CardUpdatesPerMinute 2 (and a
// clock that never refills the bucket), an agent that comes back ten
// times in a row, each time with the card the registry last accepted on
// its topic (after a crash, a session taken over, a graceful stop that
// republished the card offline), is never refused; three different cards
// in a row are refused at the third; an unregistration makes the next card
// a registration again, which counts.
func TestRepublishedCardIsNotAnUpdate(t *testing.T) {
	clock := newFakeClock()
	b := startBroker(t, Config{ValidateCards: true, CardUpdatesPerMinute: 2, now: clock.Now})
	online := statusProps(mqttbind.StatusOnline, mqttbind.StatusSourceAgent)
	announce := func(c *client, topic string, body []byte) byte {
		return c.publishCode(&paho.Publish{Topic: topic, Retain: true, Payload: body,
			Properties: &paho.PublishProperties{User: online}})
	}

	t.Run("an agent coming back with the same card", func(t *testing.T) {
		topic := discoveryTopic(t, "acme", "lab", "echo")
		body := card("echo", "1")
		connectAgent := func() *client {
			return dial(t, b.Addr(), &paho.Connect{ClientID: userEcho, CleanStart: true,
				WillMessage: &paho.WillMessage{Topic: topic, Payload: body, QoS: 1, Retain: true},
				WillProperties: &paho.WillProperties{
					User: statusProps(mqttbind.StatusOffline, mqttbind.StatusSourceLWT)}}, nil)
		}
		agent := connectAgent()
		if got := announce(agent, topic, body); got != rcSuccess {
			t.Fatalf("the first card: PUBACK %#x", got)
		}
		ways := []struct {
			name  string
			leave func(*client)
		}{
			{"crashed (its Will fired)", func(c *client) { c.drop() }},
			{"taken over by its next connection", func(*client) {}},
			{"stopped gracefully (card republished offline)", func(c *client) {
				if got := c.publishCode(&paho.Publish{Topic: topic, Retain: true, Payload: body,
					Properties: &paho.PublishProperties{User: statusProps(mqttbind.StatusOffline, mqttbind.StatusSourceAgent)}}); got != rcSuccess {
					t.Fatalf("the card offline: PUBACK %#x", got)
				}
				c.disconnect()
			}},
		}
		for i := range 10 {
			way := ways[i%len(ways)]
			way.leave(agent)
			agent = connectAgent()
			if got := announce(agent, topic, body); got != rcSuccess {
				t.Fatalf("back %d times, the last %s: PUBACK %#x, want success", i+1, way.name, got)
			}
		}
		if got := b.Denials().CardRate; got != 0 {
			t.Errorf("%d rate refusals", got)
		}
		// An unregistration forgets the card: the same card again is a
		// registration (the second update of the minute), and after one
		// more unregistration it is over the rate.
		for i, want := range []byte{rcSuccess, rcQuotaExceeded} {
			if got := agent.publishCode(&paho.Publish{Topic: topic, Retain: true}); got != rcSuccess {
				t.Fatalf("unregistration: PUBACK %#x", got)
			}
			if got := announce(agent, topic, body); got != want {
				t.Errorf("the same card after unregistration %d: PUBACK %#x, want %#x", i+1, got, want)
			}
		}
	})

	t.Run("three different cards in a row", func(t *testing.T) {
		topic := discoveryTopic(t, "acme", "lab", "member")
		agent := connect(t, b.Addr(), userMember)
		for i, want := range []byte{rcSuccess, rcSuccess, rcQuotaExceeded} {
			if got := announce(agent, topic, card("member", fmt.Sprint(i+1))); got != want {
				t.Errorf("card %d: PUBACK %#x, want %#x", i+1, got, want)
			}
		}
		// The card last accepted is still free to republish.
		if got := announce(agent, topic, card("member", "2")); got != rcSuccess {
			t.Errorf("the card last accepted, again: PUBACK %#x", got)
		}
	})
}

// TestAcceptedCardsBounded: the memory of accepted cards keeps at most
// maxRateKeys topics; a topic forgotten for room only loses its free
// republish.
func TestAcceptedCardsBounded(t *testing.T) {
	var a acceptedCards
	sum := sha256.Sum256([]byte("card"))
	for i := range maxRateKeys + 100 {
		a.remember(fmt.Sprintf("$a2a/v1/discovery/o/u/a%d", i), sum)
	}
	if n := len(a.cards); n != maxRateKeys {
		t.Fatalf("%d topics remembered, want at most %d", n, maxRateKeys)
	}
	last := fmt.Sprintf("$a2a/v1/discovery/o/u/a%d", maxRateKeys+99)
	if !a.same(last, sum) {
		t.Error("the topic remembered last was forgotten")
	}
	if a.same(last, sha256.Sum256([]byte("other card"))) {
		t.Error("another card counts as the same")
	}
	a.forget(last)
	if a.same(last, sum) {
		t.Error("a forgotten topic still remembered")
	}
}
