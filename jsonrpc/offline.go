package jsonrpc

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
)

/*
OfflineDetails reads the details of an offline-profile error (agent_asleep,
asleep_queue_full; docs/protocol.md §7.2 and §7.4): queued, retryAfterSec,
kind, taskId and contextId, whichever form e.Data has:

  - the offline object {"error": token, "queued": true, "retryAfterSec":
    1800, …} (MQTT, and the HTTP transport's reading of an offline body),
    its values JSON booleans, numbers and strings;
  - the A2A v1.0 ErrorInfo array (HTTP JSON-RPC), its metadata values
    strings ("queued": "true", "retryAfterSec": "1800");
  - an offline.OfflineErrorData.

ok is false when e is not an offline-profile error; a detail that is
absent or malformed is left at its zero value (RetryAfterSec nil). The
returned Error is e's token.
*/
func OfflineDetails(e *a2a.Error) (d offline.OfflineErrorData, ok bool) {
	if e == nil {
		return d, false
	}
	if info, known := e.Token.Info(); !known || info.Data != a2a.DataOffline {
		return d, false
	}
	d.Error = string(e.Token)
	switch data := e.Data.(type) {
	case offline.OfflineErrorData:
		data.Error = d.Error
		return data, true
	case *offline.OfflineErrorData:
		if data != nil {
			c := *data
			c.Error = d.Error
			return c, true
		}
	case map[string]any:
		readOffline(&d, data)
	case []any:
		reason := strings.ToUpper(string(e.Token))
		for _, item := range data {
			m, isMap := item.(map[string]any)
			if !isMap || !strings.EqualFold(stringOf(m["reason"]), reason) {
				continue
			}
			if md, isMap := m["metadata"].(map[string]any); isMap {
				readOffline(&d, md)
			}
			break
		}
	}
	return d, true
}

// readOffline reads the offline details from m, values as JSON decodes
// them or as ErrorInfo metadata strings.
func readOffline(d *offline.OfflineErrorData, m map[string]any) {
	switch v := m["queued"].(type) {
	case bool:
		d.Queued = v
	case string:
		d.Queued, _ = strconv.ParseBool(v)
	}
	if s, ok := seconds(m["retryAfterSec"]); ok {
		d.RetryAfterSec = &s
	}
	d.Kind = offline.QueueFullKind(stringOf(m["kind"]))
	d.TaskID = stringOf(m["taskId"])
	d.ContextID = stringOf(m["contextId"])
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// seconds reads a non-negative whole number of seconds, bounded to what
// retryAfterSec carries (a 32-bit integer).
func seconds(v any) (int32, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = g
	case string:
		g, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, false
		}
		f = g
	default:
		return 0, false
	}
	if math.IsNaN(f) || f < 0 || f != math.Trunc(f) {
		return 0, false
	}
	return int32(min(f, math.MaxInt32)), true
}
