package broker

import (
	"strings"
	"testing"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
)

// testRoots are the topic roots the root tests run under (docs/protocol.md
// §1.5): the profile's, and one without $, for brokers that refuse $
// topics; other is a root the broker is not configured with.
var testRoots = []struct {
	root, other string
}{
	{mqttbind.DefaultRoot, "a2a/v1"},
	{"a2a/v1", mqttbind.DefaultRoot},
}

// TestRootStatusMarksItsDiscoveryTopics: with Config.Root, broker-managed
// status marks the cards under that root, on connect, disconnect and for
// a late subscriber; a card under another root (the profile's on a broker
// configured with a2a/v1, or the reverse) is an ordinary message and goes
// out as published.
func TestRootStatusMarksItsDiscoveryTopics(t *testing.T) {
	for _, r := range testRoots {
		t.Run("root="+r.root, func(t *testing.T) {
			root, other := mustRoot(t, r.root), mustRoot(t, r.other)
			topic := mustTopic(t)
			b := startBroker(t, Config{Status: true, Root: root})
			own := topic(root.DiscoveryTopic("o", "u", "a"))
			filter := topic(root.DiscoveryFilterTopic("o", "u"))
			foreign := topic(other.DiscoveryTopic("o", "u", "a"))

			watcher := connect(t, b.Addr(), "watcher")
			watcher.watch(filter)
			watcher.watch(topic(other.DiscoveryFilterTopic("o", "u")))

			agent := connect(t, b.Addr(), "o/u/a")
			v1 := card("a", "1")
			agent.publish(&paho.Publish{Topic: own, QoS: 1, Retain: true, Payload: v1,
				Properties: &paho.PublishProperties{User: statusProps(offline, mqttbind.StatusSourceAgent)}})
			m := watcher.await("the card under the root", payloadIs(v1))
			if m.Topic != own {
				t.Fatalf("card on %s, want %s", m.Topic, own)
			}
			checkStatus(t, m, online, mqttbind.StatusSourceBroker)
			checkStatus(t, lateCard(t, b, filter, v1), online, mqttbind.StatusSourceBroker)

			// Under the other root: the properties as the agent set them.
			elsewhere := card("a", "other root")
			agent.publish(&paho.Publish{Topic: foreign, QoS: 1, Retain: true, Payload: elsewhere,
				Properties: &paho.PublishProperties{User: statusProps(offline, mqttbind.StatusSourceAgent)}})
			m = watcher.await("the card under the other root", payloadIs(elsewhere))
			checkStatus(t, m, offline, mqttbind.StatusSourceAgent)
			checkStatus(t, lateCard(t, b, foreign, elsewhere), offline, mqttbind.StatusSourceAgent)

			// The agent goes: its card under the root is sent again,
			// offline, from the broker.
			agent.disconnect()
			checkStatus(t, watcher.await("the card sent again on disconnect", payloadIs(v1)), offline, mqttbind.StatusSourceBroker)
			checkStatus(t, lateCard(t, b, filter, v1), offline, mqttbind.StatusSourceBroker)

			if got, ok := agentDiscoveryTopic(root, "o/u/a"); !ok || got != own {
				t.Errorf("agentDiscoveryTopic(o/u/a) = %q, %v; want %s", got, ok, own)
			}
		})
	}
}

