package tasklife

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// docs/protocol.md §11, "retry, follow-up or error?", and the rest of
// Admit's rules, one case per rule.
func TestAdmit(t *testing.T) {
	rec := func(s fsm.TaskState) *TaskRecord {
		return &TaskRecord{ID: t1, ContextID: ctxC, State: s, MessageIDs: []string{"m1", "m2"}}
	}
	live := &ContextRecord{ID: ctxC, LastActive: t0}
	old := &ContextRecord{ID: ctxC, LastActive: t0.Add(-2 * time.Hour)}
	mqtt := Policy{ContextTTL: time.Hour}
	http := Policy{IDs: ResponderIDs, ContextTTL: time.Hour}
	for _, c := range []struct {
		name    string
		req     Request
		task    *TaskRecord
		ctx     *ContextRecord
		policy  Policy
		want    Admission
		wantErr *a2a.Error
	}{
		{"same taskId and messageId on a working task is a retry", Request{t1, ctxC, "m1"}, rec(fsm.TaskStateWorking), live, mqtt, Admission{Verdict: VerdictRetry}, nil},
		{"same messageId on a completed task is a retry, not an error", Request{t1, ctxC, "m2"}, rec(fsm.TaskStateCompleted), live, mqtt, Admission{Verdict: VerdictRetry}, nil},
		{"a retry without contextId is still a retry", Request{t1, "", "m1"}, rec(fsm.TaskStateSubmitted), live, mqtt, Admission{Verdict: VerdictRetry}, nil},
		{"a retry in an expired context still answers with the task", Request{t1, ctxC, "m1"}, rec(fsm.TaskStateInputRequired), old, mqtt, Admission{Verdict: VerdictRetry}, nil},
		{"a new messageId on INPUT_REQUIRED resumes", Request{t1, ctxC, "m3"}, rec(fsm.TaskStateInputRequired), live, mqtt, Admission{Verdict: VerdictResume}, nil},
		{"a new messageId on AUTH_REQUIRED resumes", Request{t1, "", "m3"}, rec(fsm.TaskStateAuthRequired), live, mqtt, Admission{Verdict: VerdictResume}, nil},
		{"a new messageId on a terminal task is UnsupportedOperation", Request{t1, ctxC, "m3"}, rec(fsm.TaskStateCompleted), live, mqtt, Admission{}, a2a.ErrUnsupportedOperation},
		{"a new messageId on a rejected task is UnsupportedOperation even when the context expired", Request{t1, ctxC, "m3"}, rec(fsm.TaskStateRejected), old, mqtt, Admission{}, a2a.ErrUnsupportedOperation},
		{"a new messageId on a working task is UnsupportedOperation", Request{t1, ctxC, "m3"}, rec(fsm.TaskStateWorking), live, mqtt, Admission{}, a2a.ErrUnsupportedOperation},
		{"a resume in an expired context is context_expired", Request{t1, ctxC, "m3"}, rec(fsm.TaskStateInputRequired), old, mqtt, Admission{}, a2a.ErrContextExpired},
		{"a contextId that differs from the task's is invalid params, even for a retry", Request{t1, ctxD, "m1"}, rec(fsm.TaskStateWorking), live, mqtt, Admission{}, a2a.ErrInvalidParams},
		{"a missing messageId is invalid params", Request{t1, ctxC, ""}, nil, nil, mqtt, Admission{}, a2a.ErrInvalidParams},
		{"MQTT: a new taskId creates the task in a new context", Request{t1, ctxC, "m1"}, nil, nil, mqtt, Admission{Verdict: VerdictCreate, NewContext: true}, nil},
		{"MQTT: a new taskId in a known context joins it", Request{t2, ctxC, "m1"}, nil, live, mqtt, Admission{Verdict: VerdictCreate}, nil},
		{"MQTT: a new taskId in an expired context is context_expired", Request{t2, ctxC, "m1"}, nil, old, mqtt, Admission{}, a2a.ErrContextExpired},
		{"MQTT: a missing taskId is invalid params", Request{"", ctxC, "m1"}, nil, nil, mqtt, Admission{}, a2a.ErrInvalidParams},
		{"HTTP: a missing taskId creates a task", Request{"", "", "m1"}, nil, nil, http, Admission{Verdict: VerdictCreate, NewContext: true}, nil},
		{"HTTP: an unknown taskId is TaskNotFound", Request{t1, "", "m1"}, nil, nil, http, Admission{}, a2a.ErrTaskNotFound},
		{"contexts never expire with a zero window", Request{t2, ctxC, "m1"}, nil, &ContextRecord{ID: ctxC}, Policy{}, Admission{Verdict: VerdictCreate}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Admit(c.req, c.task, c.ctx, c.policy, t0)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("got %+v, %v; want %v", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// A requester tells UnsupportedOperation (never retried) from
// responder_unavailable (retry-eligible) by token, although both are -32004.
func TestUnsupportedOperationIsNotRetryable(t *testing.T) {
	unsupported, _ := a2a.TokenUnsupportedOperation.Info()
	unavailable, _ := a2a.TokenResponderUnavailable.Info()
	if unsupported.Code != unavailable.Code || unsupported.Retryable || !unavailable.Retryable {
		t.Errorf("unsupported %+v, unavailable %+v", unsupported, unavailable)
	}
}

// Dedup by Task.id: repeating the create returns the existing task and never
// makes a second one, whatever happened to the task since.
func TestRepeatedCreateReturnsExistingTask(t *testing.T) {
	l := NewLedger(Policy{}, nil)
	first := mustSend(t, l, Request{TaskID: t1, ContextID: ctxC, MessageID: "m1"}, t0)
	mustUpdate(t, l, t1, a2a.TaskStateWorking, t0)
	for _, s := range []a2a.TaskState{"", a2a.TaskStateCompleted} {
		if s != "" {
			mustUpdate(t, l, t1, s, t0)
		}
		again := mustSend(t, l, Request{TaskID: t1, ContextID: ctxC, MessageID: "m1"}, t0.Add(time.Second))
		if again.Verdict != VerdictRetry || again.Task.ID != first.Task.ID || l.Len() != 1 {
			t.Fatalf("repeat: %+v, %d tasks", again, l.Len())
		}
		if want := map[a2a.TaskState]fsm.TaskState{"": fsm.TaskStateWorking, a2a.TaskStateCompleted: fsm.TaskStateCompleted}[s]; again.Task.State != want {
			t.Fatalf("repeat answered state %v, want %v", again.Task.State, want)
		}
	}
}

// CancelTask: cancels a live task, is refused by the guard, is idempotent on
// a canceled task and is TaskNotCancelable on any other terminal one.
func TestCancel(t *testing.T) {
	for _, c := range []struct {
		name    string
		state   fsm.TaskState
		refused bool
		to      fsm.TaskState
		outputs fsm.TaskOutputSet
		wantErr *a2a.Error
	}{
		{"a working task is canceled", fsm.TaskStateWorking, false, fsm.TaskStateCanceled,
			fsm.TaskOutputSet(0).With(fsm.TaskOutputStopWork).With(fsm.TaskOutputEmitCanceled).With(fsm.TaskOutputEndStream), nil},
		{"an interrupted task is canceled", fsm.TaskStateInputRequired, false, fsm.TaskStateCanceled,
			fsm.TaskOutputSet(0).With(fsm.TaskOutputStopWork).With(fsm.TaskOutputEmitCanceled).With(fsm.TaskOutputEndStream), nil},
		{"a refused cancel leaves the task", fsm.TaskStateWorking, true, fsm.TaskStateWorking,
			fsm.TaskOutputSet(0).With(fsm.TaskOutputRefuseCancel), nil},
		{"a canceled task answers a repeated cancel", fsm.TaskStateCanceled, false, fsm.TaskStateCanceled, 0, nil},
		{"a completed task is not cancelable", fsm.TaskStateCompleted, false, 0, 0, a2a.ErrTaskNotCancelable},
		{"a rejected task is not cancelable", fsm.TaskStateRejected, true, 0, 0, a2a.ErrTaskNotCancelable},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := Restore(t1, ctxC, c.state)
			step, err := task.Cancel(c.refused)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || task.State() != c.state {
					t.Fatalf("got %+v, %v", step, err)
				}
				return
			}
			if err != nil || step.To != c.to || step.Outputs != c.outputs || task.State() != c.to {
				t.Fatalf("got %+v, %v", step, err)
			}
		})
	}
	if _, err := NewLedger(Policy{}, nil).Cancel(t1, false, t0); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("cancel of an unknown task: %v", err)
	}
}

