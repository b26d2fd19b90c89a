package taskstore

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// wire is the stored form of a Record.
type wire struct {
	Task       a2a.Task  `json:"task"`
	MessageIDs []string  `json:"messageIds,omitempty"`
	Owner      string    `json:"owner,omitempty"`
	Principal  string    `json:"principal,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// The push-notification configs and their delivery reports.
	PushConfigs    []a2a.TaskPushNotificationConfig `json:"pushConfigs,omitempty"`
	PushDeliveries []PushDelivery                   `json:"pushDeliveries,omitempty"`
}

// wireKeepingTask is the stored form of a Record with the task left
// encoded: a change of the bookkeeping rewrites the value without decoding
// the task.
type wireKeepingTask struct {
	Task           json.RawMessage                  `json:"task"`
	MessageIDs     []string                         `json:"messageIds,omitempty"`
	Owner          string                           `json:"owner,omitempty"`
	Principal      string                           `json:"principal,omitempty"`
	Created        time.Time                        `json:"created"`
	Updated        time.Time                        `json:"updated"`
	PushConfigs    []a2a.TaskPushNotificationConfig `json:"pushConfigs,omitempty"`
	PushDeliveries []PushDelivery                   `json:"pushDeliveries,omitempty"`
}

// pushConfigIDs returns the ids of the push-notification configs of a
// stored record, without decoding the rest when it has none.
func pushConfigIDs(b []byte) []string {
	if !bytes.Contains(b, []byte(`"pushConfigs"`)) {
		return nil
	}
	var w struct {
		PushConfigs []struct {
			ID string `json:"id"`
		} `json:"pushConfigs"`
	}
	if json.Unmarshal(b, &w) != nil {
		return nil
	}
	ids := make([]string, len(w.PushConfigs))
	for i, c := range w.PushConfigs {
		ids[i] = c.ID
	}
	return ids
}

func encode(r Record) ([]byte, error) {
	return json.Marshal(wire(r))
}

func decode(b []byte) (Record, error) {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return Record{}, err
	}
	return Record(w), nil
}
