package presence

import "github.com/a2abind/a2abind/generated/fsm"

// Status is an agent's liveness as the discovery subscriber knows it.
type Status uint8

const (
	// StatusUnknown: no card with a readable a2a-status has been recorded for
	// the agent, or the agent is not registered (never seen, or unregistered).
	StatusUnknown Status = iota
	// StatusOnline: the latest status that counts says online.
	StatusOnline
	// StatusOffline: the latest status that counts says offline.
	StatusOffline
)

var statusNames = [...]string{"unknown", "online", "offline"}

// String returns "unknown", "online" or "offline".
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "invalid"
}

// Source says who asserted the status in force.
type Source uint8

const (
	// SourceNone: no status is in force (StatusUnknown).
	SourceNone Source = iota
	// SourceAgent: the agent published the status itself (a2a-status-source
	// agent, or no source property).
	SourceAgent
	// SourceLWT: the broker fired the agent's Last Will (a2a-status-source lwt).
	SourceLWT
	// SourceBroker: the broker set the status from the agent's connection
	// (a2a-status-source broker, or any value other than agent and lwt).
	SourceBroker
)

var sourceNames = [...]string{"none", "agent", "lwt", "broker"}

// String returns "none", "agent", "lwt" or "broker".
func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "invalid"
}

// StatusOf returns the liveness and its source that a state of the presence
// table stands for.
func StatusOf(s fsm.PresenceState) (Status, Source) {
	switch s {
	case fsm.PresenceStateOnlineAgent:
		return StatusOnline, SourceAgent
	case fsm.PresenceStateOfflineGraceful:
		return StatusOffline, SourceAgent
	case fsm.PresenceStateOfflineLWT:
		return StatusOffline, SourceLWT
	case fsm.PresenceStateOnlineBroker:
		return StatusOnline, SourceBroker
	case fsm.PresenceStateOfflineBroker:
		return StatusOffline, SourceBroker
	}
	return StatusUnknown, SourceNone
}
