package http_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// srvCtx bounds a test's waits generously; nothing asserts on time.
func srvCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// srvCard is a valid card whose JSON-RPC interface is endpoint.
func srvCard(endpoint string, streaming, extended bool) *a2a.AgentCard {
	return &a2a.AgentCard{Name: "tester", Description: "test agent", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(endpoint)},
		Capabilities:        &a2a.AgentCapabilities{Streaming: &streaming, ExtendedAgentCard: &extended},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"}}}}
}

// srvHandler is the test agent: "ask" asks for input and completes on the
// answer ("got: <answer>"), "slow" works until its task is canceled,
// "block" waits for release (see blocker), "big N" emits N artifacts of
// 1 MiB; anything else is echoed as an artifact and the task completes.
func srvHandler(release <-chan struct{}) agent.HandlerFunc {
	return func(ctx context.Context, t *agent.Turn) error {
		switch text := t.Text(); {
		case t.Resumed:
			return t.Complete(ctx, "got: "+text)
		case text == "ask":
			return t.AskInput(ctx, "which one?")
		case text == "slow":
			if err := t.Working(ctx, "working"); err != nil {
				return err
			}
			<-ctx.Done()
			return ctx.Err()
		case text == "block":
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			return t.Complete(ctx, "released")
		case strings.HasPrefix(text, "big "):
			n := 0
			for _, c := range text[4:] {
				n = n*10 + int(c-'0')
			}
			chunk := strings.Repeat("x", 1<<20)
			for i := range n {
				a := a2a.Artifact{ArtifactID: "big", Parts: []a2a.Part{{Content: a2a.PartText(chunk)}}}
				if err := t.Artifact(ctx, a, agent.ArtifactOptions{Append: i > 0, LastChunk: i == n-1}); err != nil {
					return err
				}
			}
			return nil
		default:
			return t.Artifact(ctx, a2a.Artifact{ArtifactID: "echo", Parts: []a2a.Part{{Content: a2a.PartText(text)}}}, agent.ArtifactOptions{LastChunk: true})
		}
	}
}

// srvAgent is an agent served over HTTP on loopback.
type srvAgent struct {
	rt       *agent.Server
	h        *a2ahttp.Handler
	ts       *httptest.Server
	base     string // http://127.0.0.1:port
	endpoint string // base + "/a2a"
	release  chan struct{}
}

// startSrvAgent serves srvHandler through a Handler registered on a mux of
// an httptest server. cfg.Server and cfg.Card are filled in when unset.
func startSrvAgent(t testing.TB, cfg a2ahttp.HandlerConfig, opts ...agent.Option) *srvAgent {
	t.Helper()
	a := &srvAgent{release: make(chan struct{})}
	a.ts = httptest.NewUnstartedServer(nil)
	a.base = "http://" + a.ts.Listener.Addr().String()
	a.endpoint = a.base + "/a2a"
	if cfg.Server == nil {
		a.rt = agent.NewServer(srvHandler(a.release), opts...)
		cfg.Server = a.rt
	}
	if cfg.Card == nil {
		cfg.Card = srvCard(a.endpoint, true, false)
	}
	h, err := a2ahttp.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.h = h
	mux := http.NewServeMux()
	h.Register(mux, "/a2a")
	a.ts.Config.Handler = mux
	a.ts.Start()
	t.Cleanup(func() {
		// The runtime first: its turns end, and so do the calls waiting
		// on them.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if a.rt != nil {
			a.rt.Close(ctx)
		}
		_ = h.Close(ctx)
		a.ts.Close()
	})
	return a
}

