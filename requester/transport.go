package requester

import (
	"context"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Target names the agent or pool a new task goes to: exactly one of Agent
// and Pool. Over MQTT it selects the request topic; a transport bound to one
// endpoint (HTTP) ignores it. A task the Client has routed before goes where
// its latest reply said, whatever the target.
type Target = handover.Target

// Transport carries a Client's requests: it sends one attempt of a JSON-RPC
// request and hands its replies back. Implementations live in
// transport/mqtt and transport/http; everything the protocol says about
// retries, handover, finished routes, stream stalls and decoding replies is
// the Client's, done once for every transport.
type Transport interface {
	// Send sends one attempt of req. Every reply to the attempt (one for a
	// plain call, each item of a stream) is passed to deliver, in order, until
	// stop is called; deliver may be called before Send returns and from any
	// goroutine, but never concurrently for one attempt. An error means the
	// attempt was not sent (the Client counts it as a refused attempt); a
	// failure after the attempt left is passed to deliver as a Reply with
	// Refused or Failed set. stop must be called once the Client is done with
	// the attempt; after it returns, deliver is not called again.
	Send(ctx context.Context, req *Request, deliver func(*Reply)) (stop func(), err error)
	// Binding says how the transport's binding lays out what the Client
	// must know.
	Binding() Binding
	// Close releases the transport's connection.
	Close(ctx context.Context) error
}

// Binding describes a transport's binding.
type Binding struct {
	// Errors is the error data shape of the binding's replies.
	Errors jsonrpc.Binding
	// IDs says who makes Task.id: tasklife.RequesterIDs (MQTT: the Client
	// makes a UUIDv4 for a new task and sends it as message.taskId) or
	// tasklife.ResponderIDs (A2A core, HTTP: a new task is sent without one).
	IDs tasklife.IDOrigin
	// Retry is the binding's default retry and timeout profile, used when
	// Config.Retry is left zero.
	Retry mqttbind.RetryProfile
	// NeedsTarget is set when every new task must name an agent or pool
	// (MQTT: it selects the request topic); a transport bound to one
	// endpoint (HTTP) leaves it unset and ignores Request.Target.
	NeedsTarget bool
}

// Request is one attempt to carry.
type Request struct {
	// ID is the JSON-RPC id of the attempt (a JSON string); a transport that
	// correlates by another key (MQTT Correlation Data) may replace it.
	ID string
	// Method and Params are the JSON-RPC method and its params, a generated
	// type (encode them with jsonrpc.EncodeRequest).
	Method a2a.Method
	Params any
	// Streaming is set for SendStreamingMessage and SubscribeToTask: the
	// answer is a stream of items.
	Streaming bool
	// Target is where the attempt goes (see Target).
	Target Target
	// TaskID and ContextID are the task and context the request is about,
	// when known ("" otherwise): MQTT carries ContextID as a2a-context-id.
	TaskID, ContextID string
	// Bearer is an OAuth 2.0 access token for the responder, without the
	// "Bearer " prefix ("" for none): a2a-authorization over MQTT, the
	// Authorization header over HTTP. Transports never log it.
	Bearer string
	// Expiry, when positive, is how long the request may wait before a
	// responder processes it (MQTT Message Expiry).
	Expiry time.Duration
	// Timeout, when positive, bounds how long the attempt waits for its
	// first reply: the retry profile's first-reply timeout. A transport that
	// answers within Send may apply it to the call; others leave it to the
	// Client's timer.
	Timeout time.Duration
}

// Reply is one reply to an attempt, as the transport received it.
type Reply struct {
	// Payload is the JSON-RPC response (for a stream, one item's response).
	// The Client decodes it before deliver returns and keeps nothing of it
	// afterwards, so a transport may reuse the buffer.
	Payload []byte
	// Responders are the a2a-responder-agent-id values the reply carried,
	// in order (MQTT), none otherwise.
	Responders []string
	// Refused reports an attempt that was not accepted (MQTT: no
	// connection, or a PUBACK saying "not now", 0x97 quota exceeded; HTTP:
	// the server could not be reached or stayed overloaded after the
	// transport's own retries). The retry profile may send another
	// attempt. Payload is empty.
	Refused error
	// Failed ends the operation with this error, not retried (HTTP: a
	// status such as 401 or 404, a reply that is not JSON-RPC; MQTT: a
	// publish the broker refused, such as PUBACK 0x87 not authorized, or
	// one too large for it). Payload is empty.
	Failed error
	// Err is an error answer that came without a JSON-RPC envelope (HTTP:
	// the offline profile's 503, 507 and 429 bodies, docs/protocol.md §7),
	// already identified by token. The Client treats it exactly as a
	// JSON-RPC error reply holding it: retried or not by its token, an
	// agent_asleep with queued true ending the operation with *Queued.
	// Payload is empty.
	Err *a2a.Error
	// End reports that no more replies will come for the attempt (HTTP: the
	// response or the event stream ended), with Payload as the last reply
	// or alone. A stream that ends before its final item counts as
	// stalled; a last reply that is not a JSON-RPC response ends the
	// operation with invalid_agent_response (an earlier one is dropped, as
	// a stray message would be).
	End bool
}
