// Package http serves an A2A agent over the A2A v1.0 JSON-RPC binding
// (A2A v1.0 §9): JSON-RPC 2.0 requests POSTed to one endpoint, answered
// with application/json or, for the streaming methods, Server-Sent Events;
// and the Agent Card at /.well-known/agent-card.json. Every request is
// answered by an agent.Server, the transport-independent runtime, which
// may serve transport/mqtt at the same time.
//
// # Serving
//
// NewHandler takes the runtime and the public Agent Card. The card lists
// the endpoint's URL (JSONRPCInterface makes that entry; an agent also
// served over MQTT adds its agentcard.BindingMQTT interface, "MQTTv5+JSONRPCv2",
// to the same card; package agentcard builds a card with the required members
// filled in). The common case is one call on a listener (the package is
// imported as a2ahttp beside net/http):
//
//	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: card})
//	go h.Serve(ln, "/a2a") // JSON-RPC at /a2a, the card at /.well-known/agent-card.json
//	...
//	h.Close(ctx)
//
// On a mux of your own, Register mounts both paths, or mount the pieces
// yourself: the Handler is the JSON-RPC endpoint wherever it is mounted
// (mux.Handle("/a2a", h)), CardHandler is the card (mount it at
// WellKnownCardPath of the server's root).
//
// # Getting started
//
// ExampleNewHandler serves an agent and calls it; the requester side is
// NewClient (package requester's example). The guide,
// docs/guide.md (https://github.com/a2abind/a2abind/blob/main/docs/guide.md), shows a whole agent and
// requester over both transports.
//
// # The endpoint
//
// All eleven methods of A2A v1.0 are served through the runtime, which
// makes task ids (tasklife.ResponderIDs): a message naming a task id the
// agent does not know is answered task_not_found (-32001).
// SendStreamingMessage and SubscribeToTask answer with text/event-stream,
// one "data: <JSON-RPC response>" event per stream item, flushed as it is
// made; the stream begins with the Task and ends when the task reaches a
// terminal or interrupted state. An error for a streaming method is an
// error event in the stream. Every JSON-RPC answer is HTTP 200 with
// "jsonrpc":"2.0", the request's id and one of result and error; the
// errors carry the A2A v1.0 ErrorInfo array in error.data (§9.5).
//
// Refused at the HTTP level, with a JSON-RPC error body: a method other
// than POST (405, with Allow: POST), a Content-Type other than
// application/json (415; parameters such as charset are allowed), and any
// request after Close (503). A JSON-RPC batch (an array) is answered
// invalid_request: A2A v1.0 §9 defines no batches.
//
// A notification (a request without an id) is served and answered 204 No
// Content without a body, as soon as the runtime has accepted it:
// JSON-RPC 2.0 §4.1 forbids a reply, and A2A defines none. A SendMessage
// notification is served as with returnImmediately; a streaming one is
// left after its first item; the task goes on either way, and an error
// (an unknown method, invalid params, a refusal) is not reported. Parse
// errors and malformed envelopes, where no notification can be told
// apart, are answered with id null.
//
// # Version, authentication, capabilities
//
// A request must carry "A2A-Version: 1.0" (a patch number, as in 1.0.0,
// is ignored, A2A v1.0 §3.6). Any other version is answered
// version_not_supported (-32009); so is a request without the header,
// which A2A v1.0 §3.6.2 reads as version 0.3, unless
// HandlerConfig.AcceptMissingVersion is set (it is off by default). The
// version is read from the header only, as A2A v1.0 §9.2 has service
// parameters sent in this binding; the URL query parameter that §3.6.1
// also allows is not read.
//
// The bearer token of an "Authorization: Bearer <token>" header is handed
// to the runtime (agent.Call.Token), whose Verifier (agent.WithVerifier)
// checks it. The token is never written to a reply or a log line.
//
// The card's capabilities are enforced (A2A v1.0 §3.3.4): without
// capabilities.streaming the streaming methods, and without
// capabilities.extendedAgentCard GetExtendedAgentCard, are answered
// unsupported_operation (-32004). Push notifications (A2A v1.0 §4.3) are
// served when the runtime serves them (agent.WithPush, with a Notifier
// such as agent/webhook's Sender, which POSTs each update to the webhook)
// and the card declares capabilities.pushNotifications: the four
// push-notification config methods, and a config carried in a SendMessage
// or SendStreamingMessage, stored with its task in the same write
// (docs/protocol.md §8.8). Through a card without the capability they,
// and a message carrying a config, are answered
// push_notification_not_supported (-32003); a card that declares it for a
// runtime without agent.WithPush is refused by NewHandler and UpdateCard.
// The requester's side, a webhook receiver and a monitor that polls, is
// requester/pushmon (docs/protocol.md §8.9). Nothing in A2A carries a
// request deadline over HTTP: a request lives as long as its HTTP request
// (its context). A handover (agent.Turn.Handover) is not visible either:
// the binding has no member for the new responder's id.
//
// # Limits
//
// A request body is read once, into a pooled buffer, up to
// HandlerConfig.MaxBodyBytes (default 4 MiB); a larger body is answered
// invalid_request naming the limit. The client reads each reply body the
// same way, up to ClientConfig.MaxReplyBytes (default 16 MiB). Buffers
// past 64 KiB are pooled by size (eight classes per doubling, up to
// 16 MiB) in sync.Pools, which the garbage collector empties within two
// cycles: they hold no more than recent traffic had in use at once. The turns running at once are bounded
// by the runtime (agent.WithMaxTurns): a message past the bound is
// answered at once, never queued. Writing one event to a stream is
// bounded by HandlerConfig.EventWriteTimeout (default 10 s), so a client
// that stops reading cannot hold its task back. Serve's http.Server bounds
// the time to read request headers (10 s) and idle connections (2 min).
// Not bounded here: the number of connections and of open streams (a
// SubscribeToTask adds one without starting a turn), and the time a
// client takes to send its body; bound them at the listener or a proxy in
// front, or with an http.Server of your own (Register).
//
// # Shutdown
//
// Close stops taking requests (later ones are answered 503 Service
// Unavailable), ends every open event stream cleanly (the response
// completes after the last whole event; a client resumes with
// SubscribeToTask), stops the servers that Serve started, and waits for
// the requests in progress, or for its context to end. Tasks are not
// stopped: they belong to the runtime, which agent.Server.Close stops.
package http
