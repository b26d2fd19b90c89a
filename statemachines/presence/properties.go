package presence

import (
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// Property is one MQTT v5 user property, as a key and a value.
type Property struct {
	// Key is the property's name, such as a2a-status.
	Key string
	// Value is the property's value.
	Value string
}

// Properties are the user properties of one message, in the order they were
// received. A key may appear more than once.
type Properties []Property

// PropertiesFromMap converts a map of user properties (one value per key) to
// Properties. The order of the result is unspecified, which does not matter
// when every key appears once.
func PropertiesFromMap(m map[string]string) Properties {
	out := make(Properties, 0, len(m))
	for k, v := range m {
		out = append(out, Property{Key: k, Value: v})
	}
	return out
}

// maxPairs bounds the a2a-status / a2a-status-source pairs examined on the
// stack; a message with more is classified without a readable status.
const maxPairs = 8

// sourceClass is who asserted a status: the three classes the preference
// rule distinguishes.
type sourceClass uint8

const (
	classAgent sourceClass = iota + 1
	classLWT
	classBroker
)

// classOf maps an a2a-status-source value to its class. An absent or empty
// value means the publisher is the agent; agent and lwt are themselves; any
// other value counts as broker-managed (docs/protocol.md §11, "broker status
// source": EMQX writes emqx).
func classOf(v string) sourceClass {
	switch v {
	case "", mqttbind.StatusSourceAgent:
		return classAgent
	case mqttbind.StatusSourceLWT:
		return classLWT
	}
	return classBroker
}

/*
Classify turns the user properties of a discovery message that carries an
Agent Card into an event of the presence table.

The a2a-status values are paired with the a2a-status-source values: by
position when both keys appear the same number of times (MQTT v5 keeps the
order of user properties, so a broker that appends its own pair after the
agent's is read correctly), or every status with the one source (or with
none, meaning the agent) otherwise. When any pair has a broker-managed source
only those pairs count, which is the profile's preference rule within one
message. The pairs that count must agree on the status and on the class of
its source; the status must be online or offline; a Last Will never says
online. Anything else leaves the liveness unknown (CardNoStatus) rather than
guessing.

An empty retained payload is not classified here: it is always Cleared.
*/
func Classify(props Properties) fsm.PresenceEvent {
	var st, src [maxPairs]string
	ns, nsrc := 0, 0
	for _, p := range props {
		switch p.Key {
		case mqttbind.PropStatus:
			if ns == maxPairs {
				return fsm.PresenceEventCardNoStatus
			}
			st[ns] = p.Value
			ns++
		case mqttbind.PropStatusSource:
			if nsrc == maxPairs {
				return fsm.PresenceEventCardNoStatus
			}
			src[nsrc] = p.Value
			nsrc++
		}
	}
	if ns == 0 {
		return fsm.PresenceEventCardNoStatus
	}
	sourceAt := func(i int) string {
		switch {
		case nsrc == ns:
			return src[i]
		case nsrc == 1:
			return src[0]
		}
		return ""
	}
	if nsrc != ns && nsrc > 1 {
		return fsm.PresenceEventCardNoStatus
	}
	brokerOnly := false
	for i := 0; i < ns; i++ {
		if classOf(sourceAt(i)) == classBroker {
			brokerOnly = true
			break
		}
	}
	status, class, found := "", sourceClass(0), false
	for i := 0; i < ns; i++ {
		c := classOf(sourceAt(i))
		if brokerOnly && c != classBroker {
			continue
		}
		if !found {
			status, class, found = st[i], c, true
			continue
		}
		if st[i] != status || c != class {
			return fsm.PresenceEventCardNoStatus
		}
	}
	switch {
	case status == mqttbind.StatusOnline && class == classAgent:
		return fsm.PresenceEventCardOnlineAgent
	case status == mqttbind.StatusOffline && class == classAgent:
		return fsm.PresenceEventCardOfflineAgent
	case status == mqttbind.StatusOffline && class == classLWT:
		return fsm.PresenceEventCardOfflineLWT
	case status == mqttbind.StatusOnline && class == classBroker:
		return fsm.PresenceEventBrokerOnline
	case status == mqttbind.StatusOffline && class == classBroker:
		return fsm.PresenceEventBrokerOffline
	}
	return fsm.PresenceEventCardNoStatus
}
