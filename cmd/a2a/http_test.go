package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// endpointRE finds the JSON-RPC endpoint in a2a agent's start line.
var endpointRE = regexp.MustCompile(`JSON-RPC at (http://\S+/a2a),`)

// startHTTPAgent runs a2a agent with args and returns it with its
// JSON-RPC endpoint and base URL, as the start line prints them.
func startHTTPAgent(t *testing.T, args ...string) (p *process, endpoint, base string) {
	t.Helper()
	p = start(t, append([]string{"agent"}, args...)...)
	p.waitFor(t, "JSON-RPC at ")
	m := endpointRE.FindStringSubmatch(p.output())
	if m == nil {
		t.Fatalf("no endpoint in:\n%s", p.output())
	}
	return p, m[1], strings.TrimSuffix(m[1], "/a2a")
}

// lastLine is the summary line of a2a send --json.
func lastLine(t *testing.T, r result) sendLine {
	t.Helper()
	lines := jsonLines(t, r.stdout)
	return lines[len(lines)-1]
}

// itemKinds lists the member names of the stream items of a2a send --json
// (the summary line excluded).
func itemKinds(t *testing.T, r result) string {
	t.Helper()
	lines := jsonLines(t, r.stdout)
	var kinds []string
	for _, l := range lines[:len(lines)-1] {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l.Item, &m); err != nil {
			t.Fatalf("item %s: %v", l.Item, err)
		}
		for k := range m {
			kinds = append(kinds, k)
		}
	}
	return strings.Join(kinds, ",")
}

