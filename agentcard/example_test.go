package agentcard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// The smallest valid card: a name and where the agent is reached; New
// fills in the other required members.
func ExampleNew() {
	card, err := agentcard.New(agentcard.Config{
		Name:       "Echo",
		Interfaces: []a2a.AgentInterface{a2amqtt.Interface("mqtt://broker.example.com:1883")},
	})
	if err != nil {
		log.Fatal(err)
	}
	out, _ := json.MarshalIndent(card, "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "name": "Echo",
	//   "description": "Echo",
	//   "supportedInterfaces": [
	//     {
	//       "url": "mqtt://broker.example.com:1883",
	//       "protocolBinding": "MQTTv5+JSONRPCv2",
	//       "protocolVersion": "1.0"
	//     }
	//   ],
	//   "version": "1.0.0",
	//   "capabilities": {
	//     "streaming": true
	//   },
	//   "defaultInputModes": [
	//     "text/plain"
	//   ],
	//   "defaultOutputModes": [
	//     "text/plain"
	//   ],
	//   "skills": [
	//     {
	//       "id": "echo",
	//       "name": "Echo",
	//       "description": "Echo",
	//       "tags": [
	//         "echo"
	//       ]
	//     }
	//   ]
	// }
}

// An agent served over both transports lists both interfaces, the
// preferred first, and describes its skills itself. A mistake is reported
// with every member that is wrong.
func ExampleNew_skills() {
	_, err := agentcard.New(agentcard.Config{
		Name: "Translator", Description: "Translates text", Version: "2.1.0",
		Interfaces: []a2a.AgentInterface{
			a2ahttp.JSONRPCInterface("https://translator.example.com/a2a"),
			a2amqtt.Interface("mqtts://broker.example.com:8883"),
		},
		Skills: []a2a.AgentSkill{{ID: "translate", Name: "Translate", Description: "Translates text"}}, // no tags
	})
	var cerr *agentcard.Error
	fmt.Println(errors.As(err, &cerr))
	fmt.Println(err)
	// Output:
	// true
	// agentcard: agent "Translator": invalid Agent Card: /skills/0/tags: required: missing property "tags"
}
