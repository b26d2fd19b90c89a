package agent

import (
	"context"
	"strconv"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/reach"
)

// reachGate applies the agent's reachability to a message admitted as a new
// task or a resume (docs/protocol.md §7): it reports handled false when the
// message is accepted live; otherwise it refused or queued the message and
// answered the call. The answer says queued only once the record is on
// disk. A message taken from the queue is not gated again.
func (s *Server) reachGate(ctx context.Context, c Call, p *a2a.SendMessageRequest, msg *a2a.Message, sink Sink) (bool, error) {
	o := s.offline
	if o == nil || c.queued != nil {
		return false, nil
	}
	now := s.now()
	d := o.decide(now)
	switch d.Verdict {
	case reach.VerdictAccept:
		return false, nil
	case reach.VerdictRefuse:
		return true, fail(ctx, sink, offlineError(reach.Respond(d, reach.Enqueue{}), inbox.Record{}))
	}
	if o.cfg.RequireCaller && c.Caller.Subject == "" {
		return true, fail(ctx, sink, a2a.NewError(a2a.TokenUnauthenticated,
			"this agent is asleep and queues messages only for authenticated callers"))
	}
	m := *msg
	if m.TaskID == "" {
		m.TaskID = s.newID()
	}
	if m.ContextID == "" {
		m.ContextID = s.newID()
	}
	req := a2a.SendMessageRequest{Tenant: p.Tenant, Message: &m, Configuration: p.Configuration, Metadata: p.Metadata}
	payload, err := req.MarshalJSON()
	if err != nil {
		return true, fail(ctx, sink, a2a.NewError(a2a.TokenInternalError, "encoding the message for the offline queue: "+err.Error()))
	}
	rec := inbox.Record{Peer: c.Caller.Subject, MessageID: m.MessageID, TaskID: m.TaskID, ContextID: m.ContextID,
		Payload: payload, Enqueued: now, Expires: now.Add(o.bounds.RecordTTL)}
	stored, _, full, err := o.cfg.Queue.Enqueue(ctx, rec, o.bounds)
	if err != nil {
		s.log.Error("agent: offline queue: enqueue failed", "task", m.TaskID, "err", err)
	}
	resp := reach.Respond(d, reach.Enqueue{Stored: err == nil && full == "", Full: full})
	return true, fail(ctx, sink, offlineError(resp, stored))
}

// offlineError is the answer to a message not accepted live: agent_asleep
// (queued or not), asleep_queue_full, or internal_error when the queue
// failed. Its HTTPStatus is the one reach.Respond chose (503, 507, 429) and
// its Data an offline.OfflineErrorData: the offline profile's members
// (queued, retryAfterSec, kind) and, for a queued message, the taskId and
// contextId the sender polls with. Transports lay it out
// (docs/protocol.md §7.2; jsonrpc.ToWire, jsonrpc.OfflineDetails).
func offlineError(r reach.Response, stored inbox.Record) *a2a.Error {
	var msg string
	switch r.Token {
	case a2a.TokenAgentAsleep:
		msg = "the agent is asleep and does not queue messages"
		if r.Queued {
			msg = "the agent is asleep: the message is queued as task " + stored.TaskID + " for delivery when it wakes; poll GetTask"
		}
	case a2a.TokenAsleepQueueFull:
		msg = "the agent is asleep and its offline queue is full (" + string(r.Kind) + "): nothing was queued"
	default:
		return a2a.NewError(a2a.TokenInternalError, "the agent is asleep and its offline queue could not store the message")
	}
	d := r.ErrorData()
	if r.Queued {
		d.TaskID, d.ContextID = stored.TaskID, stored.ContextID
	}
	if d.RetryAfterSec != nil {
		msg += "; the next window opens in " + strconv.Itoa(int(*d.RetryAfterSec)) + " s"
	}
	e := a2a.NewError(r.Token, msg)
	e.HTTPStatus = r.HTTPStatus
	e.Data = d
	return e
}
