package tasklife_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// A requester follows a task through the statuses it receives and ends the
// correlation when a status is stream-final.
func ExampleTask_Observe() {
	task := tasklife.New("6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10", "9b2e4c1a-7d3f-4e8a-b5c6-1f0a2b3c4d5e")
	for _, s := range []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateInputRequired} {
		step, err := task.Observe(s)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%v -> %v: %v\n", step.From, step.To, step.Class())
	}
	// Output:
	// Submitted -> Working: continue
	// Working -> InputRequired: stream-final-resumable
}

// A responder admits each incoming message: a retry, a resume and a message
// to a finished task are told apart by messageId.
func ExampleLedger_Send() {
	const taskID, ctxID = "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10", "9b2e4c1a-7d3f-4e8a-b5c6-1f0a2b3c4d5e"
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l := tasklife.NewLedger(tasklife.Policy{ContextTTL: time.Hour}, nil)

	send := func(messageID string) {
		out, err := l.Send(tasklife.Request{TaskID: taskID, ContextID: ctxID, MessageID: messageID}, now)
		var e *a2a.Error
		if errors.As(err, &e) {
			fmt.Printf("%s: error %d %s\n", messageID, e.Code, e.Token)
			return
		}
		fmt.Printf("%s: %v, task %v\n", messageID, out.Verdict, out.Task.State)
	}
	send("m1") // creates the task
	send("m1") // the same message again: a retry
	_, _ = l.Update(taskID, a2a.TaskStateInputRequired, now)
	send("m2") // a new message resumes the interrupted task
	_, _ = l.Update(taskID, a2a.TaskStateCompleted, now)
	send("m3") // a new message to a finished task
	// Output:
	// m1: create, task Submitted
	// m1: retry, task Submitted
	// m2: resume, task Working
	// m3: error -32004 unsupported_operation
}
