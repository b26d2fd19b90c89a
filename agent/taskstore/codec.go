package taskstore

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/generated/a2a"
)

// wireOf is the stored form of a Record, its task as T. With a key ring
// (SealSecrets) the push configs are stored without their secrets, which
// PushSecrets holds sealed, one value per config (null for a config with
// none; SealPushSecrets); without one, or in a record written before the
// ring was given, PushSecrets is absent and the configs hold their
// secrets.
type wireOf[T any] struct {
	Task       T         `json:"task"`
	MessageIDs []string  `json:"messageIds,omitempty"`
	Owner      string    `json:"owner,omitempty"`
	Principal  string    `json:"principal,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// The push-notification configs and their delivery reports.
	PushConfigs    []a2a.TaskPushNotificationConfig `json:"pushConfigs,omitempty"`
	PushDeliveries []PushDelivery                   `json:"pushDeliveries,omitempty"`
	PushSecrets    [][]byte                         `json:"pushSecrets,omitempty"`
}

// wire is the stored form of a Record.
type wire = wireOf[a2a.Task]

// wireKeepingTask is the stored form of a Record with the task left
// encoded: a change of the bookkeeping rewrites the value without decoding
// the task.
type wireKeepingTask = wireOf[json.RawMessage]

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

// needsSeal reports whether a stored record holds push-config secrets in
// clear, or sealed with a key other than the current one of keys.
func needsSeal(b []byte, keys *sealed.Ring) bool {
	if !bytes.Contains(b, []byte(`"pushConfigs"`)) {
		return false
	}
	var w struct {
		PushConfigs []a2a.TaskPushNotificationConfig `json:"pushConfigs"`
		PushSecrets [][]byte                         `json:"pushSecrets"`
	}
	if json.Unmarshal(b, &w) != nil {
		return false
	}
	return StalePushSecrets(keys, w.PushConfigs, w.PushSecrets)
}

// encode is the stored form of r, its push-config secrets sealed with
// keys (none: in clear).
func encode(r Record, keys *sealed.Ring) ([]byte, error) {
	cs, secrets, err := SealPushSecrets(keys, r.Task.ID, r.PushConfigs)
	if err != nil {
		return nil, err
	}
	return json.Marshal(wire{Task: r.Task, MessageIDs: r.MessageIDs, Owner: r.Owner, Principal: r.Principal,
		Created: r.Created, Updated: r.Updated, PushConfigs: cs, PushDeliveries: r.PushDeliveries, PushSecrets: secrets})
}

// decode reads a stored record, opening its push-config secrets with keys.
func decode(b []byte, keys *sealed.Ring) (Record, error) {
	r, secrets, err := decodeSealed(b)
	if err != nil {
		return Record{}, err
	}
	if r.PushConfigs, err = OpenPushSecrets(keys, r.Task.ID, r.PushConfigs, secrets); err != nil {
		return Record{}, err
	}
	return r, nil
}

// decodeSealed reads a stored record without opening its push-config
// secrets: what the indexes need.
func decodeSealed(b []byte) (Record, [][]byte, error) {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return Record{}, nil, err
	}
	return Record{Task: w.Task, MessageIDs: w.MessageIDs, Owner: w.Owner, Principal: w.Principal, Created: w.Created, Updated: w.Updated,
		PushConfigs: w.PushConfigs, PushDeliveries: w.PushDeliveries}, w.PushSecrets, nil
}
