package main

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestTaskCommands: a2a card, get, list, resubscribe, cancel and chat,
// run against one reference agent served over the embedded broker and
// over HTTP on loopback, through each transport.
func TestTaskCommands(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	_, _, base := startHTTPAgent(t, "--broker", b.URL(), "--org", "acme", "--unit", "tasks", "--id", "echo", "--http", "127.0.0.1:0")
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), envURL + "=", envBroker + "=", envOrg + "=", envUnit + "=", envToken + "="}
	transports := []struct {
		name string
		to   []string
	}{
		{"mqtt", []string{"--broker", b.URL(), "--org", "acme", "--unit", "tasks", "--to", "echo"}},
		{"http", []string{"--url", base}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cmd := func(name string, args ...string) result {
				return runCLI(t, env, append(append([]string{name}, args...), tr.to...)...)
			}
			asked := lastLine(t, cmd("send", "--json", "ask me"))
			if asked.State != "TASK_STATE_INPUT_REQUIRED" {
				t.Fatalf("send ask me: %+v", asked)
			}
			cases := []struct {
				name   string
				cmd    string
				args   []string
				code   int
				stdout []string
				stderr string
			}{
				{"get: the task asking for input", "get", []string{asked.TaskID}, 0,
					[]string{"task        " + asked.TaskID, "message     echo asks: which option do you want?", "state       TASK_STATE_INPUT_REQUIRED"}, ""},
				{"get --json: the task, then its state", "get", []string{asked.TaskID, "--json"}, 0,
					[]string{`"state":"TASK_STATE_INPUT_REQUIRED","taskId":"` + asked.TaskID + `"`}, ""},
				{"get of an unknown task: task_not_found as JSON, exit 1", "get", []string{"00000000-0000-4000-8000-000000000000", "--json"}, 1,
					[]string{`{"error":{"token":"task_not_found","code":1,`}, "task_not_found"},
				{"list --state input-required: the task", "list", []string{"--state", "input-required"}, 0,
					[]string{"TASK  ", asked.TaskID + "  " + asked.ContextID + "  INPUT_REQUIRED"}, ""},
				{"list --context --json: the agent's ListTasksResponse", "list", []string{"--context", asked.ContextID, "--json"}, 0,
					[]string{`{"tasks":[{"id":"` + asked.TaskID + `"`}, ""},
				{"list --state of no state: usage", "list", []string{"--state", "sleeping"}, 2, nil, `--state: "sleeping" is not a task state`},
				{"resubscribe: the task as it is, waiting for input", "resubscribe", []string{asked.TaskID}, 0,
					[]string{"TASK_STATE_INPUT_REQUIRED"}, ""},
				{"cancel: CANCELED", "cancel", []string{asked.TaskID}, 0, []string{"state       TASK_STATE_CANCELED"}, ""},
				{"resubscribe to a task that ended: unsupported_operation, exit 1", "resubscribe", []string{asked.TaskID, "--json"}, 1,
					[]string{`"token":"unsupported_operation"`}, "terminal state"},
				{"get without TASK: usage", "get", nil, 2, nil, "the TASK id is missing"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					r := cmd(tc.cmd, tc.args...)
					if r.code != tc.code {
						t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
					}
					for _, w := range tc.stdout {
						if !strings.Contains(r.stdout, w) {
							t.Fatalf("no %q in stdout:\n%s%s", w, r.stdout, r.stderr)
						}
					}
					if !strings.Contains(r.stderr, tc.stderr) {
						t.Fatalf("no %q in stderr:\n%s", tc.stderr, r.stderr)
					}
				})
			}
			t.Run("resubscribe to a running task: its events until COMPLETED", func(t *testing.T) {
				sender := startEnv(t, env, append([]string{"send", "--json", "--stream", "slow 2"}, tr.to...)...)
				sender.waitFor(t, `{"item":{"task":{"id":"`)
				id := regexp.MustCompile(`\{"item":\{"task":\{"id":"([^"]+)"`).FindStringSubmatch(sender.output())[1]
				r := cmd("resubscribe", id)
				if r.code != 0 || !strings.Contains(r.stdout, "echo: slow 2") || !strings.HasSuffix(r.stdout, "state       TASK_STATE_COMPLETED\n") {
					t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
			})
			t.Run("chat through a pipe: turns in one context, the question, the answer", func(t *testing.T) {
				r := runWith(t, env, strings.NewReader("hello\n\nask me\nblue\nfail\n/quit\nnot sent\n"), append([]string{"chat"}, tr.to...)...)
				want := []string{
					"artifact    echo: hello (earlier tasks in this context: 0)",
					"question    echo asks: which option do you want?",
					"artifact    answer received: blue (earlier tasks in this context: 1)",
					"TASK_STATE_FAILED: echo failed as asked",
				}
				if r.code != 0 {
					t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				last := 0
				for _, w := range want {
					i := strings.Index(r.stdout[last:], w)
					if i < 0 {
						t.Fatalf("no %q (in order) in:\n%s", w, r.stdout)
					}
					last += i
				}
				if strings.Contains(r.stdout, "not sent") || strings.Count(r.stdout, "done        task ") != 2 {
					t.Fatalf("/quit did not end the chat, or a turn is missing:\n%s", r.stdout)
				}
			})
			t.Run("chat --json: each turn's task and state; end of input ends it", func(t *testing.T) {
				r := runWith(t, env, strings.NewReader("ask me\nred"), append([]string{"chat", "--json"}, tr.to...)...)
				lines := jsonLines(t, r.stdout)
				if r.code != 0 || len(lines) != 4 || lines[1].State != "TASK_STATE_INPUT_REQUIRED" || lines[3].State != "TASK_STATE_COMPLETED" || lines[1].TaskID != lines[3].TaskID {
					t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
			})
			t.Run("card: printed and valid", func(t *testing.T) {
				args := tr.to
				if tr.name == "mqtt" {
					args = []string{"echo", "--broker", b.URL(), "--org", "acme", "--unit", "tasks"}
				}
				r := runCLI(t, env, append([]string{"card"}, args...)...)
				if r.code != 0 || !strings.Contains(r.stdout, "name          echo\n") || !strings.Contains(r.stdout, "interface     MQTTv5+JSONRPCv2 1.0 "+b.URL()) ||
					!strings.Contains(r.stdout, "valid         the card passes the A2A v1.0 AgentCard schema") {
					t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				r = runCLI(t, env, append([]string{"card", "--json"}, args...)...)
				if err := a2a.ValidateAgentCardJSON([]byte(strings.TrimSpace(r.stdout))); r.code != 0 || err != nil || strings.Count(r.stdout, "\n") != 1 {
					t.Fatalf("exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
				}
			})
		})
	}
	cards := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no agent of that id: exit 3 at once", []string{"nobody", "--broker", b.URL(), "--org", "acme", "--unit", "tasks", "--card-wait", "300ms", "--json"}, 3,
			`"token":"no_agent"`, "no agent acme/tasks/nobody"},
		{"a URL without a card: exit 1", []string{"--url", base + "/nothing"}, 1, "", "no agent card at " + base + "/nothing/.well-known/agent-card.json: 404"},
		{"an ID and --url: usage", []string{"echo", "--url", base}, 2, "", "give either an agent ID (MQTT) or --url (HTTP)"},
		{"an invalid retained card: printed, then its faults, exit 1", []string{"broken", "--broker", b.URL(), "--org", "acme", "--unit", "tasks"}, 1,
			"invalid       ", "not a valid A2A v1.0 AgentCard"},
	}
	publishRetained(t, b.Addr(), "acme", "tasks", "broken", []byte(`{"name":"broken","description":"no interfaces, no version"}`))
	for _, tc := range cards {
		t.Run("card: "+tc.name, func(t *testing.T) {
			r := runCLI(t, env, append([]string{"card"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
		})
	}
}

// publishRetained publishes payload as the retained card of agent
// org/unit/id.
func publishRetained(t *testing.T, addr, org, unit, id string, payload []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn})
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: org + "/" + unit + "/" + id, CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(&paho.Disconnect{})
	topic, err := mqttbind.DiscoveryTopic(org, unit, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: payload}); err != nil {
		t.Fatal(err)
	}
}
