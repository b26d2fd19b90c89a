package main

import (
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestBrokerLossIsReported: while the embedded broker is stopped, a2a agent
// says "broker lost", a2a watch --json shows every agent unknown, and a
// watch on a pipe says so in one line; once the broker is back each says
// "broker back", and the watch shows the agents as their cards say.
func TestBrokerLossIsReported(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", "lost", "--id", "echo")
	ag.waitFor(t, "online")
	wj := start(t, "watch", "--broker", b.URL(), "--org", "acme", "--unit", "lost", "--json")
	wj.waitFor(t, `"agent":"echo","status":"online"`)
	wl := start(t, "watch", "--broker", b.URL(), "--org", "acme", "--unit", "lost")
	wl.waitFor(t, "agent=echo status=online")

	b.Stop()
	steps := []struct {
		name string
		p    *process
		want []string
	}{
		{"the agent says the broker is lost", ag, []string{"broker lost: " + b.URL()}},
		{"watch --json: the loss, then every agent unknown", wj, []string{`{"broker":"` + b.URL() + `","connection":"lost"`,
			`"agent":"echo","status":"unknown","source":"none"`, `"brokerLost":true`}},
		{"watch on a pipe: one line", wl, []string{"broker lost: " + b.URL(), "every agent unknown until it is back"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			for _, w := range s.want {
				s.p.waitFor(t, w)
			}
		})
	}
	b.Restart()
	back := []struct {
		name string
		p    *process
		want string
	}{
		{"the agent says the broker is back", ag, "broker back: " + b.URL()},
		{"watch --json: back", wj, `{"broker":"` + b.URL() + `","connection":"back"}`},
		{"watch on a pipe: back", wl, "broker back: " + b.URL()},
	}
	for _, s := range back {
		t.Run(s.name, func(t *testing.T) {
			s.p.waitFor(t, s.want)
		})
	}
	t.Run("watch --json: echo online again after the return", func(t *testing.T) {
		wj.waitAfter(t, `"connection":"back"`, `"agent":"echo","status":"online"`)
	})
	for _, p := range []*process{ag, wl} {
		if n := strings.Count(p.output(), "broker lost:"); n != 1 {
			t.Errorf("%d broker lost lines, want 1:\n%s", n, p.output())
		}
	}
}

// TestAgentLogsEachRequest: the agent logs one info line per request, with
// the method, the task, the state and the duration, and never the bearer
// token.
func TestAgentLogsEachRequest(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	dir := t.TempDir()
	const token = "s3cret-request-token"
	tokens := writeFile(t, dir, "tokens", token+" alice\n")
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", "logged", "--id", "echo", "--tokens", tokens)
	ag.waitFor(t, "online")
	env := []string{"XDG_STATE_HOME=" + dir, envToken + "=" + token}
	send := func(args ...string) result {
		return runCLI(t, env, append([]string{"send", "--broker", b.URL(), "--org", "acme", "--unit", "logged", "--to", "echo", "--json"}, args...)...)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"a message that completes", []string{"hello"}, []string{"msg=request agent=echo method=SendMessage task=", "state=TASK_STATE_COMPLETED duration="}},
		{"a message that asks for input", []string{"ask me"}, []string{"state=TASK_STATE_INPUT_REQUIRED"}},
		{"a stream", []string{"--stream", "stream me"}, []string{"method=SendStreamingMessage task="}},
		{"GetTask of an unknown task: its error", []string{"--get", "00000000-0000-4000-8000-000000000000"},
			[]string{"method=GetTask task=00000000-0000-4000-8000-000000000000 error=task_not_found"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			send(tc.args...)
			for _, w := range tc.want {
				ag.waitFor(t, w)
			}
		})
	}
	if strings.Contains(ag.output(), token) {
		t.Fatalf("the token is in the agent's log:\n%s", ag.output())
	}
}

// waitAfter waits until the output holds s after the first mark.
func (p *process) waitAfter(t *testing.T, mark, s string) {
	t.Helper()
	p.waitFor(t, mark)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := p.output()
		if strings.Contains(out[strings.Index(out, mark):], s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %q in output:\n%s", s, mark, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
