package pushmon_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// A requester sends a task through a Monitor, which registers its webhook
// in the send itself and follows the task to its end. Here the agent is
// served over HTTP on a loopback port and answers the (blocking) send
// with the finished task, so the task settles at once; a long task would
// be followed through pushes to the Receiver and polls driven by Run.
func ExampleMonitor_Send() {
	ctx := context.Background()

	// The agent.
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		return t.Complete(ctx, "done: "+t.Text())
	}))
	defer srv.Close(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	url := "http://" + ln.Addr().String()
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: &a2a.AgentCard{
		Name: "reporter", Description: "writes reports", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(url + "/a2a")},
		Capabilities:        &a2a.AgentCapabilities{},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "report", Name: "Report", Description: "writes a report", Tags: []string{"report"}}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	go h.Serve(ln, "/a2a")
	defer h.Close(ctx)

	// The requester: a client, and the Monitor's webhook served where
	// the agent can reach it.
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	mux := http.NewServeMux()
	hook := httptest.NewServer(mux)
	defer hook.Close()
	m, err := pushmon.New(c.Client, pushmon.Config{ReceiverURL: hook.URL + "/a2a/push"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	mux.Handle("/a2a/push", m.Receiver())
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go m.Run(runCtx)

	w, err := m.Send(ctx, requester.TextMessage("the weekly report", "", ""))
	if err != nil {
		fmt.Println(err)
		return
	}
	for u := range w.Updates() {
		fmt.Println("update from", u.Source, u.Item.Payload.(*a2a.Task).Status.State)
	}
	task, err := w.Wait(ctx)
	fmt.Println(task.Status.State, w.Binding(), err)
	// Output:
	// update from send TASK_STATE_COMPLETED
	// TASK_STATE_COMPLETED Settled <nil>
}

// A Receiver can serve a callback of your own instead of a Monitor: the
// callback checks the token and takes the push, and its error chooses the
// answer the agent gets.
func ExampleNewReceiver() {
	tokens := map[string]string{"task-1": "s3cret"}
	r := pushmon.NewReceiver(pushmon.SinkFunc(func(_ context.Context, d *pushmon.Delivery) error {
		want, ok := tokens[d.TaskID]
		switch {
		case !ok:
			return pushmon.ErrUnknownTask
		case d.Token != want:
			return pushmon.ErrBadToken
		}
		fmt.Printf("%T for %s\n", d.Item.Payload, d.TaskID)
		return nil
	}), pushmon.ReceiverConfig{})

	push := func(token, body string) {
		req := httptest.NewRequest(http.MethodPost, "/a2a/push", strings.NewReader(body))
		req.Header.Set(pushmon.TokenHeader, token)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	done := `{"statusUpdate":{"taskId":"task-1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`
	push("s3cret", done)
	push("guess", done)
	push("s3cret", strings.Replace(done, "task-1", "task-2", 1))
	push("s3cret", `{"statusUpdate":{}}`)
	// Output:
	// *a2a.TaskStatusUpdateEvent for task-1
	// 204
	// 403
	// 404
	// 400
}
