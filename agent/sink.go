package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/jsonsize"
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
	// or *a2a.StreamResponse Result holds, made once for the store and the
	// reply: Encode lays the envelope around it, or copies it, instead of
	// encoding the task again.
	task *taskEnc
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

// Encode renders a reply as a JSON-RPC response for the binding. The
// bytes it returns are never written again: a transport may keep them
// after Send returns.
func (r Reply) Encode(id json.RawMessage, b jsonrpc.Binding) ([]byte, error) {
	if r.Err != nil {
		return jsonrpc.EncodeError(id, r.Err, b)
	}
	if r.task != nil && holdsTask(r.Result) {
		// Both responses put the task in a "task" member.
		if out := r.task.envelope(id); out != nil {
			return out, nil
		}
		return r.task.copyReply(id), nil
	}
	return jsonrpc.EncodeResultSized(id, r.Result, resultSize(r.Result))
}

// holdsTask reports whether a result is a SendMessageResponse or a
// StreamResponse holding a task.
func holdsTask(v any) bool {
	switch x := v.(type) {
	case *a2a.SendMessageResponse:
		_, ok := x.Payload.(*a2a.Task)
		return ok
	case *a2a.StreamResponse:
		_, ok := x.Payload.(*a2a.Task)
		return ok
	}
	return false
}

// resultSize is about the length of a result's encoding (jsonsize), for
// the response's buffer to be allocated once; 1 KiB for a result of a
// type it does not estimate.
func resultSize(v any) int {
	// member is the room of a payload's member name and braces, at most
	// {"artifactUpdate":…}.
	const member = len(`{"artifactUpdate":}`)
	switch x := v.(type) {
	case *a2a.SendMessageResponse:
		return member + payloadSize(x.Payload)
	case *a2a.StreamResponse:
		return member + payloadSize(x.Payload)
	case *a2a.Task:
		return jsonsize.Task(x)
	case *a2a.ListTasksResponse:
		n := 128 + jsonsize.String(x.NextPageToken)
		for i := range x.Tasks {
			n += jsonsize.Task(&x.Tasks[i]) + 1
		}
		return n
	}
	return 1024
}

// payloadSize is about the length of a SendMessageResponse's or a
// StreamResponse's payload encoded.
func payloadSize(p any) int {
	// event is the room of an event's ids, flags and metadata beside its
	// status or artifact.
	const event = 256
	switch x := p.(type) {
	case *a2a.Task:
		if x != nil {
			return jsonsize.Task(x)
		}
	case *a2a.Message:
		if x != nil {
			return jsonsize.Message(x)
		}
	case *a2a.TaskStatusUpdateEvent:
		if x != nil {
			return event + jsonsize.Status(x.Status) + jsonsize.Any(x.Metadata)
		}
	case *a2a.TaskArtifactUpdateEvent:
		if x != nil && x.Artifact != nil {
			return event + jsonsize.Artifact(x.Artifact) + jsonsize.Any(x.Metadata)
		}
	}
	return 1024
}
