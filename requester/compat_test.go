package requester_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// lenient runs requester.DecodeLenient with the parse function of a type
// the requester reads, and returns the value re-encoded by its own
// encoder.
func lenient(t *testing.T, typ string, in []byte) (string, []requester.Departure, error) {
	t.Helper()
	enc := func(v interface{ MarshalJSON() ([]byte, error) }, d []requester.Departure, err error) (string, []requester.Departure, error) {
		if err != nil {
			return "", d, err
		}
		b, merr := v.MarshalJSON()
		if merr != nil {
			t.Fatalf("re-encoding: %v", merr)
		}
		return string(b), d, nil
	}
	switch typ {
	case "AgentCard":
		v, d, err := requester.DecodeLenient(in, a2a.ParseAgentCardJSON)
		return enc(v, d, err)
	case "Task":
		v, d, err := requester.DecodeLenient(in, a2a.ParseTaskJSON)
		return enc(v, d, err)
	case "ListTasksResponse":
		v, d, err := requester.DecodeLenient(in, a2a.ParseListTasksResponseJSON)
		return enc(v, d, err)
	case "StreamResponse":
		v, d, err := requester.DecodeLenient(in, a2a.ParseStreamResponseJSON)
		return enc(v, d, err)
	case "SendMessageResponse":
		v, d, err := requester.DecodeLenient(in, a2a.ParseSendMessageResponseJSON)
		return enc(v, d, err)
	case "TaskStatusUpdateEvent":
		v, d, err := requester.DecodeLenient(in, a2a.ParseTaskStatusUpdateEventJSON)
		return enc(v, d, err)
	case "JSONRPCResponse":
		v, d, err := requester.DecodeLenient(in, a2a.ParseJSONRPCResponseJSON)
		return enc(v, d, err)
	case "Message":
		v, d, err := requester.DecodeLenient(in, a2a.ParseMessageJSON)
		return enc(v, d, err)
	case "Part":
		v, d, err := requester.DecodeLenient(in, a2a.ParsePartJSON)
		return enc(v, d, err)
	case "TaskArtifactUpdateEvent":
		v, d, err := requester.DecodeLenient(in, a2a.ParseTaskArtifactUpdateEventJSON)
		return enc(v, d, err)
	case "TaskPushNotificationConfig":
		v, d, err := requester.DecodeLenient(in, a2a.ParseTaskPushNotificationConfigJSON)
		return enc(v, d, err)
	}
	t.Fatalf("no parse function for %s", typ)
	return "", nil, nil
}

// strictErr is the error of the strict generated parse.
func strictErr(t *testing.T, typ string, in []byte) error {
	t.Helper()
	var err error
	switch typ {
	case "AgentCard":
		_, err = a2a.ParseAgentCardJSON(in)
	case "Task":
		_, err = a2a.ParseTaskJSON(in)
	case "ListTasksResponse":
		_, err = a2a.ParseListTasksResponseJSON(in)
	case "StreamResponse":
		_, err = a2a.ParseStreamResponseJSON(in)
	case "JSONRPCResponse":
		_, err = a2a.ParseJSONRPCResponseJSON(in)
	default:
		t.Fatalf("no strict parse for %s", typ)
	}
	return err
}

const (
	cardHead = `{"name":"n","description":"d","version":"1","supportedInterfaces":[{"url":"http://a/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
		`"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],`
	skill = `{"id":"s","name":"s","description":"d","tags":["t"]`
)

