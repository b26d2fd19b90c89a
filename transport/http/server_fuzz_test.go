package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2abind/a2abind/agent"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// FuzzServeHTTP feeds arbitrary bodies and A2A-Version values to the
// handler: it never panics, and answers 204 without a body or 200 with
// JSON-RPC 2.0 responses (one, or one per event), each with exactly one
// of result and error.
//
//	go test ./transport/http -run '^$' -fuzz '^FuzzServeHTTP$' -fuzztime 60s
func FuzzServeHTTP(f *testing.F) {
	for _, seed := range []string{
		req("SendMessage", sendParams("hello", "", "")),
		req("SendStreamingMessage", sendParams("hello", "", "")),
		req("GetTask", `{"id":"x","historyLength":-1}`),
		req("ListTasks", `{"pageSize":0,"statusTimestampAfter":"nope"}`),
		req("CancelTask", `{"id":""}`),
		req("SubscribeToTask", `{"id":"x"}`),
		req("GetExtendedAgentCard", `null`),
		req("DeleteTaskPushNotificationConfig", `{"taskId":"t","id":"c"}`),
		`{"jsonrpc":"2.0","method":"SendStreamingMessage","params":` + sendParams("note", "", "") + `}`,
		`[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask","params":{"id":"x"}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"GetTask","params":{"id":"x"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\u2028\",\"method\":\"GetTask\",\"params\":{\"id\":\"\\n\"}}",
		``, `null`, `"x"`, `{`,
	} {
		f.Add([]byte(seed), "1.0")
	}
	f.Add([]byte(req("GetTask", `{"id":"x"}`)), "")
	f.Add([]byte(req("GetTask", `{"id":"x"}`)), "1.0.\x00")

	rt := agent.NewServer(agent.HandlerFunc(func(context.Context, *agent.Turn) error { return nil }))
	f.Cleanup(func() { rt.Close(context.Background()) })
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: rt, Card: srvCard("http://127.0.0.1/a2a", true, true), MaxBodyBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, version string) {
		r := httptest.NewRequest(http.MethodPost, "/a2a", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header["A2a-Version"] = []string{version}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		out := w.Body.Bytes()
		switch {
		case w.Code == http.StatusNoContent:
			if len(out) != 0 {
				t.Fatalf("204 with a body: %q", out)
			}
			return
		case w.Code != http.StatusOK:
			t.Fatalf("HTTP %d: %q", w.Code, out)
		}
		answers := [][]byte{out}
		if w.Header().Get("Content-Type") == "text/event-stream" {
			answers = nil
			for _, ev := range bytes.SplitAfter(out, []byte("\n\n")) {
				if len(ev) == 0 {
					continue
				}
				data, ok := bytes.CutPrefix(ev, []byte("data: "))
				if !ok || !bytes.HasSuffix(data, []byte("\n\n")) || bytes.Count(data, []byte("\n")) != 2 {
					t.Fatalf("malformed event %q", ev)
				}
				answers = append(answers, bytes.TrimSuffix(data, []byte("\n\n")))
			}
		}
		if len(answers) == 0 {
			t.Fatal("no answer")
		}
		for _, a := range answers {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(a, &m); err != nil {
				t.Fatalf("%v: %q", err, a)
			}
			_, res := m["result"]
			_, e := m["error"]
			if string(m["jsonrpc"]) != `"2.0"` || res == e || m["id"] == nil {
				t.Fatalf("not a JSON-RPC 2.0 response: %s", a)
			}
		}
	})
}
