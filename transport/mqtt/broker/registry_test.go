package broker

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/eclipse/paho.golang/paho"
)

// signedCard returns card(name, version) with one signature whose
// protected header is header (JSON), base64url-encoded.
func signedCard(name, version, header string) []byte {
	c := card(name, version)
	sig := fmt.Sprintf(`,"signatures":[{"protected":%q,"signature":"c2ln"}]}`, base64.RawURLEncoding.EncodeToString([]byte(header)))
	return append(c[:len(c)-1], sig...)
}

// TestRegistryRefusals: an invalid, oversized, too frequent or (under the
// trusted-JWKS policy) unsigned card is refused with its reason code,
// counted, and neither forwarded nor retained; an unregistration always
// passes.
func TestRegistryRefusals(t *testing.T) {
	clock := newFakeClock()
	b := startSecure(t, Config{MaxCardSize: 1024, CardUpdatesPerMinute: 3, now: clock.Now,
		TrustedJKU: []string{"https://keys.acme.example/a2a", "https://other.example/"}})
	topic := discoveryTopic(t, "acme", "lab", "echo")
	echo := connectAs(t, b.Addr(), userEcho)
	watcher := connectAs(t, b.Addr(), userReq)
	watcher.subscribe(discoveryFilter(t, "acme", "lab"), 1)

	trusted := `{"alg":"ES256","jku":"https://keys.acme.example/a2a/jwks.json","kid":"k1"}`
	publish := func(payload []byte, qos byte) byte {
		resp, err := echo.pc.Publish(testContext(t), &paho.Publish{Topic: topic, QoS: qos, Retain: true, Payload: payload})
		if qos == 0 {
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
			// The broker handles a client's packets in order: once this
			// is acknowledged, the QoS 0 publish has been handled.
			echo.publish(&paho.Publish{Topic: requestTopic(t, "acme", "lab", "echo"), QoS: 1, Payload: []byte("sync")})
			return 0
		}
		if resp == nil {
			t.Fatalf("publish: no acknowledgement: %v", err)
		}
		return resp.ReasonCode
	}
	// The first card, accepted: it uses one of the three updates.
	good := signedCard("echo", "1", trusted)
	if got := publish(good, 1); got != rcSuccess {
		t.Fatalf("a valid signed card: PUBACK %#x", got)
	}
	watcher.await("the valid card", payloadIs(good))

	for _, c := range []struct {
		name    string
		payload []byte
		qos     byte
		want    byte
		counter func(Denials) int64
	}{
		{"not JSON", []byte("offline"), 1, rcPayloadInvalid, func(d Denials) int64 { return d.Card }},
		{"JSON but not a card", []byte(`{"name":"echo"}`), 1, rcPayloadInvalid, func(d Denials) int64 { return d.Card }},
		{"a card breaking the schema", []byte(strings.Replace(string(good), `"tags":["test"]`, `"tags":[]`, 1)), 1, rcPayloadInvalid, func(d Denials) int64 { return d.Card }},
		{"an oversized card", append(good[:len(good)-1:len(good)-1], []byte(`,"x":"`+strings.Repeat("x", 1024)+`"}`)...), 1, rcQuotaExceeded, func(d Denials) int64 { return d.CardSize }},
		{"an unsigned card", card("echo", "2"), 1, rcNotAuthorized, func(d Denials) int64 { return d.Card }},
		{"a card signed under an untrusted jku", signedCard("echo", "2", `{"alg":"ES256","jku":"https://evil.example/jwks.json"}`), 1, rcNotAuthorized, func(d Denials) int64 { return d.Card }},
		{"a jku that only starts like a trusted one", signedCard("echo", "2", `{"alg":"ES256","jku":"https://keys.acme.example/a2a-evil/jwks.json"}`), 1, rcNotAuthorized, func(d Denials) int64 { return d.Card }},
		{"a jku on a look-alike host", signedCard("echo", "2", `{"jku":"https://other.example.evil/jwks.json"}`), 1, rcNotAuthorized, func(d Denials) int64 { return d.Card }},
		{"a protected header that is not base64url JSON", signedCard("echo", "2", `not json`), 1, rcNotAuthorized, func(d Denials) int64 { return d.Card }},
		{"an invalid card at QoS 0 (dropped)", []byte("offline"), 0, 0, func(d Denials) int64 { return d.Card }},
		{"an invalid card at QoS 2 (PUBREC)", []byte("offline"), 2, rcPayloadInvalid, func(d Denials) int64 { return d.Card }},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.counter(b.Denials())
			if got := publish(c.payload, c.qos); got != c.want {
				t.Errorf("acknowledgement %#x, want %#x", got, c.want)
			}
			if got := c.counter(b.Denials()) - before; got != 1 {
				t.Errorf("counted %d refusals, want 1", got)
			}
		})
	}

	// Two more updates are allowed (three a minute), the next is refused;
	// a minute later (20 s a token) there is room again.
	for i := 2; i <= 3; i++ {
		if got := publish(signedCard("echo", fmt.Sprint(i), trusted), 1); got != rcSuccess {
			t.Fatalf("update %d: PUBACK %#x", i, got)
		}
	}
	before := b.Denials().CardRate
	if got := publish(signedCard("echo", "4", trusted), 1); got != rcQuotaExceeded {
		t.Errorf("an update over the rate: PUBACK %#x, want %#x", got, rcQuotaExceeded)
	}
	if got := b.Denials().CardRate - before; got != 1 {
		t.Errorf("counted %d rate refusals, want 1", got)
	}
	// An unregistration is never rate limited.
	if got := publish(nil, 1); got != rcSuccess {
		t.Errorf("an unregistration over the rate: PUBACK %#x", got)
	}
	clock.Advance(20 * time.Second)
	last := signedCard("echo", "5", trusted)
	if got := publish(last, 1); got != rcSuccess {
		t.Errorf("an update 20 s later: PUBACK %#x", got)
	}

	// The watcher saw the accepted cards and the unregistration only.
	var seen []string
	watcher.await("the last card", func(m *paho.Publish) bool {
		if m.Topic == topic {
			seen = append(seen, string(m.Payload))
		}
		return string(m.Payload) == string(last)
	})
	for _, s := range seen {
		if s != "" && !strings.Contains(s, `"signatures"`) || strings.Contains(s, `"x":"xxx`) || s == "offline" {
			t.Errorf("a refused card was forwarded: %.60q", s)
		}
	}
	if got := retained(t, b.Addr(), userReq, topic); string(got) != string(last) {
		t.Errorf("retained %.60q, want the last accepted card", got)
	}
}

