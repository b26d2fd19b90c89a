package presence

import (
	"errors"
	"testing"

	"github.com/a2abind/a2abind/generated/fsm"
)

// Every state × every event: PresenceStep goes where the table says, and a
// pair without a row is refused with a *TransitionError.
func TestStepMatchesTable(t *testing.T) {
	for _, s := range fsm.PresenceStates() {
		for _, ev := range fsm.PresenceEvents() {
			want, defined := tableLookup(s, ev)
			got, err := fsm.PresenceStep(s, ev, 0)
			var te *fsm.TransitionError
			switch {
			case defined && err != nil:
				t.Errorf("%v + %v: defined in the table, got error %v", s, ev, err)
			case defined && got != want:
				t.Errorf("%v + %v: got %+v, table says %+v", s, ev, got, want)
			case !defined && !errors.As(err, &te):
				t.Errorf("%v + %v: undefined in the table, got %+v, %v", s, ev, got, err)
			}
		}
	}
}

// Every state × every kind of discovery message, through Tracker.Ingest: the
// entry lands in the state the table names and the outputs are carried out.
func TestIngestFollowsTable(t *testing.T) {
	for _, s := range fsm.PresenceStates() {
		for _, ev := range fsm.PresenceEvents() {
			want, defined := tableLookup(s, ev)
			if !defined {
				t.Fatalf("%v + %v: the presence table is no longer total", s, ev)
			}
			tr := NewTracker()
			old, _ := DecodeCard(cardJSON("agent", "old"))
			e := &record{Entry: Entry{Key: key("b"), State: s, Since: t0}}
			if s.IsHasCard() {
				e.Card, e.raw = old, cardJSON("agent", "old")
			}
			tr.agents[e.Key] = e
			props, payload := eventMessage(ev, "new")
			ch, err := tr.Ingest(topic("b"), payload, props, t0.Add(1))
			if err != nil {
				t.Fatalf("%v + %v: %v", s, ev, err)
			}
			if ch.Event != ev || ch.To != want.To || ch.Outputs != want.Outputs {
				t.Errorf("%v + %v: got event %v to %v outputs %v, table says %v %v", s, ev, ch.Event, ch.To, ch.Outputs.List(), want.To, want.Outputs.List())
			}
			got, _ := tr.Get(key("b"))
			switch {
			case want.Outputs.Has(fsm.PresenceOutputRecordCard) && (got.Card == nil || got.Card.Version != "new"):
				t.Errorf("%v + %v: RecordCard did not record the new card", s, ev)
			case want.Outputs.Has(fsm.PresenceOutputForgetCard) && got.Card != nil:
				t.Errorf("%v + %v: ForgetCard left a card", s, ev)
			case (got.Card != nil) != got.State.IsHasCard():
				t.Errorf("%v + %v: card %v in state %v", s, ev, got.Card != nil, got.State)
			}
			if want.Outputs.Has(fsm.PresenceOutputMarkEverOnline) != got.EverOnline {
				t.Errorf("%v + %v: EverOnline %v", s, ev, got.EverOnline)
			}
			if (got.Since == t0) != (want.To == s) {
				t.Errorf("%v + %v: Since %v after a move to %v", s, ev, got.Since, want.To)
			}
		}
	}
}
