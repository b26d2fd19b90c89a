package taskstore

import (
	"encoding/json"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// wire is the stored form of a Record.
type wire struct {
	Task       a2a.Task  `json:"task"`
	MessageIDs []string  `json:"messageIds,omitempty"`
	Owner      string    `json:"owner,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// The push-notification configs and their delivery reports.
	PushConfigs    []a2a.TaskPushNotificationConfig `json:"pushConfigs,omitempty"`
	PushDeliveries []PushDelivery                   `json:"pushDeliveries,omitempty"`
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
