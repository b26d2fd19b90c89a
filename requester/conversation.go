package requester

import (
	"context"
	"iter"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/uuidv4"
)

// Conversation groups turns under one contextId: each new turn is a new
// task, and a task that asked for input is resumed with the same taskId and
// contextId (docs/protocol.md, multi-turn conversations).
type Conversation struct {
	c  *Client
	to Target
	// ContextID is the conversation's contextId.
	ContextID string
}

// NewConversation starts a conversation with an agent or a pool (ignored
// over HTTP) under a fresh contextId (UUIDv4).
func (c *Client) NewConversation(to Target) *Conversation {
	return &Conversation{c: c, to: to, ContextID: uuidv4.New()}
}

// Conversation resumes a conversation whose contextId is known.
func (c *Client) Conversation(to Target, contextID string) *Conversation {
	return &Conversation{c: c, to: to, ContextID: contextID}
}

// Turn sends text as a new turn: a new task in the conversation's context.
func (v *Conversation) Turn(ctx context.Context, text string, opts ...CallOption) (*Result, error) {
	return v.c.SendMessage(ctx, v.request("", text), v.opts(opts)...)
}

// Resume answers a task that asked for input (INPUT_REQUIRED or
// AUTH_REQUIRED): a new message with the same taskId and contextId, sent
// wherever the task is routed now.
func (v *Conversation) Resume(ctx context.Context, taskID, text string, opts ...CallOption) (*Result, error) {
	return v.c.SendMessage(ctx, v.request(taskID, text), v.opts(opts)...)
}

// StreamTurn is Turn with a stream of replies.
func (v *Conversation) StreamTurn(ctx context.Context, text string, opts ...CallOption) iter.Seq2[Item, error] {
	return v.c.SendStreamingMessage(ctx, v.request("", text), v.opts(opts)...)
}

func (v *Conversation) opts(opts []CallOption) []CallOption {
	return append([]CallOption{To(v.to)}, opts...)
}

// request is a message of the conversation; a new turn leaves taskId to
// the client (or, over HTTP, to the server).
func (v *Conversation) request(taskID, text string) *a2a.SendMessageRequest {
	return TextMessage(text, taskID, v.ContextID)
}

// TextMessage returns a SendMessageRequest holding one text part, for
// callers that do not keep a Conversation: a new task when taskID is "",
// a follow-up of that task otherwise. Its message has a fresh UUIDv4
// MessageID and Role ROLE_USER; an empty contextID lets the agent choose
// (see Client.SendMessage for what the client fills on sending).
func TextMessage(text, taskID, contextID string) *a2a.SendMessageRequest {
	// The request, its message and its part are allocated together.
	t := new(struct {
		r    a2a.SendMessageRequest
		m    a2a.Message
		part [1]a2a.Part
	})
	t.part[0].Content = a2a.PartText(text)
	t.m = a2a.Message{MessageID: uuidv4.New(), TaskID: taskID, ContextID: contextID, Role: a2a.RoleUser, Parts: t.part[:]}
	t.r.Message = &t.m
	return &t.r
}
