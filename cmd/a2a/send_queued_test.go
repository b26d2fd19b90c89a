package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSendQueuedByAnAsleepAgent: an agent that is asleep and queued the
// message answers 503 with the offline body (docs/protocol.md §7.2); a2a
// send posts it once, prints the task and the wait, and exits with its
// own status, 5 (exitQueued).
func TestSendQueuedByAnAsleepAgent(t *testing.T) {
	cases := []struct {
		name       string
		retryAfter string
		body       string
		args       []string
		want       string
	}{
		{"with the wait", "1800", `{"error":"agent_asleep","message":"asleep","queued":true,"retryAfterSec":1800,"taskId":"t-42","contextId":"c-42"}`,
			nil, "queued as task t-42, retry after 1800 s\n"},
		{"no wait known", "", `{"error":"agent_asleep","message":"asleep","queued":true,"taskId":"t-42"}`,
			nil, "queued as task t-42\n"},
		{"as JSON", "1800", `{"error":"agent_asleep","message":"asleep","queued":true,"retryAfterSec":1800,"taskId":"t-42","contextId":"c-42"}`,
			[]string{"--json"}, `{"queued":true,"taskId":"t-42","contextId":"c-42","retryAfterSec":1800}` + "\n"},
		{"streamed", "", `{"error":"agent_asleep","message":"asleep","queued":true,"retryAfterSec":60,"taskId":"t-42"}`,
			[]string{"--stream"}, "queued as task t-42, retry after 60 s\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					http.NotFound(w, r) // no card: the URL is the endpoint
					return
				}
				posts.Add(1)
				io.Copy(io.Discard, r.Body)
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			r := runCLI(t, nil, append(append([]string{"send", "--url", srv.URL}, tc.args...), "are you awake?")...)
			if r.code != exitQueued || r.stdout != tc.want || r.stderr != "" || posts.Load() != 1 {
				t.Fatalf("exit %d after %d POSTs\nstdout %q\nstderr %q\nwant exit 5 after one POST, stdout %q", r.code, posts.Load(), r.stdout, r.stderr, tc.want)
			}
		})
	}
	if r := runCLI(t, nil, "send", "-h"); !strings.Contains(r.stdout+r.stderr, "5    queued: an asleep agent stored the message") {
		t.Fatalf("send -h does not document exit status 5:\n%s%s", r.stdout, r.stderr)
	}
}
