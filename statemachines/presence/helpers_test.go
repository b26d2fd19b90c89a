package presence

import (
	"fmt"
	"time"

	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// t0 is the arbitrary start of every test's clock.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// cardJSON returns a valid Agent Card whose version names it, so that a test
// can tell which card a tracker recorded.
func cardJSON(name, version string) []byte {
	return fmt.Appendf(nil, `{"name":%q,"description":"test agent","version":%q,`+
		`"supportedInterfaces":[{"url":"mqtt://127.0.0.1:1883","protocolBinding":"MQTTv5+JSONRPCv2","protocolVersion":"1.0"}],`+
		`"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`+
		`"skills":[{"id":"echo","name":"echo","description":"echoes","tags":["test"]}]}`, name, version)
}

// topic returns agent's discovery topic in org acme, unit lab.
func topic(agent string) string {
	t, err := mqttbind.DiscoveryTopic("acme", "lab", agent)
	if err != nil {
		panic(err)
	}
	return t
}

func key(agent string) Key { return Key{Org: "acme", Unit: "lab", Agent: agent} }

// status builds the two presence properties; an empty source leaves
// a2a-status-source out.
func status(st, src string) Properties {
	p := Properties{{Key: mqttbind.PropStatus, Value: st}}
	if src != "" {
		p = append(p, Property{Key: mqttbind.PropStatusSource, Value: src})
	}
	return p
}

// eventMessage returns properties and payload that Ingest reads as ev.
func eventMessage(ev fsm.PresenceEvent, version string) (Properties, []byte) {
	card := cardJSON("agent", version)
	switch ev {
	case fsm.PresenceEventCardOnlineAgent:
		return status("online", "agent"), card
	case fsm.PresenceEventCardOfflineAgent:
		return status("offline", "agent"), card
	case fsm.PresenceEventCardOfflineLWT:
		return status("offline", "lwt"), card
	case fsm.PresenceEventBrokerOnline:
		return status("online", "broker"), card
	case fsm.PresenceEventBrokerOffline:
		return status("offline", "broker"), card
	case fsm.PresenceEventCardNoStatus:
		return nil, card
	}
	return nil, nil
}

// tableLookup finds the row the generated table defines for (from, ev),
// independently of PresenceStep: the first row in table order whose guard
// holds.
func tableLookup(from fsm.PresenceState, ev fsm.PresenceEvent) (fsm.PresenceTransition, bool) {
	for _, r := range fsm.PresenceTable() {
		if r.From == from && r.Event == ev {
			return r, true
		}
	}
	return fsm.PresenceTransition{}, false
}
