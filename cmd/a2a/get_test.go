package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/offline"
)

// TestSendGetFollowsAQueuedTask: a2a send --get reads the task an asleep
// agent queued: exit 3 while it is SUBMITTED, 0 once the wake completed it.
func TestSendGetFollowsAQueuedTask(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ra, err := refagent.Start(t.Context(), refagent.Config{ID: "edge", HTTP: ln,
		Reachability: &refagent.Reachability{Mode: offline.ReachabilityModeUnavailableStoreForward, QueueDir: filepath.Join(t.TempDir(), "q")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ra.Close(t.Context()) })
	url := ra.HTTPURL()
	sent := runCLI(t, nil, "send", "--url", url, "--json", "read the meter")
	if sent.code != exitQueued || !strings.Contains(sent.stdout, `"queued":true`) {
		t.Fatalf("send: exit %d, stdout %q, stderr %q", sent.code, sent.stdout, sent.stderr)
	}
	id := between(sent.stdout, `"taskId":"`, `"`)
	cases := []struct {
		name  string
		wake  bool
		code  int
		state string
	}{
		{"while queued the task is SUBMITTED and send exits 3", false, exitQueued, "TASK_STATE_SUBMITTED"},
		{"after the wake it is COMPLETED and send exits 0", true, 0, "TASK_STATE_COMPLETED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.wake {
				ra.Offline().SetAwake(true)
				waitDelivered(t, ra.Offline(), 1)
			}
			got := runCLI(t, nil, "send", "--url", url, "--get", id)
			if got.code != c.code || !strings.Contains(got.stdout, c.state) {
				t.Fatalf("exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
			}
		})
	}
	if bad := runCLI(t, nil, "send", "--url", url, "--get", id, "extra text"); bad.code != 2 {
		t.Errorf("--get with TEXT: exit %d", bad.code)
	}
}

func between(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(after, to)
	return v
}

func waitDelivered(t *testing.T, o *agent.Offline, n int64) {
	t.Helper()
	for {
		st, err := o.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Delivered >= n {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal("not delivered")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
