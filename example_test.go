package a2abind_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// A service that only wants to check bytes calls the generated
// Validate<Type>JSON function: no value is kept, every violation is listed
// with its JSON pointer and the rule it broke.
func Example_validateBytes() {
	payload := []byte(`{
		"id": "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10",
		"status": {"state": "completed", "timestamp": "2026-11-29T10:00:00+01:00"}
	}`)
	err := a2a.ValidateTaskJSON(payload)
	var verr *a2a.ValidationError
	if errors.As(err, &verr) {
		for _, v := range verr.Violations {
			fmt.Println(v.Pointer, v.Rule)
		}
	}
	// Output:
	// /status/state enum
	// /status/timestamp pattern
}

// Generated types decode and encode the ProtoJSON wire form; oneof groups
// such as Part's content are sealed interfaces, so two members at once cannot
// be built, and decoding refuses them.
func Example_decodeAndSwitch() {
	var msg a2a.Message
	if err := json.Unmarshal([]byte(`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"},{"url":"https://example.com/a.png","mediaType":"image/png"}]}`), &msg); err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range msg.Parts {
		switch c := p.Content.(type) {
		case a2a.PartText:
			fmt.Println("text:", string(c))
		case a2a.PartURL:
			fmt.Println("file:", string(c), p.MediaType)
		}
	}
	fmt.Println(msg.Validate())

	err := json.Unmarshal([]byte(`{"text":"a","url":"b"}`), new(a2a.Part))
	fmt.Println(err != nil)
	// Output:
	// text: hello
	// file: https://example.com/a.png image/png
	// <nil>
	// true
}

// Values built in Go are checked with Validate and encoded with
// encoding/json.
func Example_buildAndValidate() {
	task := a2a.Task{
		ID:     "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10",
		Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []a2a.Artifact{{
			ArtifactID: "a1",
			Parts:      []a2a.Part{{Content: a2a.PartText("done")}},
		}},
	}
	if err := task.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(task)
	fmt.Println(string(b))
	// Output:
	// {"id":"6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a1","parts":[{"text":"done"}]}]}
}

// Error tokens identify protocol errors: the same JSON-RPC code means
// different things in different profiles, so errors compare by token.
func Example_errorTokens() {
	err := a2a.NewError(a2a.TokenRequestExpired, "")
	info, _ := err.Token.Info()
	fmt.Println(err.Code, info.Profile, info.Retryable, errors.Is(err, a2a.ErrRequestExpired), errors.Is(err, a2a.ErrPushNotificationNotSupported))
	// Output:
	// -32003 mqtt true true false
}

// Topics are built from checked identifiers.
func Example_topics() {
	t, err := mqttbind.RequestTopic("acme", "support", "triage")
	fmt.Println(t, err)
	_, err = mqttbind.RequestTopic("acme", "support/x", "triage")
	fmt.Println(err)
	// Output:
	// $a2a/v1/request/acme/support/triage <nil>
	// invalid unit_id "support/x": must match ^[A-Za-z0-9_.-]+$ (no /, +, #, spaces, not empty)
}

// An Agent Card fetched from an agent (its /.well-known/agent-card.json,
// or its retained card on MQTT) is decoded and checked in one pass: a card
// missing required members is refused with every violation listed, so
// nothing half-valid is used.
func Example_agentCard() {
	good := []byte(`{
		"name": "Echo", "description": "Echoes text", "version": "1.0.0",
		"supportedInterfaces": [{"url": "mqtt://broker.example.com:1883", "protocolBinding": "MQTTv5+JSONRPCv2", "protocolVersion": "1.0"}],
		"capabilities": {"streaming": true},
		"defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
		"skills": [{"id": "echo", "name": "Echo", "description": "Echoes text", "tags": ["text"]}]
	}`)
	card, err := a2a.ParseAgentCardJSON(good)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := card.SupportedInterfaces[0]
	fmt.Println(card.Name, in.ProtocolBinding, in.URL, *card.Capabilities.Streaming)

	bad := []byte(`{"name": "Echo", "description": "Echoes text", "version": "1.0.0",
		"supportedInterfaces": [{"url": "mqtt://broker.example.com:1883", "protocolBinding": "MQTTv5+JSONRPCv2"}]}`)
	_, err = a2a.ParseAgentCardJSON(bad)
	var verr *a2a.ValidationError
	if errors.As(err, &verr) {
		for _, v := range verr.Violations {
			fmt.Println(v)
		}
	}
	// Output:
	// Echo MQTTv5+JSONRPCv2 mqtt://broker.example.com:1883 true
	// /capabilities: required: missing property "capabilities"
	// /defaultInputModes: required: missing property "defaultInputModes"
	// /defaultOutputModes: required: missing property "defaultOutputModes"
	// /skills: required: missing property "skills"
	// /supportedInterfaces/0/protocolVersion: required: missing property "protocolVersion"
}

// The params of a SendMessage request, as an agent receives them: the
// message needs a messageId, a role and at least one part. (package
// jsonrpc decodes the whole JSON-RPC envelope; package agent does both
// for an agent.)
func Example_sendMessageRequest() {
	params := []byte(`{"message": {"messageId": "9b2f6c1e-0d3a-4e7b-8c5f-2a1d4e6b7c90", "role": "ROLE_USER",
		"parts": [{"text": "hello"}]}, "configuration": {"returnImmediately": true}}`)
	req, err := a2a.ParseSendMessageRequestJSON(params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Message.Role, req.Message.Parts[0].Content, req.Configuration.ReturnImmediately)

	err = a2a.ValidateSendMessageRequestJSON([]byte(`{"message": {"role": "ROLE_USER", "parts": []}}`))
	var verr *a2a.ValidationError
	if errors.As(err, &verr) {
		for _, v := range verr.Violations {
			fmt.Println(v)
		}
	}
	// Output:
	// ROLE_USER hello true
	// /message/messageId: required: missing property "messageId"
	// /message/parts: minItems: fewer than 1 items
}
