package agent

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
)

// TestCallObserverSeesEachCall: WithCallObserver learns of every call once,
// when Serve returns, with its method, its task, the task's last state (or
// the error token) and the replies sent.
func TestCallObserverSeesEachCall(t *testing.T) {
	var mu sync.Mutex
	var got []CallRecord
	f := newFixture(t, echo(nil), WithCallObserver(func(_ context.Context, r CallRecord) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	}))
	asked := taskOf(t, f.send(msg(uuid.NewString(), uuid.NewString(), "ask me"))[0])
	cases := []struct {
		name    string
		call    func()
		method  a2a.Method
		task    string
		state   a2a.TaskState
		err     a2a.Token
		replies int
	}{
		{"a message that completes", func() { f.send(msg("11111111-1111-4111-8111-111111111111", uuid.NewString(), "hi")) },
			a2a.MethodSendMessage, "11111111-1111-4111-8111-111111111111", a2a.TaskStateCompleted, "", 1},
		{"a stream: its last state", func() { f.stream(msg("22222222-2222-4222-8222-222222222222", uuid.NewString(), "hi")) },
			a2a.MethodSendStreamingMessage, "22222222-2222-4222-8222-222222222222", a2a.TaskStateCompleted, "", 4},
		{"GetTask of the task asking for input", func() { f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: asked.ID}) },
			a2a.MethodGetTask, asked.ID, a2a.TaskStateInputRequired, "", 1},
		{"CancelTask of it", func() { f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: asked.ID}) },
			a2a.MethodCancelTask, asked.ID, a2a.TaskStateCanceled, "", 1},
		{"GetTask of an unknown task: the error token", func() {
			f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: "33333333-3333-4333-8333-333333333333"})
		}, a2a.MethodGetTask, "33333333-3333-4333-8333-333333333333", "", a2a.TokenTaskNotFound, 1},
		{"ListTasks: no task", func() { f.call(a2a.MethodListTasks, &a2a.ListTasksRequest{}) },
			a2a.MethodListTasks, "", "", "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			tc.call()
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(got), got)
			}
			r := got[0]
			if r.Method != tc.method || r.TaskID != tc.task || r.State != tc.state || r.Error != tc.err || r.Replies != tc.replies {
				t.Fatalf("got %+v, want method %s task %q state %q error %q replies %d", r, tc.method, tc.task, tc.state, tc.err, tc.replies)
			}
			if r.Duration <= 0 {
				t.Fatalf("duration %v", r.Duration)
			}
		})
	}
}
