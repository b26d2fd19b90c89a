package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// cliAgent serves the test agent (srvHandler) on a loopback HTTP server:
// the JSON-RPC endpoint at /a2a and the card at the well-known path. It
// returns the server's base URL.
func cliAgent(t *testing.T, opts ...agent.Option) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := agent.NewServer(srvHandler(nil), opts...)
	t.Cleanup(func() { srv.Close(context.Background()) })
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: srvCard(base+"/a2a", true, false)})
	if err != nil {
		t.Fatal(err)
	}
	go h.Serve(ln, "/a2a")
	t.Cleanup(func() { h.Close(context.Background()) })
	return base
}

func cliClient(t *testing.T, cfg a2ahttp.ClientConfig) *a2ahttp.Client {
	t.Helper()
	c, err := a2ahttp.NewClient(srvCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func text(s string) *a2a.SendMessageRequest { return requester.TextMessage(s, "", "") }

// TestClientStories: the A2A methods of the requester over HTTP against
// this package's own server: the server makes the task id, multi-turn
// resumes with it, streams begin with the task, and protocol errors come
// back as tokens.
func TestClientStories(t *testing.T) {
	base := cliAgent(t)
	c := cliClient(t, a2ahttp.ClientConfig{URL: base})
	ctx := srvCtx(t)
	if got, want := c.Endpoint(), base+"/a2a"; got != want {
		t.Fatalf("endpoint %q, want %q (resolved from the card)", got, want)
	}

	t.Run("a new task gets a server-made id", func(t *testing.T) {
		req := text("hello")
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted || res.Task.ID == "" {
			t.Fatalf("result %+v: want a completed task with an id", res)
		}
		if req.Message.TaskID != "" {
			t.Fatal("the caller's request was changed")
		}
		if a := res.Task.Artifacts; len(a) != 1 || agentText(a[0].Parts) != "hello" {
			t.Fatalf("artifacts %+v: want the echo", a)
		}
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: res.Task.ID})
		if err != nil || got.ID != res.Task.ID || got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("GetTask: %+v %v", got, err)
		}
	})

	t.Run("multi-turn resumes the task that asked for input", func(t *testing.T) {
		conv := c.NewConversation(requester.Target{})
		first, err := conv.Turn(ctx, "ask")
		if err != nil || first.Task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("first turn: %+v %v", first, err)
		}
		if first.Task.ContextID != conv.ContextID {
			t.Fatalf("context %q, want the conversation's %q", first.Task.ContextID, conv.ContextID)
		}
		second, err := conv.Resume(ctx, first.Task.ID, "the blue one")
		if err != nil {
			t.Fatal(err)
		}
		if second.Task.ID != first.Task.ID || second.Task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("follow-up: %+v", second.Task)
		}
		if m := second.Task.Status.Message; m == nil || agent.TextOf(m) != "got: the blue one" {
			t.Fatalf("follow-up status message %+v", m)
		}
		// The task is over: one more message is a message to a terminal task.
		_, err = conv.Resume(ctx, first.Task.ID, "again")
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Fatalf("message to a completed task: %v, want unsupported_operation", err)
		}
	})

	t.Run("a stream begins with the task and ends with the final status", func(t *testing.T) {
		var kinds []string
		for it, err := range c.SendStreamingMessage(ctx, text("stream me")) {
			if err != nil {
				t.Fatal(err)
			}
			switch x := it.Payload.(type) {
			case *a2a.Task:
				kinds = append(kinds, "task")
			case *a2a.TaskArtifactUpdateEvent:
				kinds = append(kinds, "artifact:"+agentText(x.Artifact.Parts))
			case *a2a.TaskStatusUpdateEvent:
				kinds = append(kinds, "status:"+string(x.Status.State))
			}
		}
		if got, want := strings.Join(kinds, ","), "task,artifact:stream me,status:TASK_STATE_COMPLETED"; got != want {
			t.Fatalf("stream %s, want %s", got, want)
		}
	})

	t.Run("cancel stops a running task", func(t *testing.T) {
		req := text("slow")
		req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: res.Task.ID})
		if err != nil || got.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask: %+v %v", got, err)
		}
		list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateCanceled})
		if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != res.Task.ID {
			t.Fatalf("ListTasks canceled: %+v %v", list, err)
		}
	})

	errCases := []struct {
		name string
		call func() error
		want error
	}{
		{"GetTask of an unknown task", func() error {
			_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "3f0b1c9e-0000-4000-8000-000000000000"})
			return err
		}, a2a.ErrTaskNotFound},
		{"a message naming an unknown task", func() error {
			_, err := c.SendMessage(ctx, requester.TextMessage("hi", "3f0b1c9e-0000-4000-8000-000000000001", ""))
			return err
		}, a2a.ErrTaskNotFound},
		{"push configs are not supported", func() error {
			_, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: "t"})
			return err
		}, a2a.ErrPushNotificationNotSupported},
		{"no extended card", func() error {
			_, err := c.GetExtendedAgentCard(ctx, nil)
			return err
		}, a2a.ErrUnsupportedOperation},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			var e *a2a.Error
			if !errors.As(err, &e) {
				t.Fatalf("%T is not an *a2a.Error", err)
			}
		})
	}
}

