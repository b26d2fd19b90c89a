// Package sealagent holds what the sealing tests of the stores share that
// needs the agent runtime or the stores' types: a task and a queued
// message carrying push secrets, served through an agent.Server and read
// back intact. It is apart from internal/sealtest so that the tests inside
// package inbox, which the agent runtime imports, can use that one.
package sealagent

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// notifier takes the notifications and sends none.
type notifier struct{}

func (notifier) Notify(a2a.TaskPushNotificationConfig, *a2a.StreamResponse) {}
func (notifier) Forget(string, string)                                      {}

// Reply serves one request through srv as a transport whose card declares
// push notifications would, and returns its final reply.
func Reply(t testing.TB, srv *agent.Server, method a2a.Method, params any) agent.Reply {
	t.Helper()
	data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), method, params)
	if err != nil {
		t.Fatal(err)
	}
	req, _, perr := srv.DecodeRequest(data)
	if perr != nil {
		t.Fatal(perr)
	}
	var final agent.Reply
	sink := agent.SinkFunc(func(_ context.Context, r agent.Reply) error {
		if r.Final {
			final = r
		}
		return nil
	})
	yes := true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Serve(ctx, agent.Call{Request: req, IDs: tasklife.RequesterIDs,
		Capabilities: &a2a.AgentCapabilities{PushNotifications: &yes}}, sink); err != nil {
		t.Fatal(err)
	}
	return final
}

// Result serves one request as Reply does, fails t unless its final reply
// is a result, and decodes that into out.
func Result(t testing.TB, srv *agent.Server, method a2a.Method, params, out any) {
	t.Helper()
	final := Reply(t, srv, method, params)
	if !final.Final || final.Err != nil {
		t.Fatalf("%s: %+v", method, final)
	}
	b, err := json.Marshal(final.Result)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
}

// TaskWithSecrets is a task with three push configs: one with token, one
// with token+"-2" and bearer credentials creds, one with neither.
func TaskWithSecrets(id, token, creds string) taskstore.Record {
	return taskstore.Record{Task: a2a.Task{ID: id, ContextID: "ctx-" + id, Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}},
		PushConfigs: []a2a.TaskPushNotificationConfig{
			{ID: "cfg-1", TaskID: id, URL: "https://hooks.example/one", Token: token},
			{ID: "cfg-2", TaskID: id, URL: "https://hooks.example/two", Token: token + "-2",
				Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: creds}},
			{ID: "cfg-3", TaskID: id, URL: "https://hooks.example/three"},
		}}
}

// EqualConfigs says whether a and b are the same configs, as JSON.
func EqualConfigs(a, b []a2a.TaskPushNotificationConfig) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// ServeTask has an agent.Server on st create a task whose message carries
// a push config with token and creds, add a second config with
// CreateTaskPushNotificationConfig, and read both back with
// GetTaskPushNotificationConfig, intact. It returns the task's id.
func ServeTask(t testing.TB, st taskstore.Store, token, creds string) string {
	t.Helper()
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
		return turn.AskInput(ctx, "more?")
	}), agent.WithStore(st), agent.WithPush(agent.PushConfig{Notifier: notifier{}}))
	t.Cleanup(func() { srv.Close(context.Background()) })
	id := uuidv4.New()
	first := &a2a.TaskPushNotificationConfig{ID: "via-message", URL: "https://hooks.example/msg", Token: token,
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: creds}}
	var sent a2a.SendMessageResponse
	Result(t, srv, a2a.MethodSendMessage, &a2a.SendMessageRequest{
		Message:       &a2a.Message{MessageID: uuidv4.New(), TaskID: id, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("hello")}}},
		Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: first}}, &sent)
	second := &a2a.TaskPushNotificationConfig{ID: "via-create", TaskID: id, URL: "https://hooks.example/create", Token: token + "-c",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Basic", Credentials: creds + "-c"}}
	var made a2a.TaskPushNotificationConfig
	Result(t, srv, a2a.MethodCreateTaskPushNotificationConfig, second, &made)
	for _, want := range []*a2a.TaskPushNotificationConfig{first, second} {
		var got a2a.TaskPushNotificationConfig
		Result(t, srv, a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: want.ID}, &got)
		if got.Token != want.Token || got.Authentication == nil || got.Authentication.Credentials != want.Authentication.Credentials ||
			got.Authentication.Scheme != want.Authentication.Scheme || got.URL != want.URL {
			t.Fatalf("GetTaskPushNotificationConfig %s: %+v (authentication %+v), want %+v", want.ID, got, got.Authentication, want)
		}
	}
	return id
}

// Queue has an asleep agent.Server queue in q a message of the text text
// carrying a push config with token and creds, and reads the config back
// with GetTaskPushNotificationConfig (answered from the queue), intact. It
// returns the task's id.
func Queue(t testing.TB, q inbox.Store, token, creds, text string) string {
	t.Helper()
	off, err := agent.NewOffline(agent.OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	srv := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }),
		agent.WithOffline(off), agent.WithPush(agent.PushConfig{Notifier: notifier{}}))
	t.Cleanup(func() { srv.Close(context.Background()) })
	id := uuidv4.New()
	cfg := &a2a.TaskPushNotificationConfig{ID: "via-message", URL: "https://hooks.example/q", Token: token,
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: creds}}
	r := Reply(t, srv, a2a.MethodSendMessage, &a2a.SendMessageRequest{
		Message:       &a2a.Message{MessageID: uuidv4.New(), TaskID: id, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}},
		Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: cfg}})
	if r.Err == nil || r.Err.Token != a2a.TokenAgentAsleep {
		t.Fatalf("SendMessage to a sleeping agent: %+v", r)
	}
	g := Reply(t, srv, a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID})
	var got a2a.TaskPushNotificationConfig
	b, _ := json.Marshal(g.Result)
	if g.Err != nil || json.Unmarshal(b, &got) != nil || got.Token != token || got.Authentication == nil ||
		got.Authentication.Credentials != creds || got.URL != cfg.URL {
		t.Fatalf("GetTaskPushNotificationConfig of the queued task: %+v %s", g.Err, b)
	}
	return id
}
