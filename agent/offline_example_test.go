package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// printErr is a Sink that prints the error of each reply.
type printErr struct{}

func (printErr) Send(_ context.Context, r agent.Reply) error {
	if r.Err != nil {
		d, _ := jsonrpc.OfflineDetails(r.Err)
		fmt.Println(r.Err.Token, "queued:", d.Queued)
	}
	return nil
}

// An agent that sleeps queues what it is sent and delivers it when woken.
func ExampleNewOffline() {
	dir, _ := os.MkdirTemp("", "offline-example-")
	defer os.RemoveAll(dir)
	q, _, err := inbox.OpenBolt(filepath.Join(dir, "queue.db"), inbox.BoltOptions{})
	if err != nil {
		panic(err)
	}
	defer q.Close()
	off, err := agent.NewOffline(agent.OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q})
	if err != nil {
		panic(err)
	}
	done := make(chan string, 1)
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		_, queued := t.Queued()
		done <- fmt.Sprintf("delivered %q, queued %v", t.Text(), queued)
		return t.Complete(ctx, "done")
	}), agent.WithOffline(off))
	defer srv.Close(context.Background())

	req := &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m-1", Role: a2a.RoleUser,
		Parts: []a2a.Part{{Content: a2a.PartText("read the meter")}}}}
	call := agent.Call{Request: &jsonrpc.Request{Method: a2a.MethodSendMessage, Params: req}, IDs: tasklife.ResponderIDs}
	_ = srv.Serve(context.Background(), call, printErr{})

	off.SetAwake(true)
	fmt.Println(<-done)
	// Output:
	// agent_asleep queued: true
	// delivered "read the meter", queued true
}