// rpcResp is a JSON-RPC response as a client reads it, each member kept
// raw so that presence can be checked.
type rpcResp struct {
	members map[string]json.RawMessage
	Result  json.RawMessage
	Err     *rpcError
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// reason returns the ErrorInfo reason of the error's data.
func (e *rpcError) reason() string {
	var infos []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	if json.Unmarshal(e.Data, &infos) != nil {
		return ""
	}
	for _, i := range infos {
		if i.Type == "type.googleapis.com/google.rpc.ErrorInfo" && i.Domain == "a2a-protocol.org" {
			return i.Reason
		}
	}
	return ""
}

// parseResp checks the JSON-RPC 2.0 response rules every answer must keep
// (jsonrpc "2.0", the request's id, exactly one of result and error).
func parseResp(t testing.TB, b []byte, wantID string) rpcResp {
	t.Helper()
	var r rpcResp
	if err := json.Unmarshal(b, &r.members); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	if string(r.members["jsonrpc"]) != `"2.0"` {
		t.Fatalf("jsonrpc member %s: %s", r.members["jsonrpc"], b)
	}
	if got := string(r.members["id"]); got != wantID {
		t.Fatalf("id %s, want %s: %s", got, wantID, b)
	}
	res, hasRes := r.members["result"]
	e, hasErr := r.members["error"]
	if hasRes == hasErr {
		t.Fatalf("want exactly one of result and error: %s", b)
	}
	r.Result = res
	if hasErr {
		r.Err = new(rpcError)
		if err := json.Unmarshal(e, r.Err); err != nil {
			t.Fatalf("error member: %v: %s", err, b)
		}
	}
	return r
}

// post sends a raw POST with A2A-Version 1.0 and JSON content unless hdr
// says otherwise (an empty value deletes a header).
func post(t testing.TB, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(srvCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// call posts a unary request and returns its checked response.
func call(t testing.TB, url, body string, hdr map[string]string) rpcResp {
	t.Helper()
	resp := post(t, url, body, hdr)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q: %s", ct, b)
	}
	return parseResp(t, b, idOf(t, body))
}

// idOf returns the id member of a request body as raw JSON, "null" when
// it has none.
func idOf(t testing.TB, body string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return "null"
	}
	if id, ok := m["id"]; ok {
		return string(id)
	}
	return "null"
}

// req builds a request body with id 1.
func req(method, params string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
}

// sendParams is SendMessage's params for a message with text, and a task
// and context id when given.
func sendParams(text, taskID, contextID string) string {
	m := map[string]any{"messageId": "m-" + text + "-" + taskID, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if taskID != "" {
		m["taskId"] = taskID
	}
	if contextID != "" {
		m["contextId"] = contextID
	}
	b, _ := json.Marshal(map[string]any{"message": m})
	return string(b)
}

// task decodes a result holding a Task, or a SendMessageResponse or
// StreamResponse holding one.
func task(t testing.TB, result json.RawMessage) *a2a.Task {
	t.Helper()
	var wrap struct {
		Task *a2a.Task `json:"task"`
	}
	if err := json.Unmarshal(result, &wrap); err == nil && wrap.Task != nil {
		return wrap.Task
	}
	var tk a2a.Task
	if err := json.Unmarshal(result, &tk); err != nil || tk.ID == "" {
		t.Fatalf("no task in %s (%v)", result, err)
	}
	return &tk
}

// sseEvent is one event of a stream: its data, the JSON-RPC response.
type sseEvent struct{ data []byte }

// readEvents reads a whole event stream as a client would, checking the
// framing this binding promises: every event is exactly one line
// "data: <json>" followed by an empty line, and the stream ends after a
// whole event.
func readEvents(t testing.TB, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	var out []sseEvent
	for {
		ev, err := nextEvent(r)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 1<<16) }

// nextEvent reads one event; io.EOF means the stream ended cleanly
// between events.
func nextEvent(r *bufio.Reader) (sseEvent, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return sseEvent{}, io.EOF
		}
		return sseEvent{}, errors.New("stream cut inside an event: " + err.Error())
	}
	data, ok := bytes.CutPrefix(line, []byte("data: "))
	if !ok {
		return sseEvent{}, errors.New("event line without data: " + string(line))
	}
	blank, err := r.ReadBytes('\n')
	if err != nil || string(blank) != "\n" {
		return sseEvent{}, errors.New("event not ended by an empty line")
	}
	return sseEvent{data: bytes.TrimSuffix(data, []byte("\n"))}, nil
}

// waitState polls GetTask until the task is in state (the poll is bounded
// by the test's context, not timed).
func waitState(t testing.TB, endpoint, id string, state a2a.TaskState) *a2a.Task {
	t.Helper()
	ctx := srvCtx(t)
	for {
		r := call(t, endpoint, req("GetTask", `{"id":"`+id+`"}`), nil)
		if r.Err != nil {
			t.Fatalf("GetTask: %+v", r.Err)
		}
		if tk := task(t, r.Result); tk.Status.State == state {
			return tk
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s never reached %s", id, state)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
