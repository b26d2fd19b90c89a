package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// listTasks returns the tasks the agent holds.
func listTasks(t testing.TB, endpoint string) []a2a.Task {
	t.Helper()
	r := call(t, endpoint, req("ListTasks", `{}`), nil)
	var l struct {
		Tasks []a2a.Task `json:"tasks"`
	}
	if err := json.Unmarshal(r.Result, &l); err != nil {
		t.Fatal(err)
	}
	return l.Tasks
}

// unaryResult is the outcome of a call made on another goroutine.
type unaryResult struct {
	status int
	body   []byte
	err    error
}

func postAsync(endpoint, body string) <-chan unaryResult {
	out := make(chan unaryResult, 1)
	go func() {
		rq, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		rq.Header.Set("Content-Type", "application/json")
		rq.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(rq)
		if err != nil {
			out <- unaryResult{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- unaryResult{status: resp.StatusCode, body: b, err: err}
	}()
	return out
}

// Close ends open streams cleanly (after a whole event), refuses new
// requests with 503, and returns only once the calls in flight are
// answered.
func TestCloseEndsStreamsAndWaitsForInFlight(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	ctx := srvCtx(t)

	stream := post(t, a.endpoint, req("SendStreamingMessage", sendParams("slow", "", "")), nil)
	defer stream.Body.Close()
	br := bufioReader(stream.Body)
	if _, err := nextEvent(br); err != nil {
		t.Fatal(err)
	}

	// A unary call whose handler waits for release: it is in flight once
	// its task exists.
	unary := postAsync(a.endpoint, req("SendMessage", sendParams("block", "", "")))
	for len(listTasks(t, a.endpoint)) < 2 {
		select {
		case r := <-unary:
			t.Fatalf("the call ended early: %+v", r)
		case <-ctx.Done():
			t.Fatal("the blocked task never appeared")
		default:
		}
	}

	closed := make(chan error, 1)
	go func() { closed <- a.h.Close(ctx) }()

	// The stream ends: every remaining event whole, then EOF.
	for {
		ev, err := nextEvent(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the stream did not end cleanly: %v", err)
		}
		parseResp(t, ev.data, "1")
	}

	// Closing: new requests are refused.
	resp := post(t, a.endpoint, req("GetTask", `{"id":"x"}`), nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Close: HTTP %d %s", resp.StatusCode, b)
	}
	if r := parseResp(t, b, "null"); r.Err == nil || !strings.Contains(r.Err.Message, "shutting down") {
		t.Fatalf("%s", b)
	}

	// The unary call is still in flight, so Close cannot have returned.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a call in flight", err)
	default:
	}
	close(a.release)
	r := <-unary
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("%+v", r)
	}
	if tk := task(t, parseResp(t, r.body, "1").Result); tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%s", r.body)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// Close returns with its context's error when a call outlives it.
func TestCloseReturnsWhenItsContextEnds(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	unary := postAsync(a.endpoint, req("SendMessage", sendParams("block", "", "")))
	ctx := srvCtx(t)
	for len(listTasks(t, a.endpoint)) < 1 {
		if ctx.Err() != nil {
			t.Fatal("the blocked task never appeared")
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.h.Close(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v", err)
	}
	close(a.release)
	if r := <-unary; r.err != nil || r.status != http.StatusOK {
		t.Fatalf("%+v", r)
	}
}

// Serve runs the handler on a listener: the card at the well-known path,
// JSON-RPC at the given path; Close ends its streams and stops it.
func TestServeAndClose(t *testing.T) {
	rt := agent.NewServer(srvHandler(nil))
	defer rt.Close(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: rt, Card: srvCard(base+"/rpc", true, false)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(ln, "/rpc") }()

	resp, err := http.Get(base + a2ahttp.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	card, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(card, []byte(`"url":"`+base+`/rpc"`)) {
		t.Fatalf("%s", card)
	}
	if r := call(t, base+"/rpc", req("SendMessage", sendParams("hi", "", "")), nil); r.Err != nil {
		t.Fatalf("%+v", r.Err)
	}

	stream := post(t, base+"/rpc", req("SendStreamingMessage", sendParams("slow", "", "")), nil)
	defer stream.Body.Close()
	br := bufioReader(stream.Body)
	if _, err := nextEvent(br); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(srvCtx(t)); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := nextEvent(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the stream did not end cleanly: %v", err)
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	// Serving again after Close is refused.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Serve(ln2, "/rpc"); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}

// Many clients at once, unary and streaming, each getting its own answer
// (run with -race).
func TestConcurrentCalls(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithMaxTurns(1024))
	const clients, each = 16, 24
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for g := range clients {
		wg.Go(func() {
			var last string
			for i := range each {
				text := fmt.Sprintf("c%d-%d", g, i)
				var err error
				switch i % 3 {
				case 0:
					last, err = checkSend(a.endpoint, text)
				case 1:
					err = checkStream(a.endpoint, text)
				case 2:
					err = checkGet(a.endpoint, last)
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", text, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func rawPost(endpoint, body string) ([]byte, error) {
	rq, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	rq.Header.Set("Content-Type", "application/json")
	rq.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(rq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

type wireTask struct {
	Result struct {
		Task         *a2a.Task                    `json:"task"`
		StatusUpdate *a2a.TaskStatusUpdateEvent   `json:"statusUpdate"`
		Artifact     *a2a.TaskArtifactUpdateEvent `json:"artifactUpdate"`
	} `json:"result"`
	ID    json.RawMessage `json:"id"`
	Error *rpcError       `json:"error"`
}

func checkSend(endpoint, text string) (string, error) {
	b, err := rawPost(endpoint, req("SendMessage", sendParams(text, "", "")))
	if err != nil {
		return "", err
	}
	var w wireTask
	if err := json.Unmarshal(b, &w); err != nil || w.Result.Task == nil {
		return "", fmt.Errorf("%v: %s", err, b)
	}
	tk := w.Result.Task
	if tk.Status.State != a2a.TaskStateCompleted || tk.Artifacts[0].Parts[0].Content != a2a.PartText(text) {
		return "", fmt.Errorf("%s", b)
	}
	return tk.ID, nil
}

func checkStream(endpoint, text string) error {
	b, err := rawPost(endpoint, req("SendStreamingMessage", sendParams(text, "", "")))
	if err != nil {
		return err
	}
	events := bytes.Split(bytes.TrimSuffix(b, []byte("\n\n")), []byte("\n\n"))
	var got string
	var final a2a.TaskState
	for _, ev := range events {
		data, ok := bytes.CutPrefix(ev, []byte("data: "))
		if !ok {
			return fmt.Errorf("event %q", ev)
		}
		var w wireTask
		if err := json.Unmarshal(data, &w); err != nil || string(w.ID) != "1" || w.Error != nil {
			return fmt.Errorf("%v: %s", err, data)
		}
		if w.Result.Artifact != nil {
			got += string(w.Result.Artifact.Artifact.Parts[0].Content.(a2a.PartText))
		}
		if w.Result.StatusUpdate != nil {
			final = w.Result.StatusUpdate.Status.State
		}
	}
	if got != text || final != a2a.TaskStateCompleted {
		return fmt.Errorf("artifact %q, last state %s: %s", got, final, b)
	}
	return nil
}

func checkGet(endpoint, id string) error {
	b, err := rawPost(endpoint, req("GetTask", `{"id":"`+id+`"}`))
	if err != nil {
		return err
	}
	var w struct {
		Result a2a.Task `json:"result"`
	}
	if err := json.Unmarshal(b, &w); err != nil || w.Result.ID != id || w.Result.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("%v: %s", err, b)
	}
	return nil
}