// TestRootRegistryChecksItsDiscoveryTree: with Config.Root, the validating
// registry checks publishes and Wills on {root}/discovery/..., and its
// refusal of a topic there that is no discovery topic names the template
// under the root. A card under another root is no registration on this
// broker: without authentication it is an ordinary retained message, not
// checked.
func TestRootRegistryChecksItsDiscoveryTree(t *testing.T) {
	for _, r := range testRoots {
		t.Run("root="+r.root, func(t *testing.T) {
			root, other := mustRoot(t, r.root), mustRoot(t, r.other)
			topic := mustTopic(t)
			b := startBroker(t, Config{ValidateCards: true, Root: root})
			echo := connect(t, b.Addr(), userEcho)
			mallory := connect(t, b.Addr(), userMallory)
			own := topic(root.DiscoveryTopic("acme", "lab", "echo"))
			foreign := topic(other.DiscoveryTopic("acme", "lab", "echo"))
			for _, c := range []struct {
				name   string
				by     *client
				p      paho.Publish
				want   byte
				reason string
			}{
				{"own valid card", echo, paho.Publish{Topic: own, Retain: true, Payload: card("echo", "1")}, rcSuccess, ""},
				{"own invalid card", echo, paho.Publish{Topic: own, Retain: true, Payload: []byte("{}")}, rcPayloadInvalid, ""},
				{"another agent's card", mallory, paho.Publish{Topic: own, Retain: true, Payload: card("echo", "2")}, rcNotAuthorized, ""},
				{"below a discovery topic", echo, paho.Publish{Topic: own + "/x", Retain: true, Payload: card("echo", "1")},
					rcTopicNameInvalid, "not a discovery topic " + r.root + "/discovery/{org_id}/{unit_id}/{agent_id}"},
				{"an invalid card under the other root", echo, paho.Publish{Topic: foreign, Retain: true, Payload: []byte("{}")}, rcSuccess, ""},
				{"another agent's card under the other root", mallory, paho.Publish{Topic: foreign, Retain: true, Payload: []byte("not a card")}, rcSuccess, ""},
			} {
				t.Run(c.name, func(t *testing.T) {
					p := c.p
					p.QoS = 1
					resp, err := c.by.pc.Publish(testContext(t), &p)
					if resp == nil {
						t.Fatalf("no PUBACK: %v", err)
					}
					if resp.ReasonCode != c.want {
						t.Errorf("PUBACK %#x, want %#x", resp.ReasonCode, c.want)
					}
					if c.reason != "" && (resp.Properties == nil || resp.Properties.ReasonString != c.reason) {
						t.Errorf("PUBACK reason %+v, want %q", resp.Properties, c.reason)
					}
				})
			}
			// The last publish under the other root is what is retained there.
			if m := lateCard(t, b, foreign, nil); string(m.Payload) != "not a card" {
				t.Errorf("retained under the other root: %q, want the unchecked publish", m.Payload)
			}

			// Wills: checked under the root, not under the other one.
			will := func(topic string, payload []byte) *paho.Connect {
				return &paho.Connect{ClientID: userMallory + "-will", CleanStart: true,
					WillMessage:    &paho.WillMessage{Topic: topic, Payload: payload, QoS: 1, Retain: true},
					WillProperties: &paho.WillProperties{User: statusProps(offline, mqttbind.StatusSourceLWT)}}
			}
			if got := connackCode(t, b.Addr(), will(topic(root.DiscoveryTopic("acme", "lab", "mallory-will")), []byte("{}"))); got != rcPayloadInvalid {
				t.Errorf("a Will that is no card, under the root: CONNACK %#x, want %#x", got, rcPayloadInvalid)
			}
			if got := connackCode(t, b.Addr(), will(topic(other.DiscoveryTopic("acme", "lab", "mallory-will")), []byte("{}"))); got != rcSuccess {
				t.Errorf("a Will that is no card, under the other root: CONNACK %#x, want %#x", got, rcSuccess)
			}
		})
	}
}