// TestDecodeLenient: each departure of a2a-go (docs/conformance.md) is read
// in the specification's form; a payload that follows the specification
// is untouched; a payload broken in another way, alone or beside a
// departure, is refused with the strict parse's error.
func TestDecodeLenient(t *testing.T) {
	cases := []struct {
		name     string
		typ      string
		in       string
		want     []string // substrings of the re-encoded value
		departed []requester.Departure
		refused  bool
		spec     string // the same payload in the specification's form, read alike
	}{
		// Untouched.
		{"a valid task", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T10:00:00Z"},"metadata":{"at":"2026-01-02T12:00:00+02:00","none":null}}`,
			[]string{`"timestamp":"2026-01-02T10:00:00Z"`, `"at":"2026-01-02T12:00:00+02:00"`, `"none":null`}, nil, false, ""},
		{"a valid card with ProtoJSON securityRequirements", "AgentCard", cardHead + `"securityRequirements":[{"schemes":{"b":{"list":["x"]}}}],"skills":[` + skill + `}]}`,
			[]string{`"securityRequirements":[{"schemes":{"b":{"list":["x"]}}}]`}, nil, false, ""},

		// Departure 1: securityRequirements.
		{"card and skill securityRequirements as bare arrays", "AgentCard",
			cardHead + `"securityRequirements":[{"schemes":{"oauth":["routes"]}},{"schemes":{"apiKey":[],"mtls":[]}}],"skills":[` + skill + `,"securityRequirements":[{"schemes":{"google":["openid","profile"]}}]}]}`,
			[]string{`"securityRequirements":[{"schemes":{"oauth":{"list":["routes"]}}},{"schemes":{"apiKey":{"list":[]},"mtls":{"list":[]}}}]`,
				`"securityRequirements":[{"schemes":{"google":{"list":["openid","profile"]}}}]`},
			[]requester.Departure{requester.DepartureSecurityRequirements}, false,
			cardHead + `"securityRequirements":[{"schemes":{"oauth":{"list":["routes"]}}},{"schemes":{"apiKey":{"list":[]},"mtls":{"list":[]}}}],"skills":[` + skill + `,"securityRequirements":[{"schemes":{"google":{"list":["openid","profile"]}}}]}]}`},
		{"one scheme bare, one ProtoJSON", "AgentCard", cardHead + `"securityRequirements":[{"schemes":{"a":["x"],"b":{"list":["y"]}}}],"skills":[` + skill + `}]}`,
			[]string{`"schemes":{"a":{"list":["x"]},"b":{"list":["y"]}}`}, []requester.Departure{requester.DepartureSecurityRequirements}, false, ""},
		{"scopes that are not strings", "AgentCard", cardHead + `"securityRequirements":[{"schemes":{"a":[1]}}],"skills":[` + skill + `}]}`,
			nil, nil, true, ""},
		{"scopes as a string", "AgentCard", cardHead + `"securityRequirements":[{"schemes":{"a":"x"}}],"skills":[` + skill + `}]}`,
			nil, nil, true, ""},

		// Departure 2: timestamps with an offset.
		{"task status timestamp +02:00", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T12:00:00+02:00"}}`,
			[]string{`"timestamp":"2026-01-02T10:00:00Z"`}, []requester.Departure{requester.DepartureTimestampOffset}, false, ""},
		{"fraction and a negative offset", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-01T23:30:00.123456789-05:30"}}`,
			[]string{`"timestamp":"2026-01-02T05:00:00.123456789Z"`}, []requester.Departure{requester.DepartureTimestampOffset}, false, ""},
		{"+00:00", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T10:00:00.5+00:00"}}`,
			[]string{`"timestamp":"2026-01-02T10:00:00.5Z"`}, []requester.Departure{requester.DepartureTimestampOffset}, false, ""},
		{"a status update in a stream item; metadata kept as sent", "StreamResponse",
			`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-02T12:00:00+02:00"},"metadata":{"at":"2026-01-02T12:00:00+02:00","big":123456789012345678901234567890,"html":"<b>&amp;</b>"}}}`,
			[]string{`"timestamp":"2026-01-02T10:00:00Z"`, `"at":"2026-01-02T12:00:00+02:00"`, `<b>&amp;</b>`},
			[]requester.Departure{requester.DepartureTimestampOffset}, false,
			`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-02T10:00:00Z"},"metadata":{"at":"2026-01-02T12:00:00+02:00","big":123456789012345678901234567890,"html":"<b>&amp;</b>"}}}`},
		{"a task in a stream item", "StreamResponse",
			`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED","timestamp":"2026-01-02T12:00:00+02:00"}}}`,
			[]string{`"timestamp":"2026-01-02T10:00:00Z"`}, []requester.Departure{requester.DepartureTimestampOffset}, false, ""},
		{"lower-case z stays invalid", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T10:00:00z"}}`,
			nil, nil, true, ""},
		{"an offset on a time that is no RFC 3339", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-02-30T10:00:00+02:00"}}`,
			nil, nil, true, ""},
		{"an offset on a leap second stays invalid", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-31T23:59:60+00:00"}}`,
			nil, nil, true, ""},

		// Departure 3: null for an array.
		{"ListTasks tasks null", "ListTasksResponse", `{"tasks":null,"nextPageToken":"","pageSize":50,"totalSize":0}`,
			[]string{`"tasks":[]`}, []requester.Departure{requester.DepartureNullArray}, false, ""},
		{"a skill's tags null stays invalid (REQUIRED, non-empty)", "AgentCard", cardHead + `"skills":[{"id":"s","name":"s","description":"d","tags":null}]}`,
			nil, nil, true, ""},
		{"a listed task with an offset", "ListTasksResponse",
			`{"tasks":[{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T12:00:00+02:00"}}],"nextPageToken":"","pageSize":50,"totalSize":1}`,
			[]string{`"timestamp":"2026-01-02T10:00:00Z"`}, []requester.Departure{requester.DepartureTimestampOffset}, false, ""},
		{"null where a string is wanted stays invalid", "Task", `{"id":null,"contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`,
			nil, nil, true, ""},

		// Departure 4: a response without result.
		{"a response without result", "JSONRPCResponse", `{"jsonrpc":"2.0","id":"req-5"}`,
			[]string{`"result":{}`}, []requester.Departure{requester.DepartureNoResult}, false, ""},
		{"a response with result and error stays invalid", "JSONRPCResponse", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`,
			nil, nil, true, ""},
		{"a response without id stays invalid", "JSONRPCResponse", `{"jsonrpc":"2.0"}`, nil, nil, true, ""},
		{"a response of another version stays invalid", "JSONRPCResponse", `{"jsonrpc":"1.0","id":1}`, nil, nil, true, ""},

		// Broken in another way.
		{"an offset beside a v0.3 state", "Task", `{"id":"t","contextId":"c","status":{"state":"completed","timestamp":"2026-01-02T12:00:00+02:00"}}`,
			nil, nil, true, ""},
		{"bare scopes beside a missing name", "AgentCard", strings.Replace(cardHead, `"name":"n",`, "", 1) + `"securityRequirements":[{"schemes":{"a":["x"]}}],"skills":[` + skill + `}]}`,
			nil, nil, true, ""},
		{"not JSON", "Task", `{"id":"t","status":{"timestamp":"2026-01-02T12:00:00+02:00"`, nil, nil, true, ""},
		{"trailing data after a departure", "Task", `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T12:00:00+02:00"}} {}`,
			nil, nil, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, departed, err := lenient(t, tc.typ, []byte(tc.in))
			if tc.refused {
				want := strictErr(t, tc.typ, []byte(tc.in))
				if err == nil || want == nil || err.Error() != want.Error() {
					t.Fatalf("got %s, %v; want the strict error %v", got, err, want)
				}
				var verr *a2a.ValidationError
				var serr *a2a.SyntaxError
				if errors.As(want, &verr) != errors.As(err, &verr) || errors.As(want, &serr) != errors.As(err, &serr) {
					t.Fatalf("error %T, want the strict parse's %T", err, want)
				}
				if departed != nil {
					t.Fatalf("departures %v reported for a refused payload", departed)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("read as %s: want %s in it", got, w)
				}
			}
			if strings.Join(depNames(departed), ",") != strings.Join(depNames(tc.departed), ",") {
				t.Fatalf("departures %v, want %v", departed, tc.departed)
			}
			if tc.spec != "" {
				spec, d, err := lenient(t, tc.typ, []byte(tc.spec))
				if err != nil || d != nil || spec != got {
					t.Fatalf("read as %s; the specification's form reads as %s (%v, %v)", got, spec, d, err)
				}
			}
		})
	}
}

