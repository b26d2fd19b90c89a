package tasklife

import (
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
)

func TestStreamItemFinal(t *testing.T) {
	status := func(s a2a.TaskState) *a2a.StreamResponse {
		return &a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: &a2a.TaskStatus{State: s}}}
	}
	task := func(s a2a.TaskState) *a2a.StreamResponse {
		return &a2a.StreamResponse{Payload: &a2a.Task{ID: "t", Status: &a2a.TaskStatus{State: s}}}
	}
	cases := []struct {
		name  string
		item  *a2a.StreamResponse
		final bool
	}{
		{"working status goes on", status(a2a.TaskStateWorking), false},
		{"completed status ends", status(a2a.TaskStateCompleted), true},
		{"rejected status ends", status(a2a.TaskStateRejected), true},
		{"input required ends the correlation", status(a2a.TaskStateInputRequired), true},
		{"auth required ends the correlation", status(a2a.TaskStateAuthRequired), true},
		{"a submitted task goes on", task(a2a.TaskStateSubmitted), false},
		{"a task already failed ends", task(a2a.TaskStateFailed), true},
		{"a message ends", &a2a.StreamResponse{Payload: &a2a.Message{MessageID: "m"}}, true},
		{"an artifact update goes on", &a2a.StreamResponse{Payload: &a2a.TaskArtifactUpdateEvent{}}, false},
		{"an unknown state does not end", status("TASK_STATE_SLEEPING"), false},
		{"no status does not end", &a2a.StreamResponse{Payload: &a2a.Task{ID: "t"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := StreamItemFinal(tc.item); got != tc.final {
				t.Fatalf("got %v, want %v", got, tc.final)
			}
		})
	}
}
