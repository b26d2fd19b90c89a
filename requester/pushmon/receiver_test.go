package pushmon_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester/pushmon"
)

// TestReceiver: what a webhook answers an agent's POSTs (A2A v1.0
// §4.3.3), over a real HTTP server: the token first, then the body, then
// what the sink says of the task.
func TestReceiver(t *testing.T) {
	const status = `{"statusUpdate":{"taskId":"task-1","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-01T09:00:00Z"}}}`
	var mu sync.Mutex
	var taken []*pushmon.Delivery
	sink := pushmon.SinkFunc(func(_ context.Context, d *pushmon.Delivery) error {
		switch {
		case d.TaskID == "task-busy":
			return pushmon.ErrBusy
		case d.TaskID != "task-1":
			return pushmon.ErrUnknownTask
		case d.Token != "tok-1":
			return pushmon.ErrBadToken
		}
		mu.Lock()
		taken = append(taken, d)
		mu.Unlock()
		return nil
	})
	srv := httptest.NewServer(pushmon.NewReceiver(sink, pushmon.ReceiverConfig{MaxBodyBytes: 1024}))
	defer srv.Close()

	cases := []struct {
		name   string
		method string
		header string // the token header used
		token  string
		body   string
		want   int
		taken  bool
	}{
		{"a status update with its token is taken", "POST", pushmon.TokenHeader, "tok-1", status, 204, true},
		{"the JavaScript SDK's header is accepted too", "POST", pushmon.AltTokenHeader, "tok-1", status, 204, true},
		{"a whole task is taken", "POST", pushmon.TokenHeader, "tok-1",
			`{"task":{"id":"task-1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`, 204, true},
		{"a2a-go's timestamp with an offset is read as UTC", "POST", pushmon.TokenHeader, "tok-1",
			strings.Replace(status, "09:00:00Z", "11:00:00+02:00", 1), 204, true},
		{"no token", "POST", "", "", status, 401, false},
		{"the token of no task here", "POST", pushmon.TokenHeader, "tok-2", status, 403, false},
		{"an unknown task", "POST", pushmon.TokenHeader, "tok-1", strings.Replace(status, "task-1", "task-9", 1), 404, false},
		{"a full sink", "POST", pushmon.TokenHeader, "tok-1", strings.Replace(status, "task-1", "task-busy", 1), 503, false},
		{"a body that is not JSON", "POST", pushmon.TokenHeader, "tok-1", `{"statusUpdate":`, 400, false},
		{"a status update without its status", "POST", pushmon.TokenHeader, "tok-1",
			`{"statusUpdate":{"taskId":"task-1","contextId":"c"}}`, 400, false},
		{"a lowercase state", "POST", pushmon.TokenHeader, "tok-1", strings.Replace(status, "TASK_STATE_WORKING", "working", 1), 400, false},
		{"two payloads at once", "POST", pushmon.TokenHeader, "tok-1",
			`{"statusUpdate":{"taskId":"task-1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}},"task":{"id":"task-1","status":{"state":"TASK_STATE_WORKING"}}}`, 400, false},
		{"a message naming no task", "POST", pushmon.TokenHeader, "tok-1",
			`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`, 400, false},
		{"a body over the limit", "POST", pushmon.TokenHeader, "tok-1",
			`{"statusUpdate":{"taskId":"task-1","contextId":"` + strings.Repeat("c", 2048) + `","status":{"state":"TASK_STATE_WORKING"}}}`, 413, false},
		{"a GET", "GET", pushmon.TokenHeader, "tok-1", "", 405, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			before := len(taken)
			mu.Unlock()
			req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tc.header != "" {
				req.Header.Set(tc.header, tc.token)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("answered %d %q, want %d", resp.StatusCode, body, tc.want)
			}
			if tc.want == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			mu.Lock()
			got := len(taken) - before
			var last *pushmon.Delivery
			if got > 0 {
				last = taken[len(taken)-1]
			}
			mu.Unlock()
			if (got == 1) != tc.taken || got > 1 {
				t.Fatalf("%d deliveries handed to the sink, want taken=%v", got, tc.taken)
			}
			if last != nil && pushmon.TaskIDOf(last.Item) != "task-1" {
				t.Fatalf("delivered %+v", last)
			}
			if ev, ok := itemPayload(last).(*a2a.TaskStatusUpdateEvent); ok && ev.Status.Timestamp != "2026-12-01T09:00:00Z" {
				t.Fatalf("timestamp %q, want it in UTC with Z", ev.Status.Timestamp)
			}
		})
	}
}

func itemPayload(d *pushmon.Delivery) any {
	if d == nil {
		return nil
	}
	return d.Item.Payload
}