// Resume refuses what the table has no row for, with the token that
// docs/protocol.md §11 names ("retry, follow-up or error?").
func TestResumeRefusals(t *testing.T) {
	for _, s := range fsm.TaskStates() {
		task := Restore(t1, ctxC, s)
		_, err := task.Resume()
		if s.IsResumable() != (err == nil) {
			t.Errorf("%v: %v", s, err)
		}
		if err != nil && !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("%v: got %v, want UnsupportedOperation", s, err)
		}
	}
}

// Over HTTP the responder makes Task.id and, when left out, the contextId.
func TestLedgerMintsIDs(t *testing.T) {
	n := 0
	ids := func() string { n++; return []string{"", "task-a", "ctx-a"}[n] }
	l := NewLedger(Policy{IDs: ResponderIDs}, ids)
	out := mustSend(t, l, Request{MessageID: "m1"}, t0)
	if out.Task.ID != "task-a" || out.Task.ContextID != "ctx-a" || !out.NewContext {
		t.Fatalf("got %+v", out)
	}
	if _, err := l.Send(Request{TaskID: "task-b", MessageID: "m2"}, t0); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("unknown server-made id: %v", err)
	}
}

func TestNewUUID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		u := NewUUID()
		if len(u) != 36 || u[14] != '4' || !strings.ContainsAny(u[19:20], "89ab") || seen[u] {
			t.Fatalf("bad or repeated UUIDv4 %q", u)
		}
		seen[u] = true
	}
}
