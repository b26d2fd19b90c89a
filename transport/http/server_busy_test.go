package http_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// TestBusyIsServiceUnavailable: a call the runtime has no worker slot for
// (agent.WithMaxTurns) is answered HTTP 503 with Retry-After, unary or
// streaming, its JSON-RPC body saying responder_unavailable with the server
// error code (not -32004, which is UnsupportedOperation in A2A core); the
// client retries it and, once the retries run out, reports both the
// exhaustion and the token.
func TestBusyIsServiceUnavailable(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithMaxTurns(1))
	// The only slot: a task that waits for release.
	r := call(t, a.endpoint, req("SendMessage", strings.TrimSuffix(sendParams("block", "", ""), "}")+`,"configuration":{"returnImmediately":true}}`), nil)
	if r.Err != nil {
		t.Fatalf("the blocking task: %+v", r.Err)
	}
	for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
		t.Run(method, func(t *testing.T) {
			body := req(method, sendParams("hello", "", ""))
			resp := post(t, a.endpoint, body, nil)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
				resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Retry-After %q, Content-Type %q: want 503, 1, application/json", resp.StatusCode,
					resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"))
			}
			got := parseResp(t, b, idOf(t, body))
			if got.Err == nil || got.Err.Code != -32603 || got.Err.reason() != "RESPONDER_UNAVAILABLE" {
				t.Fatalf("body %s: want code -32603, reason RESPONDER_UNAVAILABLE", b)
			}
		})
	}
	c := cliClient(t, a2ahttp.ClientConfig{URL: a.base, MaxRetries: 1})
	_, err := c.SendMessage(srvCtx(t), requester.TextMessage("hello", "", ""))
	if !errors.Is(err, a2a.ErrResponderUnavailable) || !errors.Is(err, requester.ErrUnreachable) {
		t.Fatalf("client error %v: want responder_unavailable and responder unreachable", err)
	}
	close(a.release)
}
