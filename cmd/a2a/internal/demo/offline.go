package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// storyO01 tells the offline store-and-forward profile (docs/protocol.md
// §7) over HTTP: an agent that sleeps queues what it is sent, answers 503
// agent_asleep with queued true and the task to poll, refuses what does
// not fit its queue (asleep_queue_full, 429 for one peer's cap), delivers
// the queue once when it wakes, and refuses a replay at dequeue.
func storyO01(ctx context.Context, d *demo) (string, error) {
	dir, err := os.MkdirTemp("", "a2a-demo-queue-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	peers := map[string]string{"alice-token": "alice", "bob-token": "bob"}
	verify := agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
		if p, ok := peers[token]; ok {
			return agent.Caller{Subject: p}, nil
		}
		return agent.Caller{}, a2a.NewError(a2a.TokenUnauthenticated, "unknown token")
	})
	ra, err := refagent.Start(ctx, refagent.Config{ID: "sleeper", HTTP: ln, Log: d.log, Verifier: verify,
		Reachability: &refagent.Reachability{Mode: offline.ReachabilityModeUnavailableStoreForward, QueueDir: dir,
			Bounds: offline.QueueBounds{MaxPerPeer: 2}}})
	if err != nil {
		return "", fmt.Errorf("starting the sleeping agent: %w", err)
	}
	defer ra.Close(context.Background())
	base := strings.TrimSuffix(ra.HTTPURL(), refagent.HTTPPath)
	fmt.Fprintf(d.out, "   sleeping agent at %s: mode sleep, queue in %s, at most 2 pending per peer\n", ra.HTTPURL(), dir)
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base, HTTPClient: &http.Client{Transport: d.wire},
		Requester: requester.Config{Logger: d.log}})
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	d.wire.take()

	send := func(token string, m *a2a.Message) (*requester.Queued, error) {
		_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m}, requester.WithBearer(token))
		var q *requester.Queued
		if errors.As(err, &q) {
			return q, nil
		}
		if err == nil {
			return nil, errors.New("the sleeping agent answered live")
		}
		return nil, err
	}
	msg := func(id, text string) *a2a.Message {
		return &a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
	}

	// Asleep: queued, then the per-peer cap.
	first := msg("demo-offline-1", "first from alice")
	// Each task is its sender's: it alone reads it (docs/protocol.md §15).
	var tasks, senders []string
	for _, s := range []struct {
		token string
		m     *a2a.Message
	}{{"alice-token", first}, {"alice-token", msg("demo-offline-2", "second from alice")}, {"bob-token", msg("demo-offline-3", "hello from bob")}} {
		q, err := send(s.token, s.m)
		if err != nil {
			return "", fmt.Errorf("sending %q: %w", agent.TextOf(s.m), err)
		}
		tasks = append(tasks, q.TaskID)
		senders = append(senders, s.token)
	}
	_, err = send("alice-token", msg("demo-offline-4", "third from alice"))
	var full *a2a.Error
	if !errors.As(err, &full) || full.Token != a2a.TokenAsleepQueueFull || full.HTTPStatus != http.StatusTooManyRequests {
		return "", fmt.Errorf("alice's third message was answered %v, want asleep_queue_full (429)", err)
	}
	if t, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: tasks[0]}, requester.WithBearer("alice-token")); err != nil || t.Status.State != a2a.TaskStateSubmitted {
		return "", fmt.Errorf("GetTask of a queued task: %v %v", t, err)
	}

	// Wake: each queued message delivered once. The story waits for the
	// agent's own count, so that the transcript does not depend on timing.
	ra.Offline().SetAwake(true)
	if err := settled(ctx, ra.Offline(), 3); err != nil {
		return "", err
	}
	for i, id := range tasks {
		t, err := poll(ctx, c, id, senders[i])
		if err != nil {
			return "", err
		}
		if t.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(t), "echo:") {
			return "", fmt.Errorf("task %s after the wake: %s %q", short(id), t.Status.State, artifactText(t))
		}
	}

	// A replay: the first message again, queued while asleep, refused at
	// dequeue.
	ra.Offline().SetAwake(false)
	q, err := send("alice-token", first)
	if err != nil {
		return "", fmt.Errorf("the replay: %w", err)
	}
	ra.Offline().SetAwake(true)
	if err := settled(ctx, ra.Offline(), 4); err != nil {
		return "", err
	}
	t, err := poll(ctx, c, q.TaskID, "alice-token")
	if err != nil {
		return "", err
	}
	if t.Status.State != a2a.TaskStateRejected || !strings.Contains(agent.TextOf(t.Status.Message), "replay") {
		return "", fmt.Errorf("the replayed message ended %s (%q), want REJECTED as a replay", t.Status.State, agent.TextOf(t.Status.Message))
	}
	st, err := ra.Offline().Stats(ctx)
	if err != nil {
		return "", err
	}
	if st.Delivered != 3 {
		return "", fmt.Errorf("%d messages delivered, want 3", st.Delivered)
	}
	return "asleep: 3 messages answered 503 queued with their task, alice's third 429 asleep_queue_full (peer); " +
		"awake: the 3 delivered once, COMPLETED; the same message sent again was refused at dequeue as a replay (REJECTED)", nil
}

// poll reads a task with GetTask until it leaves SUBMITTED and WORKING.
func poll(ctx context.Context, c *a2ahttp.Client, id, token string) (*a2a.Task, error) {
	for {
		t, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id}, requester.WithBearer(token))
		if err != nil {
			return nil, fmt.Errorf("GetTask %s: %w", short(id), err)
		}
		if s := t.Status.State; s != a2a.TaskStateSubmitted && s != a2a.TaskStateWorking {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("task %s still %s", short(id), t.Status.State)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// settled waits until the agent has delivered or drained n records in all.
func settled(ctx context.Context, o *agent.Offline, n int64) error {
	for {
		st, err := o.Stats(ctx)
		if err != nil {
			return err
		}
		if st.Delivered+st.Drained >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agent delivered %d and drained %d records, want %d in all", st.Delivered, st.Drained, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
