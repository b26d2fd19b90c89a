package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
)

// The HTTP stories tell user stories 02, 03 and 08 over the A2A JSON-RPC
// binding (A2A v1.0 §9), against the reference agent served over HTTP
// alone. There the server makes Task.id (A2A v1.0, core): a new task is
// sent without message.taskId.

func storyH02(ctx context.Context, d *demo) (string, error) {
	res, err := d.http.SendMessage(ctx, requester.TextMessage("hello over HTTP", "", ""))
	if err != nil {
		return "", err
	}
	if res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted || len(res.Task.Artifacts) != 1 || !strings.Contains(artifactText(res.Task), "hello over HTTP") {
		return "", fmt.Errorf("got %+v", res)
	}
	sent, err := d.wire.lastSent()
	if err != nil {
		return "", err
	}
	if sent.TaskID != "" {
		return "", fmt.Errorf("the new task was sent with message.taskId %s", sent.TaskID)
	}
	return "one POST without message.taskId; the server made task " + short(res.Task.ID) + ", COMPLETED with the echo", nil
}

func storyH03(ctx context.Context, d *demo) (string, error) {
	seq, err := streamStory(d.http.SendStreamingMessage(ctx, requester.TextMessage("stream this over HTTP", "", "")))
	if err != nil {
		return "", err
	}
	if ct := d.wire.lastContentType(); ct != "text/event-stream" {
		return "", fmt.Errorf("the stream came as %q, not text/event-stream", ct)
	}
	return seq, nil
}

func storyH08(ctx context.Context, d *demo) (string, error) {
	detail, err := multiTurn(ctx, d.http.Client, requester.Target{})
	if err != nil {
		return "", err
	}
	// The server makes task ids: a message naming one it never made is
	// refused, not taken as a new task.
	_, err = d.http.SendMessage(ctx, requester.TextMessage("made-up task", "not-a-task-of-this-agent", ""))
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		return "", fmt.Errorf("a made-up taskId was answered with %v", err)
	}
	return detail + ", a made-up taskId got task_not_found", nil
}
