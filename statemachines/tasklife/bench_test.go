package tasklife

import (
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// One task transition through the generated table: no allocation.
func BenchmarkTaskStep(b *testing.B) {
	events := []fsm.TaskEvent{fsm.TaskEventStatusWorking, fsm.TaskEventStatusInputRequired, fsm.TaskEventResume, fsm.TaskEventStatusCompleted}
	b.ReportAllocs()
	task := New("t", "c")
	i := 0
	for b.Loop() {
		if _, err := task.Apply(events[i], 0); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(events) {
			task, i = New("t", "c"), 0
		}
	}
}

// A status read from the wire, classified and applied: no allocation.
func BenchmarkTaskObserve(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		task := New("t", "c")
		if _, err := task.Observe(a2a.TaskStateWorking); err != nil {
			b.Fatal(err)
		}
		if _, err := task.Observe(a2a.TaskStateCompleted); err != nil {
			b.Fatal(err)
		}
	}
}

// The responder's decision for a resume: no allocation.
func BenchmarkAdmit(b *testing.B) {
	rec := &TaskRecord{ID: "t", ContextID: "c", State: fsm.TaskStateInputRequired, MessageIDs: []string{"m1", "m2"}}
	ctx := &ContextRecord{ID: "c"}
	req := Request{TaskID: "t", ContextID: "c", MessageID: "m3"}
	b.ReportAllocs()
	for b.Loop() {
		if a, err := Admit(req, rec, ctx, Policy{}, ctx.LastActive); err != nil || a.Verdict != VerdictResume {
			b.Fatal(a, err)
		}
	}
}
