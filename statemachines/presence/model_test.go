package presence

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// shadow is an independent model of what the subscriber must believe about
// one agent, written from docs/protocol.md §3 and its preference rule rather
// than from the table.
type shadow struct {
	registered bool
	brokerPref bool
	status     Status
	source     Source
	version    string
	everOnline bool
}

const modelSeed = 20261129

// Long seeded random sequences of discovery messages for a few agents,
// checked after every message against the shadow model and the invariants:
// a card is recorded exactly when the state says so, EverOnline never goes
// back, Since moves only with the state, and rejected input changes nothing.
func TestModelRandomSequences(t *testing.T) {
	const steps, agents = 10000, 12
	t.Logf("seed %d, %d steps", modelSeed, steps)
	rng := rand.New(rand.NewPCG(modelSeed, 0))
	tr := NewTracker()
	model := map[string]*shadow{}
	sources := []string{"", "agent", "lwt", "broker", "emqx"}
	statuses := []string{"", "online", "offline", "bogus"}
	now := t0
	for i := range steps {
		now = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		agent := fmt.Sprintf("agent-%d", rng.IntN(agents))
		m := model[agent]
		if m == nil {
			m = &shadow{}
			model[agent] = m
		}
		before, _ := tr.Get(key(agent))
		version := fmt.Sprint(i)
		var (
			tp      = topic(agent)
			payload []byte
			props   Properties
			reject  bool
		)
		switch r := rng.IntN(20); {
		case r == 0: // not a discovery topic
			tp, reject = "$a2a/v1/request/acme/lab/"+agent, true
			payload = cardJSON(agent, version)
		case r == 1: // not a card
			payload, reject = []byte(`{"name":`), true
		case r < 4: // unregistration
		default:
			payload = cardJSON(agent, version)
			st, src := statuses[rng.IntN(len(statuses))], sources[rng.IntN(len(sources))]
			if st != "" {
				props = append(props, Property{Key: "a2a-status", Value: st})
			}
			if src != "" {
				props = append(props, Property{Key: "a2a-status-source", Value: src})
			}
			rng.Shuffle(len(props), func(a, b int) { props[a], props[b] = props[b], props[a] })
		}
		_, err := tr.Ingest(tp, payload, props, now)
		after, _ := tr.Get(key(agent))
		if reject {
			if err == nil || after != before {
				t.Fatalf("step %d: rejected input: err %v, entry %+v -> %+v", i, err, before, after)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		m.apply(payload, props, version)
		got := shadow{after.Registered(), after.State.IsBrokerSourced(), after.Status(), after.Source(), "", after.EverOnline}
		if after.Card != nil {
			got.version = after.Card.Version
		}
		if got != *m {
			t.Fatalf("step %d (seed %d): agent %s props %v: tracker %+v (state %v), model %+v", i, modelSeed, agent, props, got, after.State, *m)
		}
		if (after.Card != nil) != after.State.IsHasCard() {
			t.Fatalf("step %d: card %v in state %v", i, after.Card != nil, after.State)
		}
		if before.EverOnline && !after.EverOnline {
			t.Fatalf("step %d: EverOnline went back", i)
		}
		if before.State == after.State && !before.Since.IsZero() && !after.Since.Equal(before.Since) {
			t.Fatalf("step %d: Since moved without a state change", i)
		}
	}
}

func (m *shadow) apply(payload []byte, props Properties, version string) {
	if len(payload) == 0 {
		*m = shadow{everOnline: m.everOnline}
		return
	}
	m.registered, m.version = true, version
	// The random messages carry each property at most once.
	var st, src string
	for _, p := range props {
		switch p.Key {
		case "a2a-status":
			st = p.Value
		case "a2a-status-source":
			src = p.Value
		}
	}
	source := SourceAgent
	switch src {
	case "lwt":
		source = SourceLWT
	case "", "agent":
	default:
		source = SourceBroker
	}
	status := StatusUnknown
	switch st {
	case "online":
		status = StatusOnline
	case "offline":
		status = StatusOffline
	}
	if status == StatusOnline && source == SourceLWT {
		status = StatusUnknown
	}
	if source == SourceBroker && status != StatusUnknown {
		m.brokerPref, m.status, m.source = true, status, SourceBroker
		m.everOnline = m.everOnline || status == StatusOnline
		return
	}
	if m.brokerPref {
		return
	}
	if status == StatusUnknown {
		m.status, m.source = StatusUnknown, SourceNone
		return
	}
	m.status, m.source = status, source
	m.everOnline = m.everOnline || status == StatusOnline
}
