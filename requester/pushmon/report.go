package pushmon

import (
	"encoding/json"
	"math"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// DeliveryReportKey is the Task.metadata key under which an a2abind agent
// records what became of each push-notification config of the task: an
// object keyed by config id, each value a DeliveryReport. The Monitor
// gives every config it registers an id (a UUID) and reads the report
// under that id, or under the id the registration's answer names.
const DeliveryReportKey = "https://a2abind.dev/extensions/push-delivery/v1"

// The delivery states an agent reports (DeliveryReport.State).
const (
	// ReportDelivered: the webhook acknowledged a push (2xx).
	ReportDelivered = "delivered"
	// ReportFailing: pushes fail (5xx, timeouts, refused connections) and
	// are retried.
	ReportFailing = "failing"
	// ReportDead: the webhook answered 404, 410 or another 4xx, or retries
	// ran out; nothing more is sent to it.
	ReportDead = "dead"
	// ReportRefused: the agent will not deliver to the URL (its policy
	// forbids the address).
	ReportRefused = "refused"
	// ReportOverflow: the config's queue at the agent was full and pushes
	// were dropped (Dropped counts them); later ones are still sent.
	ReportOverflow = "overflow"
)

// DeliveryReport is what the agent says about one push-notification
// config.
type DeliveryReport struct {
	// State is one of the Report* states.
	State string
	// Status is the webhook's last HTTP status (0 when it gave none).
	Status int
	// Reason says why, in a few words.
	Reason string
	// Dropped counts the pushes dropped by overflow so far.
	Dropped int
	// At is when it happened (zero when absent or not RFC 3339).
	At time.Time
}

// DeliveryReports reads the delivery reports of a task's metadata, by
// config id (nil when there are none). Members of the wrong type read as
// their zero value; a report without a state is left out.
func DeliveryReports(t *a2a.Task) map[string]DeliveryReport {
	if t == nil {
		return nil
	}
	all, _ := t.Metadata[DeliveryReportKey].(map[string]any)
	var out map[string]DeliveryReport
	for id, v := range all {
		o, _ := v.(map[string]any)
		state, _ := o["state"].(string)
		if state == "" {
			continue
		}
		r := DeliveryReport{State: state, Status: intOf(o["status"]), Dropped: intOf(o["dropped"])}
		r.Reason, _ = o["reason"].(string)
		if at, ok := o["at"].(string); ok {
			r.At, _ = time.Parse(time.RFC3339Nano, at)
		}
		if out == nil {
			out = map[string]DeliveryReport{}
		}
		out[id] = r
	}
	return out
}

// intOf reads a JSON number decoded into any.
func intOf(v any) int {
	switch n := v.(type) {
	case float64:
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return int(n)
		}
	case int:
		return n
	case int64:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}
