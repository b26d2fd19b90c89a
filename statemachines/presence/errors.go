package presence

import "errors"

// ErrNotDiscoveryTopic is returned (wrapped, with the topic) by
// Tracker.Ingest for a topic that is not {root}/discovery/{org_id}/{unit_id}/{agent_id}
// under the tracker's root, with valid identifiers. The message is ignored.
var ErrNotDiscoveryTopic = errors.New("presence: not a discovery topic")

// CardError is returned by Tracker.Ingest for a non-empty payload that is not
// an Agent Card. It is not an event of the presence table: the agent's entry
// stays as it was.
type CardError struct {
	// Key is the agent the discovery topic named.
	Key Key
	// Err is what the card decoder returned.
	Err error
}

// Error names the agent and the decoder's reason.
func (e *CardError) Error() string {
	return "presence: agent " + e.Key.String() + ": payload is not an Agent Card: " + e.Err.Error()
}

// Unwrap returns the decoder's error.
func (e *CardError) Unwrap() error { return e.Err }
