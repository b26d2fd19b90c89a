package agent

import (
	"context"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// CallRecord describes one call Server.Serve answered, for the observer of
// WithCallObserver. It never holds the call's bearer token.
type CallRecord struct {
	// Method is the call's JSON-RPC method.
	Method a2a.Method
	// TaskID is the task the call concerned: the one its params name, or
	// the one its replies carry (a new task); "" when none (ListTasks, a
	// message answered with a Message, an error before any task).
	TaskID string
	// State is the task's state in the call's last reply that carried one
	// ("" when none did).
	State a2a.TaskState
	// Error is the error token of the call's error answer ("" when it
	// answered no error).
	Error a2a.Token
	// Replies counts the replies sent (the stream items of a stream).
	Replies int
	// Duration is how long Serve took, from the call to its last reply.
	Duration time.Duration
}

// WithCallObserver calls observe once per call the server answers, when
// Serve returns (for a stream, once the stream ended), with what the call
// was and how it ended: for an access log or metrics. observe runs on the
// goroutine of Serve: it must be quick and must not block. Default: none.
func WithCallObserver(observe func(ctx context.Context, r CallRecord)) Option {
	return func(s *Server) { s.observe = observe }
}

// observed wraps sink so that r records what goes through it.
func observed(sink Sink, r *CallRecord) Sink {
	return SinkFunc(func(ctx context.Context, rep Reply) error {
		r.Replies++
		if rep.Err != nil {
			r.Error = rep.Err.Token
		}
		if id, st := replyTask(rep.Result); id != "" {
			r.TaskID = id
			if st != "" {
				r.State = st
			}
		}
		return sink.Send(ctx, rep)
	})
}

// paramsTask is the task id the params of a call name, if any.
func paramsTask(params any) string {
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		if p.Message != nil {
			return p.Message.TaskID
		}
	case *a2a.GetTaskRequest:
		return p.ID
	case *a2a.CancelTaskRequest:
		return p.ID
	case *a2a.SubscribeToTaskRequest:
		return p.ID
	}
	return ""
}

// replyTask is the task id and state a reply's result carries.
func replyTask(result any) (string, a2a.TaskState) {
	var payload any = result
	switch x := result.(type) {
	case *a2a.SendMessageResponse:
		payload = x.Payload
	case *a2a.StreamResponse:
		payload = x.Payload
	}
	switch x := payload.(type) {
	case *a2a.Task:
		if x.Status != nil {
			return x.ID, x.Status.State
		}
		return x.ID, ""
	case *a2a.TaskStatusUpdateEvent:
		if x.Status != nil {
			return x.TaskID, x.Status.State
		}
		return x.TaskID, ""
	case *a2a.TaskArtifactUpdateEvent:
		return x.TaskID, ""
	}
	return "", ""
}
