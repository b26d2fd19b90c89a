package requester

import (
	"context"
	"errors"
	"iter"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Result is the answer to SendMessage: a task (or, from agents that answer
// without one, a message), with the responder that sent it.
type Result struct {
	Task      *a2a.Task
	Message   *a2a.Message
	Responder string
}

// Item is one stream item and the responder that sent it.
type Item struct {
	a2a.StreamResponse
	Responder string
}

// prepare returns a copy of req whose message has the ids the requester
// makes: a messageId (the same for every retry, so the responder answers a
// repeat with the task it already has), the ROLE_USER role when none is
// set, and, where the binding has the requester make Task.id (MQTT), a
// UUIDv4 Task.id for a new task. Over HTTP a new task is sent without one:
// the server makes it.
//
// When shared is set and the message has every id it needs already (as
// TextMessage and Conversation make it), req itself is returned: the
// caller reads it only until its call returns, and nothing writes to it.
func (c *Client) prepare(req *a2a.SendMessageRequest, shared bool) (*a2a.SendMessageRequest, error) {
	if req == nil || req.Message == nil {
		return nil, a2a.NewError(a2a.TokenInvalidParams, "SendMessageRequest.message is required")
	}
	if shared && req.Message.MessageID != "" && req.Message.Role != "" &&
		(req.Message.TaskID != "" || c.binding.IDs == tasklife.ResponderIDs) {
		return req, nil
	}
	// The request and its message are copied in one allocation.
	cp := new(struct {
		r a2a.SendMessageRequest
		m a2a.Message
	})
	r, m := &cp.r, &cp.m
	*r, *m = *req, *req.Message
	if m.TaskID == "" && c.binding.IDs != tasklife.ResponderIDs {
		m.TaskID = uuidv4.New()
	}
	if m.MessageID == "" {
		m.MessageID = uuidv4.New()
	}
	if m.Role == "" {
		m.Role = a2a.RoleUser
	}
	r.Message = m
	return r, nil
}

// SendMessage sends a message and waits for the one reply. A message for a
// task the client has routed before goes where the task's latest
// a2a-responder-agent-id said. Protocol errors come back as *a2a.Error
// (errors.Is(err, a2a.ErrTaskNotFound)).
//
// The Message fields the client fills, on a copy (req is not changed):
//
//   - MessageID, when empty: a UUIDv4, the same for every retry of the
//     call, so that the responder answers a repeat instead of starting a
//     second task (A2A requires messageId);
//   - Role, when empty: ROLE_USER;
//   - TaskID, when empty and the binding has the requester make task ids
//     (MQTT): a UUIDv4, for a new task. Over HTTP it is left empty and the
//     server makes it (read it in Result.Task.ID).
//
// ContextID is never filled: left empty, the agent makes a new context for
// a new task (Result.Task.ContextID) and takes the task's own for a
// follow-up. Everything else (Parts, Metadata, Extensions,
// ReferenceTaskIDs) is sent as given. TextMessage and Conversation build
// messages with these ids already set.
func (c *Client) SendMessage(ctx context.Context, req *a2a.SendMessageRequest, opts ...CallOption) (*Result, error) {
	// req is read only until SendMessage returns: it is sent as it is
	// when it needs no id filled.
	p, err := c.prepare(req, true)
	if err != nil {
		return nil, err
	}
	o := buildOpts(opts)
	r := &call{method: a2a.MethodSendMessage, params: p, decode: decodeSendMessageResponse,
		taskID: p.Message.TaskID, contextID: p.Message.ContextID, target: o.target, opts: o}
	var out *Result
	err = c.run(ctx, r, func(it item, _ bool) (bool, error) {
		if it.err != nil {
			return false, it.invalid()
		}
		resp := it.value.(*a2a.SendMessageResponse)
		out = &Result{Responder: it.responder}
		switch x := resp.Payload.(type) {
		case *a2a.Task:
			out.Task = x
		case *a2a.Message:
			out.Message = x
		default:
			return false, a2a.NewError(a2a.TokenInvalidAgentResponse, "SendMessage result holds neither a task nor a message")
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, a2a.NewError(a2a.TokenInvalidAgentResponse, "no result")
	}
	return out, nil
}

// SendStreamingMessage sends a message and yields the stream items as they
// arrive: the task first, then status and artifact updates, ending with a
// terminal or interrupted status (stream-final for this call). Duplicate
// deliveries are dropped. A stream that stalls for longer than the
// profile's stream idle timeout, or whose connection ends before the final
// item, is never sent again: the client recovers with GetTask and yields the
// task as the last item. The message's ids are filled as SendMessage
// says.
func (c *Client) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest, opts ...CallOption) iter.Seq2[Item, error] {
	// The stream is read after SendStreamingMessage returns: the
	// request is copied as it is now.
	p, err := c.prepare(req, false)
	if err != nil {
		return failed(err)
	}
	o := buildOpts(opts)
	return c.stream(ctx, &call{method: a2a.MethodSendStreamingMessage, params: p, decode: decodeStreamResponse,
		taskID: p.Message.TaskID, contextID: p.Message.ContextID, target: o.target, streaming: true, opts: o})
}

// SubscribeToTask streams the events of a live task, beginning with the
// task as it stands.
func (c *Client) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest, opts ...CallOption) iter.Seq2[Item, error] {
	if req == nil || req.ID == "" {
		return failed(a2a.NewError(a2a.TokenInvalidParams, "SubscribeToTaskRequest.id is required"))
	}
	o := buildOpts(opts)
	return c.stream(ctx, &call{method: a2a.MethodSubscribeToTask, params: req, decode: decodeStreamResponse,
		taskID: req.ID, target: o.target, streaming: true, opts: o})
}

// failed is a stream that yields err alone.
func failed(err error) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) { yield(Item{}, err) }
}

