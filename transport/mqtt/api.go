package mqtt

import (
	"context"
	"errors"
	"iter"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/uuidv4"
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

func buildOpts(opts []CallOption) callOpts {
	var o callOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

// prepare fills in the ids the requester makes in this binding: Task.id
// (UUIDv4) when the message has none, and a messageId.
func prepare(msg *a2a.Message) *a2a.Message {
	m := *msg
	if m.TaskID == "" {
		m.TaskID = uuidv4.New()
	}
	if m.MessageID == "" {
		m.MessageID = uuidv4.New()
	}
	if m.Role == "" {
		m.Role = a2a.RoleUser
	}
	return &m
}

// SendMessage sends a message and waits for the one reply. The requester
// makes the Task.id (a UUIDv4) when msg has none; a message for a task the
// client has routed before goes where the latest a2a-responder-agent-id
// said, whatever to names. Protocol errors come back as *a2a.Error.
func (c *Client) SendMessage(ctx context.Context, to Target, msg *a2a.Message, cfg *a2a.SendMessageConfiguration, opts ...CallOption) (*Result, error) {
	m := prepare(msg)
	r := &request{method: a2a.MethodSendMessage, params: &a2a.SendMessageRequest{Message: m, Configuration: cfg},
		decode: decodeSendMessageResponse, taskID: m.TaskID, contextID: m.ContextID, target: to, opts: buildOpts(opts)}
	var out *Result
	err := c.run(ctx, r, func(rep reply, _ bool) (bool, error) {
		if rep.err != nil {
			return false, rep.invalid()
		}
		resp := rep.value.(*a2a.SendMessageResponse)
		out = &Result{Responder: rep.responder}
		switch p := resp.Payload.(type) {
		case *a2a.Task:
			out.Task = p
		case *a2a.Message:
			out.Message = p
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
// terminal or interrupted status (stream-final for this correlation).
// Duplicate QoS 1 deliveries are dropped. A stream that stalls for longer
// than the profile's stream idle timeout is never republished: the client
// recovers with GetTask and yields the task as the last item.
func (c *Client) SendStreamingMessage(ctx context.Context, to Target, msg *a2a.Message, cfg *a2a.SendMessageConfiguration, opts ...CallOption) iter.Seq2[Item, error] {
	m := prepare(msg)
	r := &request{method: a2a.MethodSendStreamingMessage, params: &a2a.SendMessageRequest{Message: m, Configuration: cfg},
		decode: decodeStreamResponse, taskID: m.TaskID, contextID: m.ContextID, target: to, streaming: true, opts: buildOpts(opts)}
	return c.stream(ctx, r)
}

// SubscribeToTask streams the events of a live task.
func (c *Client) SubscribeToTask(ctx context.Context, taskID string, to Target, opts ...CallOption) iter.Seq2[Item, error] {
	r := &request{method: a2a.MethodSubscribeToTask, params: &a2a.SubscribeToTaskRequest{ID: taskID},
		decode: decodeStreamResponse, taskID: taskID, target: to, streaming: true, opts: buildOpts(opts)}
	return c.stream(ctx, r)
}

func (c *Client) stream(ctx context.Context, r *request) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		stopped := false
		err := c.run(ctx, r, func(rep reply, _ bool) (bool, error) {
			if rep.err != nil {
				return false, rep.invalid()
			}
			item := rep.value.(*a2a.StreamResponse)
			if !yield(Item{StreamResponse: *item, Responder: rep.responder}, nil) {
				stopped = true
				return false, nil
			}
			return true, nil
		})
		if stopped {
			return
		}
		if errors.Is(err, errStalled) {
			task, gerr := c.GetTask(ctx, r.taskID, nil, Target{})
			if gerr != nil {
				yield(Item{}, gerr)
				return
			}
			yield(Item{StreamResponse: a2a.StreamResponse{Payload: task}}, nil)
			return
		}
		if err != nil {
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
func single[T any](ctx context.Context, c *Client, r *request, parse func([]byte) (*T, error)) (*T, error) {
	r.decode = decodeWith(parse)
	var out *T
	err := c.run(ctx, r, func(rep reply, _ bool) (bool, error) {
		if rep.err != nil {
			return false, rep.invalid()
		}
		out = rep.value.(*T)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetTask fetches a task from the agent that serves it now (after any
// handover); to names the agent for a task the client never routed.
func (c *Client) GetTask(ctx context.Context, taskID string, historyLength *int32, to Target, opts ...CallOption) (*a2a.Task, error) {
	return single(ctx, c, &request{method: a2a.MethodGetTask, params: &a2a.GetTaskRequest{ID: taskID, HistoryLength: historyLength},
		taskID: taskID, target: to, opts: buildOpts(opts)}, a2a.ParseTaskJSON)
}

// CancelTask cancels a task at the agent that serves it now.
func (c *Client) CancelTask(ctx context.Context, taskID string, to Target, opts ...CallOption) (*a2a.Task, error) {
	return single(ctx, c, &request{method: a2a.MethodCancelTask, params: &a2a.CancelTaskRequest{ID: taskID},
		taskID: taskID, target: to, opts: buildOpts(opts)}, a2a.ParseTaskJSON)
}

// ListTasks lists an agent's tasks.
func (c *Client) ListTasks(ctx context.Context, agentID string, req *a2a.ListTasksRequest, opts ...CallOption) (*a2a.ListTasksResponse, error) {
	return single(ctx, c, &request{method: a2a.MethodListTasks, params: req, target: Target{Agent: agentID}, opts: buildOpts(opts)},
		a2a.ParseListTasksResponseJSON)
}

// GetExtendedAgentCard fetches an agent's extended card.
func (c *Client) GetExtendedAgentCard(ctx context.Context, agentID string, opts ...CallOption) (*a2a.AgentCard, error) {
	return single(ctx, c, &request{method: a2a.MethodGetExtendedAgentCard, params: &a2a.GetExtendedAgentCardRequest{},
		target: Target{Agent: agentID}, opts: buildOpts(opts)}, a2a.ParseAgentCardJSON)
}

// CreateTaskPushNotificationConfig registers a push config for a task.
func (c *Client) CreateTaskPushNotificationConfig(ctx context.Context, cfg *a2a.TaskPushNotificationConfig, to Target, opts ...CallOption) (*a2a.TaskPushNotificationConfig, error) {
	return single(ctx, c, &request{method: a2a.MethodCreateTaskPushNotificationConfig, params: cfg, taskID: cfg.TaskID, target: to, opts: buildOpts(opts)},
		a2a.ParseTaskPushNotificationConfigJSON)
}

// GetTaskPushNotificationConfig reads a push config of a task.
func (c *Client) GetTaskPushNotificationConfig(ctx context.Context, taskID, id string, to Target, opts ...CallOption) (*a2a.TaskPushNotificationConfig, error) {
	return single(ctx, c, &request{method: a2a.MethodGetTaskPushNotificationConfig,
		params: &a2a.GetTaskPushNotificationConfigRequest{TaskID: taskID, ID: id}, taskID: taskID, target: to, opts: buildOpts(opts)},
		a2a.ParseTaskPushNotificationConfigJSON)
}

// ListTaskPushNotificationConfigs lists the push configs of a task.
func (c *Client) ListTaskPushNotificationConfigs(ctx context.Context, taskID string, to Target, opts ...CallOption) (*a2a.ListTaskPushNotificationConfigsResponse, error) {
	return single(ctx, c, &request{method: a2a.MethodListTaskPushNotificationConfigs,
		params: &a2a.ListTaskPushNotificationConfigsRequest{TaskID: taskID}, taskID: taskID, target: to, opts: buildOpts(opts)},
		a2a.ParseListTaskPushNotificationConfigsResponseJSON)
}

// DeleteTaskPushNotificationConfig deletes a push config of a task.
func (c *Client) DeleteTaskPushNotificationConfig(ctx context.Context, taskID, id string, to Target, opts ...CallOption) error {
	_, err := single(ctx, c, &request{method: a2a.MethodDeleteTaskPushNotificationConfig,
		params: &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: taskID, ID: id}, taskID: taskID, target: to, opts: buildOpts(opts)},
		a2a.ParseEmptyJSON)
	return err
}

// Conversation groups turns under one contextId (seed 004): each new turn
// is a new task, and a task that asked for input is resumed with the same
// ids.
type Conversation struct {
	c         *Client
	to        Target
	ContextID string
}

// NewConversation starts a conversation with an agent or a pool under a
// fresh contextId (UUIDv4).
func (c *Client) NewConversation(to Target) *Conversation {
	return &Conversation{c: c, to: to, ContextID: uuidv4.New()}
}

// Conversation resumes a conversation whose contextId is known.
func (c *Client) Conversation(to Target, contextID string) *Conversation {
	return &Conversation{c: c, to: to, ContextID: contextID}
}

// Turn sends text as a new turn: a new task in the conversation's context.
func (v *Conversation) Turn(ctx context.Context, text string, opts ...CallOption) (*Result, error) {
	return v.c.SendMessage(ctx, v.to, v.message(uuidv4.New(), text), nil, opts...)
}

// Resume answers a task that asked for input (INPUT_REQUIRED or
// AUTH_REQUIRED): a new message with the same taskId and contextId, sent
// wherever the task is routed now.
func (v *Conversation) Resume(ctx context.Context, taskID, text string, opts ...CallOption) (*Result, error) {
	return v.c.SendMessage(ctx, v.to, v.message(taskID, text), nil, opts...)
}

// StreamTurn is Turn with a stream of replies.
func (v *Conversation) StreamTurn(ctx context.Context, text string, opts ...CallOption) iter.Seq2[Item, error] {
	return v.c.SendStreamingMessage(ctx, v.to, v.message(uuidv4.New(), text), nil, opts...)
}

func (v *Conversation) message(taskID, text string) *a2a.Message {
	return &a2a.Message{MessageID: uuidv4.New(), TaskID: taskID, ContextID: v.ContextID, Role: a2a.RoleUser,
		Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
}
