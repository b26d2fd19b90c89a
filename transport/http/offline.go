package http

import (
	"strconv"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/jsonrpc"
)

// offlineAnswer lays out an answer of the offline profile (docs/protocol.md
// §7.2, §7.4) with its own HTTP status and body when the agent answers so
// (agent.OfflineConfig.Answer, the default): agent_asleep with 503, a
// Retry-After header equal to retryAfterSec when the next window is known,
// and the body {error, message, queued, retryAfterSec, taskId, contextId};
// asleep_queue_full with 507, or 429 for the per-peer cap, and the body
// {error, message, queued: false, kind}. Status 0: not such an answer, or
// the agent answers with JSON-RPC errors (HTTP 200).
func (h *Handler) offlineAnswer(e *a2a.Error) (status int, body []byte, retryAfter []string) {
	if e.Token != a2a.TokenAgentAsleep && e.Token != a2a.TokenAsleepQueueFull {
		return 0, nil, nil
	}
	o := h.srv.Offline()
	if o == nil || o.Answer() != offline.AsleepAnswerHTTPStatus {
		return 0, nil, nil
	}
	// The runtime decided the status (statemachines/reach: 503, 507 or
	// 429) and the details; this lays them out.
	d, _ := jsonrpc.OfflineDetails(e)
	status = e.HTTPStatus
	var err error
	if e.Token == a2a.TokenAgentAsleep {
		b := offline.AsleepResponse{Error: d.Error, Message: e.Message, Queued: d.Queued, RetryAfterSec: d.RetryAfterSec}
		if b.Queued {
			b.TaskID, b.ContextID = d.TaskID, d.ContextID
		}
		if b.RetryAfterSec != nil {
			retryAfter = []string{strconv.Itoa(int(*b.RetryAfterSec))}
		}
		body, err = b.MarshalJSON()
	} else {
		b := offline.QueueFullResponse{Error: d.Error, Message: e.Message, Kind: d.Kind}
		body, err = b.MarshalJSON()
	}
	if err != nil {
		h.log.Error("http: encoding an offline answer", "err", err)
		return 0, nil, nil
	}
	return status, body, retryAfter
}
