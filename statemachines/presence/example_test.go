package presence_test

import (
	"fmt"
	"time"

	"github.com/a2abind/a2abind/statemachines/presence"
)

// A discovery subscriber feeds every message it receives on
// $a2a/v1/discovery/{org_id}/{unit_id}/+ to a Tracker and reads the table.
func ExampleTracker_Ingest() {
	card := []byte(`{"name":"b","description":"agent b","version":"1.0.0",
		"supportedInterfaces":[{"url":"mqtt://127.0.0.1:1883","protocolBinding":"MQTTv5+JSONRPCv2","protocolVersion":"1.0"}],
		"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
		"skills":[{"id":"echo","name":"echo","description":"echoes","tags":["demo"]}]}`)
	topic := "$a2a/v1/discovery/acme/lab/agent-b"
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

	tr := presence.NewTracker()
	for _, m := range []struct {
		payload []byte
		props   presence.Properties
	}{
		{card, presence.Properties{{Key: "a2a-status", Value: "online"}, {Key: "a2a-status-source", Value: "agent"}}},
		{card, presence.Properties{{Key: "a2a-status", Value: "offline"}, {Key: "a2a-status-source", Value: "lwt"}}},
		{nil, nil}, // the retained card is cleared
	} {
		ch, err := tr.Ingest(topic, m.payload, m.props, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		e := ch.Entry
		fmt.Printf("%s: %v (%v) registered=%v everOnline=%v\n", e.Key.Agent, e.Status(), e.Source(), e.Registered(), e.EverOnline)
	}
	// Output:
	// agent-b: online (agent) registered=true everOnline=true
	// agent-b: offline (lwt) registered=true everOnline=true
	// agent-b: unknown (none) registered=false everOnline=true
}
