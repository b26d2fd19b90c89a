package pgstore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// An agent on PostgreSQL scopes its tasks to their callers as on the other
// stores (docs/protocol.md §15): the principal is stored, another
// caller's GetTask and follow-up are task_not_found, each ListTasks and its
// total count the caller's tasks alone, and a shared context id shows each
// caller its own.
func TestAnAgentScopesItsTasksToTheirCallers(t *testing.T) {
	st := open(t, pgtest.NewSchema(t), Options{Migrate: true})
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
		if turn.Text() == "ask" && !turn.Resumed {
			return turn.AskInput(ctx, "which one?")
		}
		return nil
	}), agent.WithStore(st), agent.WithVerifier(agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
		return agent.Caller{Subject: token}, nil
	})))
	t.Cleanup(func() { srv.Close(context.Background()) })
	serve := func(token string, method a2a.Method, params any) (json.RawMessage, *a2a.Error) {
		t.Helper()
		data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), method, params)
		if err != nil {
			t.Fatal(err)
		}
		req, _, perr := srv.DecodeRequest(data)
		if perr != nil {
			t.Fatal(perr)
		}
		var out json.RawMessage
		var e *a2a.Error
		sink := agent.SinkFunc(func(_ context.Context, r agent.Reply) error {
			if r.Err != nil {
				e = r.Err
				return nil
			}
			out, err = json.Marshal(r.Result)
			return err
		})
		if err := srv.Serve(ctx, agent.Call{Request: req, IDs: tasklife.RequesterIDs, Token: token}, sink); err != nil {
			t.Fatal(err)
		}
		return out, e
	}
	send := func(token, taskID, ctxID, text string) {
		t.Helper()
		m := &a2a.Message{MessageID: uuid.NewString(), TaskID: taskID, ContextID: ctxID, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
		if _, e := serve(token, a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: m}); e != nil {
			t.Fatalf("%s's message: %v", token, e)
		}
	}
	mine, ctxID := uuid.NewString(), uuid.NewString()
	send("alice", mine, ctxID, "ask")
	send("alice", uuid.NewString(), ctxID, "hi")
	send("bob", uuid.NewString(), ctxID, "hi")
	if rec, err := st.Get(ctx, mine); err != nil || rec.Principal != "alice" {
		t.Fatalf("alice's task stores %q: %v", rec.Principal, err)
	}
	if _, e := serve("bob", a2a.MethodGetTask, &a2a.GetTaskRequest{ID: mine}); e == nil || e.Token != a2a.TokenTaskNotFound {
		t.Fatalf("bob's GetTask: %v", e)
	}
	m := &a2a.Message{MessageID: uuid.NewString(), TaskID: mine, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("x")}}}
	if _, e := serve("bob", a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: m}); e == nil || e.Token != a2a.TokenTaskNotFound {
		t.Fatalf("bob's follow-up: %v", e)
	}
	for _, tc := range []struct {
		token, ctxID string
		total        int32
	}{{"alice", "", 2}, {"alice", ctxID, 2}, {"bob", "", 1}, {"bob", ctxID, 1}, {"carol", "", 0}} {
		raw, e := serve(tc.token, a2a.MethodListTasks, &a2a.ListTasksRequest{ContextID: tc.ctxID})
		var l a2a.ListTasksResponse
		if e != nil || json.Unmarshal(raw, &l) != nil || l.TotalSize != tc.total || len(l.Tasks) != int(tc.total) {
			t.Fatalf("%s lists %s (context %q): %v, want %d", tc.token, raw, tc.ctxID, e, tc.total)
		}
	}
	send("alice", mine, ctxID, "the first")
	checkTotals(t, st)
}
