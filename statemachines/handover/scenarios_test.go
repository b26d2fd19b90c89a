package handover

import (
	"errors"
	"testing"

	"github.com/a2abind/a2abind/generated/fsm"
)

const taskT = "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10"

// must fails the test on a step's error.
func must(t *testing.T) func(Step, error) Step {
	return func(step Step, err error) Step {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return step
	}
}

// docs/protocol.md §9.1 (the flow): B delegates to C; the requester persists
// (Task.id, C) and sends follow-ups to C's direct topic.
func TestHandover(t *testing.T) {
	tb := NewTable()
	s := must(t)(tb.Start(taskT, "agent-b"))
	if s.Target != (Target{Agent: "agent-b"}) || !s.Outputs.Has(fsm.HandoverOutputPersistRoute) {
		t.Fatalf("first request: %+v", s)
	}
	s = must(t)(tb.Reply(taskT, []string{"agent-c"}))
	if s.Target != (Target{Agent: "agent-c"}) || !s.Outputs.Has(fsm.HandoverOutputSetTarget) || !s.Outputs.Has(fsm.HandoverOutputPersistRoute) {
		t.Fatalf("handover: %+v", s)
	}
	store := &MemStore{}
	r, _ := tb.Route(taskT)
	if err := store.SaveRoute(r); err != nil {
		t.Fatal(err)
	}
	restored := NewTable()
	if err := restored.Restore(store); err != nil {
		t.Fatal(err)
	}
	if got, _ := restored.Target(taskT); got != (Target{Agent: "agent-c"}) {
		t.Errorf("after restart the follow-up goes to %v", got)
	}
}

// docs/protocol.md §9.4, the failure cases: one test each.
func TestFailureCases(t *testing.T) {
	t.Run("responder unreachable: retry profile exhausted against it, fall back to the card agent once", func(t *testing.T) {
		tb := NewTable()
		must(t)(tb.Start(taskT, "agent-b"))
		must(t)(tb.Reply(taskT, []string{"agent-c"}))
		s := must(t)(tb.Exhausted(taskT))
		if s.To != fsm.HandoverStateFallenBack || !s.Outputs.Has(fsm.HandoverOutputFallBackToCardAgent) || s.Target != (Target{Agent: "agent-b"}) {
			t.Fatalf("fallback: %+v", s)
		}
		s = must(t)(tb.Exhausted(taskT))
		if !s.Outputs.Has(fsm.HandoverOutputReportUnreachable) || s.Outputs.Has(fsm.HandoverOutputFallBackToCardAgent) {
			t.Fatalf("card agent unreachable too: %+v", s)
		}
		// The card agent hands over again; that target fails too: no second fallback.
		must(t)(tb.Reply(taskT, []string{"agent-d"}))
		s = must(t)(tb.Exhausted(taskT))
		if !s.Outputs.Has(fsm.HandoverOutputReportUnreachable) || s.Target != (Target{Agent: "agent-d"}) {
			t.Fatalf("second exhaustion: %+v", s)
		}
	})
	t.Run("missing a2a-responder-agent-id: routing stays on the card agent", func(t *testing.T) {
		tb := NewTable()
		must(t)(tb.Start(taskT, "agent-b"))
		s := must(t)(tb.Reply(taskT, nil))
		if s.Target != (Target{Agent: "agent-b"}) || s.Outputs != 0 {
			t.Fatalf("got %+v", s)
		}
		// Absence never undoes a handover either.
		must(t)(tb.Reply(taskT, []string{"agent-c"}))
		if s := must(t)(tb.Reply(taskT, nil)); s.Target != (Target{Agent: "agent-c"}) {
			t.Fatalf("absence undid the handover: %+v", s)
		}
	})
	t.Run("multiple handovers in a streaming session: the latest wins", func(t *testing.T) {
		tb := NewTable()
		must(t)(tb.Start(taskT, "agent-b"))
		for _, id := range []string{"agent-c", "agent-d", "agent-c", "agent-e", "agent-b", "agent-f"} {
			s := must(t)(tb.Reply(taskT, []string{id}))
			if s.Target != (Target{Agent: id}) {
				t.Fatalf("after %s: target %v", id, s.Target)
			}
		}
	})
}

