package tasklife

import (
	"errors"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// guardSets lists every subset of the task table's guards.
func guardSets() []fsm.TaskGuardSet {
	n := len(fsm.TaskGuards())
	out := make([]fsm.TaskGuardSet, 0, 1<<n)
	for m := range 1 << n {
		out = append(out, fsm.TaskGuardSet(m))
	}
	return out
}

// tableLookup finds the row for (from, ev) with the guards held, read from
// TaskTable in table order, independently of TaskStep.
func tableLookup(from fsm.TaskState, ev fsm.TaskEvent, held fsm.TaskGuardSet) (fsm.TaskTransition, bool) {
	for _, r := range fsm.TaskTable() {
		if r.From == from && r.Event == ev && (r.Guard == fsm.TaskGuardNone || held.Has(r.Guard)) {
			return r, true
		}
	}
	return fsm.TaskTransition{}, false
}

// Every state × every event × every guard set, through Task.Apply: a defined
// transition goes where the table says; an undefined one is a
// *fsm.TransitionError and leaves the task as it was.
func TestApplyMatchesTable(t *testing.T) {
	for _, s := range fsm.TaskStates() {
		for _, ev := range fsm.TaskEvents() {
			for _, held := range guardSets() {
				want, defined := tableLookup(s, ev, held)
				task := Restore("t", "c", s)
				step, err := task.Apply(ev, held)
				var te *fsm.TransitionError
				switch {
				case defined && err != nil:
					t.Errorf("%v + %v %v: defined, got %v", s, ev, held.List(), err)
				case defined && (step.To != want.To || step.Outputs != want.Outputs || task.State() != want.To || step.From != s):
					t.Errorf("%v + %v %v: got %+v, table says %+v", s, ev, held.List(), step, want)
				case !defined && !errors.As(err, &te):
					t.Errorf("%v + %v %v: undefined, got %+v, %v", s, ev, held.List(), step, err)
				case !defined && task.State() != s:
					t.Errorf("%v + %v: refused event moved the task to %v", s, ev, task.State())
				}
				if task.ID() != "t" || task.ContextID() != "c" {
					t.Fatalf("ids changed")
				}
			}
		}
	}
}

// Terminal states have no rows at all: they are absorbing.
func TestTerminalStatesHaveNoRows(t *testing.T) {
	for _, r := range fsm.TaskTable() {
		if r.From.Terminal() {
			t.Errorf("row leaves terminal state %v: %+v", r.From, r)
		}
	}
}

// Every state × every wire status, through Task.Observe.
func TestObserveFollowsTable(t *testing.T) {
	for _, s := range fsm.TaskStates() {
		for _, w := range a2a.TaskStateValues() {
			task := Restore("t", "c", s)
			step, err := task.Observe(w)
			st, ok := fsm.TaskStateFromWire(string(w))
			if !ok {
				if !errors.Is(err, ErrUnknownState) {
					t.Errorf("%v + %v: got %v, want ErrUnknownState", s, w, err)
				}
				continue
			}
			ev, _ := StatusEvent(st)
			want, defined := tableLookup(s, ev, 0)
			if defined != (err == nil) || (defined && step.To != want.To) {
				t.Errorf("%v + %v: got %+v, %v; table %+v (defined %v)", s, w, step, err, want, defined)
			}
		}
	}
}
