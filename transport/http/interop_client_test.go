package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// This file drives the official Go SDK's server (a2a-go v2.3.1: a2asrv's
// JSON-RPC handler over a2asrv.NewHandler, its card served by
// a2asrv.NewStaticAgentCardHandler) with this package's client, on a
// loopback HTTP server. Where a2a-go departs from A2A v1.0 the subtests pin
// what a2a-go sends (the wire bytes, recorded by sdkTap) and what the client
// makes of it; docs/conformance.md lists the departures and docs/protocol.md
// §11 what a2abind does about each.

// sdkExecutor is the a2a-go agent: "ask" asks for input and completes on
// the answer ("got: <answer>"); "slow" works until its task is canceled;
// "refuse <what>" fails before any task exists with the a2a-go error
// sdkRefusal names; "offset" completes with a status timestamp in a
// +02:00 zone; "local" works and completes with a2a-go's own stamps
// (a2a.NewStatusUpdateEvent: time.Now() in the host's zone,
// docs/conformance.md, a2a-go departure 2); anything else is echoed as an
// artifact and the task completes. It emits what a2a-go's AgentExecutor
// documentation asks for: the submitted Task first (for a new task), then
// status and artifact events, and ends with a final status. Apart from
// "offset" and "local" its status timestamps are UTC, as A2A v1.0 §5.6.1
// requires.
type sdkExecutor struct{}

// sdkRefusal is the error "refuse <what>" fails with.
func sdkRefusal(what string) error {
	switch what {
	case "content-type":
		// With details: a2a-go puts a google.protobuf.Struct entry before
		// the ErrorInfo in error.data.
		return goa2a.NewError(goa2a.ErrUnsupportedContentType, "only text/plain").WithDetails(map[string]any{"accepted": "text/plain"})
	case "unauthorized":
		return goa2a.ErrUnauthorized
	}
	return goa2a.ErrInternalError
}

func (sdkExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		text := sdkTextOf(ec.Message.Parts)
		if what, ok := strings.CutPrefix(text, "refuse "); ok {
			yield(nil, sdkRefusal(what))
			return
		}
		if ec.StoredTask == nil {
			if !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		switch {
		case ec.StoredTask != nil && ec.StoredTask.Status.State == goa2a.TaskStateInputRequired:
			reply := "got: " + text
			if !yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart(reply)), nil) {
				return
			}
			yield(sdkStatus(ec, goa2a.TaskStateCompleted, sdkSay(ec, reply)), nil)
		case text == "ask":
			yield(sdkStatus(ec, goa2a.TaskStateInputRequired, sdkSay(ec, "which one?")), nil)
		case text == "slow":
			if !yield(sdkStatus(ec, goa2a.TaskStateWorking, nil), nil) {
				return
			}
			// The cancel event ends the execution, and a2a-go then cancels ctx.
			<-ctx.Done()
		case text == "local":
			// a2a-go's own stamps: time.Now() in the host's zone.
			if !yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateWorking, nil), nil) {
				return
			}
			yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted, nil), nil)
		case text == "offset":
			ev := goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted, nil)
			at := time.Date(2026, 1, 2, 12, 0, 0, 0, time.FixedZone("", 2*60*60))
			ev.Status.Timestamp = &at
			yield(ev, nil)
		default:
			if !yield(sdkStatus(ec, goa2a.TaskStateWorking, nil), nil) {
				return
			}
			if !yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart(text)), nil) {
				return
			}
			yield(sdkStatus(ec, goa2a.TaskStateCompleted, nil), nil)
		}
	}
}

// Cancel is the simplest canceler a2a-go's documentation describes: one
// CANCELED status event.
func (sdkExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		yield(sdkStatus(ec, goa2a.TaskStateCanceled, nil), nil)
	}
}

// sdkStatus is a status event stamped in UTC.
func sdkStatus(ec goa2a.TaskInfoProvider, state goa2a.TaskState, msg *goa2a.Message) *goa2a.TaskStatusUpdateEvent {
	ev := goa2a.NewStatusUpdateEvent(ec, state, msg)
	at := ev.Status.Timestamp.UTC()
	ev.Status.Timestamp = &at
	return ev
}

func sdkSay(ec goa2a.TaskInfoProvider, text string) *goa2a.Message {
	return goa2a.NewMessageForTask(goa2a.MessageRoleAgent, ec, goa2a.NewTextPart(text))
}

