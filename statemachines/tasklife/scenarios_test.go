package tasklife

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

const (
	ctxC = "9b2e4c1a-7d3f-4e8a-b5c6-1f0a2b3c4d5e"
	ctxD = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"
	t1   = "11111111-1111-4111-8111-111111111111"
	t2   = "22222222-2222-4222-8222-222222222222"
	t3   = "33333333-3333-4333-8333-333333333333"
	t4   = "44444444-4444-4444-8444-444444444444"
	t5   = "55555555-5555-4555-8555-555555555555"
)

func mustSend(t *testing.T, l *Ledger, req Request, now time.Time) Outcome {
	t.Helper()
	out, err := l.Send(req, now)
	if err != nil {
		t.Fatalf("Send(%+v): %v", req, err)
	}
	return out
}

func mustUpdate(t *testing.T, l *Ledger, id string, s a2a.TaskState, now time.Time) Step {
	t.Helper()
	step, err := l.Update(id, s, now)
	if err != nil {
		t.Fatalf("Update(%s, %s): %v", id, s, err)
	}
	return step
}

// docs/protocol.md §5.3 (follow-up turns): T1 starts context C, T2 is a new
// task in the same context and sees T1 as a prior turn.
func TestFollowUpTurns(t *testing.T) {
	l := NewLedger(Policy{}, nil)
	out := mustSend(t, l, Request{TaskID: t1, ContextID: ctxC, MessageID: "m1"}, t0)
	if out.Verdict != VerdictCreate || !out.NewContext || len(out.Prior) != 0 {
		t.Fatalf("turn 1: %+v", out)
	}
	mustUpdate(t, l, t1, a2a.TaskStateWorking, t0)
	if s := mustUpdate(t, l, t1, a2a.TaskStateCompleted, t0); !s.Outputs.Has(fsm.TaskOutputEndStream) || s.Class() != ClassTerminal {
		t.Fatalf("turn 1 completion: %+v", s)
	}
	out = mustSend(t, l, Request{TaskID: t2, ContextID: ctxC, MessageID: "m2"}, t0.Add(time.Minute))
	if out.Verdict != VerdictCreate || out.NewContext || !slices.Equal(out.Prior, []string{t1}) {
		t.Fatalf("turn 2: %+v", out)
	}
	mustUpdate(t, l, t2, a2a.TaskStateCompleted, t0.Add(time.Minute))
	if _, tasks, _ := l.Context(ctxC); !slices.Equal(tasks, []string{t1, t2}) {
		t.Errorf("context tasks %v", tasks)
	}
}

// docs/protocol.md §5.4 (interrupted tasks): the interrupted status ends the
// correlation, and a new message with the same Task.id and contextId resumes
// the task.
func TestInterruptedTask(t *testing.T) {
	l := NewLedger(Policy{}, nil)
	mustSend(t, l, Request{TaskID: t3, ContextID: ctxC, MessageID: "m3"}, t0)
	mustUpdate(t, l, t3, a2a.TaskStateWorking, t0)
	s := mustUpdate(t, l, t3, a2a.TaskStateInputRequired, t0)
	if !s.Outputs.Has(fsm.TaskOutputEndCorrelation) || s.Outputs.Has(fsm.TaskOutputEndStream) || s.Class() != ClassResumable {
		t.Fatalf("input-required: %+v (class %v)", s, s.Class())
	}
	out := mustSend(t, l, Request{TaskID: t3, ContextID: ctxC, MessageID: "m4"}, t0.Add(time.Minute))
	if out.Verdict != VerdictResume || out.Step.To != fsm.TaskStateWorking || !out.Step.Outputs.Has(fsm.TaskOutputStartWork) {
		t.Fatalf("resume: %+v", out)
	}
	if s := mustUpdate(t, l, t3, a2a.TaskStateCompleted, t0.Add(time.Minute)); s.To != fsm.TaskStateCompleted {
		t.Fatalf("completion: %+v", s)
	}
	if rec, _ := l.Task(t3); !slices.Equal(rec.MessageIDs, []string{"m3", "m4"}) || rec.ID != t3 {
		t.Errorf("record %+v", rec)
	}
}

