package presence

import (
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// Key identifies an agent: the agent_id of its discovery topic, qualified by
// the org_id and unit_id of the same topic so that two units' agents with the
// same id never collide. Together they are the agent's MQTT Client ID
// {org_id}/{unit_id}/{agent_id}, which is also what broker-managed status is
// keyed by.
type Key struct {
	// Org is the org_id level of the topic.
	Org string
	// Unit is the unit_id level of the topic.
	Unit string
	// Agent is the agent_id level of the topic.
	Agent string
}

// String returns the key as a Client ID, org/unit/agent.
func (k Key) String() string { return k.Org + "/" + k.Unit + "/" + k.Agent }

// Entry is what the tracker knows about one agent. It is a copy: changing it
// does not change the tracker. The card is shared and must not be modified.
type Entry struct {
	// Key identifies the agent.
	Key Key
	// State is the agent's state in the presence table.
	State fsm.PresenceState
	// Card is the latest Agent Card received (retained updates replace it),
	// or nil when none is recorded: never seen, or unregistered.
	Card *a2a.AgentCard
	// Since is when State last changed.
	Since time.Time
	// Updated is when the latest discovery message for the agent arrived.
	Updated time.Time
	// EverOnline reports whether the agent was ever seen online since the
	// tracker started. An agent whose first message is its Last Will was not.
	EverOnline bool
}

// Status returns the agent's liveness as recorded: online, offline, or
// unknown when no readable status is in force. Advisory only.
func (e Entry) Status() Status {
	s, _ := StatusOf(e.State)
	return s
}

// Source returns who asserted the status in force.
func (e Entry) Source() Source {
	_, src := StatusOf(e.State)
	return src
}

// Registered reports whether a card is recorded for the agent: false when it
// was never seen or its retained card was cleared.
func (e Entry) Registered() bool { return e.State.IsHasCard() }
