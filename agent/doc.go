// Package agent is the transport-independent runtime of an A2A agent: the
// Handler API that agent authors implement, and a Server that applies the
// protocol's responder rules (statemachines/tasklife: dedup by Task.id,
// retry versus resume versus a message to a finished task, context rules,
// the task lifecycle) around it, keeps tasks in a taskstore.Store and
// answers every A2A v1.0 method.
//
// A transport (transport/mqtt, transport/http) decodes a request with
// package jsonrpc, hands it to Server.Serve with a Sink, and writes each Reply
// the Sink receives on its wire. Nothing here knows of sockets, topics or
// HTTP, so one Handler can be served over several transports at once.
// What every transport must enforce lives here too: a Verifier
// (WithVerifier) checks the bearer token a transport puts in Call.Token,
// and a Call.Deadline (MQTT Message Expiry) that has passed is answered
// request_expired before any work. So do the bounds on what a request may
// cost (docs/protocol.md §14): a transport decodes with
// Server.DecodeRequest, which refuses a payload over WithMaxRequestBytes
// (4 MiB) before parsing it and a message of more than WithMaxParts (1,000)
// parts before decoding them; the task store is bounded and expires tasks
// left waiting for input (WithContextTTL, a day), and LimitsExtension
// publishes the figures in the agent card.
//
// A Handler sees one Turn per message: a new task, or a resumed one after
// INPUT_REQUIRED / AUTH_REQUIRED. Through the Turn it streams status and
// artifacts, asks for input, hands the task over to another agent and
// finishes it; returning nil completes a task left working, returning an
// error fails it.
//
// With WithPush the Server serves push notifications (A2A v1.0 §4.3,
// docs/protocol.md §8.8): it keeps each task's push-notification configs in
// the task's record, hands every status and artifact update to a Notifier
// (agent/webhook sends them over HTTP), and shows the Notifier's reports
// (PushReport) to requesters in the task's metadata.
//
// # Getting started
//
// ExampleTurn_Artifact shows a handler streaming its work; the examples
// of transport/mqtt and transport/http serve a handler on a wire, and
// package agentcard builds the Agent Card they publish. The guide,
// docs/guide.md (https://github.com/a2abind/a2abind/blob/main/docs/guide.md), walks through an agent and
// a requester on the embedded broker, on mosquitto and over HTTP.
package agent
