package presence

import (
	"fmt"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/fsm"
)

// One presence transition on a known agent, card already decoded: table
// lookup and outputs applied, no allocation.
func BenchmarkPresenceStep(b *testing.B) {
	tr := NewTracker()
	card, _ := DecodeCard(cardJSON("b", "1"))
	k := key("b")
	events := []fsm.PresenceEvent{fsm.PresenceEventCardOnlineAgent, fsm.PresenceEventBrokerOnline, fsm.PresenceEventCardOfflineLWT, fsm.PresenceEventCleared}
	if _, err := tr.apply(k, events[0], card, nil, t0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := tr.apply(k, events[i&3], card, nil, t0); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

/*
BenchmarkPresenceIngest100k feeds a new tracker 100,000 discovery messages
for 10,000 agents, each a full Ingest: topic parsed, properties classified,
transition applied, and the card decoded and validated unless it is the one
already recorded. Each agent connects, updates its card, goes through a
broker status, a crash and a reconnect, and one in ten unregisters.

  - republished-cards: as agents behave, every status change republishes
    the card the agent already has (it changes twice per agent);
  - new-card-every-message: the worst case, every message a card never seen.
*/
func BenchmarkPresenceIngest100k(b *testing.B) {
	const agents, perAgent = 10000, 10
	type message struct {
		topic   string
		payload []byte
		props   Properties
	}
	script := []Properties{
		status("online", "agent"), status("online", "agent"), status("online", "broker"),
		status("offline", "broker"), status("offline", "lwt"), nil,
		status("online", "agent"), status("offline", "agent"), status("online", "agent"), status("online", "emqx"),
	}
	build := func(version func(round int) string) []message {
		msgs := make([]message, 0, agents*perAgent)
		for round := range perAgent {
			for a := range agents {
				name := fmt.Sprintf("agent-%05d", a)
				m := message{topic: topic(name), payload: cardJSON(name, version(round)), props: script[round]}
				if round == perAgent-1 && a%10 == 0 {
					m.payload, m.props = nil, nil
				}
				msgs = append(msgs, m)
			}
		}
		return msgs
	}
	for _, c := range []struct {
		name    string
		version func(round int) string
	}{
		{"republished-cards", func(round int) string { return fmt.Sprintf("1.%d", min(round, 1)+3*(round/6)) }},
		{"new-card-every-message", func(round int) string { return fmt.Sprintf("1.%d", round) }},
	} {
		msgs := build(c.version)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tr := NewTracker()
				now := t0
				for _, m := range msgs {
					if _, err := tr.Ingest(m.topic, m.payload, m.props, now); err != nil {
						b.Fatal(err)
					}
					now = now.Add(time.Millisecond)
				}
				if tr.Len() != agents {
					b.Fatalf("%d agents", tr.Len())
				}
			}
			b.ReportMetric(float64(len(msgs))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