func sdkTextOf(parts goa2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// sdkCard is a2a-go's card for an agent whose JSON-RPC endpoint is
// endpoint: one interface made by a2a.NewAgentInterface (protocolBinding
// JSONRPC, protocolVersion 1.0), streaming, one tagged skill.
func sdkCard(endpoint string) *goa2a.AgentCard {
	return &goa2a.AgentCard{
		Name:                "sdk echo",
		Description:         "a2a-go server for the interop test",
		Version:             "1.0.0",
		SupportedInterfaces: []*goa2a.AgentInterface{goa2a.NewAgentInterface(endpoint, goa2a.TransportProtocolJSONRPC)},
		Capabilities:        goa2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              []goa2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"}}},
	}
}

// sdkBearer is an a2a-go CallInterceptor that takes the bearer token of
// the Authorization header as the user's name. a2a-go's task store lists
// only an authenticated user's tasks (ListTasks without one is
// unauthenticated), and only those the same user created.
type sdkBearer struct {
	a2asrv.PassthroughCallInterceptor
}

func (sdkBearer) Before(ctx context.Context, callCtx *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	if v, ok := callCtx.ServiceParams().Get("Authorization"); ok && len(v) == 1 {
		if name, ok := strings.CutPrefix(v[0], "Bearer "); ok {
			callCtx.User = a2asrv.NewAuthenticatedUser(name, nil)
		}
	}
	return ctx, nil, nil
}

// sdkAgent serves sdkExecutor through a2a-go (a2asrv.NewHandler with
// opts) on a loopback HTTP server: the JSON-RPC endpoint at /a2a (recorded
// by the returned tap) and the card made by card at the well-known path. It
// returns the base URL.
func sdkAgent(t *testing.T, card func(endpoint string) *goa2a.AgentCard, opts ...a2asrv.RequestHandlerOption) (string, *sdkTap) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	opts = append([]a2asrv.RequestHandlerOption{a2asrv.WithLogger(quiet), a2asrv.WithCallInterceptors(sdkBearer{})}, opts...)
	handler := a2asrv.NewHandler(sdkExecutor{}, opts...)
	tap := &sdkTap{next: a2asrv.NewJSONRPCHandler(handler)}
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	base := "http://" + srv.Listener.Addr().String()
	mux.Handle("/a2a", tap)
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card(base+"/a2a")))
	srv.Start()
	t.Cleanup(srv.Close)
	return base, tap
}

// sdkTap records each JSON-RPC exchange with the a2a-go handler: the
// request body and the response bytes as written (a JSON body, or the
// Server-Sent Events of a stream).
type sdkTap struct {
	next http.Handler
	mu   sync.Mutex
	log  []*sdkExchange
}

type sdkExchange struct {
	tap         *sdkTap
	method      string
	version     []string // the A2A-Version headers
	request     []byte
	contentType string
	response    []byte
	done        chan struct{}
}

func (p *sdkTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var env struct {
		Method string `json:"method"`
	}
	json.Unmarshal(buf.Bytes(), &env)
	x := &sdkExchange{tap: p, method: env.Method, version: r.Header.Values("A2A-Version"), request: buf.Bytes(), done: make(chan struct{})}
	p.mu.Lock()
	p.log = append(p.log, x)
	p.mu.Unlock()
	defer close(x.done)
	r.Body = sdkBody{bytes.NewReader(buf.Bytes())}
	p.next.ServeHTTP(&sdkTapWriter{ResponseWriter: w, x: x}, r)
}

type sdkBody struct{ *bytes.Reader }

func (sdkBody) Close() error { return nil }