func agentText(parts []a2a.Part) string {
	return agent.TextOf(&a2a.Message{Parts: parts})
}

// TestClientResolvesTheEndpoint: a base URL is resolved through its card,
// the card's own URL too, a URL with no card is the endpoint itself, and a
// card without a JSONRPC interface of version 1.0 is an error.
func TestClientResolvesTheEndpoint(t *testing.T) {
	base := cliAgent(t)
	noCard := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(noCard.Close)
	grpcOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		card := srvCard("https://example.com/a2a", false, false)
		card.SupportedInterfaces = []a2a.AgentInterface{{URL: "https://example.com", ProtocolBinding: agentcard.BindingGRPC, ProtocolVersion: agentcard.ProtocolVersion}}
		b, _ := card.MarshalJSON()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(grpcOnly.Close)
	cases := []struct {
		name, url, endpoint, err string
	}{
		{"base URL", base, base + "/a2a", ""},
		{"base URL with a slash", base + "/", base + "/a2a", ""},
		{"the card's URL", base + a2ahttp.WellKnownCardPath, base + "/a2a", ""},
		{"an endpoint with no card", noCard.URL + "/rpc", noCard.URL + "/rpc", ""},
		{"a card without JSONRPC", grpcOnly.URL, "", "no JSONRPC interface"},
		{"nothing listening", "http://127.0.0.1:1", "", "fetching the agent card"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a2ahttp.NewClient(srvCtx(t), a2ahttp.ClientConfig{URL: tc.url})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Endpoint() != tc.endpoint {
				t.Fatalf("endpoint %q, want %q", c.Endpoint(), tc.endpoint)
			}
		})
	}
}

// scripted is a JSON-RPC endpoint that answers each POST with the next
// scripted answer and records what it got.
type scripted struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	answers []func(w http.ResponseWriter, body []byte)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, body)
	s.headers = append(s.headers, r.Header.Clone())
	answer := s.answers[min(n, len(s.answers)-1)]
	s.mu.Unlock()
	answer(w, body)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func status(code int, retryAfter string) func(http.ResponseWriter, []byte) {
	return func(w http.ResponseWriter, _ []byte) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		http.Error(w, http.StatusText(code), code)
	}
}

