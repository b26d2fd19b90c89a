// Package a2abind is the root of the a2abind module: A2A (Agent2Agent)
// protocol v1.0 over MQTT v5 and HTTP. Its examples show the generated
// wire types of package generated/a2a: decoding and validating an Agent
// Card and a SendMessage request, building values, error tokens and
// topics.
//
// Where to start:
//
//   - docs/guide.md (https://github.com/a2abind/a2abind/blob/main/docs/guide.md):
//     write an agent, write a requester, run them on the embedded broker,
//     on mosquitto and over HTTP, topics and user properties at a glance;
//   - package agent: the Handler an agent author writes, and the Server
//     that runs it;
//   - package agentcard: an Agent Card with its required members filled
//     in, and the interface binding constants;
//   - package requester: the client side, every A2A method;
//   - packages transport/mqtt and transport/http: the two wires, each with
//     a runnable example;
//   - docs/protocol.md: the protocol rules themselves.
//
// Its generated code comes from schema/ through cmd/a2agen; run `go
// generate` at the module root (or `make generate`) after changing a
// schema.
package a2abind

//go:generate go run ./cmd/a2agen -schema schema -out generated