// TestRegistryWithoutAuthentication: Config.ValidateCards runs the
// registry on an open broker; the owner is the publisher's Client ID.
func TestRegistryWithoutAuthentication(t *testing.T) {
	b := startBroker(t, Config{ValidateCards: true, Status: true})
	echo := connect(t, b.Addr(), userEcho)
	other := connect(t, b.Addr(), userMallory)
	topic := discoveryTopic(t, "acme", "lab", "echo")
	for _, c := range []struct {
		name string
		by   *client
		p    paho.Publish
		want byte
	}{
		{"own valid card", echo, paho.Publish{Topic: topic, Retain: true, Payload: card("echo", "1")}, rcSuccess},
		{"own invalid card", echo, paho.Publish{Topic: topic, Retain: true, Payload: []byte("{}")}, rcPayloadInvalid},
		{"another agent's card", other, paho.Publish{Topic: topic, Retain: true, Payload: card("echo", "2")}, rcNotAuthorized},
		{"another agent's unregistration", other, paho.Publish{Topic: topic, Retain: true}, rcNotAuthorized},
		{"not a discovery topic", other, paho.Publish{Topic: topic + "/x", Retain: true, Payload: card("x", "1")}, rcTopicNameInvalid},
		{"a request elsewhere", other, paho.Publish{Topic: requestTopic(t, "any", "unit", "x"), Payload: []byte("{}")}, rcSuccess},
		{"a status from the broker", echo, paho.Publish{Topic: topic, Retain: true, Payload: card("echo", "3"),
			Properties: &paho.PublishProperties{User: statusProps(mqttbind.StatusOnline, mqttbind.StatusSourceBroker)}}, rcNotAuthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			if got := c.by.publishCode(&p); got != c.want {
				t.Errorf("PUBACK %#x, want %#x", got, c.want)
			}
		})
	}
	// MQTT v5 only: a 3.1.1 client is refused (CONNACK 0x01, unacceptable
	// protocol version, in 3.1.1's codes) — the paho.golang client speaks
	// v5 only, so the raw bytes are checked in the limits tests.
}

func TestTrustedJKU(t *testing.T) {
	for _, c := range []struct {
		jku      string
		prefixes []string
		want     bool
	}{
		{"https://k.example/a2a/jwks.json", []string{"https://k.example/a2a"}, true},
		{"https://k.example/a2a", []string{"https://k.example/a2a"}, true},
		{"https://k.example/a2a?v=1", []string{"https://k.example/a2a"}, true},
		{"https://k.example/a2ax/jwks.json", []string{"https://k.example/a2a"}, false},
		{"https://k.example.evil/jwks.json", []string{"https://k.example"}, false},
		{"https://k.example/jwks.json", []string{"https://k.example"}, true},
		{"https://k.example/x", []string{"https://k.example/"}, true},
		{"http://k.example/x", []string{"https://k.example/"}, false},
		{"https://k.example/x", nil, false},
		{"https://k.example/x", []string{""}, false},
	} {
		if got := trustedJKU(c.jku, c.prefixes); got != c.want {
			t.Errorf("trustedJKU(%q, %q) = %v, want %v", c.jku, c.prefixes, got, c.want)
		}
	}
}
