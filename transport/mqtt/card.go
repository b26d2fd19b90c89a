package mqtt

import (
	"net/url"

	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
)

// The interface this package serves, as an Agent Card declares it
// (docs/protocol.md §11, "MQTT entry in supportedInterfaces": the same
// values as the A2A-over-MQTT Python SDK, so the two interoperate).
const (
	// ProtocolBindingMQTT is AgentInterface.protocolBinding of this
	// binding, agentcard.BindingMQTT.
	ProtocolBindingMQTT = agentcard.BindingMQTT
	// ProtocolVersion is the A2A version served, agentcard.ProtocolVersion.
	ProtocolVersion = agentcard.ProtocolVersion
)

// Interface returns the AgentInterface of an agent reached through the
// broker at brokerURL (for example "mqtt://broker.example.com:1883"), for
// AgentCard.SupportedInterfaces. An agent also served over HTTP lists that
// interface in the same card (transport/http.JSONRPCInterface), the
// preferred one first. Credentials in the URL (user:password@, see
// Connection.Broker) are left out: a card is public.
func Interface(brokerURL string) a2a.AgentInterface {
	if u, err := url.Parse(brokerURL); err == nil && u.User != nil {
		u.User = nil
		brokerURL = u.String()
	}
	return a2a.AgentInterface{URL: brokerURL, ProtocolBinding: ProtocolBindingMQTT, ProtocolVersion: ProtocolVersion}
}
