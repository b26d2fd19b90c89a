package inbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/internal/sealtest"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// The secrets and the message the test queues, each a string found
// nowhere else.
const (
	secretToken = "tok-d41c77a0-do-not-store-in-clear"
	secretCreds = "cred-0b9e33f2-do-not-store-in-clear"
	secretText  = "text-6a2f9e10-the-caller-wrote"
)

type notifier struct{}

func (notifier) Notify(a2a.TaskPushNotificationConfig, *a2a.StreamResponse) {}
func (notifier) Forget(string, string)                                      {}

// serve serves one request through srv as a transport whose card declares
// push notifications would, and returns its final reply.
func serve(t *testing.T, srv *agent.Server, method a2a.Method, params any) agent.Reply {
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

// A message queued while the agent sleeps, carrying a push config with a
// token and credentials, is stored sealed: the queue file holds neither
// the secrets nor the message; GetTaskPushNotificationConfig, answered
// from the queue, returns them intact. Without a ring the file holds them
// (the check finds what it looks for).
func TestAQueuedMessageIsSealedInTheFile(t *testing.T) {
	for _, sealing := range []bool{true, false} {
		t.Run(map[bool]string{true: "sealed", false: "in clear"}[sealing], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "queue.db")
			opts := inbox.BoltOptions{}
			if sealing {
				opts.Keys = sealtest.NewRing(t, "k1")
			}
			q, _, err := inbox.OpenBolt(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { q.Close() })
			off, err := agent.NewOffline(agent.OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q})
			if err != nil {
				t.Fatal(err)
			}
			srv := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }),
				agent.WithOffline(off), agent.WithPush(agent.PushConfig{Notifier: notifier{}}))
			t.Cleanup(func() { srv.Close(context.Background()) })

			id := uuidv4.New()
			cfg := &a2a.TaskPushNotificationConfig{ID: "via-message", URL: "https://hooks.example/q", Token: secretToken,
				Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: secretCreds}}
			r := serve(t, srv, a2a.MethodSendMessage, &a2a.SendMessageRequest{
				Message:       &a2a.Message{MessageID: uuidv4.New(), TaskID: id, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(secretText)}}},
				Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: cfg}})
			if r.Err == nil || r.Err.Token != a2a.TokenAgentAsleep {
				t.Fatalf("SendMessage to a sleeping agent: %+v", r)
			}
			if st, _ := q.Stats(context.Background()); st.Messages != 1 {
				t.Fatalf("queued %+v", st)
			}
			g := serve(t, srv, a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID})
			var got a2a.TaskPushNotificationConfig
			b, _ := json.Marshal(g.Result)
			if g.Err != nil || json.Unmarshal(b, &got) != nil || got.Token != secretToken || got.Authentication == nil ||
				got.Authentication.Credentials != secretCreds || got.URL != cfg.URL {
				t.Fatalf("GetTaskPushNotificationConfig of the queued task: %+v %s", g.Err, b)
			}

			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if sealing {
				sealtest.AssertAbsent(t, "the queue file", file, secretToken, secretCreds, secretText)
			} else {
				sealtest.AssertPresent(t, "a queue file written without a ring", file, secretToken, secretCreds, secretText)
			}
			if !bytes.Contains(file, []byte(id)) {
				t.Fatal("the file does not hold the task id: not the queue's file?")
			}
		})
	}
}
