package http

import (
	"net/http"
	"strconv"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
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
	data, _ := e.Data.(map[string]any)
	var err error
	if e.Token == a2a.TokenAgentAsleep {
		b := offline.AsleepResponse{Error: string(e.Token), Message: e.Message}
		b.Queued, _ = data["queued"].(bool)
		if b.Queued {
			b.TaskID, _ = data["taskId"].(string)
			b.ContextID, _ = data["contextId"].(string)
		}
		if n, ok := data["retryAfterSec"].(int64); ok {
			sec := int32(min(max(n, 0), 1<<31-1))
			b.RetryAfterSec = &sec
			retryAfter = []string{strconv.Itoa(int(sec))}
		}
		body, err = b.MarshalJSON()
		status = http.StatusServiceUnavailable
	} else {
		b := offline.QueueFullResponse{Error: string(e.Token), Message: e.Message}
		kind, _ := data["kind"].(string)
		b.Kind = offline.QueueFullKind(kind)
		body, err = b.MarshalJSON()
		status = http.StatusInsufficientStorage
		if b.Kind == offline.QueueFullKindPeer {
			status = http.StatusTooManyRequests
		}
	}
	if err != nil {
		h.log.Error("http: encoding an offline answer", "err", err)
		return 0, nil, nil
	}
	return status, body, retryAfter
}
