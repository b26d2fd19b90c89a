package agent

import (
	"context"
	"errors"
	"strings"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
)

// Handler serves the turns of an agent's tasks. ServeTurn runs in its own
// goroutine, one per turn; its context ends when the task is canceled or the
// server closes.
type Handler interface {
	ServeTurn(ctx context.Context, t *Turn) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *Turn) error

// ServeTurn calls f.
func (f HandlerFunc) ServeTurn(ctx context.Context, t *Turn) error { return f(ctx, t) }

// ErrTurnEnded is returned by Turn methods called after the turn ended: the
// task reached a terminal state or asked for input, or the task was
// canceled.
var ErrTurnEnded = errors.New("agent: the turn has ended")

// Turn is one message delivered to a handler, and the way to answer it.
// Its methods are safe to call from the handler's goroutine only. The
// status messages they make (Working, AskInput, Complete, ...) carry a new
// MessageID, Role ROLE_AGENT and the task's TaskID and ContextID; the
// handler gives only the text.
type Turn struct {
	// Task is the task as it stood when the turn started (SUBMITTED for a
	// new task, WORKING for a resumed one), history included.
	Task a2a.Task
	// Message is the message of this turn.
	Message a2a.Message
	// Resumed is set when the message resumes a task that asked for input
	// or authentication.
	Resumed bool
	// Caller is who sent the message, as the transport and the verifier
	// established it.
	Caller Caller

	run *run
	// queued is set when the message was taken from the offline queue.
	queued *QueuedMessage
	// prior are the ids of the context's other tasks when the turn
	// started, oldest first.
	prior []string
}

// Queued reports whether the turn's message was taken from the offline
// queue (docs/protocol.md §7), and returns how it was queued and the replay
// key it was validated under. Such a message was validated at dequeue, but
// it was sent while the agent slept: a handler must not take a
// consequential step (a payment, a disclosure, an irreversible change)
// only because it was delivered, and should be idempotent on the replay
// key (delivery is at most once per key, docs/protocol.md §7.7).
func (t *Turn) Queued() (QueuedMessage, bool) {
	if t.queued == nil {
		return QueuedMessage{}, false
	}
	return *t.queued, true
}

// ContextTasks returns the other tasks of the turn's context as they are
// now, oldest first: the conversation so far. They are read from the store
// when asked for, so a long context costs nothing to a turn that does not
// look at it.
func (t *Turn) ContextTasks(ctx context.Context) ([]a2a.Task, error) {
	out := make([]a2a.Task, 0, len(t.prior))
	for _, id := range t.prior {
		r, err := t.run.s.store.Get(ctx, id)
		if errors.Is(err, taskstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.Task)
	}
	return out, nil
}

// TaskID returns the task's id.
func (t *Turn) TaskID() string { return t.Task.ID }

// ContextID returns the task's context id.
func (t *Turn) ContextID() string { return t.Task.ContextID }

// Text returns the text parts of the turn's message, joined by newlines.
func (t *Turn) Text() string { return TextOf(&t.Message) }

// Working reports progress: a WORKING status, with an optional message.
func (t *Turn) Working(ctx context.Context, text string) error {
	return t.run.status(ctx, a2a.TaskStateWorking, text)
}

// ArtifactOptions says how an artifact sent with Turn.Artifact relates to
// the artifacts sent before it; they become the TaskArtifactUpdateEvent's
// append and lastChunk (A2A v1.0 §4.2.2). The zero value sends a new
// artifact, with more chunks to come.
//
// A whole artifact in one piece:
//
//	t.Artifact(ctx, a, agent.ArtifactOptions{LastChunk: true})
//
// An artifact streamed in chunks, all with the same ArtifactID:
//
//	t.Artifact(ctx, chunk, agent.ArtifactOptions{Append: i > 0, LastChunk: i == n-1})
type ArtifactOptions struct {
	// Append adds the artifact's parts to the artifact of the same
	// ArtifactID sent earlier in the task, instead of adding a new
	// artifact. Without an earlier one the artifact is added.
	Append bool
	// LastChunk marks the final chunk of the artifact: no more parts will
	// be appended to it.
	LastChunk bool
}

