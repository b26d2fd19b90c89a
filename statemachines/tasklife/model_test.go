package tasklife

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

const modelSeed = 4004

// Long seeded random sequences of messages, statuses and cancels against a
// Ledger with a context expiry window, checked after every operation: terminal
// states are absorbing; Task.id and contextId never change; a repeated create
// never makes a second task; a contextId conflicting with the task's is always
// -32602; a retry changes nothing; an operation on one task never changes
// another; nothing is accepted into an expired context except retries.
func TestModelRandomSequences(t *testing.T) {
	const steps = 10000
	t.Logf("seed %d, %d steps", modelSeed, steps)
	rng := rand.New(rand.NewPCG(modelSeed, 0))
	policy := Policy{ContextTTL: 10 * time.Minute}
	l := NewLedger(policy, nil)
	taskIDs := make([]string, 200)
	for i := range taskIDs {
		taskIDs[i] = fmt.Sprintf("task-%03d", i)
	}
	ctxIDs := []string{"", "ctx-a", "ctx-b", "ctx-c", "ctx-d"}
	// Biased towards the live states so that tasks live long enough to be
	// resumed, retried and canceled; every wire value appears.
	statuses := append(a2a.TaskStateValues(), a2a.TaskStateWorking, a2a.TaskStateWorking, a2a.TaskStateWorking,
		a2a.TaskStateInputRequired, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired)
	lastActive := map[string]time.Time{}
	created := map[string]bool{}
	tally := map[string]int{}
	defer func() { t.Logf("outcomes: %v", tally) }()
	now := t0
	for i := range steps {
		now = now.Add(time.Duration(rng.IntN(120)) * time.Second)
		before := snapshot(l, taskIDs)
		id := taskIDs[rng.IntN(len(taskIDs))]
		prev, existed := before[id]
		var err error
		touched := ""
		switch op := rng.IntN(10); {
		case op < 4: // a message
			req := Request{TaskID: id, ContextID: ctxIDs[rng.IntN(len(ctxIDs))], MessageID: fmt.Sprintf("m%d", rng.IntN(steps))}
			if existed && rng.IntN(5) != 0 {
				req.ContextID = []string{"", prev.ContextID}[rng.IntN(2)]
			}
			if existed && rng.IntN(3) == 0 {
				req.MessageID = prev.MessageIDs[rng.IntN(len(prev.MessageIDs))]
			}
			var out Outcome
			out, err = l.Send(req, now)
			switch {
			case existed && req.ContextID != "" && req.ContextID != prev.ContextID:
				if !errors.Is(err, a2a.ErrInvalidParams) {
					t.Fatalf("step %d: conflicting contextId %s for task in %s: %+v, %v", i, req.ContextID, prev.ContextID, out, err)
				}
			case err != nil:
			case out.Verdict == VerdictCreate:
				if existed || created[id] {
					t.Fatalf("step %d: second create of %s", i, id)
				}
				if last, ok := lastActive[out.Task.ContextID]; ok && now.Sub(last) > policy.ContextTTL {
					t.Fatalf("step %d: task created in expired context %s", i, out.Task.ContextID)
				}
				created[id] = true
				touched = id
				lastActive[out.Task.ContextID] = now
			case out.Verdict == VerdictRetry:
				if !existed || !slices.Contains(prev.MessageIDs, req.MessageID) {
					t.Fatalf("step %d: retry verdict for a new message", i)
				}
			case out.Verdict == VerdictResume:
				if !prev.State.IsResumable() || now.Sub(lastActive[prev.ContextID]) > policy.ContextTTL {
					t.Fatalf("step %d: resume of %v task in context last active %v", i, prev.State, lastActive[prev.ContextID])
				}
				touched = id
				lastActive[prev.ContextID] = now
			}
		case op < 9: // a status from the agent
			var step Step
			step, err = l.Update(id, statuses[rng.IntN(len(statuses))], now)
			if err == nil {
				touched = id
				lastActive[prev.ContextID] = now
				if prev.State.Terminal() || step.From != prev.State {
					t.Fatalf("step %d: status applied to %v task as %+v", i, prev.State, step)
				}
			}
		default: // a cancel
			var step Step
			step, err = l.Cancel(id, rng.IntN(4) == 0, now)
			if err == nil && step.To != step.From {
				touched = id
				lastActive[prev.ContextID] = now
			}
		}
		var e *a2a.Error
		switch {
		case errors.As(err, &e):
			tally[string(e.Token)]++
		case err != nil:
			tally["protocol error"]++
		default:
			tally["accepted"]++
		}
		after := snapshot(l, taskIDs)
		for tid, a := range after {
			b, had := before[tid]
			switch {
			case a.ID != tid:
				t.Fatalf("step %d: record %s has id %s", i, tid, a.ID)
			case !had && tid != touched:
				t.Fatalf("step %d: task %s appeared", i, tid)
			case !had:
			case a.ContextID != b.ContextID:
				t.Fatalf("step %d: task %s moved from context %s to %s", i, tid, b.ContextID, a.ContextID)
			case b.State.Terminal() && a.State != b.State:
				t.Fatalf("step %d: terminal task %s left %v for %v", i, tid, b.State, a.State)
			case tid != touched && !equalRecords(a, b):
				t.Fatalf("step %d (err %v): task %s changed by an operation on %s: %+v -> %+v", i, err, tid, id, b, a)
			}
		}
		if l.Len() != len(created) {
			t.Fatalf("step %d: %d tasks, %d creates", i, l.Len(), len(created))
		}
	}
}

func snapshot(l *Ledger, ids []string) map[string]TaskRecord {
	out := map[string]TaskRecord{}
	for _, id := range ids {
		if r, ok := l.Task(id); ok {
			out[id] = r
		}
	}
	return out
}

func equalRecords(a, b TaskRecord) bool {
	return a.ID == b.ID && a.ContextID == b.ContextID && a.State == b.State && slices.Equal(a.MessageIDs, b.MessageIDs)
}

// The states a random walk through the table visits: every state is
// reachable from SUBMITTED.
func TestEveryStateReachable(t *testing.T) {
	seen := map[fsm.TaskState]bool{fsm.TaskInitial: true}
	frontier := []fsm.TaskState{fsm.TaskInitial}
	for len(frontier) > 0 {
		s := frontier[0]
		frontier = frontier[1:]
		for _, r := range fsm.TaskTable() {
			if r.From == s && !seen[r.To] {
				seen[r.To] = true
				frontier = append(frontier, r.To)
			}
		}
	}
	if got := slices.Sorted(maps.Keys(seen)); len(got) != len(fsm.TaskStates()) {
		t.Errorf("reachable %v", got)
	}
}