// Shared-subscription pools: the reply must name its responder; once it
// does, retries go to that responder and never back to the pool.
func TestPooledRouting(t *testing.T) {
	tb := NewTable()
	s := must(t)(tb.StartPooled(taskT, "summarizers"))
	if s.Target != (Target{Pool: "summarizers"}) {
		t.Fatalf("first request: %+v", s)
	}
	if s := must(t)(tb.Reply(taskT, nil)); !s.Outputs.Has(fsm.HandoverOutputProtocolError) || s.Target != (Target{Pool: "summarizers"}) {
		t.Fatalf("pooled reply without responder: %+v", s)
	}
	if s := must(t)(tb.Exhausted(taskT)); !s.Outputs.Has(fsm.HandoverOutputReportUnreachable) || s.Target != (Target{Pool: "summarizers"}) {
		t.Fatalf("no member answered: %+v", s)
	}
	must(t)(tb.Reply(taskT, []string{"member-3"}))
	s = must(t)(tb.Exhausted(taskT))
	if !s.Outputs.Has(fsm.HandoverOutputReportUnreachable) || s.Target != (Target{Agent: "member-3"}) {
		t.Fatalf("after selection, exhaustion: %+v", s)
	}
}

func TestRefusals(t *testing.T) {
	tb := NewTable()
	if _, err := tb.Reply("nope", nil); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("reply for an unknown task: %v", err)
	}
	if _, err := tb.Exhausted("nope"); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("exhausted for an unknown task: %v", err)
	}
	if _, err := tb.Start(taskT, "agent/b"); err == nil {
		t.Errorf("a card agent id with a slash was accepted")
	}
	if _, err := tb.StartPooled(taskT, "pool+"); err == nil {
		t.Errorf("a pool id with a plus was accepted")
	}
	must(t)(tb.Start(taskT, "agent-b"))
	var te *fsm.TransitionError
	if _, err := tb.Start(taskT, "agent-x"); !errors.As(err, &te) {
		t.Errorf("a second first request: %v", err)
	}
	if got, _ := tb.Target(taskT); got != (Target{Agent: "agent-b"}) {
		t.Errorf("refused first request changed the target to %v", got)
	}
}

// Restore refuses routes that no sequence of events produces.
func TestRestoreChecksRoutes(t *testing.T) {
	for _, r := range []Route{
		{TaskID: "", State: fsm.HandoverStateCardAgent, CardAgent: "b"},
		{TaskID: "t", State: fsm.HandoverStateUnrouted, CardAgent: "b"},
		{TaskID: "t", State: fsm.HandoverStateCardAgent},
		{TaskID: "t", State: fsm.HandoverStateCardAgent, CardAgent: "b", Pool: "p"},
		{TaskID: "t", State: fsm.HandoverStateResponder, CardAgent: "b"},
		{TaskID: "t", State: fsm.HandoverStateCardAgent, CardAgent: "b", Responder: "c"},
		{TaskID: "t", State: fsm.HandoverStateFallenBack, Pool: "p", FellBack: true},
		{TaskID: "t", State: fsm.HandoverStateFallenBack, CardAgent: "b"},
		{TaskID: "t", State: fsm.HandoverStatePoolPending, CardAgent: "b"},
		{TaskID: "t", State: fsm.HandoverStateResponder, CardAgent: "b", Responder: "c#"},
	} {
		s := &MemStore{}
		_ = s.SaveRoute(r)
		tb := NewTable()
		if err := tb.Restore(s); !errors.Is(err, ErrInvalidRoute) || tb.Len() != 0 {
			t.Errorf("%+v: got %v", r, err)
		}
	}
}