// Artifact emits an artifact (a TaskArtifactUpdateEvent) and adds it to the
// task, as opts says (a new artifact or more parts of an earlier one; the
// last chunk or not). The artifact is checked against its schema first: an
// invalid one is an error and nothing is sent.
func (t *Turn) Artifact(ctx context.Context, a a2a.Artifact, opts ArtifactOptions) error {
	return t.run.artifact(ctx, a, opts.Append, opts.LastChunk)
}

// AskInput ends the turn with INPUT_REQUIRED and a question for the user.
// The task resumes when the requester sends a new message with the same
// taskId and contextId.
func (t *Turn) AskInput(ctx context.Context, question string) error {
	return t.run.status(ctx, a2a.TaskStateInputRequired, question)
}

// AskAuth ends the turn with AUTH_REQUIRED and a message saying what is
// needed.
func (t *Turn) AskAuth(ctx context.Context, text string) error {
	return t.run.status(ctx, a2a.TaskStateAuthRequired, text)
}

// Complete ends the task successfully, with an optional closing message.
func (t *Turn) Complete(ctx context.Context, text string) error {
	return t.run.status(ctx, a2a.TaskStateCompleted, text)
}

// Fail ends the task as FAILED with a reason.
func (t *Turn) Fail(ctx context.Context, reason string) error {
	return t.run.status(ctx, a2a.TaskStateFailed, reason)
}

// Reject ends the task as REJECTED: the agent will not do it.
func (t *Turn) Reject(ctx context.Context, reason string) error {
	return t.run.status(ctx, a2a.TaskStateRejected, reason)
}

// Handover hands the task over to another agent (docs/protocol.md §9): every
// later reply and stream item of this turn carries a2a-responder-agent-id =
// agentID, the store records the new owner, and requesters send follow-ups
// to that agent, which must serve the same store. The task id never changes.
//
// Only the MQTT binding can tell a requester about a new responder. In a
// turn started over HTTP (a binding where the server makes task ids, as in
// A2A core) Handover returns ErrNoHandover and changes nothing: the handler
// keeps the task, and follow-ups come back to the same endpoint.
func (t *Turn) Handover(ctx context.Context, agentID string) error {
	return t.run.handover(ctx, agentID)
}

// ErrNoHandover is returned by Turn.Handover in a turn whose call came over
// a binding that cannot name a new responder (HTTP).
var ErrNoHandover = errors.New("agent: this binding cannot hand a task over: no reply can name a new responder")

// State returns the task's current state.
func (t *Turn) State() a2a.TaskState {
	t.run.mu.Lock()
	defer t.run.mu.Unlock()
	return t.run.task.Status.State
}

// Verifier checks the bearer token of a request, including its expiry,
// issuer, audience and scopes, and returns the caller it stands for. An
// error that is an *a2a.Error (a2a.ErrUnauthenticated,
// a2a.ErrPermissionDenied) is answered as is; any other error as
// unauthenticated. The token is never echoed.
type Verifier interface {
	Verify(ctx context.Context, token string, method a2a.Method) (Caller, error)
}

// VerifierFunc adapts a function to Verifier.
type VerifierFunc func(ctx context.Context, token string, method a2a.Method) (Caller, error)

// Verify calls f.
func (f VerifierFunc) Verify(ctx context.Context, token string, method a2a.Method) (Caller, error) {
	return f(ctx, token, method)
}

// Caller is the identity behind a request.
type Caller struct {
	// Subject identifies the caller (a verified token subject, or the
	// transport's own identity of the peer); "" when anonymous. The tasks
	// a call creates are its Subject's, which alone sees them; those
	// created by anonymous calls are everyone's (docs/protocol.md §15).
	Subject string
	// Scopes are the verified scopes of the caller's token.
	Scopes []string
}

// TextOf joins the text parts of a message with newlines, in time linear
// in their length; it is "" for a nil message (a status without one).
func TextOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	n, texts := 0, 0
	for _, p := range m.Parts {
		if tx, ok := p.Content.(a2a.PartText); ok {
			n += len(tx)
			texts++
		}
	}
	switch texts {
	case 0:
		return ""
	case 1:
		for _, p := range m.Parts {
			if tx, ok := p.Content.(a2a.PartText); ok {
				return string(tx)
			}
		}
	}
	var b strings.Builder
	b.Grow(n + texts - 1)
	for _, p := range m.Parts {
		if tx, ok := p.Content.(a2a.PartText); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(string(tx))
		}
	}
	return b.String()
}