// completed answers a SendMessage with a completed task, echoing the id.
func completed(w http.ResponseWriter, body []byte) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}}`)
}

func scriptedClient(t *testing.T, s *scripted, mod func(*a2ahttp.ClientConfig)) *a2ahttp.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg := a2ahttp.ClientConfig{URL: srv.URL + "/rpc", RetryWaitMin: time.Millisecond, RetryWaitMax: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	s.answers = append([]func(http.ResponseWriter, []byte){status(http.StatusNotFound, "")}, s.answers...) // the card lookup (a GET)
	return cliClient(t, cfg)
}

// TestClientRetries: overload (429, 503) and gateway errors are retried
// with the same JSON-RPC id and messageId, honouring Retry-After up to the
// bound; other statuses are not retried; a server that asks for a longer
// wait fails the call at once, saying so.
func TestClientRetries(t *testing.T) {
	cases := []struct {
		name     string
		answers  []func(http.ResponseWriter, []byte)
		posts    int
		wantErr  string
		wantType any
	}{
		{"503 then success", []func(http.ResponseWriter, []byte){status(503, ""), completed}, 2, "", nil},
		{"429 with Retry-After 0 then success", []func(http.ResponseWriter, []byte){status(429, "0"), completed}, 2, "", nil},
		{"502 and 504 then success", []func(http.ResponseWriter, []byte){status(502, ""), status(504, ""), completed}, 3, "", nil},
		{"400 is not retried", []func(http.ResponseWriter, []byte){status(400, ""), completed}, 1, "400 Bad Request", &a2ahttp.StatusError{}},
		{"401 is not retried", []func(http.ResponseWriter, []byte){status(401, ""), completed}, 1, "401 Unauthorized", &a2ahttp.StatusError{}},
		{"Retry-After past the bound fails at once", []func(http.ResponseWriter, []byte){status(503, "3600"), completed}, 1, "retry after 1h0m0s", &a2ahttp.StatusError{}},
		{"503 until the retries run out", []func(http.ResponseWriter, []byte){status(503, "")}, 5, "503 Service Unavailable", &a2ahttp.StatusError{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{answers: tc.answers}
			c := scriptedClient(t, s, nil)
			res, err := c.SendMessage(srvCtx(t), text("hi"))
			if got := s.count() - 1; got != tc.posts {
				t.Errorf("%d POSTs, want %d", got, tc.posts)
			}
			if tc.wantErr == "" {
				if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
					t.Fatalf("%+v %v", res, err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				var se *a2ahttp.StatusError
				if !errors.As(err, &se) {
					t.Fatalf("error %T, want a *StatusError in its chain", err)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for i := 2; i < len(s.bodies); i++ {
				if string(s.bodies[i]) != string(s.bodies[1]) {
					t.Errorf("POST %d differs from the first:\n%s\n%s", i, s.bodies[i], s.bodies[1])
				}
			}
			for i, h := range s.headers[1:] {
				if h.Get("A2A-Version") != "1.0" || h.Get("Content-Type") != "application/json" {
					t.Errorf("POST %d headers %v: want A2A-Version 1.0 and application/json", i+1, h)
				}
			}
		})
	}
}

// Every POST of a call carries the whole body, whoever sends it again:
// the retry policy after an overload (a new reader per attempt), net/http
// following a 307 or 308 redirect (GetBody), or both; with a body small
// enough to go out with the headers and one larger than the write buffer.
func TestClientResendsTheWholeBody(t *testing.T) {
	redirect := func(code int) func(http.ResponseWriter, []byte) {
		return func(w http.ResponseWriter, _ []byte) {
			w.Header().Set("Location", "/rpc")
			w.WriteHeader(code)
		}
	}
	cases := []struct {
		name    string
		answers []func(http.ResponseWriter, []byte)
	}{
		{"503, 503, then success", []func(http.ResponseWriter, []byte){status(503, ""), status(503, ""), completed}},
		{"307 redirect then success", []func(http.ResponseWriter, []byte){redirect(http.StatusTemporaryRedirect), completed}},
		{"308 redirect, 503, then success", []func(http.ResponseWriter, []byte){redirect(http.StatusPermanentRedirect), status(503, ""), completed}},
	}
	for _, size := range []int{10, 100_000} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d bytes", tc.name, size), func(t *testing.T) {
				s := &scripted{answers: tc.answers}
				c := scriptedClient(t, s, nil)
				if _, err := c.SendMessage(srvCtx(t), text(sizedText("body", size))); err != nil {
					t.Fatal(err)
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				if len(s.bodies) != 1+len(tc.answers) {
					t.Fatalf("%d POSTs, want %d", len(s.bodies)-1, len(tc.answers))
				}
				if !strings.Contains(string(s.bodies[1]), sizedText("body", size)) {
					t.Fatalf("the first POST does not hold the text: %.200s", s.bodies[1])
				}
				for i := 2; i < len(s.bodies); i++ {
					if string(s.bodies[i]) != string(s.bodies[1]) {
						t.Errorf("POST %d differs from the first (%d bytes, %d)", i, len(s.bodies[i]), len(s.bodies[1]))
					}
				}
			})
		}
	}
}

// TestClientSendsTheBearerToken: WithBearer becomes the Authorization
// header.
func TestClientSendsTheBearerToken(t *testing.T) {
	s := &scripted{answers: []func(http.ResponseWriter, []byte){completed}}
	c := scriptedClient(t, s, nil)
	if _, err := c.SendMessage(srvCtx(t), text("hi"), requester.WithBearer("s3cret")); err != nil {
		t.Fatal(err)
	}
	if got := s.headers[1].Get("Authorization"); got != "Bearer s3cret" {
		t.Fatalf("Authorization %q", got)
	}
}

// TestClientUnreachable: nothing listening is reported as unreachable,
// naming the cause.
func TestClientUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	card := srvCard("http://"+addr+"/a2a", true, false)
	c := cliClient(t, a2ahttp.ClientConfig{Card: card, MaxRetries: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: time.Millisecond})
	_, err = c.SendMessage(srvCtx(t), text("hi"))
	if !errors.Is(err, requester.ErrUnreachable) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v, want responder unreachable naming the refused connection", err)
	}
}

// TestClientReplyBound: a reply larger than MaxReplyBytes fails the call
// with an error naming the limit.
func TestClientReplyBound(t *testing.T) {
	s := &scripted{answers: []func(http.ResponseWriter, []byte){completed}}
	c := scriptedClient(t, s, func(cfg *a2ahttp.ClientConfig) { cfg.MaxReplyBytes = 64 })
	_, err := c.SendMessage(srvCtx(t), text("hi"))
	if err == nil || !strings.Contains(err.Error(), "more than 64 bytes") {
		t.Fatalf("error %v, want one naming the 64-byte limit", err)
	}
}

// sse writes Server-Sent Events, one per JSON-RPC result, then returns
// (the stream ends) or blocks until the request ends.
func sse(results []string, hang bool) func(http.ResponseWriter, []byte) {
	return func(w http.ResponseWriter, body []byte) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, r := range results {
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+string(req.ID)+",\"result\":"+r+"}\n\n")
		}
		w.(http.Flusher).Flush()
		if hang {
			time.Sleep(2 * time.Second)
		}
	}
}

const (
	workingTask = `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`
	doneTask    = `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}`
)

// TestClientStreamRecovery: a stream cut before its final item, or idle
// for longer than the profile allows, is never posted again: the client
// recovers with GetTask on the task id the stream's first item gave, and
// yields the task as the last item.
func TestClientStreamRecovery(t *testing.T) {
	getTask := func(w http.ResponseWriter, body []byte) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &req)
		if req.Method != "GetTask" {
			http.Error(w, "want GetTask, got "+req.Method, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+doneTask+`}`)
	}
	cases := []struct {
		name string
		hang bool
	}{
		{"the stream ends early", false},
		{"the stream goes idle", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{answers: []func(http.ResponseWriter, []byte){sse([]string{workingTask}, tc.hang), getTask}}
			idle := mqttbind.DefaultRetryProfile()
			idle.MaxAttempts, idle.ReplyFirstTimeout, idle.StreamIdleTimeout = 1, 0, 200*time.Millisecond
			c := scriptedClient(t, s, func(cfg *a2ahttp.ClientConfig) { cfg.Requester.Retry = idle })
			var states []string
			for it, err := range c.SendStreamingMessage(srvCtx(t), text("x")) {
				if err != nil {
					t.Fatal(err)
				}
				states = append(states, string(it.Payload.(*a2a.Task).Status.State))
			}
			if got := strings.Join(states, ","); got != "TASK_STATE_WORKING,TASK_STATE_COMPLETED" {
				t.Fatalf("items %s: want the working task, then the task from GetTask", got)
			}
			if n := s.count() - 1; n != 2 {
				t.Fatalf("%d POSTs, want 2 (the stream, then GetTask)", n)
			}
		})
	}
}

// TestClientCancellation: a call whose context ends returns at once with
// the context's error.
func TestClientCancellation(t *testing.T) {
	base := cliAgent(t)
	c := cliClient(t, a2ahttp.ClientConfig{URL: base})
	ctx, cancel := context.WithCancel(srvCtx(t))
	var returned atomic.Bool
	done := make(chan error, 1)
	go func() {
		_, err := c.SendMessage(ctx, text("slow"))
		returned.Store(true)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if returned.Load() {
		t.Fatal("a blocking SendMessage of a slow task returned before its context ended")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, requester.ErrUnreachable) {
		t.Fatalf("error %v, want context.Canceled (not responder unreachable)", err)
	}
}

// TestClientRetriesTheCardFetch: an agent that answers 503 (starting up,
// overloaded) is asked again for its card, and a URL-level error names the
// card's URL once, not the method and URL twice.
func TestClientRetriesTheCardFetch(t *testing.T) {
	var gets atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gets.Add(1) == 1 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		b, _ := srvCard(srv.URL+"/a2a", false, false).MarshalJSON()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	c := cliClient(t, a2ahttp.ClientConfig{URL: srv.URL, RetryWaitMin: time.Millisecond})
	if c.Endpoint() != srv.URL+"/a2a" || gets.Load() != 2 {
		t.Fatalf("endpoint %q after %d GETs, want %s/a2a after 2", c.Endpoint(), gets.Load(), srv.URL)
	}
	_, err := a2ahttp.NewClient(srvCtx(t), a2ahttp.ClientConfig{URL: "http://127.0.0.1:1", MaxRetries: -1})
	if err == nil || strings.Count(err.Error(), "http://127.0.0.1:1/.well-known/agent-card.json") != 1 || strings.Contains(err.Error(), `Get "`) {
		t.Fatalf("error %v: want the card URL named once", err)
	}
}