// docs/protocol.md §5.6, the failure cases: one test each.
func TestFailureCases(t *testing.T) {
	t.Run("mismatched contextId for an existing Task.id is -32602", func(t *testing.T) {
		l := NewLedger(Policy{}, nil)
		mustSend(t, l, Request{TaskID: t3, ContextID: ctxC, MessageID: "m3"}, t0)
		mustUpdate(t, l, t3, a2a.TaskStateInputRequired, t0)
		_, err := l.Send(Request{TaskID: t3, ContextID: ctxD, MessageID: "m4"}, t0)
		var e *a2a.Error
		if !errors.Is(err, a2a.ErrInvalidParams) || !errors.As(err, &e) || e.Code != -32602 {
			t.Fatalf("got %v", err)
		}
		if rec, _ := l.Task(t3); rec.State != fsm.TaskStateInputRequired || len(rec.MessageIDs) != 1 {
			t.Errorf("refused message changed the task: %+v", rec)
		}
	})
	t.Run("unknown contextId starts a new context without error", func(t *testing.T) {
		l := NewLedger(Policy{}, nil)
		out := mustSend(t, l, Request{TaskID: t1, ContextID: ctxD, MessageID: "m1"}, t0)
		if out.Verdict != VerdictCreate || !out.NewContext || out.Task.ContextID != ctxD {
			t.Fatalf("got %+v", out)
		}
		if _, _, ok := l.Context(ctxD); !ok {
			t.Errorf("context %s not recorded", ctxD)
		}
	})
	t.Run("expired context refuses a follow-up turn and a resume with context_expired", func(t *testing.T) {
		l := NewLedger(Policy{ContextTTL: time.Hour}, nil)
		mustSend(t, l, Request{TaskID: t1, ContextID: ctxC, MessageID: "m1"}, t0)
		mustUpdate(t, l, t1, a2a.TaskStateInputRequired, t0)
		late := t0.Add(time.Hour + time.Second)
		for _, req := range []Request{
			{TaskID: t2, ContextID: ctxC, MessageID: "m2"}, // follow-up turn
			{TaskID: t1, ContextID: ctxC, MessageID: "m3"}, // resume
		} {
			_, err := l.Send(req, late)
			var e *a2a.Error
			if !errors.Is(err, a2a.ErrContextExpired) || !errors.As(err, &e) || e.Token != a2a.TokenContextExpired {
				t.Errorf("%+v: got %v", req, err)
				continue
			}
			if info, _ := e.Token.Info(); info.Retryable {
				t.Errorf("context_expired must not be retryable")
			}
		}
		// Within the window the same messages are fine.
		l2 := NewLedger(Policy{ContextTTL: time.Hour}, nil)
		mustSend(t, l2, Request{TaskID: t1, ContextID: ctxC, MessageID: "m1"}, t0)
		mustUpdate(t, l2, t1, a2a.TaskStateInputRequired, t0.Add(30*time.Minute))
		mustSend(t, l2, Request{TaskID: t2, ContextID: ctxC, MessageID: "m2"}, t0.Add(89*time.Minute))
		mustSend(t, l2, Request{TaskID: t1, ContextID: ctxC, MessageID: "m3"}, t0.Add(140*time.Minute))
	})
	t.Run("concurrent tasks in one context complete independently", func(t *testing.T) {
		l := NewLedger(Policy{}, nil)
		mustSend(t, l, Request{TaskID: t4, ContextID: ctxC, MessageID: "m4"}, t0)
		out := mustSend(t, l, Request{TaskID: t5, ContextID: ctxC, MessageID: "m5"}, t0)
		if out.NewContext || !slices.Equal(out.Prior, []string{t4}) {
			t.Fatalf("second task: %+v", out)
		}
		mustUpdate(t, l, t4, a2a.TaskStateWorking, t0)
		mustUpdate(t, l, t5, a2a.TaskStateWorking, t0)
		mustUpdate(t, l, t5, a2a.TaskStateCompleted, t0)
		if rec, _ := l.Task(t4); rec.State != fsm.TaskStateWorking {
			t.Fatalf("T5's completion moved T4 to %v", rec.State)
		}
		if _, err := l.Cancel(t4, false, t0); err != nil {
			t.Fatal(err)
		}
		if rec, _ := l.Task(t5); rec.State != fsm.TaskStateCompleted {
			t.Fatalf("T4's cancel moved T5 to %v", rec.State)
		}
	})
}
