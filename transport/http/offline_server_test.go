package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/reach"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// asleepAgent serves srvHandler with an offline queue on a real file. Its
// verifier takes the bearer token as the caller's identity (the per-peer
// key).
func asleepAgent(t *testing.T, cfg agent.OfflineConfig) (*srvAgent, *agent.Offline) {
	t.Helper()
	q, _, err := inbox.OpenBolt(filepath.Join(t.TempDir(), "queue.db"), inbox.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if cfg.Mode == "" {
		cfg.Mode, cfg.StoreForward = offline.ReachabilityModeUnavailableStoreForward, true
	}
	cfg.Queue = q
	o, err := agent.NewOffline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	verify := agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
		return agent.Caller{Subject: token}, nil
	})
	return startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithOffline(o), agent.WithVerifier(verify)), o
}

// inHalfAnHour returns an hourly schedule whose window opens 30 minutes
// from now.
func inHalfAnHour() *reach.Schedule {
	now := time.Now()
	phase := time.Duration(now.UnixNano() % int64(time.Hour))
	offset := ((phase + 30*time.Minute) % time.Hour).Truncate(time.Second) + time.Second
	return &reach.Schedule{Period: time.Hour, Offset: offset % time.Hour, Length: 5 * time.Minute}
}

func TestAsleepAgentAnswers503QueuedWithRetryAfter(t *testing.T) {
	a, _ := asleepAgent(t, agent.OfflineConfig{Mode: offline.ReachabilityModePeriodicallyAvailable, StoreForward: true, Schedule: inHalfAnHour()})
	for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
		t.Run(method, func(t *testing.T) {
			resp := post(t, a.endpoint, req(method, sendParams("hello", "", "")), map[string]string{"Authorization": "Bearer peer-a"})
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("status %d, body %s", resp.StatusCode, body)
			}
			if err := offline.ValidateAsleepResponseJSON(body); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			var got offline.AsleepResponse
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if !got.Queued || got.TaskID == "" || got.ContextID == "" || got.RetryAfterSec == nil {
				t.Fatalf("body %s", body)
			}
			if sec := *got.RetryAfterSec; sec < 1790 || sec > 1801 {
				t.Errorf("retryAfterSec %d, want about 1800", sec)
			}
			if h := resp.Header.Get("Retry-After"); h != strconv.Itoa(int(*got.RetryAfterSec)) {
				t.Errorf("Retry-After %q, body says %d", h, *got.RetryAfterSec)
			}
			r := call(t, a.endpoint, req("GetTask", `{"id":"`+got.TaskID+`"}`), map[string]string{"Authorization": "Bearer peer-a"})
			if r.Err != nil {
				t.Fatalf("GetTask: %+v", r.Err)
			}
			if tk := task(t, r.Result); tk.Status.State != a2a.TaskStateSubmitted || tk.ContextID != got.ContextID {
				t.Errorf("GetTask: %s in context %s, body says %s", tk.Status.State, tk.ContextID, got.ContextID)
			}
		})
	}
}

func TestQueueFullAnswers429ForOnePeerAnd507ForAll(t *testing.T) {
	a, _ := asleepAgent(t, agent.OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true,
		Bounds: offline.QueueBounds{MaxMessages: 2, MaxPerPeer: 1}})
	cases := []struct {
		name   string
		peer   string
		status int
		kind   offline.QueueFullKind
	}{
		{"the first message of a peer is queued", "peer-a", 503, ""},
		{"its second hits the per-peer cap", "peer-a", 429, offline.QueueFullKindPeer},
		{"another peer is still queued", "peer-b", 503, ""},
		{"a third peer finds the queue full", "peer-c", 507, offline.QueueFullKindMessages},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, a.endpoint, req("SendMessage", sendParams(fmt.Sprint("hi ", i), "", "")), map[string]string{"Authorization": "Bearer " + c.peer})
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, c.status, body)
			}
			if c.kind == "" {
				return
			}
			if err := offline.ValidateQueueFullResponseJSON(body); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			var got offline.QueueFullResponse
			_ = json.Unmarshal(body, &got)
			if got.Queued || got.Kind != c.kind {
				t.Errorf("body %s", body)
			}
		})
	}
}

func TestAsleepAgentCanAnswerWithJSONRPCErrors(t *testing.T) {
	a, _ := asleepAgent(t, agent.OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true,
		Answer: offline.AsleepAnswerJSONRPC})
	resp := post(t, a.endpoint, req("SendMessage", sendParams("hi", "", "")), map[string]string{"Authorization": "Bearer peer-a"})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	r := parseResp(t, body, "1")
	if r.Err == nil || r.Err.Code != -32003 || r.Err.reason() != "AGENT_ASLEEP" {
		t.Fatalf("error %+v", r.Err)
	}
	var infos []struct {
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(r.Err.Data, &infos); err != nil || len(infos) != 1 {
		t.Fatalf("data %s", r.Err.Data)
	}
	if md := infos[0].Metadata; md["queued"] != "true" || md["taskId"] == "" {
		t.Errorf("metadata %v", md)
	}
}

// TestRequesterGetsQueuedOnceThenPollsTheOutcome: the requester over HTTP
// sends once, gets requester.Queued (never retried), and learns the outcome
// by polling GetTask after the agent wakes.
func TestRequesterGetsQueuedOnceThenPollsTheOutcome(t *testing.T) {
	a, o := asleepAgent(t, agent.OfflineConfig{})
	var posts atomic.Int64
	inner := a.ts.Config.Handler
	a.ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		inner.ServeHTTP(w, r)
	})
	ctx := srvCtx(t)
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: a.endpoint, Card: srvCard(a.endpoint, true, false)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	_, err = c.SendMessage(ctx, requester.TextMessage("hello", "", ""), requester.WithBearer("peer-a"))
	var q *requester.Queued
	if !errors.As(err, &q) || q.TaskID == "" {
		t.Fatalf("SendMessage: %v, want requester.Queued", err)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs, want 1: a queued message is never resent", n)
	}
	o.SetAwake(true)
	for {
		tk, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: q.TaskID}, requester.WithBearer("peer-a"))
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status.State == a2a.TaskStateCompleted {
			if len(tk.Artifacts) != 1 || len(tk.Artifacts[0].Parts) != 1 || tk.Artifacts[0].Parts[0].Content != a2a.PartText("hello") {
				t.Errorf("outcome %+v", tk.Artifacts)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s: %s", q.TaskID, tk.Status.State)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
