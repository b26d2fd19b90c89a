package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// Each of the eleven A2A v1.0 methods answered through the handler, with
// the result or the error the runtime gives it.
func TestEveryMethodThroughTheHandler(t *testing.T) {
	extended := srvCard("http://127.0.0.1/extended", true, true)
	a := startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithExtendedCard(extended))
	if err := a.h.UpdateCard(srvCard(a.endpoint, true, true)); err != nil {
		t.Fatal(err)
	}

	done := task(t, call(t, a.endpoint, req("SendMessage", sendParams("hello", "", "")), nil).Result)
	slow := task(t, call(t, a.endpoint, req("SendMessage", `{"message":{"messageId":"s1","role":"ROLE_USER","parts":[{"text":"slow"}]},"configuration":{"returnImmediately":true}}`), nil).Result)
	waitState(t, a.endpoint, slow.ID, a2a.TaskStateWorking)

	unary := []struct {
		method, params string
		check          func(t *testing.T, r rpcResp)
	}{
		{"SendMessage", sendParams("hi", "", ""), func(t *testing.T, r rpcResp) {
			tk := task(t, r.Result)
			if tk.Status.State != a2a.TaskStateCompleted || tk.Artifacts[0].Parts[0].Content != a2a.PartText("hi") {
				t.Fatalf("%s", r.Result)
			}
		}},
		{"GetTask", `{"id":"` + done.ID + `"}`, func(t *testing.T, r rpcResp) {
			if tk := task(t, r.Result); tk.ID != done.ID || tk.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("%s", r.Result)
			}
		}},
		{"ListTasks", `{}`, func(t *testing.T, r rpcResp) {
			var l struct {
				Tasks []a2a.Task `json:"tasks"`
			}
			if err := json.Unmarshal(r.Result, &l); err != nil || len(l.Tasks) < 2 {
				t.Fatalf("%v %s", err, r.Result)
			}
		}},
		{"CancelTask", `{"id":"` + slow.ID + `"}`, func(t *testing.T, r rpcResp) {
			if tk := task(t, r.Result); tk.Status.State != a2a.TaskStateCanceled {
				t.Fatalf("%s", r.Result)
			}
		}},
		{"CreateTaskPushNotificationConfig", `{"taskId":"` + done.ID + `","url":"https://example.com/hook"}`, wantError(-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")},
		{"GetTaskPushNotificationConfig", `{"taskId":"` + done.ID + `","id":"c1"}`, wantError(-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")},
		{"ListTaskPushNotificationConfigs", `{"taskId":"` + done.ID + `"}`, wantError(-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"` + done.ID + `","id":"c1"}`, wantError(-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")},
		{"GetExtendedAgentCard", `{}`, func(t *testing.T, r rpcResp) {
			var c a2a.AgentCard
			if err := json.Unmarshal(r.Result, &c); err != nil || c.SupportedInterfaces[0].URL != "http://127.0.0.1/extended" {
				t.Fatalf("%v %s", err, r.Result)
			}
		}},
	}
	for _, tc := range unary {
		t.Run(tc.method, func(t *testing.T) {
			tc.check(t, call(t, a.endpoint, req(tc.method, tc.params), nil))
		})
	}

	t.Run("SendStreamingMessage", func(t *testing.T) {
		evs := readEvents(t, post(t, a.endpoint, req("SendStreamingMessage", sendParams("stream me", "", "")), nil))
		if len(evs) < 2 {
			t.Fatalf("%d events", len(evs))
		}
		first := task(t, parseResp(t, evs[0].data, "1").Result)
		last := parseResp(t, evs[len(evs)-1].data, "1")
		var su struct {
			StatusUpdate *a2a.TaskStatusUpdateEvent `json:"statusUpdate"`
		}
		if err := json.Unmarshal(last.Result, &su); err != nil || su.StatusUpdate == nil ||
			su.StatusUpdate.TaskID != first.ID || su.StatusUpdate.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("last event %s (%v)", evs[len(evs)-1].data, err)
		}
	})
	t.Run("SubscribeToTask", func(t *testing.T) {
		live := task(t, call(t, a.endpoint, req("SendMessage", `{"message":{"messageId":"s2","role":"ROLE_USER","parts":[{"text":"slow"}]},"configuration":{"returnImmediately":true}}`), nil).Result)
		resp := post(t, a.endpoint, req("SubscribeToTask", `{"id":"`+live.ID+`"}`), nil)
		defer resp.Body.Close()
		first, err := nextEvent(bufioReader(resp.Body))
		if err != nil {
			t.Fatal(err)
		}
		if tk := task(t, parseResp(t, first.data, "1").Result); tk.ID != live.ID {
			t.Fatalf("the stream begins with %s", first.data)
		}
		if r := call(t, a.endpoint, req("CancelTask", `{"id":"`+live.ID+`"}`), nil); r.Err != nil {
			t.Fatalf("%+v", r.Err)
		}
	})
}

func wantError(code int, reason string) func(t *testing.T, r rpcResp) {
	return func(t *testing.T, r rpcResp) {
		t.Helper()
		if r.Err == nil || r.Err.Code != code || r.Err.reason() != reason {
			t.Fatalf("want error %d %s, got result %s error %+v", code, reason, r.Result, r.Err)
		}
	}
}

// A stream is text/event-stream, one "data:" line per JSON-RPC response
// carrying the request's id, beginning with the Task and ending with the
// terminal status, then the response ends.
func TestStreamFraming(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	resp := post(t, a.endpoint, `{"jsonrpc":"2.0","id":"s-7","method":"SendStreamingMessage","params":`+sendParams("framed", "", "")+`}`, nil)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	evs := readEvents(t, resp)
	var kinds []string
	for _, ev := range evs {
		r := parseResp(t, ev.data, `"s-7"`)
		if r.Err != nil {
			t.Fatalf("error event %s", ev.data)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r.Result, &m); err != nil || len(m) != 1 {
			t.Fatalf("a StreamResponse holds one member: %s", r.Result)
		}
		for k := range m {
			kinds = append(kinds, k)
		}
	}
	if got := strings.Join(kinds, ","); got != "task,artifactUpdate,statusUpdate" {
		t.Fatalf("stream items %s", got)
	}
}

// An error for a streaming method is an error event inside the stream.
func TestStreamingErrorsAreEvents(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		code       int
	}{
		{"unknown task", req("SubscribeToTask", `{"id":"no-such-task"}`), nil, -32001},
		{"bad version", req("SendStreamingMessage", sendParams("x", "", "")), map[string]string{"A2A-Version": "0.3"}, -32009},
		{"invalid params", req("SendStreamingMessage", `{"message":{}}`), nil, -32602},
		{"unknown task id in message", req("SendStreamingMessage", sendParams("x", "no-such-task", "")), nil, -32001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := readEvents(t, post(t, a.endpoint, tc.body, tc.hdr))
			if len(evs) != 1 {
				t.Fatalf("%d events", len(evs))
			}
			if r := parseResp(t, evs[0].data, "1"); r.Err == nil || r.Err.Code != tc.code {
				t.Fatalf("%s", evs[0].data)
			}
		})
	}
}

func TestVersionHeader(t *testing.T) {
	strict := startSrvAgent(t, a2ahttp.HandlerConfig{})
	lenient := startSrvAgent(t, a2ahttp.HandlerConfig{AcceptMissingVersion: true})
	for _, tc := range []struct {
		name    string
		a       *srvAgent
		version string // "-" for no header
		served  bool
	}{
		{"1.0", strict, "1.0", true},
		{"1.0.0", strict, "1.0.0", true},
		{"patch ignored", strict, "1.0.3", true},
		{"absent means 0.3", strict, "-", false},
		{"0.3", strict, "0.3", false},
		{"2.0", strict, "2.0", false},
		{"major only", strict, "1", false},
		{"1.1", strict, "1.1", false},
		{"garbage patch", strict, "1.0.x", false},
		{"trailing dot", strict, "1.0.", false},
		{"v prefix", strict, "v1.0", false},
		{"absent, AcceptMissingVersion", lenient, "-", true},
		{"0.3, AcceptMissingVersion", lenient, "0.3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"A2A-Version": tc.version}
			if tc.version == "-" {
				hdr["A2A-Version"] = ""
			}
			r := call(t, tc.a.endpoint, req("GetTask", `{"id":"nope"}`), hdr)
			// Served: the runtime answers task_not_found.
			want := -32009
			if tc.served {
				want = -32001
			}
			if r.Err == nil || r.Err.Code != want {
				t.Fatalf("want %d, got %+v", want, r.Err)
			}
			if !tc.served && r.Err.reason() != "VERSION_NOT_SUPPORTED" {
				t.Fatalf("reason %q", r.Err.reason())
			}
		})
	}
	t.Run("given twice", func(t *testing.T) {
		rq, _ := http.NewRequest(http.MethodPost, strict.endpoint, strings.NewReader(req("GetTask", `{"id":"nope"}`)))
		rq.Header.Set("Content-Type", "application/json")
		rq.Header.Add("A2A-Version", "1.0")
		rq.Header.Add("A2A-Version", "0.3")
		resp, err := http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if r := parseResp(t, b, "1"); r.Err == nil || r.Err.Code != -32009 {
			t.Fatalf("%s", b)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	const limit = 1024
	a := startSrvAgent(t, a2ahttp.HandlerConfig{MaxBodyBytes: limit})
	valid := req("GetTask", `{"id":"nope"}`)
	atLimit := valid + strings.Repeat(" ", limit-len(valid))
	over := atLimit + " "
	for _, tc := range []struct {
		name    string
		body    string
		chunked bool
		want    int
	}{
		{"at the limit", atLimit, false, -32001},
		{"at the limit, chunked", atLimit, true, -32001},
		{"one byte over", over, false, -32600},
		{"one byte over, chunked", over, true, -32600},
		{"far over, chunked", valid + strings.Repeat(" ", 1<<20), true, -32600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // no length known: sent chunked
			}
			rq, _ := http.NewRequest(http.MethodPost, a.endpoint, body)
			rq.Header.Set("Content-Type", "application/json")
			rq.Header.Set("A2A-Version", "1.0")
			resp, err := http.DefaultClient.Do(rq)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d", resp.StatusCode)
			}
			id := "1"
			if tc.want == -32600 {
				id = "null" // the body was not read
			}
			r := parseResp(t, b, id)
			if r.Err == nil || r.Err.Code != tc.want {
				t.Fatalf("%s", b)
			}
			if tc.want == -32600 && !strings.Contains(r.Err.Message, "1024 bytes") {
				t.Fatalf("the message does not name the limit: %q", r.Err.Message)
			}
		})
	}
}

func TestContentType(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	for _, tc := range []struct {
		ct     string
		status int
	}{
		{"application/json", 200},
		{"application/json; charset=utf-8", 200},
		{"Application/JSON;charset=UTF-8", 200},
		{"text/plain", 415},
		{"application/a2a+json", 415},
		{"application/x-www-form-urlencoded", 415},
		{"", 415},
	} {
		t.Run(tc.ct, func(t *testing.T) {
			resp := post(t, a.endpoint, req("GetTask", `{"id":"nope"}`), map[string]string{"Content-Type": tc.ct})
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			r := parseResp(t, b, map[bool]string{true: "1", false: "null"}[tc.status == 200])
			if tc.status == 415 && (r.Err == nil || r.Err.Code != -32600 || !strings.Contains(r.Err.Message, "application/json")) {
				t.Fatalf("%s", b)
			}
		})
	}
}

func TestOnlyPOSTOnTheEndpoint(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodOptions} {
		t.Run(m, func(t *testing.T) {
			rq, _ := http.NewRequest(m, a.endpoint, nil)
			resp, err := http.DefaultClient.Do(rq)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
				t.Fatalf("HTTP %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
			}
			if r := parseResp(t, b, "null"); r.Err == nil || r.Err.Code != -32600 {
				t.Fatalf("%s", b)
			}
		})
	}
}

// The JSON-RPC 2.0 errors of the envelope, with the request's id where it
// could be read.
func TestJSONRPCEnvelopeErrors(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	for _, tc := range []struct {
		name, body, id string
		code           int
	}{
		{"parse error", `{"jsonrpc":"2.0","id":1,"method":`, "null", -32700},
		{"empty body", ``, "null", -32700},
		{"not 2.0", `{"jsonrpc":"1.0","id":3,"method":"GetTask","params":{"id":"x"}}`, "3", -32600},
		{"id of the wrong type", `{"jsonrpc":"2.0","id":{},"method":"GetTask","params":{"id":"x"}}`, "null", -32600},
		{"batch", `[` + req("GetTask", `{"id":"x"}`) + `]`, "null", -32600},
		{"method not found", `{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{"id":"x"}}`, `"a"`, -32601},
		{"invalid params", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"idx":"x"}}`, "4", -32602},
		{"params not an object", `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":[1]}`, "5", -32602},
		{"null id is answered", `{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"x"}}`, "null", -32001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, a.endpoint, tc.body, nil)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("HTTP %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if r := parseResp(t, b, tc.id); r.Err == nil || r.Err.Code != tc.code {
				t.Fatalf("%s", b)
			}
		})
	}
}

// A notification (no id) is served and answered 204 without a body once
// the runtime has accepted it; a notification the runtime cannot serve is
// not answered either.
func TestNotification(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	for _, tc := range []struct {
		name, body string
		creates    bool
	}{
		// Answered while its handler still waits for release.
		{"SendMessage", `{"jsonrpc":"2.0","method":"SendMessage","params":` + sendParams("block", "", "") + `}`, true},
		{"SendStreamingMessage", `{"jsonrpc":"2.0","method":"SendStreamingMessage","params":` + sendParams("streamed note", "", "") + `}`, true},
		{"unknown method", `{"jsonrpc":"2.0","method":"Nope","params":{}}`, false},
		{"invalid params", `{"jsonrpc":"2.0","method":"GetTask","params":{}}`, false},
		{"runtime error", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"nope"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, a.endpoint, tc.body, nil)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent || len(b) != 0 {
				t.Fatalf("HTTP %d %q", resp.StatusCode, b)
			}
		})
	}
	// The two messages made tasks, which complete.
	close(a.release)
	r := call(t, a.endpoint, req("ListTasks", `{}`), nil)
	var l struct {
		Tasks []a2a.Task `json:"tasks"`
	}
	if err := json.Unmarshal(r.Result, &l); err != nil || len(l.Tasks) != 2 {
		t.Fatalf("%v %s", err, r.Result)
	}
	for _, tk := range l.Tasks {
		waitState(t, a.endpoint, tk.ID, a2a.TaskStateCompleted)
	}
}

