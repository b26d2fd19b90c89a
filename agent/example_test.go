package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
)

// A transport's view of the runtime: decode a JSON-RPC request, hand it to
// Serve with a Sink, write what the Sink receives. Here the "wire" is
// standard output.
func ExampleServer_Serve() {
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		if t.Text() == "which one?" && !t.Resumed {
			return t.AskInput(ctx, "red or blue?")
		}
		return t.Complete(ctx, "done: "+t.Text())
	}))
	defer srv.Close(context.Background())

	payload := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{
		"messageId":"m-1","taskId":"7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6","role":"ROLE_USER",
		"parts":[{"text":"which one?"}]}}}`)
	req, id, perr := jsonrpc.DecodeRequest(payload)
	if perr != nil {
		log.Fatal(perr)
	}
	sink := agent.SinkFunc(func(_ context.Context, r agent.Reply) error {
		out, err := r.Encode(id, jsonrpc.BindingHTTP)
		if err != nil {
			return err
		}
		var env struct {
			Result a2a.SendMessageResponse `json:"result"`
		}
		if err := json.Unmarshal(out, &env); err != nil {
			return err
		}
		task := env.Result.Payload.(*a2a.Task)
		fmt.Println(task.Status.State, task.Status.Message.Parts[0].Content)
		return nil
	})
	if err := srv.Serve(context.Background(), agent.Call{Request: req}, sink); err != nil {
		log.Fatal(err)
	}
	// Output:
	// TASK_STATE_INPUT_REQUIRED red or blue?
}
