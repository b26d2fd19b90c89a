package broker

import (
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/a2abind/a2abind/generated/mqttbind"
)

// BenchmarkHooksPerPublish is what the broker's hooks cost one QoS 1
// PUBLISH of a request as mochi relays it (read, authorised, acknowledged,
// delivered to one subscriber, processed), with the hooks Start adds by
// default (no authentication, broker-managed status on).
func BenchmarkHooksPerPublish(b *testing.B) {
	h := new(mqtt.Hooks)
	status := &statusHook{root: mqttbind.Root{}, discovery: discoveryPrefix(mqttbind.Root{}), online: map[string]*mqtt.Client{}}
	enc := &packetEncoder{limits: &limitsHook{maxPacketSize: 1 << 20}, props: new(publishProperties), status: status}
	for _, hk := range []mqtt.Hook{new(allowAll), new(noSendQuota), newRetainGuard(), &orderedTakeover{}, enc.limits, status, enc} {
		if err := h.Add(hk, nil); err != nil {
			b.Fatal(err)
		}
	}
	pub, sub := &mqtt.Client{ID: "acme/lab/req"}, &mqtt.Client{ID: "acme/lab/echo"}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, TopicName: "$a2a/v1/request/acme/lab/echo",
		PacketID: 7, Payload: make([]byte, 300), Properties: packets.Properties{ResponseTopic: "$a2a/v1/reply/acme/lab/req/r1",
			CorrelationData: []byte("4f1e4d7b"), ContentType: "application/json",
			User: []packets.UserProperty{{Key: mqttbind.PropContextID, Val: "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77"}}}}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7}
	b.ReportAllocs()
	for b.Loop() {
		h.OnPacketRead(pub, pk)
		if _, err := h.OnPublish(pub, pk); err != nil {
			b.Fatal(err)
		}
		if !h.OnACLCheck(pub, pk.TopicName, true) || !h.OnACLCheck(sub, pk.TopicName, false) {
			b.Fatal("refused")
		}
		h.OnPacketSent(pub, h.OnPacketEncode(pub, ack), nil)
		h.OnPacketSent(sub, h.OnPacketEncode(sub, pk), nil)
		h.OnPacketProcessed(pub, pk, nil)
	}
}