// The bearer token reaches the verifier and appears in no reply, header or
// log line, whether it is accepted or refused.
func TestTokenNeverLeaks(t *testing.T) {
	const good, bad = "tok-GOOD-8d1f3c", "tok-BAD-77a0e2"
	var mu sync.Mutex
	var seen []string
	verifier := agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
		mu.Lock()
		seen = append(seen, token)
		mu.Unlock()
		if token == good {
			return agent.Caller{Subject: "alice"}, nil
		}
		return agent.Caller{}, errors.New("token " + token + " refused") // a careless verifier
	})
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := startSrvAgent(t, a2ahttp.HandlerConfig{Logger: logger}, agent.WithVerifier(verifier), agent.WithLogger(logger))

	var replies bytes.Buffer
	for _, tc := range []struct {
		token, body string
		wantErr     int
	}{
		{good, req("SendMessage", sendParams("hello", "", "")), 0},
		{good, req("SendStreamingMessage", sendParams("hello", "", "")), 0},
		{bad, req("SendMessage", sendParams("hello", "", "")), -31401},
		{bad, req("SendStreamingMessage", sendParams("hello", "", "")), -31401},
		{bad, req("Nope", `{}`), -32601},
		{bad, `{"jsonrpc":`, -32700},
	} {
		resp := post(t, a.endpoint, tc.body, map[string]string{"Authorization": "Bearer " + tc.token})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for k, v := range resp.Header {
			replies.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
		replies.Write(b)
		data := b
		if ev, ok := bytes.CutPrefix(b, []byte("data: ")); ok {
			data = ev[:bytes.IndexByte(ev, '\n')]
		}
		var m struct {
			Error *rpcError `json:"error"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if got := 0; m.Error != nil {
			got = m.Error.Code
			if got != tc.wantErr {
				t.Fatalf("error %d, want %d: %s", got, tc.wantErr, b)
			}
		} else if tc.wantErr != 0 {
			t.Fatalf("no error, want %d: %s", tc.wantErr, b)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 || seen[0] != good || seen[2] != bad {
		t.Fatalf("the verifier saw %q", seen)
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, tok := range []string{good, bad} {
		if strings.Contains(replies.String(), tok) {
			t.Errorf("token %s in a reply:\n%s", tok, replies.String())
		}
		if strings.Contains(logs.String(), tok) {
			t.Errorf("token %s in the log:\n%s", tok, logs.String())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A message naming a task id the server never made is task_not_found
// (server-made ids, A2A core); so is GetTask of an unknown task.
func TestUnknownTaskIsTaskNotFound(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	for _, body := range []string{
		req("SendMessage", sendParams("hi", "3f2e1d0c-0000-4000-8000-000000000000", "")),
		req("GetTask", `{"id":"nope"}`),
		req("CancelTask", `{"id":"nope"}`),
	} {
		wantError(-32001, "TASK_NOT_FOUND")(t, call(t, a.endpoint, body, nil))
	}
}

// The card's capabilities are enforced (A2A v1.0 §3.3.4).
func TestCardCapabilitiesEnforced(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithExtendedCard(srvCard("http://x/a2a", true, true)))
	if err := a.h.UpdateCard(srvCard(a.endpoint, false, false)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"SendStreamingMessage", "SubscribeToTask"} {
		params := sendParams("x", "", "")
		if m == "SubscribeToTask" {
			params = `{"id":"x"}`
		}
		evs := readEvents(t, post(t, a.endpoint, req(m, params), nil))
		if len(evs) != 1 {
			t.Fatalf("%s: %d events", m, len(evs))
		}
		if r := parseResp(t, evs[0].data, "1"); r.Err == nil || r.Err.Code != -32004 || !strings.Contains(r.Err.Message, "capabilities.streaming") {
			t.Fatalf("%s: %s", m, evs[0].data)
		}
	}
	wantError(-32004, "UNSUPPORTED_OPERATION")(t, call(t, a.endpoint, req("GetExtendedAgentCard", `{}`), nil))

	// Declared, but the runtime has no extended card.
	b := startSrvAgent(t, a2ahttp.HandlerConfig{})
	if err := b.h.UpdateCard(srvCard(b.endpoint, true, true)); err != nil {
		t.Fatal(err)
	}
	wantError(-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED")(t, call(t, b.endpoint, req("GetExtendedAgentCard", `{}`), nil))
}

func TestAgentCardServed(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	resp, err := http.Get(a.base + a2ahttp.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Cache-Control") != "max-age=300" || resp.Header.Get("ETag") == "" {
		t.Fatalf("HTTP %d %v", resp.StatusCode, resp.Header)
	}
	var c a2a.AgentCard
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if i := c.SupportedInterfaces[0]; i.URL != a.endpoint || i.ProtocolBinding != "JSONRPC" || i.ProtocolVersion != "1.0" {
		t.Fatalf("%+v", i)
	}

	rq, _ := http.NewRequest(http.MethodGet, a.base+a2ahttp.WellKnownCardPath, nil)
	rq.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	r2, err := http.DefaultClient.Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: HTTP %d", r2.StatusCode)
	}

	// A new card gets a new ETag.
	c2 := srvCard(a.endpoint, true, false)
	c2.Version = "2.0.0"
	if err := a.h.UpdateCard(c2); err != nil {
		t.Fatal(err)
	}
	r3, err := http.DefaultClient.Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	b3, _ := io.ReadAll(r3.Body)
	r3.Body.Close()
	if r3.StatusCode != 200 || !strings.Contains(string(b3), `"version":"2.0.0"`) {
		t.Fatalf("after UpdateCard: HTTP %d %s", r3.StatusCode, b3)
	}

	r4, err := http.Post(a.base+a2ahttp.WellKnownCardPath, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	r4.Body.Close()
	if r4.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST card: HTTP %d", r4.StatusCode)
	}
}

func TestNewHandlerRefusesUnfitConfig(t *testing.T) {
	rt := agent.NewServer(srvHandler(nil))
	defer rt.Close(context.Background())
	yes := true
	noJSONRPC := srvCard("http://x/a2a", true, false)
	noJSONRPC.SupportedInterfaces = []a2a.AgentInterface{{URL: "mqtt://x:1883", ProtocolBinding: agentcard.BindingMQTT, ProtocolVersion: agentcard.ProtocolVersion}}
	push := srvCard("http://x/a2a", true, false)
	push.Capabilities.PushNotifications = &yes
	invalid := srvCard("http://x/a2a", true, false)
	invalid.Name = ""
	for _, tc := range []struct {
		name string
		cfg  a2ahttp.HandlerConfig
		want string
	}{
		{"no server", a2ahttp.HandlerConfig{Card: srvCard("http://x/a2a", true, false)}, "Server is required"},
		{"no card", a2ahttp.HandlerConfig{Server: rt}, "Agent Card is required"},
		{"no JSONRPC interface", a2ahttp.HandlerConfig{Server: rt, Card: noJSONRPC}, "no JSONRPC interface"},
		{"push notifications", a2ahttp.HandlerConfig{Server: rt, Card: push}, "pushNotifications"},
		{"invalid card", a2ahttp.HandlerConfig{Server: rt, Card: invalid}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a2ahttp.NewHandler(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
	// An agent also served over MQTT lists both interfaces.
	both := srvCard("http://x/a2a", true, false)
	both.SupportedInterfaces = append(noJSONRPC.SupportedInterfaces, a2ahttp.JSONRPCInterface("http://x/a2a"))
	if _, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: rt, Card: both}); err != nil {
		t.Fatal(err)
	}
}

// A client that stops reading a stream does not hold its task back: past
// EventWriteTimeout its stream ends and the task completes.
func TestStalledStreamDoesNotHoldTheTask(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{EventWriteTimeout: 50 * time.Millisecond})
	resp := post(t, a.endpoint, req("SendStreamingMessage", sendParams("big 16", "", "")), nil)
	defer resp.Body.Close()
	br := bufioReader(resp.Body)
	first, err := nextEvent(br)
	if err != nil {
		t.Fatal(err)
	}
	id := task(t, parseResp(t, first.data, "1").Result).ID
	// The client reads nothing more; 16 MiB of events cannot all fit in
	// the connection's buffers. ListTasks leaves the artifacts out.
	ctx := srvCtx(t)
	for {
		r := call(t, a.endpoint, req("ListTasks", `{"status":"TASK_STATE_COMPLETED"}`), nil)
		var l struct {
			Tasks []a2a.Task `json:"tasks"`
		}
		if err := json.Unmarshal(r.Result, &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) == 1 && l.Tasks[0].ID == id {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the task never completed")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
