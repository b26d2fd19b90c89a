package presence

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// Tracker is the discovery subscriber's table of agents, keyed by the agent
// identity taken from the discovery topic. Create it with NewTracker. It is
// not safe for concurrent use.
type Tracker struct {
	agents map[Key]*record
	decode CardDecoder
	root   mqttbind.Root
}

// record is an agent's entry with the payload its card was decoded from, so
// that a republished identical card (every status change republishes it) is
// not decoded again.
type record struct {
	Entry
	raw []byte
}

// Option configures a Tracker.
type Option func(*Tracker)

// WithCardDecoder replaces DecodeCard, for example with DecodeCardLenient.
func WithCardDecoder(d CardDecoder) Option {
	return func(t *Tracker) {
		if d != nil {
			t.decode = d
		}
	}
}

// WithRoot reads discovery topics under root instead of the profile's
// mqttbind.DefaultRoot (docs/protocol.md §1.5).
func WithRoot(root mqttbind.Root) Option {
	return func(t *Tracker) { t.root = root }
}

// NewTracker returns an empty tracker.
func NewTracker(opts ...Option) *Tracker {
	t := &Tracker{agents: make(map[Key]*record), decode: DecodeCard}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Change is what one discovery message did to an agent's entry.
type Change struct {
	// Event is the presence event the message was read as.
	Event fsm.PresenceEvent
	// From and To are the agent's states before and after.
	From, To fsm.PresenceState
	// Outputs are the decisions of the table, already applied to Entry.
	// KeepBrokerStatus is worth a debug log; ForgetCard means the agent
	// must no longer be offered as a routing target from discovery.
	Outputs fsm.PresenceOutputSet
	// Entry is the agent's entry after the message.
	Entry Entry
}

// StatusChanged reports whether the agent's liveness or its source changed.
func (c Change) StatusChanged() bool {
	s0, src0 := StatusOf(c.From)
	s1, src1 := StatusOf(c.To)
	return s0 != s1 || src0 != src1
}

/*
Ingest applies one message received on a discovery topic at time now.

The agent is identified by the topic, a discovery topic under the tracker's
root (WithRoot). An empty payload is an unregistration
(the retained card was cleared). Any other payload must decode as an Agent
Card (see CardDecoder); its liveness is read from the a2a-status and
a2a-status-source properties by Classify. A card with a missing or invalid
status is recorded with its liveness unknown.

Ingest returns an error wrapping ErrNotDiscoveryTopic for a topic it cannot
read and a *CardError for a payload that is not a card; in both cases nothing
changes. It never panics on any input.
*/
func (t *Tracker) Ingest(topic string, payload []byte, props Properties, now time.Time) (Change, error) {
	org, unit, agent, ok := t.root.ParseDiscoveryTopic(topic)
	if !ok {
		return Change{}, fmt.Errorf("%w: %q", ErrNotDiscoveryTopic, topic)
	}
	key := Key{Org: org, Unit: unit, Agent: agent}
	ev := fsm.PresenceEventCleared
	var (
		card *a2a.AgentCard
		raw  []byte
	)
	if len(payload) > 0 {
		if r := t.agents[key]; r != nil && r.Card != nil && bytes.Equal(r.raw, payload) {
			card, raw = r.Card, r.raw
		} else {
			c, err := t.decode(payload)
			if err != nil {
				return Change{}, &CardError{Key: key, Err: err}
			}
			card, raw = c, bytes.Clone(payload)
		}
		ev = Classify(props)
	}
	return t.apply(key, ev, card, raw, now)
}

// apply steps the agent's entry through the table and carries out the
// outputs; raw is the payload card was decoded from. It allocates only for
// an agent not seen before.
func (t *Tracker) apply(key Key, ev fsm.PresenceEvent, card *a2a.AgentCard, raw []byte, now time.Time) (Change, error) {
	e := t.agents[key]
	from := fsm.PresenceInitial
	if e != nil {
		from = e.State
	}
	tr, err := fsm.PresenceStep(from, ev, 0)
	if err != nil {
		// The presence table defines every (state, event) pair; this is
		// reached only if it stops doing so.
		return Change{}, err
	}
	if e == nil {
		e = &record{Entry: Entry{Key: key, State: from, Since: now}}
		t.agents[key] = e
	}
	if tr.Outputs.Has(fsm.PresenceOutputRecordCard) {
		e.Card, e.raw = card, raw
	}
	if tr.Outputs.Has(fsm.PresenceOutputForgetCard) {
		e.Card, e.raw = nil, nil
	}
	if tr.Outputs.Has(fsm.PresenceOutputMarkEverOnline) {
		e.EverOnline = true
	}
	if tr.To != from {
		e.State = tr.To
		e.Since = now
	}
	e.Updated = now
	return Change{Event: ev, From: from, To: tr.To, Outputs: tr.Outputs, Entry: e.Entry}, nil
}

// Get returns the entry of an agent and whether the tracker has heard of it.
// An agent never heard of (including one whose retained card was lost in a
// broker restart before this tracker saw it) is reported as not found.
func (t *Tracker) Get(k Key) (Entry, bool) {
	e := t.agents[k]
	if e == nil {
		return Entry{Key: k, State: fsm.PresenceInitial}, false
	}
	return e.Entry, true
}

// Len returns how many agents the tracker has heard of, registered or not.
func (t *Tracker) Len() int { return len(t.agents) }

// Entries returns a copy of every entry, sorted by org, unit and agent.
func (t *Tracker) Entries() []Entry {
	out := make([]Entry, 0, len(t.agents))
	for _, e := range t.agents {
		out = append(out, e.Entry)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Key.Org, b.Key.Org), cmp.Compare(a.Key.Unit, b.Key.Unit), cmp.Compare(a.Key.Agent, b.Key.Agent))
	})
	return out
}
