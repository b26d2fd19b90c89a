package retry

import (
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// ReplyKind says what a correlated reply is.
type ReplyKind uint8

const (
	// ReplyFinal: a reply or stream item that ends the correlation: the
	// single reply to SendMessage or GetTask, a message item, or a status
	// that is stream-final (statemachines/tasklife.Class.StreamFinal).
	ReplyFinal ReplyKind = iota + 1
	// ReplyItem: a stream item after which more follow.
	ReplyItem
	// ReplyError: a JSON-RPC error reply.
	ReplyError
)

// Reply is a valid correlated reply to one of the operation's attempts.
// Replies with unknown or missing Correlation Data never reach an Operation.
type Reply struct {
	// Kind says what the reply is.
	Kind ReplyKind
	// Attempt is the attempt whose Correlation Data the reply carries, or 0
	// when the caller does not track it.
	Attempt int
	// Token identifies an error reply (ReplyError). Retrying is decided by
	// token, never by code.
	Token a2a.Token
	// Queued is the offline profile's data.queued of an agent_asleep error:
	// the message was stored.
	Queued bool
	// RetryAfter is the offline profile's retryAfterSec of an agent_asleep
	// error, when given: the next attempt waits at least this long.
	RetryAfter time.Duration
	// Responder is the reply's a2a-responder-agent-id, "" when absent. It
	// moves later attempts of a pooled request to that responder's direct
	// topic.
	Responder string
}

// ErrorReply is the Reply for a JSON-RPC error reply e, whatever the
// transport: its token and, from the offline profile's error data
// ({"error", "queued", "retryAfterSec"?}), whether the message was stored
// and how long the next attempt waits at least.
func ErrorReply(e *a2a.Error, responder string) Reply {
	r := Reply{Kind: ReplyError, Token: e.Token, Responder: responder}
	if m, ok := e.Data.(map[string]any); ok {
		r.Queued, _ = m["queued"].(bool)
		if s, ok := m["retryAfterSec"].(float64); ok {
			r.RetryAfter = time.Duration(s * float64(time.Second))
		}
	}
	return r
}
