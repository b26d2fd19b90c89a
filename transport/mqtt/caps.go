package mqtt

import (
	"log/slog"

	"github.com/eclipse/paho.golang/paho"
)

// BrokerCapabilities is what a broker said it offers in the CONNACK of a
// connection (MQTT v5 §3.2.2.3). A property the CONNACK leaves out has its
// default, given below for each field.
type BrokerCapabilities struct {
	// MaximumQoS is the highest QoS the broker takes (absent: 2). The
	// binding needs 1.
	MaximumQoS byte
	// RetainAvailable: retained messages (absent: true). An agent's card
	// and its Will are retained.
	RetainAvailable bool
	// WildcardSubscriptionAvailable: topic filters with + or # (absent:
	// true). A Watch subscribes {root}/discovery/{org}/{unit}/+.
	WildcardSubscriptionAvailable bool
	// SharedSubscriptionAvailable: $share/... subscriptions (absent:
	// true). An Agent with a Pool subscribes one.
	SharedSubscriptionAvailable bool
	// SubscriptionIdentifiersAvailable (absent: true); the binding does not
	// use them.
	SubscriptionIdentifiersAvailable bool
	// MaximumPacketSize is the largest packet the broker accepts, in
	// bytes (absent, 0: no limit beyond the protocol's). A larger publish
	// is refused before it is sent (*PacketTooLargeError).
	MaximumPacketSize uint32
	// ReceiveMaximum is how many QoS 1 publishes the client may have
	// unacknowledged at once (absent: 65535); paho waits for an
	// acknowledgement beyond it.
	ReceiveMaximum uint16
	// TopicAliasMaximum is the highest topic alias the broker takes
	// (absent, 0: none); the binding does not use aliases.
	TopicAliasMaximum uint16
	// ServerKeepAlive, when not 0, is the keep-alive the broker imposes,
	// in seconds, instead of Connection.KeepAlive.
	ServerKeepAlive uint16
}

// capabilitiesOf reads a CONNACK's capabilities.
func capabilitiesOf(ca *paho.Connack) BrokerCapabilities {
	c := BrokerCapabilities{MaximumQoS: 2, RetainAvailable: true, WildcardSubscriptionAvailable: true,
		SharedSubscriptionAvailable: true, SubscriptionIdentifiersAvailable: true, ReceiveMaximum: 65535}
	if ca == nil || ca.Properties == nil {
		return c
	}
	p := ca.Properties
	// paho reads an absent availability property as true.
	c.RetainAvailable, c.WildcardSubscriptionAvailable = p.RetainAvailable, p.WildcardSubAvailable
	c.SharedSubscriptionAvailable, c.SubscriptionIdentifiersAvailable = p.SharedSubAvailable, p.SubIDAvailable
	if p.MaximumQoS != nil {
		c.MaximumQoS = *p.MaximumQoS
	}
	if p.MaximumPacketSize != nil {
		c.MaximumPacketSize = *p.MaximumPacketSize
	}
	if p.ReceiveMaximum != nil {
		c.ReceiveMaximum = *p.ReceiveMaximum
	}
	if p.TopicAliasMaximum != nil {
		c.TopicAliasMaximum = *p.TopicAliasMaximum
	}
	if p.ServerKeepAlive != nil {
		c.ServerKeepAlive = *p.ServerKeepAlive
	}
	return c
}

// logAttrs are the capabilities as log attributes.
func (c BrokerCapabilities) logAttrs() []any {
	return []any{"maximum_qos", c.MaximumQoS, "retain_available", c.RetainAvailable,
		"wildcard_subscription_available", c.WildcardSubscriptionAvailable,
		"shared_subscription_available", c.SharedSubscriptionAvailable,
		"subscription_identifiers_available", c.SubscriptionIdentifiersAvailable,
		"maximum_packet_size", c.MaximumPacketSize, "receive_maximum", c.ReceiveMaximum,
		"topic_alias_maximum", c.TopicAliasMaximum, "server_keep_alive", c.ServerKeepAlive}
}

// checkQoS refuses a broker whose maximum QoS is 0: requests, replies,
// cards and subscriptions are QoS 1 (docs/protocol.md §4).
func (c BrokerCapabilities) checkQoS() error {
	if c.MaximumQoS < 1 {
		return &CapabilityError{Capability: "QoS 1 (its maximum QoS is 0)", Need: "the profile needs QoS 1"}
	}
	return nil
}

// needShared refuses a broker without shared subscriptions, for a pool.
func (c BrokerCapabilities) needShared() error {
	if !c.SharedSubscriptionAvailable {
		return &CapabilityError{Capability: "shared subscriptions", Need: "pools need them"}
	}
	return nil
}

// needWildcard refuses a broker without wildcard subscriptions, for a
// Watch.
func (c BrokerCapabilities) needWildcard() error {
	if !c.WildcardSubscriptionAvailable {
		return &CapabilityError{Capability: "wildcard subscriptions", Need: "a watch subscribes {root}/discovery/{org}/{unit}/+"}
	}
	return nil
}

// needRetain refuses a broker without retained messages, for an agent's
// card.
func (c BrokerCapabilities) needRetain() error {
	if !c.RetainAvailable {
		return &CapabilityError{Capability: "retained messages", Need: "agent cards are retained"}
	}
	return nil
}

// checkSize refuses a publish whose packet would exceed the broker's
// Maximum Packet Size (MQTT v5 §3.2.2.3.6). It adds up a bound of the
// packet's size first, and encodes the properties only when the bound is
// over the limit.
func (c BrokerCapabilities) checkSize(p *paho.Publish) error {
	limit := int(c.MaximumPacketSize)
	if limit == 0 {
		return nil
	}
	// Fixed header (1 + up to 4), topic (2 + n), packet identifier (2),
	// property length (up to 4), payload.
	bound := 1 + 4 + 2 + len(p.Topic) + 2 + 4 + len(p.Payload)
	if pp := p.Properties; pp != nil {
		// Each property: an identifier, a length or a value.
		bound += 3 + len(pp.ResponseTopic) + 3 + len(pp.CorrelationData) + 3 + len(pp.ContentType) + 5 + 2 + 3 + 5
		for _, u := range pp.User {
			bound += 5 + len(u.Key) + len(u.Value)
		}
	}
	if bound <= limit {
		return nil
	}
	size := publishSize(p)
	if size <= limit {
		return nil
	}
	return &PacketTooLargeError{Topic: p.Topic, Size: size, Max: limit}
}

// publishSize is the size of a QoS 1 PUBLISH packet, in bytes.
func publishSize(p *paho.Publish) int {
	pk := p.Packet()
	pk.QoS = 1
	rest := 0
	for _, b := range pk.Buffers() {
		rest += len(b)
	}
	// The fixed header: the type and flags byte, then the remaining
	// length as a variable byte integer (MQTT v5 §1.5.5).
	n := 2
	for v := rest; v >= 128; v >>= 7 {
		n++
	}
	return n + rest
}

// logCapabilities logs a connection's capabilities at Info: the first
// connection's, and a reconnect's when they changed.
func logCapabilities(log *slog.Logger, clientID, broker string, c BrokerCapabilities) {
	log.Info("mqtt: broker capabilities (CONNACK)", append([]any{"client", clientID, "broker", broker}, c.logAttrs()...)...)
}
