package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

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

// A handler that reports progress and streams its artifact in chunks; a
// streaming call sees each step as it happens. Here the Sink prints the
// stream items instead of writing them on a wire.
func ExampleTurn_Artifact() {
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		if err := t.Working(ctx, "writing"); err != nil {
			return err
		}
		words := strings.Fields(t.Text())
		for i, w := range words {
			chunk := a2a.Artifact{ArtifactID: "words", Parts: []a2a.Part{{Content: a2a.PartText(w)}}}
			// The first chunk adds the artifact, the others append to it.
			if err := t.Artifact(ctx, chunk, agent.ArtifactOptions{Append: i > 0, LastChunk: i == len(words)-1}); err != nil {
				return err
			}
		}
		return nil // a task left working completes
	}))
	defer srv.Close(context.Background())

	req, _, perr := jsonrpc.DecodeRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{
		"messageId":"m-1","taskId":"0c9a7d3e-5b1f-4e2a-9d8c-7f6e5d4c3b2a","role":"ROLE_USER","parts":[{"text":"one two three"}]}}}`))
	if perr != nil {
		log.Fatal(perr)
	}
	sink := agent.SinkFunc(func(_ context.Context, r agent.Reply) error {
		switch ev := r.Result.(*a2a.StreamResponse).Payload.(type) {
		case *a2a.Task:
			fmt.Println("task", ev.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			fmt.Println("status", ev.Status.State, agent.TextOf(ev.Status.Message))
		case *a2a.TaskArtifactUpdateEvent:
			fmt.Println("artifact", ev.Artifact.Parts[0].Content, "append", ev.Append, "last", ev.LastChunk)
		}
		return nil
	})
	if err := srv.Serve(context.Background(), agent.Call{Request: req}, sink); err != nil {
		log.Fatal(err)
	}
	// Output:
	// task TASK_STATE_SUBMITTED
	// status TASK_STATE_WORKING writing
	// artifact one append false last false
	// artifact two append true last false
	// artifact three append true last true
	// status TASK_STATE_COMPLETED
}
