package taskstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/generated/a2a"
)

// SealSecrets has a Bolt store seal the secrets of the push-notification
// configs it writes with keys (AES-256-GCM, package sealed): each config's
// token and authentication credentials are stored sealed with the ring's
// current key, bound to the task, the config id, its URL and its
// authentication scheme, and opened with whichever key of the ring sealed
// them when read. The rest of the record is stored as before: the task
// (its messages are the caller's content, not credentials), the configs'
// URLs and schemes, the principal.
//
// A store without it writes the secrets in clear. Records written in clear
// before a ring was given are read as they are, and sealed on their next
// write; records sealed with a key the ring no longer holds, or read by a
// store without a ring, are an error naming the task (sealed.ErrUnknownKey,
// ErrNoKeys), never configs without their secrets. The Memory store keeps
// nothing at rest and ignores it (docs/guide.md, "Secrets at rest").
func SealSecrets(keys *sealed.Ring) Option { return func(c *config) { c.keys = keys } }

// ErrNoKeys is matched (errors.Is) by the error of a read of a record
// whose push-config secrets are sealed, by a store given no key ring.
var ErrNoKeys = errors.New("taskstore: the record's push-config secrets are sealed and the store has no key ring")

// pushSecrets are the secrets of one push-notification config, sealed.
type pushSecrets struct {
	Token       string `json:"token,omitempty"`
	Credentials string `json:"credentials,omitempty"`
}

// pushAAD binds the secrets of a config to where they belong: the task,
// the config's id, URL and authentication scheme. Secrets moved to another
// config, or a config whose URL was changed in the store to send them
// elsewhere, do not open.
func pushAAD(taskID string, c *a2a.TaskPushNotificationConfig) []byte {
	scheme := "\x00" // no authentication
	if c.Authentication != nil {
		scheme = c.Authentication.Scheme
	}
	return sealed.AAD("a2abind/taskstore/push/v1", taskID, c.ID, c.URL, scheme)
}

// SealPushSecrets returns copies of the push-notification configs cs of
// the task taskID without their secrets (Token, and Authentication's
// Credentials), and those secrets sealed with keys: one value per config,
// nil for a config with neither. With keys nil it returns cs and nil. The
// stores of this module (Bolt, and pgstore) keep configs so, and
// OpenPushSecrets reverses it.
func SealPushSecrets(keys *sealed.Ring, taskID string, cs []a2a.TaskPushNotificationConfig) ([]a2a.TaskPushNotificationConfig, [][]byte, error) {
	if keys == nil || len(cs) == 0 {
		return cs, nil, nil
	}
	out := make([]a2a.TaskPushNotificationConfig, len(cs))
	var secrets [][]byte
	for i := range cs {
		c := cs[i]
		s := pushSecrets{Token: c.Token}
		if c.Authentication != nil {
			s.Credentials = c.Authentication.Credentials
		}
		if s == (pushSecrets{}) {
			out[i] = c
			continue
		}
		plain, err := json.Marshal(s)
		if err != nil {
			return nil, nil, err
		}
		v, err := keys.Seal(plain, pushAAD(taskID, &c))
		if err != nil {
			return nil, nil, err
		}
		if secrets == nil {
			secrets = make([][]byte, len(cs))
		}
		secrets[i] = v
		c.Token = ""
		if c.Authentication != nil {
			c.Authentication = &a2a.AuthenticationInfo{Scheme: c.Authentication.Scheme}
		}
		out[i] = c
	}
	return out, secrets, nil
}

// OpenPushSecrets returns the configs cs of the task taskID with the
// secrets SealPushSecrets sealed put back. cs is not changed. With no
// sealed secrets it returns cs as they are, whatever keys; with some, it
// returns an error matching ErrNoKeys when keys is nil, and the errors of
// sealed.Ring.Open (sealed.ErrUnknownKey, sealed.ErrOpen) when a value
// does not open.
func OpenPushSecrets(keys *sealed.Ring, taskID string, cs []a2a.TaskPushNotificationConfig, secrets [][]byte) ([]a2a.TaskPushNotificationConfig, error) {
	if len(secrets) == 0 {
		return cs, nil
	}
	if len(secrets) != len(cs) {
		return nil, fmt.Errorf("taskstore: task %s: %d sealed push-config secrets for %d configs", taskID, len(secrets), len(cs))
	}
	if keys == nil {
		return nil, fmt.Errorf("%w (task %s)", ErrNoKeys, taskID)
	}
	out := make([]a2a.TaskPushNotificationConfig, len(cs))
	copy(out, cs)
	for i, v := range secrets {
		if v == nil {
			continue
		}
		c := &out[i]
		plain, err := keys.Open(v, pushAAD(taskID, c))
		if err != nil {
			return nil, fmt.Errorf("taskstore: task %s: push config %s: %w", taskID, c.ID, err)
		}
		var s pushSecrets
		if err := json.Unmarshal(plain, &s); err != nil {
			return nil, fmt.Errorf("taskstore: task %s: push config %s: sealed secrets: %w", taskID, c.ID, err)
		}
		c.Token = s.Token
		if c.Authentication != nil {
			c.Authentication = &a2a.AuthenticationInfo{Scheme: c.Authentication.Scheme, Credentials: s.Credentials}
		} else if s.Credentials != "" {
			return nil, fmt.Errorf("taskstore: task %s: push config %s: sealed credentials for a config without authentication", taskID, c.ID)
		}
	}
	return out, nil
}

// StalePushSecrets reports whether push configs stored as SealPushSecrets
// left them (cs and secrets) are to be sealed again with keys: a config
// holds a secret in clear, or a secret is sealed with a key other than
// the current one. The stores use it to re-seal what they hold (Bolt's
// Reseal, and pgstore's).
func StalePushSecrets(keys *sealed.Ring, cs []a2a.TaskPushNotificationConfig, secrets [][]byte) bool {
	if keys == nil {
		return false
	}
	for i := range cs {
		if cs[i].Token != "" || cs[i].Authentication != nil && cs[i].Authentication.Credentials != "" {
			return true
		}
	}
	for _, v := range secrets {
		if v == nil {
			continue
		}
		if id, err := sealed.KeyID(v); err != nil || id != keys.Current() {
			return true
		}
	}
	return false
}

// ResealPushSecrets returns the push configs cs of the task taskID and
// their secrets, stored as SealPushSecrets left them, sealed again with
// keys when StalePushSecrets says so (changed true): opened with whichever
// key of the ring sealed them, and sealed with its current one. With keys
// nil, or nothing stale, it returns cs and secrets as they are. The
// stores call it on every write of a task's push configs, so that secrets
// in clear or sealed with an older key are not left so.
func ResealPushSecrets(keys *sealed.Ring, taskID string, cs []a2a.TaskPushNotificationConfig, secrets [][]byte) (configs []a2a.TaskPushNotificationConfig, sealedSecrets [][]byte, changed bool, err error) {
	if keys == nil || !StalePushSecrets(keys, cs, secrets) {
		return cs, secrets, false, nil
	}
	open, err := OpenPushSecrets(keys, taskID, cs, secrets)
	if err != nil {
		return nil, nil, false, err
	}
	if configs, sealedSecrets, err = SealPushSecrets(keys, taskID, open); err != nil {
		return nil, nil, false, err
	}
	return configs, sealedSecrets, true, nil
}