// last returns the latest exchange of a method, waiting (bounded by the
// test's context) until a2a-go's handler has returned, so that the whole
// response is recorded.
func (p *sdkTap) last(t *testing.T, method a2a.Method) (contentType string, response []byte, x *sdkExchange) {
	t.Helper()
	p.mu.Lock()
	for i := len(p.log) - 1; i >= 0 && x == nil; i-- {
		if p.log[i].method == string(method) {
			x = p.log[i]
		}
	}
	p.mu.Unlock()
	if x == nil {
		t.Fatalf("no %s reached the a2a-go server", method)
	}
	select {
	case <-x.done:
	case <-srvCtx(t).Done():
		t.Fatalf("the a2a-go handler of %s never returned", method)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return x.contentType, bytes.Clone(x.response), x
}

type sdkTapWriter struct {
	http.ResponseWriter
	x *sdkExchange
}

func (w *sdkTapWriter) Write(b []byte) (int, error) {
	w.x.tap.mu.Lock()
	if w.x.contentType == "" {
		w.x.contentType = w.Header().Get("Content-Type")
	}
	w.x.response = append(w.x.response, b...)
	w.x.tap.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

// Flush lets a2a-go's SSE writer, which requires an http.Flusher, through.
func (w *sdkTapWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// sdkWireError is the error member of a recorded JSON-RPC response.
type sdkWireError struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Data    []map[string]any `json:"data"`
}

// sdkErrorOf reads the error of a recorded response: the body, or for a
// stream the data of its one event.
func sdkErrorOf(t *testing.T, contentType string, body []byte) sdkWireError {
	t.Helper()
	if strings.HasPrefix(contentType, "text/event-stream") {
		events, _ := sdkEvents(body)
		if len(events) != 1 {
			t.Fatalf("stream %q: want one event holding the error", body)
		}
		body = events[0]
	}
	var env struct {
		Error *sdkWireError `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil {
		t.Fatalf("response %s: want a JSON-RPC error whose data is an array of objects (%v)", body, err)
	}
	return *env.Error
}

// sdkEvents returns the data of each event of a recorded stream and how
// many id lines it has (a2a-go writes "id: <uuid>" and "data: <json>" per
// event).
func sdkEvents(stream []byte) (data [][]byte, ids int) {
	for _, line := range bytes.Split(stream, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = append(data, d)
		}
		if bytes.HasPrefix(line, []byte("id: ")) {
			ids++
		}
	}
	return data, ids
}

// sdkErrorInfo returns the reason and domain of the ErrorInfo entries of
// error.data, and the @type of every entry in order.
func sdkErrorInfo(w sdkWireError) (reasons, domains, types []string) {
	for _, d := range w.Data {
		typ, _ := d["@type"].(string)
		types = append(types, typ)
		if typ == "type.googleapis.com/google.rpc.ErrorInfo" {
			r, _ := d["reason"].(string)
			dom, _ := d["domain"].(string)
			reasons, domains = append(reasons, r), append(domains, dom)
		}
	}
	return reasons, domains, types
}

// sdkKinds names stream items: "task:<state>", "status:<state>",
// "artifact:<text>", "message".
func sdkKinds(t *testing.T, items iter.Seq2[requester.Item, error], onItem func(requester.Item)) ([]string, []string) {
	t.Helper()
	var kinds, taskIDs []string
	for it, err := range items {
		if err != nil {
			t.Fatalf("after %v: %v", kinds, err)
		}
		switch x := it.Payload.(type) {
		case *a2a.Task:
			kinds, taskIDs = append(kinds, "task:"+string(x.Status.State)), append(taskIDs, x.ID)
		case *a2a.TaskStatusUpdateEvent:
			kinds, taskIDs = append(kinds, "status:"+string(x.Status.State)), append(taskIDs, x.TaskID)
		case *a2a.TaskArtifactUpdateEvent:
			kinds, taskIDs = append(kinds, "artifact:"+agentText(x.Artifact.Parts)), append(taskIDs, x.TaskID)
		case *a2a.Message:
			kinds, taskIDs = append(kinds, "message"), append(taskIDs, x.TaskID)
		}
		if onItem != nil {
			onItem(it)
		}
	}
	return kinds, taskIDs
}

// TestInteropClientA2AGoServer: this package's client resolves an a2a-go
// agent from its base URL and runs the A2A v1.0 stories against it; a2a-go's
// errors come back as tokens.
func TestInteropClientA2AGoServer(t *testing.T) {
	base, tap := sdkAgent(t, sdkCard)
	ctx := srvCtx(t)
	c := cliClient(t, a2ahttp.ClientConfig{URL: base})

	t.Run("a2a-go's card resolves to its JSONRPC 1.0 endpoint", func(t *testing.T) {
		if got, want := c.Endpoint(), base+"/a2a"; got != want {
			t.Fatalf("endpoint %q, want %q", got, want)
		}
		card := c.Card()
		if card == nil || card.Name != "sdk echo" || len(card.SupportedInterfaces) != 1 {
			t.Fatalf("card %+v", card)
		}
		in := card.SupportedInterfaces[0]
		if in.ProtocolBinding != "JSONRPC" || in.ProtocolVersion != "1.0" {
			t.Fatalf("interface %+v: want protocolBinding JSONRPC, protocolVersion 1.0", in)
		}
	})

	var first *a2a.Task
	t.Run("SendMessage makes a task with a server-made id", func(t *testing.T) {
		res, err := c.SendMessage(ctx, requester.TextMessage("hello", "", ""))
		if err != nil {
			t.Fatal(err)
		}
		first = res.Task
		if first == nil || first.Status.State != a2a.TaskStateCompleted || first.ContextID == "" {
			t.Fatalf("result %+v: want a completed task with a context", res)
		}
		if a := first.Artifacts; len(a) != 1 || agentText(a[0].Parts) != "hello" {
			t.Fatalf("artifacts %+v: want the echo", a)
		}
		// The request carried no taskId (nor contextId): a2a-go made both,
		// as UUIDv7, where this client would have made a UUIDv4.
		_, _, x := tap.last(t, a2a.MethodSendMessage)
		var req struct {
			Params struct {
				Message map[string]any `json:"message"`
			} `json:"params"`
		}
		if err := json.Unmarshal(x.request, &req); err != nil {
			t.Fatal(err)
		}
		for _, member := range []string{"taskId", "contextId"} {
			if _, ok := req.Params.Message[member]; ok {
				t.Fatalf("request %s: a new task is sent without a %s", x.request, member)
			}
		}
		if len(x.version) != 1 || x.version[0] != "1.0" {
			t.Fatalf("A2A-Version headers %q: want one, 1.0", x.version)
		}
		for _, id := range []string{first.ID, first.ContextID} {
			if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
				t.Fatalf("id %q: want a2a-go's UUIDv7 (%v)", id, err)
			}
		}
	})

	var streamed string
	t.Run("SendStreamingMessage yields a2a-go's items in order", func(t *testing.T) {
		kinds, ids := sdkKinds(t, c.SendStreamingMessage(ctx, requester.TextMessage("stream me", "", "")), nil)
		// a2a-go puts on the stream exactly what the executor emits (its
		// first event must be a Task or a Message): here the task first,
		// as A2A v1.0 §3.1.2 asks, then the events, ending with the final
		// status.
		want := "task:TASK_STATE_SUBMITTED,status:TASK_STATE_WORKING,artifact:stream me,status:TASK_STATE_COMPLETED"
		if got := strings.Join(kinds, ","); got != want {
			t.Fatalf("stream %s, want %s", got, want)
		}
		for _, id := range ids {
			if id != ids[0] || id == "" {
				t.Fatalf("items of tasks %v: want one task", ids)
			}
		}
		streamed = ids[0]
		// On the wire: SSE events each with an id: line (which the client
		// ignores) and one JSON-RPC response per item.
		ct, stream, _ := tap.last(t, a2a.MethodSendStreamingMessage)
		events, idLines := sdkEvents(stream)
		if !strings.HasPrefix(ct, "text/event-stream") || len(events) != 4 || idLines != 4 {
			t.Fatalf("stream %q (%s): want 4 events, each with an id", stream, ct)
		}
	})

	t.Run("GetTask of the streamed task", func(t *testing.T) {
		sdkNeed(t, streamed != "", "the streamed task")
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: streamed})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != streamed || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 ||
			agentText(got.Artifacts[0].Parts) != "stream me" {
			t.Fatalf("task %+v", got)
		}
	})

	t.Run("ListTasks lists the tasks of the bearer's user", func(t *testing.T) {
		mine, err := c.SendMessage(ctx, requester.TextMessage("mine", "", ""), requester.WithBearer("alice"))
		if err != nil {
			t.Fatal(err)
		}
		list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{}, requester.WithBearer("alice"))
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Tasks) != 1 || list.Tasks[0].ID != mine.Task.ID || list.TotalSize != 1 {
			t.Fatalf("list %+v: want alice's task alone", list)
		}
	})

	// docs/conformance.md, a2a-go departure 3: a2a-go marshals a nil task
	// slice as "tasks":null, where the schema wants an array ([] when
	// nothing matches); the client reads it as [] (requester/compat.go).
	t.Run("ListTasks matching nothing: a2a-go's tasks null is an empty list", func(t *testing.T) {
		list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{}, requester.WithBearer("bob"))
		if err != nil {
			t.Fatal(err)
		}
		if list.Tasks == nil || len(list.Tasks) != 0 || list.TotalSize != 0 || list.Validate() != nil {
			t.Fatalf("list %+v: want an empty, valid list", list)
		}
		_, body, _ := tap.last(t, a2a.MethodListTasks)
		if !bytes.Contains(body, []byte(`"tasks":null`)) {
			t.Fatalf("response %s: want tasks null", body)
		}
	})

	t.Run("CancelTask of a slow task sent with returnImmediately", func(t *testing.T) {
		req := requester.TextMessage("slow", "", "")
		req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		// a2a-go answers at the first task event: SUBMITTED, or WORKING if
		// the next event was stored first.
		if s := res.Task.Status.State; s != a2a.TaskStateSubmitted && s != a2a.TaskStateWorking {
			t.Fatalf("state %s: want the task still going", s)
		}
		got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: res.Task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != res.Task.ID || got.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask: %+v", got)
		}
		if got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: res.Task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("GetTask after the cancel: %+v %v", got, err)
		}
	})

	t.Run("CancelTask during a stream ends it with CANCELED", func(t *testing.T) {
		var cancelErr error
		kinds, _ := sdkKinds(t, c.SendStreamingMessage(ctx, requester.TextMessage("slow", "", "")), func(it requester.Item) {
			if tk, ok := it.Payload.(*a2a.Task); ok {
				_, cancelErr = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: tk.ID})
			}
		})
		if cancelErr != nil {
			t.Fatal(cancelErr)
		}
		if len(kinds) < 2 || kinds[0] != "task:TASK_STATE_SUBMITTED" || kinds[len(kinds)-1] != "status:TASK_STATE_CANCELED" {
			t.Fatalf("stream %v: want the task, then (perhaps WORKING and) CANCELED", kinds)
		}
	})

	t.Run("multi-turn: INPUT_REQUIRED, then the follow-up completes the same task", func(t *testing.T) {
		ask, err := c.SendMessage(ctx, requester.TextMessage("ask", "", ""))
		if err != nil {
			t.Fatal(err)
		}
		tk := ask.Task
		if tk.Status.State != a2a.TaskStateInputRequired || tk.Status.Message == nil || agentText(tk.Status.Message.Parts) != "which one?" {
			t.Fatalf("first turn: %+v", tk)
		}
		follow := requester.TextMessage("the blue one", tk.ID, tk.ContextID)
		res, err := c.SendMessage(ctx, follow)
		if err != nil {
			t.Fatal(err)
		}
		done := res.Task
		if done.ID != tk.ID || done.ContextID != tk.ContextID || done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("follow-up: %+v", done)
		}
		if len(done.Artifacts) != 1 || agentText(done.Artifacts[0].Parts) != "got: the blue one" {
			t.Fatalf("follow-up artifacts %+v", done.Artifacts)
		}
		var ours []string
		for _, m := range done.History {
			if m.Role == a2a.RoleUser {
				ours = append(ours, m.MessageID)
			}
		}
		if len(ours) != 2 || ours[1] != follow.Message.MessageID {
			t.Fatalf("user messages in the history %v: want both turns, the follow-up %s last", ours, follow.Message.MessageID)
		}
	})

	// a2a-go's executor template emits the submitted Task only for a new
	// task (ExecutorContext.StoredTask == nil), so a streamed follow-up
	// begins with the events; the client takes the task id from the first
	// item whatever it is.
	t.Run("a streamed follow-up begins without the Task", func(t *testing.T) {
		ask, err := c.SendMessage(ctx, requester.TextMessage("ask", "", ""))
		if err != nil {
			t.Fatal(err)
		}
		tk := ask.Task
		kinds, ids := sdkKinds(t, c.SendStreamingMessage(ctx, requester.TextMessage("red", tk.ID, tk.ContextID)), nil)
		if got, want := strings.Join(kinds, ","), "artifact:got: red,status:TASK_STATE_COMPLETED"; got != want {
			t.Fatalf("stream %s, want %s", got, want)
		}
		if ids[0] != tk.ID || ids[1] != tk.ID {
			t.Fatalf("items of tasks %v, want %s", ids, tk.ID)
		}
	})

	// A2A v1.0 §3.1.1 asks for UnsupportedOperationError on a message to a
	// task in a terminal state (docs/protocol.md §11, "retry, follow-up or
	// error?"); a2a-go v2.3.1 answers -32602 with reason INVALID_PARAMS
	// ("task in a terminal state"), and the client reports that token.
	t.Run("a message to a completed task is invalid_params from a2a-go", func(t *testing.T) {
		sdkNeed(t, first != nil, "the first task")
		_, err := c.SendMessage(ctx, requester.TextMessage("again", first.ID, first.ContextID))
		if !errors.Is(err, a2a.ErrInvalidParams) {
			t.Fatalf("error %v, want invalid_params (a2a-go's answer)", err)
		}
		ct, body, _ := tap.last(t, a2a.MethodSendMessage)
		w := sdkErrorOf(t, ct, body)
		if reasons, _, _ := sdkErrorInfo(w); w.Code != -32602 || len(reasons) != 1 || reasons[0] != "INVALID_PARAMS" ||
			!strings.Contains(w.Message, "terminal state") {
			t.Fatalf("wire error %+v", w)
		}
	})

	// A2A v1.0 asks SubscribeToTask of a task in a terminal state for
	// UnsupportedOperationError; a2a-go v2.3.1 subscribes only to live
	// executions and answers TASK_NOT_FOUND ("no active execution"), as the
	// one event of a 200 text/event-stream response.
	t.Run("SubscribeToTask of a completed task is task_not_found from a2a-go", func(t *testing.T) {
		sdkNeed(t, first != nil, "the first task")
		var errs []error
		for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: first.ID}) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], a2a.ErrTaskNotFound) {
			t.Fatalf("items %v: want one task_not_found error", errs)
		}
		ct, body, _ := tap.last(t, a2a.MethodSubscribeToTask)
		if w := sdkErrorOf(t, ct, body); w.Code != -32001 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("wire %s %+v", ct, w)
		}
	})

	// a2a-go's error.data is the A2A v1.0 §9.5 array: a google.rpc.ErrorInfo
	// (reason, domain a2a-protocol.org, metadata.timestamp), preceded by a
	// google.protobuf.Struct when the error has details. The client
	// identifies the token by the reason, so a2a-go's own codes for the
	// authentication errors (-31401, -31403) do not matter where the reason
	// is one of ours.
	errCases := []struct {
		name   string
		method a2a.Method
		call   func() error
		want   *a2a.Error
		code   int
		reason string
		types  []string
	}{
		{"GetTask of an unknown task", a2a.MethodGetTask, func() error {
			_, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: "0190f1e2-0000-7000-8000-000000000000"})
			return err
		}, a2a.ErrTaskNotFound, -32001, "TASK_NOT_FOUND", []string{sdkInfo}},
		{"CancelTask of a completed task", a2a.MethodCancelTask, func() error {
			_, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: first.ID})
			return err
		}, a2a.ErrTaskNotCancelable, -32002, "TASK_NOT_CANCELABLE", []string{sdkInfo}},
		{"push configs without push support", a2a.MethodListTaskPushNotificationConfigs, func() error {
			_, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: first.ID})
			return err
		}, a2a.ErrPushNotificationNotSupported, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", []string{sdkInfo}},
		{"no extended card configured", a2a.MethodGetExtendedAgentCard, func() error {
			_, err := c.GetExtendedAgentCard(ctx, nil)
			return err
		}, a2a.ErrExtendedAgentCardNotConfigured, -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", []string{sdkInfo}},
		{"an executor error with details", a2a.MethodSendMessage, func() error {
			_, err := c.SendMessage(ctx, requester.TextMessage("refuse content-type", "", ""))
			return err
		}, a2a.ErrContentTypeNotSupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED", []string{sdkStruct, sdkInfo}},
		{"the same error as a stream event", a2a.MethodSendStreamingMessage, func() error {
			for _, err := range c.SendStreamingMessage(ctx, requester.TextMessage("refuse content-type", "", "")) {
				if err != nil {
					return err
				}
			}
			return nil
		}, a2a.ErrContentTypeNotSupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED", []string{sdkStruct, sdkInfo}},
		{"ListTasks without a user: unauthenticated, a2a-go's code -31401", a2a.MethodListTasks, func() error {
			_, err := c.ListTasks(ctx, &a2a.ListTasksRequest{})
			return err
		}, a2a.ErrUnauthenticated, -31401, "UNAUTHENTICATED", []string{sdkInfo}},
		// a2a-go's reason UNAUTHORIZED (code -31403, no A2A or JSON-RPC
		// code) is a2abind's permission_denied (reason PERMISSION_DENIED,
		// code -31403) under another name: jsonrpc.FromWire reads it so
		// (docs/conformance.md, a2a-go's errors), keeping a2a-go's code.
		{"unauthorized, a2a-go's reason UNAUTHORIZED and code -31403", a2a.MethodSendMessage, func() error {
			_, err := c.SendMessage(ctx, requester.TextMessage("refuse unauthorized", "", ""))
			return err
		}, a2a.ErrPermissionDenied, -31403, "UNAUTHORIZED", []string{sdkInfo}},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			sdkNeed(t, first != nil, "the first task")
			err := tc.call()
			var e *a2a.Error
			if !errors.As(err, &e) || !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %s", err, tc.want.Token)
			}
			ct, body, _ := tap.last(t, tc.method)
			w := sdkErrorOf(t, ct, body)
			reasons, domains, types := sdkErrorInfo(w)
			if w.Code != tc.code || len(reasons) != 1 || reasons[0] != tc.reason || domains[0] != "a2a-protocol.org" ||
				strings.Join(types, ",") != strings.Join(tc.types, ",") {
				t.Fatalf("wire error %+v: want code %d, data %v with reason %s", w, tc.code, tc.types, tc.reason)
			}
			// The client keeps the code and data it was sent.
			if e.Code != w.Code {
				t.Fatalf("decoded code %d, wire %d", e.Code, w.Code)
			}
			if data, ok := e.Data.([]any); !ok || len(data) != len(w.Data) {
				t.Fatalf("decoded data %#v: want the wire's array", e.Data)
			}
		})
	}

	// docs/conformance.md, a2a-go departure 2: a2a-go marshals a status
	// timestamp in its own zone, where A2A v1.0 §5.6.1 (and this library's
	// schema) want UTC with Z. a2a.NewStatusUpdateEvent stamps time.Now(),
	// so on a host whose zone is not UTC every status a2a-go sends looks
	// like this one. The client reads it as the same instant in UTC
	// (requester/compat.go), plain and streamed.
	t.Run("a status timestamp with an offset is read in UTC", func(t *testing.T) {
		res, err := c.SendMessage(ctx, requester.TextMessage("offset", "", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Task.Status.Timestamp; got != "2026-01-02T10:00:00Z" || res.Task.Validate() != nil {
			t.Fatalf("timestamp %q: want 2026-01-02T10:00:00Z, the same instant in UTC", got)
		}
		_, body, _ := tap.last(t, a2a.MethodSendMessage)
		if !bytes.Contains(body, []byte(`"timestamp":"2026-01-02T12:00:00+02:00"`)) {
			t.Fatalf("response %s: want the timestamp with its offset", body)
		}
		var stamps []string
		kinds, _ := sdkKinds(t, c.SendStreamingMessage(ctx, requester.TextMessage("offset", "", "")), func(it requester.Item) {
			if ev, ok := it.Payload.(*a2a.TaskStatusUpdateEvent); ok {
				stamps = append(stamps, ev.Status.Timestamp)
			}
		})
		if got := strings.Join(kinds, ","); got != "task:TASK_STATE_SUBMITTED,status:TASK_STATE_COMPLETED" || len(stamps) != 1 || stamps[0] != "2026-01-02T10:00:00Z" {
			t.Fatalf("stream %s, status timestamps %q", got, stamps)
		}
		_, stream, _ := tap.last(t, a2a.MethodSendStreamingMessage)
		if !bytes.Contains(stream, []byte(`"timestamp":"2026-01-02T12:00:00+02:00"`)) {
			t.Fatalf("stream %s: want the timestamp with its offset", stream)
		}
	})

	// The same with a2a-go's own time.Now() stamps, in the host's zone (on
	// a host in UTC they already end in Z): run the tests with
	// TZ=Europe/Berlin to see a2a-go's offsets read.
	t.Run("a2a-go's host-local status timestamps are read in UTC", func(t *testing.T) {
		var stamps []string
		var taskID string
		kinds, _ := sdkKinds(t, c.SendStreamingMessage(ctx, requester.TextMessage("local", "", "")), func(it requester.Item) {
			switch x := it.Payload.(type) {
			case *a2a.Task:
				taskID = x.ID // a2a.NewSubmittedTask sets no timestamp
			case *a2a.TaskStatusUpdateEvent:
				stamps = append(stamps, x.Status.Timestamp)
			}
		})
		if got := strings.Join(kinds, ","); got != "task:TASK_STATE_SUBMITTED,status:TASK_STATE_WORKING,status:TASK_STATE_COMPLETED" {
			t.Fatalf("stream %s", got)
		}
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: taskID})
		if err != nil {
			t.Fatal(err)
		}
		stamps = append(stamps, got.Status.Timestamp)
		for _, s := range stamps {
			if at, err := time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") || time.Since(at) > time.Minute {
				t.Fatalf("timestamps %q (events, then GetTask): want each a moment ago, in UTC with Z", stamps)
			}
		}
		_, stream, _ := tap.last(t, a2a.MethodSendStreamingMessage)
		_, body, _ := tap.last(t, a2a.MethodGetTask)
		zone := []byte(time.Now().Format("Z07:00") + `"`)
		if !bytes.Contains(stream, zone) || !bytes.Contains(body, zone) {
			t.Fatalf("stream %s, GetTask %s: want a2a-go's timestamps in the host's zone (%s)", stream, body, zone)
		}
	})
}

// sdkNeed stops a subtest that needs what an earlier one failed to make.
func sdkNeed(t *testing.T, ok bool, what string) {
	t.Helper()
	if !ok {
		t.Fatalf("%s is missing: an earlier subtest failed", what)
	}
}

const (
	sdkInfo   = "type.googleapis.com/google.rpc.ErrorInfo"
	sdkStruct = "type.googleapis.com/google.protobuf.Struct"
)

// TestInteropClientA2AGoCardDepartures: docs/conformance.md, a2a-go
// departures 1 and 3. a2a-go writes securityRequirements as
// {"schemes":{"name":["scope"]}}, not the ProtoJSON
// {"schemes":{"name":{"list":["scope"]}}}; the client reads both forms
// (docs/protocol.md §11, "securityRequirements wire form"), so such a card
// resolves, in the ProtoJSON form. A skill without tags (a2a-go writes
// "tags":null) is no form of anything valid: tags is REQUIRED and
// non-empty, so that card is still refused, and a card handed over in
// ClientConfig.Card still reaches the same agent.
func TestInteropClientA2AGoCardDepartures(t *testing.T) {
	withSecurity := func(endpoint string) *goa2a.AgentCard {
		card := sdkCard(endpoint)
		card.SecuritySchemes = goa2a.NamedSecuritySchemes{
			"bearer": goa2a.HTTPAuthSecurityScheme{Scheme: "Bearer"},
			"google": goa2a.OpenIDConnectSecurityScheme{OpenIDConnectURL: "https://accounts.google.com/.well-known/openid-configuration"},
		}
		card.SecurityRequirements = goa2a.SecurityRequirementsOptions{{"bearer": {}}}
		card.Skills[0].SecurityRequirements = goa2a.SecurityRequirementsOptions{{"google": {"openid", "profile"}}}
		return card
	}
	base, _ := sdkAgent(t, withSecurity)
	ctx := srvCtx(t)

	body := sdkGet(t, base+a2ahttp.WellKnownCardPath)
	for _, want := range []string{`"securityRequirements":[{"schemes":{"bearer":[]}}]`, `"securityRequirements":[{"schemes":{"google":["openid","profile"]}}]`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Fatalf("card %s: want a2a-go's bare-array form %s", body, want)
		}
	}

	c := cliClient(t, a2ahttp.ClientConfig{URL: base})
	card := c.Card()
	if card == nil || card.Validate() != nil || c.Endpoint() != base+"/a2a" {
		t.Fatalf("card %+v at %s: want a2a-go's card, valid", card, c.Endpoint())
	}
	if r := card.SecurityRequirements; len(r) != 1 || len(r[0].Schemes) != 1 || len(r[0].Schemes["bearer"].List) != 0 {
		t.Fatalf("card securityRequirements %+v: want bearer with no scopes", r)
	}
	if r := card.Skills[0].SecurityRequirements; len(r) != 1 || strings.Join(r[0].Schemes["google"].List, ",") != "openid,profile" {
		t.Fatalf("skill securityRequirements %+v: want google with openid, profile", r)
	}
	wire, err := card.MarshalJSON()
	if err != nil || !bytes.Contains(wire, []byte(`{"schemes":{"bearer":{"list":[]}}}`)) ||
		!bytes.Contains(wire, []byte(`{"schemes":{"google":{"list":["openid","profile"]}}}`)) {
		t.Fatalf("card re-encoded as %s (%v): want the ProtoJSON form", wire, err)
	}
	res, err := c.SendMessage(ctx, requester.TextMessage("hello", "", ""))
	if err != nil || res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("through the resolved card: %+v %v", res, err)
	}

	withoutTags := func(endpoint string) *goa2a.AgentCard {
		card := sdkCard(endpoint)
		card.Skills[0].Tags = nil
		return card
	}
	base, _ = sdkAgent(t, withoutTags)
	if body := sdkGet(t, base+a2ahttp.WellKnownCardPath); !bytes.Contains(body, []byte(`"tags":null`)) {
		t.Fatalf("card %s: want tags null", body)
	}
	_, err = a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base})
	if err == nil || !strings.Contains(err.Error(), "/skills/0/tags") || !strings.Contains(err.Error(), "must not be null") {
		t.Fatalf("error %v, want the card refused at /skills/0/tags with the strict parse's error", err)
	}
	c = cliClient(t, a2ahttp.ClientConfig{Card: srvCard(base+"/a2a", true, false)})
	res, err = c.SendMessage(ctx, requester.TextMessage("hello", "", ""))
	if err != nil || res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("with a card built by hand: %+v %v", res, err)
	}
}