func depNames(ds []requester.Departure) []string {
	var s []string
	for _, d := range ds {
		s = append(s, string(d))
	}
	return s
}

// TestDecodeLenientA2AGoPayloads: the payloads captured from a2a-go v2.3.1
// (golden/payloads/a2a-go, docs/conformance.md) of every type the
// requester reads: each valid one is read with no departure, and of the
// invalid ones exactly those that depart in form only are read.
func TestDecodeLenientA2AGoPayloads(t *testing.T) {
	dir := filepath.Join("..", "golden", "payloads", "a2a-go")
	raw, err := os.ReadFile(filepath.Join(dir, "verdicts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []struct {
		File  string `json:"file"`
		Type  string `json:"type"`
		Valid bool   `json:"valid"`
	}
	if err := json.Unmarshal(raw, &verdicts); err != nil {
		t.Fatal(err)
	}
	read := map[string][]requester.Departure{
		"agent-card-full.json":                     {requester.DepartureSecurityRequirements},
		"agent-card-security-requirements.json":    {requester.DepartureSecurityRequirements},
		"list-tasks-response-no-tasks.json":        {requester.DepartureNullArray},
		"task-status-timestamp-local-offset.json":  {requester.DepartureTimestampOffset},
		"jsonrpc-response-delete-push-config.json": {requester.DepartureNoResult},
	}
	refused := map[string]bool{
		"agent-card-skill-without-tags.json": true, // tags REQUIRED, non-empty
		"part-empty-url.json":                true, // no content member: no form to read
	}
	checked := 0
	for _, v := range verdicts {
		switch v.Type {
		case "JSONRPCRequest", "SendMessageRequest":
			continue // what a requester writes, never reads
		}
		checked++
		t.Run(v.File, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(dir, v.File))
			if err != nil {
				t.Fatal(err)
			}
			_, departed, err := lenient(t, v.Type, in)
			switch {
			case v.Valid:
				if err != nil || departed != nil {
					t.Fatalf("valid payload: departures %v, error %v", departed, err)
				}
			case refused[v.File]:
				if err == nil {
					t.Fatal("read; want it refused")
				}
			default:
				want, ok := read[v.File]
				if !ok {
					t.Fatalf("invalid payload %s (%v) is in neither list of this test", v.File, err)
				}
				if err != nil || strings.Join(depNames(departed), ",") != strings.Join(depNames(want), ",") {
					t.Fatalf("departures %v, error %v; want %v", departed, err, want)
				}
			}
		})
	}
	if checked < 20 {
		t.Fatalf("%d payloads checked: the corpus moved?", checked)
	}
}