// TestRootWildcardSubscribersReadNoOnesRequests: under a root without $, #
// and a2a/# match A2A topics (MQTT v5 §4.7.2 sets apart only topics
// beginning with $), and the identity rules still let no one read another
// agent's requests or another requester's replies. A client of the unit
// has # , a2a/# and every filter reaching others' request and reply topics
// refused, and receives what its subscriptions allow (the unit's cards and
// events) and nothing else; an operator whose ACL file grants # but denies
// the request and reply trees receives the cards under a2a/v1 through #
// and a2a/#, never a request or a reply (and, under $a2a/v1, no A2A topic
// at all through #). Topics under the other root are granted no one by the
// identity rules.
func TestRootWildcardSubscribersReadNoOnesRequests(t *testing.T) {
	for _, r := range testRoots {
		t.Run("root="+r.root, func(t *testing.T) {
			root, other := mustRoot(t, r.root), mustRoot(t, r.other)
			topic := mustTopic(t)
			wildcardSeesA2A := !strings.HasPrefix(r.root, "$")
			b := startSecure(t, Config{Root: root, CardUpdatesPerMinute: -1},
				"pattern write ops/sentinel/%c",
				"user admin",
				"topic read #",
				"topic deny "+r.root+"/request/#",
				"topic deny "+r.root+"/reply/#")

			echo := connectAs(t, b.Addr(), userEcho)
			echoCard := card("echo", "1")
			if code := echo.publishCode(&paho.Publish{Topic: topic(root.DiscoveryTopic("acme", "lab", "echo")), Retain: true, Payload: echoCard,
				Properties: &paho.PublishProperties{User: statusProps(online, mqttbind.StatusSourceAgent)}}); code != rcSuccess {
				t.Fatalf("echo's card: PUBACK %#x", code)
			}
			echo.subscribe(topic(root.RequestTopic("acme", "lab", "echo")), 1)
			req := connectAs(t, b.Addr(), userReq)
			replyTo := topic(root.ReplyTopic("acme", "lab", "req", "r1"))
			req.subscribe(replyTo, 1)

			mallory := connectAs(t, b.Addr(), userMallory)
			for _, f := range []string{
				"#", "+/#", "a2a/#", "$a2a/#", r.root + "/#",
				r.root + "/request/#", r.root + "/request/acme/lab/+", r.root + "/request/acme/+/echo",
				"+/v1/request/acme/lab/echo", "+/+/request/acme/lab/echo",
				r.root + "/reply/#", r.root + "/reply/acme/lab/+/#", r.root + "/reply/acme/lab/req/#",
				topic(other.RequestTopic("acme", "lab", "mallory")), topic(other.DiscoveryFilterTopic("acme", "lab")),
			} {
				if got := mallory.subscribeCode(f); got != rcNotAuthorized {
					t.Errorf("mallory: SUBACK %#x for %s, want %#x", got, f, rcNotAuthorized)
				}
			}
			if got := mallory.publishCode(&paho.Publish{Topic: topic(other.DiscoveryTopic("acme", "lab", "mallory")), Retain: true,
				Payload: card("mallory", "1")}); got != rcNotAuthorized {
				t.Errorf("mallory's card under the other root: PUBACK %#x, want %#x", got, rcNotAuthorized)
			}
			mallory.subscribe(topic(root.DiscoveryFilterTopic("acme", "lab")), 1)
			mallory.subscribe(r.root+"/event/acme/lab/+", 1)

			admin := connectAs(t, b.Addr(), userAdmin)
			admin.subscribe("#", 1)
			admin.subscribe("a2a/#", 1)

			// A request to echo with a bearer token, and its reply; then
			// each publisher's sentinels: its event (for mallory) and
			// ops/sentinel/{its Client ID} (for admin). A subscriber gets one
			// publisher's messages in order, so each sentinel comes after
			// anything that publisher sent before it.
			req.publish(&paho.Publish{Topic: topic(root.RequestTopic("acme", "lab", "echo")), QoS: 1, Payload: []byte("for echo only"),
				Properties: &paho.PublishProperties{ResponseTopic: replyTo, User: secretProps()}})
			echo.await("the request", payloadIs([]byte("for echo only")))
			echo.publish(&paho.Publish{Topic: replyTo, QoS: 1, Payload: []byte("for req only")})
			req.await("the reply", payloadIs([]byte("for req only")))
			for _, c := range []*client{req, echo} {
				c.publish(&paho.Publish{Topic: topic(root.EventTopic("acme", "lab", c.id[len("acme/lab/"):])), QoS: 1, Payload: []byte("event of " + c.id)})
				c.publish(&paho.Publish{Topic: "ops/sentinel/" + c.id, QoS: 1, Payload: []byte("sentinel of " + c.id)})
			}

			// secret fails the test on anything of the request or reply.
			secret := func(who string, m *paho.Publish) {
				if p := string(m.Payload); p == "for echo only" || p == "for req only" || props(m).Get(mqttbind.PropAuthorization) != "" {
					t.Errorf("%s received %q on %s", who, m.Payload, m.Topic)
				}
			}
			awaitAll := func(c *client, what string, want ...string) map[string]bool {
				seen := make(map[string]bool) // topics
				left := len(want)
				c.await(what, func(m *paho.Publish) bool {
					secret(c.id, m)
					seen[m.Topic] = true
					for i, w := range want {
						if string(m.Payload) == w {
							want[i] = "\x00" // counted once
							left--
						}
					}
					return left == 0
				})
				return seen
			}
			seen := awaitAll(mallory, "both events", "event of "+userReq, "event of "+userEcho)
			if !seen[topic(root.DiscoveryTopic("acme", "lab", "echo"))] {
				t.Errorf("mallory did not receive echo's card through the unit's discovery filter")
			}
			seen = awaitAll(admin, "both sentinels", "sentinel of "+userReq, "sentinel of "+userEcho)
			var a2aSeen []string
			for tp := range seen {
				if _, ok := root.Relative(tp); ok {
					a2aSeen = append(a2aSeen, tp)
				}
			}
			if got := seen[topic(root.DiscoveryTopic("acme", "lab", "echo"))]; got != wildcardSeesA2A {
				t.Errorf("admin received echo's card through #: %v, want %v", got, wildcardSeesA2A)
			}
			if !wildcardSeesA2A && len(a2aSeen) > 0 {
				t.Errorf("admin received A2A topics through # under %s: %v", r.root, a2aSeen)
			}
		})
	}
}
