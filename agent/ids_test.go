package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// TestNewTasksTakeTheIDsTheServerMakes checks the ids a message that
// creates a task leaves the server to make: with WithIDs, the task's id
// first, then its context's, then the agent's message's; by default,
// distinct well-formed UUIDs.
func TestNewTasksTakeTheIDsTheServerMakes(t *testing.T) {
	const givenTask, givenContext = "6f1c2d9e-8a77-4b6c-9f2a-14f1e4d7b9a5", "0b6cf2a1-4f1e-4d7b-9a55-3f1c2d9e8a77"
	counter := func() func() string {
		n := 0
		return func() string { n++; return fmt.Sprintf("id-%d", n) }
	}
	cases := []struct {
		name              string
		ids               tasklife.IDOrigin
		withIDs           bool
		taskID, contextID string
		// wantTask, wantContext and wantStatus are the ids expected ("uuid":
		// any well-formed UUID, distinct from the others).
		wantTask, wantContext, wantStatus string
	}{
		{"responder ids, none given: task, then context, then the message", tasklife.ResponderIDs, true, "", "", "id-1", "id-2", "id-3"},
		{"responder ids, the context given: the task's id only", tasklife.ResponderIDs, true, "", givenContext, "id-1", givenContext, "id-2"},
		{"requester ids, the task given: the context's id only", tasklife.RequesterIDs, true, givenTask, "", givenTask, "id-1", "id-2"},
		{"requester ids, both given: the message's id only", tasklife.RequesterIDs, true, givenTask, givenContext, givenTask, givenContext, "id-1"},
		{"default ids, none given: three distinct UUIDs", tasklife.ResponderIDs, false, "", "", "uuid", "uuid", "uuid"},
		{"default ids, the task given: two distinct UUIDs", tasklife.RequesterIDs, false, givenTask, "", givenTask, "uuid", "uuid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.withIDs {
				opts = append(opts, WithIDs(counter()))
			}
			f := newFixture(t, HandlerFunc(func(ctx context.Context, tn *Turn) error { return tn.Complete(ctx, "done") }), opts...)
			f.ids = tc.ids
			replies := f.send(msg(tc.taskID, tc.contextID, "hello"))
			if len(replies) != 1 {
				t.Fatalf("%d replies", len(replies))
			}
			task := taskOf(t, replies[0])
			if task.Status.Message == nil {
				t.Fatalf("no status message: %+v", task.Status)
			}
			got := []string{task.ID, task.ContextID, task.Status.Message.MessageID}
			want := []string{tc.wantTask, tc.wantContext, tc.wantStatus}
			seen := map[string]bool{}
			for i, name := range []string{"task id", "context id", "status message id"} {
				if want[i] == "uuid" {
					if !uuidv4.WellFormed(got[i]) || seen[got[i]] || got[i] == givenTask || got[i] == givenContext {
						t.Errorf("%s %q: want a new UUID", name, got[i])
					}
				} else if got[i] != want[i] {
					t.Errorf("%s %q, want %q", name, got[i], want[i])
				}
				seen[got[i]] = true
			}
			if task.History[0].TaskID != task.ID || task.History[0].ContextID != task.ContextID {
				t.Errorf("the history's message names task %q, context %q", task.History[0].TaskID, task.History[0].ContextID)
			}
		})
	}
}
