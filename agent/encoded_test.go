package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
)

// TestReplyReusesTheStoredEncoding checks that the reply of a blocking
// SendMessage, whose task the runtime encodes once for the store and the
// reply, is byte for byte what encoding the reply's task gives, that the
// store holds the same task, and that historyLength still trims the reply.
func TestReplyReusesTheStoredEncoding(t *testing.T) {
	long := strings.Repeat("a line of the request\n", 50_000)
	n := func(v int32) *int32 { return &v }
	cases := []struct {
		name    string
		text    string
		history *int32
		handler HandlerFunc
		// reused says whether the reply must carry the stored encoding.
		reused      bool
		wantHistory int
	}{
		{"completes at once, 1 MB text", long, nil, func(context.Context, *Turn) error { return nil }, true, 1},
		{"completes with a message and an artifact", "hi", nil, func(ctx context.Context, tn *Turn) error {
			if err := tn.Artifact(ctx, a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText(tn.Text())}}}, ArtifactOptions{}); err != nil {
				return err
			}
			return tn.Complete(ctx, "done")
		}, true, 2},
		{"historyLength larger than the history", long, n(5), func(context.Context, *Turn) error { return nil }, true, 1},
		{"historyLength 0 trims: encoded apart", long, n(0), func(context.Context, *Turn) error { return nil }, false, 0},
		{"historyLength 1 of 2 trims: encoded apart", "hi", n(1), func(ctx context.Context, tn *Turn) error { return tn.Complete(ctx, "done") }, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := taskstore.NewMemory(nil)
			s := NewServer(tc.handler, WithStore(store))
			defer s.Close(context.Background())
			ctx := context.Background()
			msg := &a2a.Message{MessageID: uuidv4.New(), TaskID: uuidv4.New(), Role: a2a.RoleUser,
				Parts: []a2a.Part{{Content: a2a.PartText(tc.text)}}}
			p := &a2a.SendMessageRequest{Message: msg}
			if tc.history != nil {
				p.Configuration = &a2a.SendMessageConfiguration{HistoryLength: tc.history}
			}
			data, err := jsonrpc.EncodeRequest(json.RawMessage(`"1"`), a2a.MethodSendMessage, p)
			if err != nil {
				t.Fatal(err)
			}
			req, _, perr := jsonrpc.DecodeRequest(data)
			if perr != nil {
				t.Fatal(perr)
			}
			var got, want []byte
			var reused bool
			sink := SinkFunc(func(_ context.Context, r Reply) error {
				reused = r.task != nil
				if got, err = r.Encode(json.RawMessage(`"1"`), jsonrpc.BindingMQTT); err != nil {
					return err
				}
				want, err = jsonrpc.EncodeResult(json.RawMessage(`"1"`), r.Result)
				return err
			})
			if err := s.Serve(ctx, Call{Request: req}, sink); err != nil {
				t.Fatal(err)
			}
			if reused != tc.reused {
				t.Errorf("reply carries the stored encoding: %v, want %v", reused, tc.reused)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("reply differs from its task encoded:\n got %.200s\nwant %.200s", got, want)
			}
			resp, err := jsonrpc.DecodeResponse(got, jsonrpc.BindingMQTT)
			if err != nil {
				t.Fatal(err)
			}
			var res a2a.SendMessageResponse
			if err := res.UnmarshalJSON(resp.Result); err != nil {
				t.Fatal(err)
			}
			task, ok := res.Payload.(*a2a.Task)
			if !ok {
				t.Fatalf("reply: %T, want a task", res.Payload)
			}
			if task.Status.State != a2a.TaskStateCompleted || len(task.History) != tc.wantHistory {
				t.Fatalf("reply: state %s, %d messages in the history, want COMPLETED and %d", task.Status.State, len(task.History), tc.wantHistory)
			}
			rec, err := store.Get(ctx, msg.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Task.Status.State != a2a.TaskStateCompleted || len(rec.Task.History) == 0 ||
				rec.Task.History[0].Parts[0].Content != a2a.PartText(tc.text) {
				t.Fatalf("stored task: state %s, history %d messages", rec.Task.Status.State, len(rec.Task.History))
			}
		})
	}
}
