package agent

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Call is one request handed to Server.Serve by a transport.
type Call struct {
	// Request is the decoded request (see jsonrpc.DecodeRequest).
	Request *jsonrpc.Request
	// IDs says who makes Task.id in the transport's binding:
	// tasklife.RequesterIDs over MQTT, tasklife.ResponderIDs over HTTP.
	IDs tasklife.IDOrigin
	// Caller is the identity behind the request as the transport knows it.
	// With a verifier (WithVerifier) it is replaced by the caller the
	// verifier returns for Token. A task the call creates is its
	// Subject's, and the call sees only its Subject's tasks and those
	// created without one (docs/protocol.md §15).
	Caller Caller
	// Token is the bearer token the request carried, without its "Bearer "
	// prefix ("" for none): the a2a-authorization user property over MQTT,
	// the Authorization header over HTTP. It is handed to the verifier and
	// never echoed.
	Token string
	// Capabilities are what the card the transport serves declares (nil:
	// no card, nothing enforced). The server refuses what the card does not
	// offer (A2A v1.0 §3.3.4), whatever the transport: SendStreamingMessage
	// and SubscribeToTask without capabilities.streaming, and
	// GetExtendedAgentCard without capabilities.extendedAgentCard, are
	// answered unsupported_operation; without capabilities.pushNotifications
	// the four push-notification config methods, and a message carrying a
	// push-notification config, are answered push_notification_not_supported.
	Capabilities *a2a.AgentCapabilities
	// Deadline, when set, is the wall-clock time (time.Now) after which the
	// request has expired (MQTT Message Expiry): a request not yet being
	// processed by then is answered request_expired instead.
	Deadline time.Time

	// queued is set for a message taken from the offline queue.
	queued *QueuedMessage
}

// Reply is one answer to a call: a result (the single response, or one
// item of a stream) or an error.
type Reply struct {
	// Result is the JSON-marshalable result: an *a2a.SendMessageResponse,
	// *a2a.StreamResponse, *a2a.Task, *a2a.ListTasksResponse, *a2a.AgentCard,
	// *a2a.TaskPushNotificationConfig, *a2a.ListTaskPushNotificationConfigsResponse
	// or *a2a.Empty.
	Result any
	// Err is set instead of Result for an error answer.
	Err *a2a.Error
	// Final marks the last reply of the call.
	Final bool
	// Responder is the agent id that now serves the task after a handover
	// ("" when unchanged); transports carry it as a2a-responder-agent-id.
	Responder string

	// task, when set, is the encoding of the task a *a2a.SendMessageResponse
	// Result holds, made once for the store and the reply: Encode copies
	// it instead of encoding the task again.
	task []byte
}

// Sink receives the replies of one call, in order. Send must not keep r
// after returning. An error from Send ends a stream: the server stops
// sending to that sink (the task itself goes on).
type Sink interface {
	Send(ctx context.Context, r Reply) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, r Reply) error

// Send calls f.
func (f SinkFunc) Send(ctx context.Context, r Reply) error { return f(ctx, r) }

// Encode renders a reply as a JSON-RPC response for the binding.
func (r Reply) Encode(id json.RawMessage, b jsonrpc.Binding) ([]byte, error) {
	if r.Err != nil {
		return jsonrpc.EncodeError(id, r.Err, b)
	}
	if r.task != nil {
		if _, ok := r.Result.(*a2a.SendMessageResponse); ok {
			return jsonrpc.EncodeResult(id, encodedTask(r.task))
		}
	}
	return jsonrpc.EncodeResult(id, r.Result)
}

// encodedTask is a SendMessageResponse holding a task already encoded.
type encodedTask []byte

// AppendJSON appends {"task":…} with the encoding as it is.
func (e encodedTask) AppendJSON(b []byte) ([]byte, error) {
	b = slices.Grow(b, len(e)+len(`{"task":}`)+2)
	b = append(b, `{"task":`...)
	b = append(b, e...)
	return append(b, '}'), nil
}
