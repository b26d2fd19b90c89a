package broker

import (
	"strings"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/mqttbind"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// discoveryPrefix returns the constant start of every discovery topic
// under root: the root, then discovery/ (docs/protocol.md §1.2, §1.5).
func discoveryPrefix(root mqttbind.Root) string {
	return root.String() + "/" + kindDiscovery + "/"
}

// statusClientID is the Client ID of the in-process client that sends the
// status republications; it is never a valid agent Client ID.
const statusClientID = "a2abind broker status"

// statusHook implements broker-managed status (see the package
// documentation). It handles connect (no outbound topic aliases), session
// established and disconnect (track the connection, send the card again),
// will (the client is gone before its LWT goes out) and packet encode (set
// the status on discovery messages as they are written).
type statusHook struct {
	mqtt.HookBase

	srv *mqtt.Server
	pub *mqtt.Client // in-process, never connected

	// root is the topic root (Config.Root); discovery its discoveryPrefix.
	root      mqttbind.Root
	discovery string

	mu     sync.RWMutex
	online map[string]*mqtt.Client // Client ID → its current connection
}

func newStatusHook(srv *mqtt.Server, root mqttbind.Root) *statusHook {
	pub := srv.NewClient(nil, mqtt.LocalListener, statusClientID, true)
	pub.Properties.ProtocolVersion = 5
	return &statusHook{
		srv:       srv,
		pub:       pub,
		root:      root,
		discovery: discoveryPrefix(root),
		online:    make(map[string]*mqtt.Client),
	}
}

// ID names the hook in mochi's log.
func (h *statusHook) ID() string { return "a2a-broker-status" }

// Provides reports the events the hook handles.
func (h *statusHook) Provides(b byte) bool {
	switch b {
	case mqtt.OnConnect, mqtt.OnSessionEstablished, mqtt.OnWill, mqtt.OnDisconnect:
		// Its OnPacketEncode (encode) runs in packetEncoder.
		return true
	}
	return false
}

// OnConnect stops the broker from sending the client topic aliases, which
// would hide the topic of a repeated publish from OnPacketEncode. The
// client is not yet visible to anyone else.
func (h *statusHook) OnConnect(cl *mqtt.Client, _ packets.Packet) error {
	cl.Properties.Props.TopicAliasMaximum = 0
	return nil
}

// OnSessionEstablished runs after CONNACK and before the client's first
// packet is read: the agent is online, and its retained card goes out
// again saying so.
func (h *statusHook) OnSessionEstablished(cl *mqtt.Client, _ packets.Packet) {
	topic, ok := agentDiscoveryTopic(h.root, cl.ID)
	if !ok {
		return
	}
	h.mu.Lock()
	h.online[cl.ID] = cl
	h.mu.Unlock()
	h.republish(topic)
}

// OnWill runs just before mochi sends a client's will: the client is gone,
// so the LWT card already goes out offline. The will is unchanged.
func (h *statusHook) OnWill(cl *mqtt.Client, will mqtt.Will) (mqtt.Will, error) {
	h.forget(cl)
	return will, nil
}

// OnDisconnect runs once a connection has ended, whatever the reason, after
// the will (if any) was sent and retained: the retained card goes out again
// with the status of the moment (offline, unless a new connection with the
// same Client ID took over).
func (h *statusHook) OnDisconnect(cl *mqtt.Client, _ error, _ bool) {
	topic, ok := agentDiscoveryTopic(h.root, cl.ID)
	if !ok {
		return
	}
	h.forget(cl)
	h.republish(topic)
}

// encode sets a2a-status and a2a-status-source on every discovery
// PUBLISH with a payload, as it is written to a subscriber. A discovery
// topic is one under the configured root: a card under another root
// (the profile's $a2a/v1 on a broker configured with a2a/v1, or the
// reverse) is an ordinary message here and passes unchanged.
func (h *statusHook) encode(pk *packets.Packet) {
	if pk.FixedHeader.Type != packets.Publish || len(pk.Payload) == 0 ||
		!strings.HasPrefix(pk.TopicName, h.discovery) {
		return
	}
	org, unit, agent, ok := h.root.ParseDiscoveryTopic(pk.TopicName)
	if !ok {
		return
	}
	status := mqttbind.StatusOffline
	if h.connected(org + "/" + unit + "/" + agent) {
		status = mqttbind.StatusOnline
	}
	// The slice is shared with the stored message: build a new one.
	user := make([]packets.UserProperty, 0, len(pk.Properties.User)+2)
	for _, p := range pk.Properties.User {
		if p.Key != mqttbind.PropStatus && p.Key != mqttbind.PropStatusSource {
			user = append(user, p)
		}
	}
	pk.Properties.User = append(user,
		packets.UserProperty{Key: mqttbind.PropStatus, Val: status},
		packets.UserProperty{Key: mqttbind.PropStatusSource, Val: mqttbind.StatusSourceBroker},
	)
}

// connected reports whether the Client ID has a live connection.
func (h *statusHook) connected(clientID string) bool {
	h.mu.RLock()
	cl := h.online[clientID]
	h.mu.RUnlock()
	return cl != nil && !cl.Closed()
}

// forget marks cl offline unless a newer connection has its Client ID.
func (h *statusHook) forget(cl *mqtt.Client) {
	h.mu.Lock()
	if h.online[cl.ID] == cl {
		delete(h.online, cl.ID)
	}
	h.mu.Unlock()
}

// republish sends the retained message of topic, if any, to the
// subscribers as a live publish; OnPacketEncode sets the status. The
// retained message stays as it was published.
func (h *statusHook) republish(topic string) {
	pk, ok := h.srv.Topics.Retained.Get(topic)
	if !ok || len(pk.Payload) == 0 {
		return
	}
	out := pk.Copy(false)
	out.FixedHeader.Retain = false
	if pk.Expiry > 0 {
		left := pk.Expiry - time.Now().Unix()
		if left < 1 {
			return // expired, about to be removed
		}
		out.Properties.MessageExpiryInterval = uint32(left)
	}
	if out.FixedHeader.Qos > 0 {
		// A PUBLISH needs a packet identifier to pass validation; the
		// in-process client is never acknowledged.
		out.PacketID = 1
	}
	if err := h.srv.InjectPacket(h.pub, out); err != nil {
		// A hook has no caller to return the error to.
		h.Log.Error("broker status: republish card", "topic", topic, "error", err)
	}
}

// agentDiscoveryTopic returns the discovery topic under root of an agent
// Client ID {org_id}/{unit_id}/{agent_id}; ok is false for any other
// Client ID.
func agentDiscoveryTopic(root mqttbind.Root, clientID string) (topic string, ok bool) {
	org, rest, ok1 := strings.Cut(clientID, "/")
	unit, agent, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 {
		return "", false
	}
	topic, err := root.DiscoveryTopic(org, unit, agent)
	return topic, err == nil
}