func (c *Client) stream(ctx context.Context, r *call) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		stopped := false
		err := c.run(ctx, r, func(it item, _ bool) (bool, error) {
			if it.err != nil {
				return false, it.invalid()
			}
			v := it.value.(*a2a.StreamResponse)
			if !yield(Item{StreamResponse: *v, Responder: it.responder}, nil) {
				stopped = true
				return false, nil
			}
			return true, nil
		})
		switch {
		case stopped:
		case errors.Is(err, errStalled) && r.taskID != "":
			task, gerr := c.GetTask(ctx, &a2a.GetTaskRequest{ID: r.taskID})
			if gerr != nil {
				yield(Item{}, gerr)
				return
			}
			yield(Item{StreamResponse: a2a.StreamResponse{Payload: task}}, nil)
		case err != nil:
			yield(Item{}, err)
		}
	}
}

// Decoders of the results the client's operations expect.
var (
	decodeSendMessageResponse = decodeWith(a2a.ParseSendMessageResponseJSON)
	decodeStreamResponse      = decodeWith(a2a.ParseStreamResponseJSON)
)

// single runs a one-reply operation whose result parse decodes and checks;
// a result that breaks its schema is invalid_agent_response.
func single[T any, PT jsonrpc.ResultType[T]](ctx context.Context, c *Client, r *call, parse func([]byte) (*T, error)) (*T, error) {
	r.decode = decodeWith[T, PT](parse)
	var out *T
	err := c.run(ctx, r, func(it item, _ bool) (bool, error) {
		if it.err != nil {
			return false, it.invalid()
		}
		out = it.value.(*T)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// taskCall is a one-reply call about one task.
func taskCall(m a2a.Method, params any, taskID string, opts []CallOption) *call {
	o := buildOpts(opts)
	return &call{method: m, params: params, taskID: taskID, target: o.target, opts: o}
}

// GetTask fetches a task from the agent that serves it now (after any
// handover).
func (c *Client) GetTask(ctx context.Context, req *a2a.GetTaskRequest, opts ...CallOption) (*a2a.Task, error) {
	return single(ctx, c, taskCall(a2a.MethodGetTask, req, req.ID, opts), a2a.ParseTaskJSON)
}

// CancelTask cancels a task at the agent that serves it now.
func (c *Client) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest, opts ...CallOption) (*a2a.Task, error) {
	return single(ctx, c, taskCall(a2a.MethodCancelTask, req, req.ID, opts), a2a.ParseTaskJSON)
}

// ListTasks lists an agent's tasks.
func (c *Client) ListTasks(ctx context.Context, req *a2a.ListTasksRequest, opts ...CallOption) (*a2a.ListTasksResponse, error) {
	return single(ctx, c, taskCall(a2a.MethodListTasks, req, "", opts), a2a.ParseListTasksResponseJSON)
}

// GetExtendedAgentCard fetches an agent's extended card.
func (c *Client) GetExtendedAgentCard(ctx context.Context, req *a2a.GetExtendedAgentCardRequest, opts ...CallOption) (*a2a.AgentCard, error) {
	if req == nil {
		req = &a2a.GetExtendedAgentCardRequest{}
	}
	return single(ctx, c, taskCall(a2a.MethodGetExtendedAgentCard, req, "", opts), a2a.ParseAgentCardJSON)
}

// CreateTaskPushNotificationConfig registers a push config for a task.
func (c *Client) CreateTaskPushNotificationConfig(ctx context.Context, req *a2a.TaskPushNotificationConfig, opts ...CallOption) (*a2a.TaskPushNotificationConfig, error) {
	return single(ctx, c, taskCall(a2a.MethodCreateTaskPushNotificationConfig, req, req.TaskID, opts), a2a.ParseTaskPushNotificationConfigJSON)
}

// GetTaskPushNotificationConfig reads a push config of a task.
func (c *Client) GetTaskPushNotificationConfig(ctx context.Context, req *a2a.GetTaskPushNotificationConfigRequest, opts ...CallOption) (*a2a.TaskPushNotificationConfig, error) {
	return single(ctx, c, taskCall(a2a.MethodGetTaskPushNotificationConfig, req, req.TaskID, opts), a2a.ParseTaskPushNotificationConfigJSON)
}

// ListTaskPushNotificationConfigs lists the push configs of a task.
func (c *Client) ListTaskPushNotificationConfigs(ctx context.Context, req *a2a.ListTaskPushNotificationConfigsRequest, opts ...CallOption) (*a2a.ListTaskPushNotificationConfigsResponse, error) {
	return single(ctx, c, taskCall(a2a.MethodListTaskPushNotificationConfigs, req, req.TaskID, opts), a2a.ParseListTaskPushNotificationConfigsResponseJSON)
}

// DeleteTaskPushNotificationConfig deletes a push config of a task; a
// config already gone is no error.
func (c *Client) DeleteTaskPushNotificationConfig(ctx context.Context, req *a2a.DeleteTaskPushNotificationConfigRequest, opts ...CallOption) error {
	_, err := single(ctx, c, taskCall(a2a.MethodDeleteTaskPushNotificationConfig, req, req.TaskID, opts), a2a.ParseEmptyJSON)
	return err
}