// sdkGet returns the body of a GET.
func sdkGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return body.Bytes()
}

// TestInteropClientA2AGoPushConfigs: the push-config methods against
// a2a-go with push notifications configured (its in-memory config store;
// the configs name a URL that no event ever reaches, since the task is
// already over).
func TestInteropClientA2AGoPushConfigs(t *testing.T) {
	base, tap := sdkAgent(t, sdkCard, a2asrv.WithPushNotifications(push.NewInMemoryStore(), push.NewHTTPPushSender(nil)))
	ctx := srvCtx(t)
	c := cliClient(t, a2ahttp.ClientConfig{URL: base})
	res, err := c.SendMessage(ctx, requester.TextMessage("hello", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	taskID := res.Task.ID

	made, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: taskID, URL: "https://example.com/hook", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if made.TaskID != taskID || made.ID == "" || made.URL != "https://example.com/hook" || made.Token != "tok" {
		t.Fatalf("created %+v: want the config with an id a2a-go made", made)
	}
	got, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: taskID, ID: made.ID})
	if err != nil || *got != *made {
		t.Fatalf("GetTaskPushNotificationConfig: %+v %v, want %+v", got, err, made)
	}
	list, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: taskID})
	if err != nil || len(list.Configs) != 1 || list.Configs[0] != *made {
		t.Fatalf("ListTaskPushNotificationConfigs: %+v %v", list, err)
	}

	// docs/conformance.md, a2a-go departure 4: a successful delete is
	// answered {"jsonrpc":"2.0","id":...} with neither result nor error
	// (JSON-RPC 2.0 §5 requires result; the proto's Empty is {}). The
	// client reads it as "result":{} (requester/compat.go), which Delete's
	// Empty result accepts.
	err = c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: taskID, ID: made.ID})
	if err != nil {
		t.Fatalf("DeleteTaskPushNotificationConfig: %v", err)
	}
	_, body, x := tap.last(t, a2a.MethodDeleteTaskPushNotificationConfig)
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil || len(env) != 2 || env["jsonrpc"] == nil || env["id"] == nil {
		t.Fatalf("response %s (to %s): want jsonrpc and id alone", body, x.request)
	}
	// It did delete.
	if list, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: taskID}); err != nil || len(list.Configs) != 0 {
		t.Fatalf("after the delete: %+v %v", list, err)
	}
}