// TestHTTPAgentAndSend drives a2a agent --http, with no broker, with a2a
// send --url.
func TestHTTPAgentAndSend(t *testing.T) {
	ag, endpoint, base := startHTTPAgent(t, "--http", "127.0.0.1:0", "--id", "echo")
	send := func(args ...string) result {
		return runCLI(t, nil, append([]string{"send", "--url", base, "--json"}, args...)...)
	}
	t.Run("the card lists the JSON-RPC endpoint", func(t *testing.T) {
		card, _, err := a2ahttp.FetchCard(context.Background(), nil, base+a2ahttp.WellKnownCardPath)
		if err != nil {
			t.Fatal(err)
		}
		if len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0] != a2ahttp.JSONRPCInterface(endpoint) || card.Name != "echo" {
			t.Fatalf("%+v", card.SupportedInterfaces)
		}
	})
	referenceBehaviours(t, send)
	t.Run("no responder over HTTP", func(t *testing.T) {
		r := send("who answers?")
		if lines := jsonLines(t, r.stdout); r.code != 0 || lines[0].Responder != "" {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("the JSON-RPC endpoint itself as the URL", func(t *testing.T) {
		r := runCLI(t, nil, "send", "--url", endpoint, "--json", "direct")
		if last := lastLine(t, r); r.code != 0 || last.State != "TASK_STATE_COMPLETED" || !strings.Contains(r.stdout, "echo: direct") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("a streamed follow-up", func(t *testing.T) {
		first := lastLine(t, send("ask me"))
		r := send("--stream", "--task", first.TaskID, "--context", first.ContextID, "green")
		if last := lastLine(t, r); r.code != 0 || last.State != "TASK_STATE_COMPLETED" || last.TaskID != first.TaskID {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("handover: an agent served over HTTP alone keeps the task", func(t *testing.T) {
		r := send("handover please")
		first := lastLine(t, r)
		if r.code != 0 || first.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(r.stdout, "keeps this task") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = send("--task", first.TaskID, "--context", first.ContextID, "size M")
		if last := lastLine(t, r); r.code != 0 || last.State != "TASK_STATE_COMPLETED" || last.TaskID != first.TaskID {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("the people's format ends with the next turn's line", func(t *testing.T) {
		r := runCLI(t, nil, "send", "--url", base, "hi there")
		want := regexp.MustCompile(`(?m)^ended       TASK_STATE_COMPLETED\nnext turn   --context \S+\n\z`)
		if r.code != 0 || !strings.Contains(r.stdout, "artifact    result: echo: hi there") || !want.MatchString(r.stdout) {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("an unknown task is task_not_found", func(t *testing.T) {
		r := send("--task", "no-such-task", "hi")
		if r.code != 1 || !strings.Contains(r.stderr, "task_not_found (code -32001)") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("a URL that is not an A2A endpoint", func(t *testing.T) {
		r := runCLI(t, nil, "send", "--url", base+"/nope", "hi")
		if r.code != 1 || !strings.Contains(r.stderr, base+"/nope answered 404 Not Found") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("SIGTERM stops the agent gracefully", func(t *testing.T) {
		ag.cmd.Process.Signal(syscall.SIGTERM)
		<-ag.done
		if ag.cmd.ProcessState.ExitCode() != 0 || !strings.Contains(ag.output(), "agent echo offline") {
			t.Fatalf("exit %d\n%s", ag.cmd.ProcessState.ExitCode(), ag.output())
		}
		if r := send("anyone?"); r.code != exitUnreachable || !strings.Contains(r.stderr, "connection refused") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// recorder is an HTTP agent in the test process whose requests are kept:
// the reference agent's behaviour behind a2ahttp.Handler.
type recorder struct {
	mu       sync.Mutex
	bodies   []string
	bearers  []string
	endpoint string
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{endpoint: "http://" + ln.Addr().String() + "/a2a"}
	srv := agent.NewServer(refagent.Handler("rec", ""))
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: refagent.Card("rec", false, a2ahttp.JSONRPCInterface(rec.endpoint))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux, "/a2a")
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			rec.mu.Lock()
			rec.bodies = append(rec.bodies, string(b))
			rec.bearers = append(rec.bearers, r.Header.Get("Authorization"))
			rec.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() {
		h.Close(context.Background())
		hs.Close()
		srv.Close(context.Background())
	})
	return rec
}

// message returns the message of the i-th request posted.
func (rec *recorder) message(t *testing.T, i int) (*a2a.Message, string) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if i >= len(rec.bodies) {
		t.Fatalf("%d requests, want %d", len(rec.bodies), i+1)
	}
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	var p a2a.SendMessageRequest
	if err := json.Unmarshal([]byte(rec.bodies[i]), &env); err != nil {
		t.Fatal(err)
	}
	if err := p.UnmarshalJSON(env.Params); err != nil {
		t.Fatal(err)
	}
	return p.Message, rec.bearers[i]
}

// TestSendURLLeavesTaskIDToTheServer: over HTTP the server makes Task.id,
// so a new task is sent without message.taskId and a follow-up with the
// id the server made; --token goes as Authorization: Bearer.
func TestSendURLLeavesTaskIDToTheServer(t *testing.T) {
	rec := startRecorder(t)
	r := runCLI(t, nil, "send", "--url", rec.endpoint, "--json", "--token", "t0k3n", "ask me")
	first := lastLine(t, r)
	if r.code != 0 || first.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m, auth := rec.message(t, 0)
	if m.TaskID != "" || m.ContextID != "" || m.MessageID == "" {
		t.Fatalf("a new task was sent with taskId %q contextId %q messageId %q", m.TaskID, m.ContextID, m.MessageID)
	}
	if auth != "Bearer t0k3n" {
		t.Fatalf("Authorization %q", auth)
	}
	r = runCLI(t, nil, "send", "--url", rec.endpoint, "--json", "--stream", "--task", first.TaskID, "--context", first.ContextID, "blue")
	if last := lastLine(t, r); r.code != 0 || last.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if m, auth := rec.message(t, 1); m.TaskID != first.TaskID || m.ContextID != first.ContextID || auth != "" {
		t.Fatalf("the follow-up was sent with taskId %q contextId %q, Authorization %q", m.TaskID, m.ContextID, auth)
	}
}

// TestSendURLToNothing: nothing listening is exit 3 (unreachable) with
// one clear line.
func TestSendURLToNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	r := runCLI(t, nil, "send", "--url", url, "hi")
	if r.code != exitUnreachable || !strings.Contains(r.stderr, "a2a send: agent "+url+" unreachable: ") || !strings.Contains(r.stderr, "connection refused") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 || strings.Contains(r.stderr, "panic") {
		t.Fatalf("want one line, got:\n%s", r.stderr)
	}
}

// TestAgentOverBothTransports: with --broker and --http the agent has one
// card listing both interfaces (MQTT first), and one task store: a task
// started over MQTT is continued over HTTP, and a task handed over to
// echo-c1 is completed over HTTP.
func TestAgentOverBothTransports(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	ag, endpoint, base := startHTTPAgent(t, "--broker", b.URL(), "--org", "acme", "--unit", "both", "--id", "echo", "--http", "127.0.0.1:0")
	ag.waitFor(t, "agent acme/both/echo online")
	viaMQTT := func(args ...string) result {
		return runCLI(t, env, append([]string{"send", "--broker", b.URL(), "--org", "acme", "--unit", "both", "--to", "echo", "--json"}, args...)...)
	}
	viaHTTP := func(args ...string) result {
		return runCLI(t, env, append([]string{"send", "--url", base, "--json"}, args...)...)
	}

	card, _, err := a2ahttp.FetchCard(context.Background(), nil, base+a2ahttp.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	want := []a2a.AgentInterface{refagent.MQTTInterface(b.URL()), a2ahttp.JSONRPCInterface(endpoint)}
	if len(card.SupportedInterfaces) != 2 || card.SupportedInterfaces[0] != want[0] || card.SupportedInterfaces[1] != want[1] {
		t.Fatalf("interfaces %+v, want %+v", card.SupportedInterfaces, want)
	}

	r := viaMQTT("ask me")
	first := lastLine(t, r)
	if r.code != 0 || first.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = viaHTTP("--task", first.TaskID, "--context", first.ContextID, "blue")
	if last := lastLine(t, r); r.code != 0 || last.State != "TASK_STATE_COMPLETED" || last.TaskID != first.TaskID {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = viaHTTP("handover please")
	first = lastLine(t, r)
	if r.code != 0 || first.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(r.stdout, "echo cannot hand this task over on this binding") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = viaHTTP("--task", first.TaskID, "--context", first.ContextID, "size M")
	if last := lastLine(t, r); r.code != 0 || last.State != "TASK_STATE_COMPLETED" || last.TaskID != first.TaskID {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	ag.cmd.Process.Signal(syscall.SIGTERM)
	<-ag.done
	if ag.cmd.ProcessState.ExitCode() != 0 || !strings.Contains(ag.output(), "agent acme/both/echo offline") {
		t.Fatalf("exit %d\n%s", ag.cmd.ProcessState.ExitCode(), ag.output())
	}
}
