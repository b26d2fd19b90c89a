package broker

import (
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// publishProperties undoes a mochi v2.7.9 defect: for a client that sent
// Request Problem Information = 0 in CONNECT, mochi drops the user
// properties of every packet it sends, PUBLISH included, where MQTT v5
// (3.1.2.11.7, [MQTT-3.1.2-29]) restricts only packets other than
// PUBLISH, CONNACK and DISCONNECT. paho.golang sends that 0 whenever
// ConnectProperties is set and RequestProblemInfo is left false (autopaho
// does so as soon as SessionExpiryInterval is set), so without this hook
// such a client never sees a2a-* properties. The hook lets PUBLISH
// packets keep theirs; Reason Strings and the user properties of
// acknowledgements stay suppressed.
type publishProperties struct {
	mqtt.HookBase
}

// ID names the hook in mochi's log.
func (*publishProperties) ID() string { return "publish-user-properties" }

// Provides reports the events the hook handles.
func (*publishProperties) Provides(b byte) bool { return b == mqtt.OnPacketEncode }

// OnPacketEncode lets a PUBLISH carry its user properties.
func (*publishProperties) OnPacketEncode(_ *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type == packets.Publish {
		pk.Mods.DisallowProblemInfo = false
	}
	return pk
}
