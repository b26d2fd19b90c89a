// Package requester is the transport-independent A2A requester: a Client
// with every A2A v1.0 method, over a small Transport interface that
// transport/mqtt and transport/http implement. What the protocol asks of a
// requester lives here once, for every transport (docs/protocol.md §4, §5
// and §9):
//
//   - the retry and timeout profile (statemachines/retry): an attempt that
//     is refused or gets no first reply in time is sent again with the same
//     Task.id and messageId after a jittered backoff, never once a stream
//     item has arrived;
//   - handover (statemachines/handover): the latest a2a-responder-agent-id
//     of a task's replies says where its next operation goes, and a
//     handover target that stays unreachable falls back to the card agent
//     once; with Config.PoolFailover (pools whose members share a task
//     store, docs/protocol.md §4.6.1) a pool member that stays unreachable
//     sends the task back to its pool; routes can be persisted
//     (Config.Routes), the routes of finished tasks are bounded
//     (Config.FinishedRoutes) and those of other tasks forgotten once
//     unused for 7 days (Config.RouteIdleExpiry);
//   - stream stall recovery: a stream idle for longer than the profile
//     allows, or cut before its final item, is recovered with GetTask;
//   - replies decoded into their generated types and checked against the
//     schema on the transport's goroutine, so a result that breaks it is
//     invalid_agent_response, and errors are *a2a.Error identified by
//     token (errors.Is(err, a2a.ErrTaskNotFound)) whatever the binding's
//     error data shape;
//   - the offline profile (docs/protocol.md §7): an agent that is asleep
//     and stored the message (agent_asleep with queued true, in any of its
//     shapes) ends the operation at once with a *Queued error naming the
//     task to poll with GetTask; it is never sent again. agent_asleep with
//     queued false, and asleep_queue_full, are retried as the profile
//     allows, waiting at least the retryAfterSec the agent gave.
//
// Every method takes its generated request type and call options:
//
//	res, err := c.SendMessage(ctx, requester.TextMessage("hello", "", ""), requester.ToAgent("echo"))
//	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: res.Task.ID})
//
// Over MQTT the requester makes Task.id (a UUIDv4) for a new task and To
// names the agent or pool; over HTTP the server makes Task.id, as A2A core
// says, and the client is bound to one endpoint. Client.SendMessage says
// which Message fields the client fills (MessageID, Role, TaskID).
//
// The package example holds a two-turn conversation with an agent over
// HTTP; transport/mqtt's does the same over MQTT. The guide,
// docs/guide.md (https://github.com/a2abind/a2abind/blob/main/docs/guide.md), has both.
package requester