// logBuffer returns a debug-level logger writing to a buffer, for
// asserting on the Client's debug log.
func logBuffer() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestClientReadsDepartures: the Client, whatever its transport, reads
// a2a-go's departures in form for every operation, and says so in its
// debug log; a result-less response is a success only where the result is
// Empty.
func TestClientReadsDepartures(t *testing.T) {
	const offset = `{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-02T12:00:00+02:00"}}`
	s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingHTTP, IDs: tasklife.ResponderIDs}}
	s.answer = func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
		resultless := []byte(`{"jsonrpc":"2.0","id":"` + req.ID + `"}`)
		switch req.Method {
		case a2a.MethodSendMessage:
			deliver(&requester.Reply{Payload: result(req, `{"task":`+offset+`}`), End: true})
		case a2a.MethodSendStreamingMessage:
			deliver(&requester.Reply{Payload: result(req, `{"task":`+strings.Replace(offset, "COMPLETED", "SUBMITTED", 1)+`}`)})
			deliver(&requester.Reply{Payload: result(req, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-02T13:00:00+02:00"}}}`)})
			deliver(&requester.Reply{End: true})
		case a2a.MethodListTasks:
			deliver(&requester.Reply{Payload: result(req, `{"tasks":null,"nextPageToken":"","pageSize":50,"totalSize":0}`), End: true})
		case a2a.MethodDeleteTaskPushNotificationConfig, a2a.MethodGetTask:
			deliver(&requester.Reply{Payload: resultless, End: true})
		case a2a.MethodCancelTask:
			// Not the last reply of its attempt: ignored as before, then the
			// real answer.
			deliver(&requester.Reply{Payload: resultless})
			deliver(&requester.Reply{Payload: result(req, offset), End: true})
		}
		return nil
	}
	log, buf := logBuffer()
	s.binding.Retry = fast()
	c, err := requester.New(s, requester.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}

	res, err := c.SendMessage(ctx(t), requester.TextMessage("hi", "", ""))
	if err != nil || res.Task == nil || res.Task.Status.Timestamp != "2026-01-02T10:00:00Z" {
		t.Fatalf("SendMessage: %+v %v; want the timestamp in UTC", res, err)
	}
	var stamps []string
	for it, err := range c.SendStreamingMessage(ctx(t), requester.TextMessage("hi", "", "")) {
		if err != nil {
			t.Fatal(err)
		}
		switch x := it.Payload.(type) {
		case *a2a.Task:
			stamps = append(stamps, x.Status.Timestamp)
		case *a2a.TaskStatusUpdateEvent:
			stamps = append(stamps, x.Status.Timestamp)
		}
	}
	if got := strings.Join(stamps, ","); got != "2026-01-02T10:00:00Z,2026-01-02T11:00:00Z" {
		t.Fatalf("stream timestamps %s", got)
	}
	list, err := c.ListTasks(ctx(t), &a2a.ListTasksRequest{})
	if err != nil || list.Tasks == nil || len(list.Tasks) != 0 {
		t.Fatalf("ListTasks: %+v %v; want an empty list", list, err)
	}
	if err := c.DeleteTaskPushNotificationConfig(ctx(t), &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: "t", ID: "p"}); err != nil {
		t.Fatalf("DeleteTaskPushNotificationConfig answered without result: %v", err)
	}
	// A result-less answer to a method whose result is not Empty stays what
	// it was: not a JSON-RPC response, invalid_agent_response.
	_, err = c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: "t"})
	if !errors.Is(err, a2a.ErrInvalidAgentResponse) || !strings.Contains(err.Error(), "not a JSON-RPC 2.0 response") {
		t.Fatalf("GetTask answered without result: %v, want the original invalid_agent_response", err)
	}
	ignored := c.IgnoredReplies()
	tk, err := c.CancelTask(ctx(t), &a2a.CancelTaskRequest{ID: "t"})
	if err != nil || tk.Status.Timestamp != "2026-01-02T10:00:00Z" {
		t.Fatalf("CancelTask: %+v %v", tk, err)
	}
	if c.IgnoredReplies() != ignored+1 {
		t.Fatalf("ignored replies %d, want %d", c.IgnoredReplies(), ignored+1)
	}

	logged := buf.String()
	for _, d := range []requester.Departure{requester.DepartureTimestampOffset, requester.DepartureNullArray, requester.DepartureNoResult} {
		if !strings.Contains(logged, string(d)) {
			t.Errorf("debug log %q: want departure %q", logged, d)
		}
	}
	if n := strings.Count(logged, "departures from A2A v1.0"); n != 6 {
		t.Errorf("%d lenient reads logged, want 6 (SendMessage, 2 stream items, ListTasks, delete, CancelTask):\n%s", n, logged)
	}
}
