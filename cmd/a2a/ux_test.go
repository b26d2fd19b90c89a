package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// uxUnit is a unit of its own for each test: cards of other tests' agents
// stay out of the tables and lookups.
func uxUnit(t *testing.T) string {
	return "ux" + strings.ToLower(strings.NewReplacer("/", "", "_", "", "-", "").Replace(t.Name()))[len("test"):]
}

// errorLine is the JSON object --json prints for an error.
type errorLine struct {
	Error struct {
		Token   string `json:"token"`
		Code    int    `json:"code"`
		Message string `json:"message"`
		RPCCode int    `json:"rpcCode"`
	} `json:"error"`
}

// readJSONError returns the last line of stdout as an error object, failing
// the test when it is none.
func readJSONError(t *testing.T, stdout string) errorLine {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var e errorLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil || e.Error.Token == "" {
		t.Fatalf("the last line of stdout is no JSON error object: %q (%v)", stdout, err)
	}
	return e
}

// TestExitCodes: each documented exit status, from a real send (or
// demo) against the embedded broker and the reference agent, with its
// message on stderr, and, with --json, one error object on stdout whose
// token and code say the same; a failure to connect names the broker once.
func TestExitCodes(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo")
	ag.waitFor(t, "online")
	gone := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "gone")
	gone.waitFor(t, "online")
	gone.cmd.Process.Signal(syscall.SIGTERM)
	<-gone.done
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	mq := []string{"--broker", b.URL(), "--org", "acme", "--unit", unit}
	send := func(args ...string) []string { return append(append([]string{"send"}, mq...), args...) }
	cases := []struct {
		name  string
		args  []string
		code  int
		token string
		// stderr must hold want.
		want string
	}{
		{"0: the task completed", send("--to", "echo", "hello"), exitOK, "", ""},
		{"0: the task asks for input", send("--to", "echo", "ask me"), exitOK, "", ""},
		{"1: the task failed", send("--to", "echo", "fail now"), exitFailed, "task_failed", "ended TASK_STATE_FAILED"},
		{"1: the agent answered an error", send("--to", "echo", "--task", "00000000-0000-4000-8000-000000000000", "hi"), exitFailed, "task_not_found", "task_not_found (code -32001)"},
		{"2: an unknown flag", send("--to", "echo", "--nope", "hi"), exitUsage, "usage", "flag provided but not defined: -nope"},
		{"2: a malformed broker URL", []string{"send", "--broker", "mqtt//nohost", "--org", "acme", "--unit", unit, "--to", "echo", "hi"}, exitUsage, "usage", "--broker: broker URL"},
		{"3: no agent of that id", send("--to", "nobody", "hi"), exitUnreachable, "no_agent", "no agent acme/" + unit + "/nobody"},
		{"3: the agent is offline", send("--to", "gone", "hi"), exitUnreachable, "offline", "acme/" + unit + "/gone is offline (it said so when it stopped)"},
		{"3: no reply after every attempt", send("--to", "nobody", "--card-wait", "0", "--attempts", "2", "--reply-timeout", "300ms", "--retry-backoff", "10ms", "hi"),
			exitUnreachable, "unreachable", "acme/" + unit + "/nobody did not answer: responder unreachable after 2 attempts"},
		{"3: a pool that does not answer, with the hint of mosquitto's limit", send("--pool", "nopool", "--attempts", "1", "--reply-timeout", "300ms", "hi"),
			exitUnreachable, "unreachable", "pool acme/" + unit + "/nopool did not answer: responder unreachable after 1 attempts (no reply in time); on mosquitto 2.0 a pool under $a2a/v1 never gets a request"},
		{"3: the broker is unreachable", []string{"send", "--broker", "mqtt://127.0.0.1:1", "--org", "acme", "--unit", unit, "--to", "echo", "hi"},
			exitUnreachable, "unreachable", "a2a send: broker mqtt://127.0.0.1:1 unreachable: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"3: the demo's broker is unreachable", []string{"demo", "--broker", "mqtt://127.0.0.1:1", "--quiet"},
			exitUnreachable, "", "a2a demo: broker mqtt://127.0.0.1:1 unreachable within 5s (--connect-timeout)"},
		{"4: --timeout passed", send("--to", "echo", "--timeout", "1s", "slow 20"), exitTimeout, "timeout", "no answer within 1s (--timeout)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				args := c.args
				if asJSON && args[0] == "send" {
					args = append(append([]string{}, args...), "--json")
				} else if asJSON {
					continue
				}
				r := runCLI(t, env, args...)
				if r.code != c.code || !strings.Contains(r.stderr, c.want) {
					t.Fatalf("json %v: exit %d, want %d with %q on stderr\nstdout %s\nstderr %s", asJSON, r.code, c.code, c.want, r.stdout, r.stderr)
				}
				if c.code != exitOK && strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 && c.code != exitUsage {
					t.Errorf("want one line on stderr, got:\n%s", r.stderr)
				}
				if strings.Contains(c.want, "broker mqtt://127.0.0.1:1 ") && strings.Count(r.stderr, "mqtt://127.0.0.1:1") != 1 {
					t.Errorf("the broker is named more than once: %s", r.stderr)
				}
				if !asJSON || c.code == exitOK {
					continue
				}
				e := readJSONError(t, r.stdout)
				if e.Error.Token != c.token || e.Error.Code != c.code || !strings.Contains(c.want, "flag provided") && !strings.Contains(e.Error.Message, strings.TrimPrefix(c.want, "a2a send: ")) {
					t.Errorf("JSON error %+v, want token %q, code %d, a message with %q", e.Error, c.token, c.code, c.want)
				}
				if c.token == "task_not_found" && e.Error.RPCCode != -32001 {
					t.Errorf("JSON error %+v: want rpcCode -32001", e.Error)
				}
			}
		})
	}
	t.Run("130: Ctrl-C interrupts a send", func(t *testing.T) {
		p := start(t, send("--to", "echo", "--json", "slow 30")...)
		time.Sleep(time.Second)
		p.cmd.Process.Signal(syscall.SIGINT)
		<-p.done
		if code := p.cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(p.output(), "a2a send: interrupted") ||
			!strings.Contains(p.output(), `{"error":{"token":"interrupted","code":130,"message":"interrupted"}}`) {
			t.Fatalf("exit %d, want 130\n%s", code, p.output())
		}
	})
	t.Run("5: queued is TestSendQueuedByAnAsleepAgent's", func(t *testing.T) {
		if exitQueued != 5 {
			t.Fatalf("exitQueued is %d", exitQueued)
		}
	})
	t.Run("the exit statuses are documented", func(t *testing.T) {
		for _, args := range [][]string{{"-h"}, {"send", "-h"}} {
			r := runCLI(t, nil, args...)
			for _, want := range []string{"3    unreachable", "4    timeout", "130  interrupted", "A2A_BROKER"} {
				if !strings.Contains(r.stdout+r.stderr, want) {
					t.Errorf("a2a %s does not say %q", strings.Join(args, " "), want)
				}
			}
		}
	})
}

// TestFlagsAfterTheText: flags may follow the text, "--" ends them, and
// "-v" / "--version" print the version.
func TestFlagsAfterTheText(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo")
	ag.waitFor(t, "online")
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"the text first", []string{"send", "hello", "there", "--to", "echo", "--broker", b.URL(), "--org", "acme", "--unit", unit}, "echo: hello there"},
		{"flags around the text", []string{"send", "--to", "echo", "hello", "--broker", b.URL(), "--json", "--org", "acme", "--unit", unit}, `echo: hello`},
		{"-- ends the flags", []string{"send", "--to", "echo", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--", "--to", "-v"}, "echo: --to -v"},
		{"--version", []string{"--version"}, "a2a 0."},
		{"-v", []string{"-v"}, "a2a 0."},
		{"version --json", []string{"version", "--json"}, `"a2a":"1.0"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, env, c.args...)
			if r.code != 0 || !strings.Contains(r.stdout, c.want) {
				t.Fatalf("exit %d, want 0 and %q\n%s%s", r.code, c.want, r.stdout, r.stderr)
			}
		})
	}
}

// TestEnvironmentPrecedence: a flag over its environment variable, the
// variable over the default; the default broker is mqtt://localhost:1883.
func TestEnvironmentPrecedence(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo")
	ag.waitFor(t, "online")
	state := "XDG_STATE_HOME=" + t.TempDir()
	good := []string{state, envBroker + "=" + b.URL(), envOrg + "=acme", envUnit + "=" + unit}
	bad := []string{state, envBroker + "=mqtt://127.0.0.1:1", envOrg + "=nope", envUnit + "=nope"}
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"the variables alone", good, []string{"send", "--to", "echo", "hi"}, 0, "echo: hi"},
		{"flags over the variables", bad, []string{"send", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--to", "echo", "hi"}, 0, "echo: hi"},
		{"$A2A_BROKER over the default", bad, []string{"send", "--org", "acme", "--unit", unit, "--to", "echo", "hi"}, exitUnreachable, "broker mqtt://127.0.0.1:1 unreachable"},
		{"a malformed $A2A_BROKER is a usage error", []string{state, envBroker + "=http://x"}, []string{"send", "--org", "acme", "--unit", unit, "--to", "echo", "hi"},
			exitUsage, "$A2A_BROKER: broker URL \"http://x\""},
		{"$A2A_ORG and $A2A_UNIT for watch", good, []string{"watch", "--once", "--json"}, 0, `"agent":"echo"`},
		{"$A2A_URL without --broker, --to or --pool", []string{state, envURL + "=http://127.0.0.1:1"}, []string{"send", "hi"}, exitUnreachable, "agent http://127.0.0.1:1 unreachable"},
		{"no org anywhere", []string{state, envOrg + "="}, []string{"send", "--to", "echo", "hi"}, exitUsage, "--org is required (or $A2A_ORG)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, c.env, c.args...)
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", r.code, c.code, c.want, r.stdout, r.stderr)
			}
		})
	}
	t.Run("the default broker is mqtt://localhost:1883", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:1883")
		if err != nil {
			t.Skipf("127.0.0.1:1883 is taken on this machine (%v): the default broker cannot be shown", err)
		}
		ln.Close()
		br := start(t, "broker")
		br.waitFor(t, "listening on mqtt://127.0.0.1:1883")
		env := []string{state, envBroker + "=", envOrg + "=acme", envUnit + "=" + unit}
		def := startEnv(t, env, "agent", "--id", "local")
		def.waitFor(t, "online")
		r := runCLI(t, env, "send", "--to", "local", "hello default")
		if r.code != 0 || !strings.Contains(r.stdout, "echo: hello default") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestSendFromStandardInput: "-" reads the text from standard input: a
// text longer than one argument may be (128 KiB on Linux) goes through,
// and one over the bound stops with a clear error, nothing sent.
func TestSendFromStandardInput(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo")
	ag.waitFor(t, "online")
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	big := strings.Repeat("0123456789abcdef", 200<<10/16) + "END"
	cases := []struct {
		name  string
		stdin string
		code  int
		want  string
	}{
		{"a line", "hello from stdin\n", 0, "echo: hello from stdin"},
		{"200 KiB, over the 128 KiB of an argument", big, 0, "END (earlier tasks"},
		{"over 4 MiB", strings.Repeat("x", maxTextBytes+1), exitFailed, "standard input: the text is longer than 4194304 bytes"},
		{"nothing", "", exitUsage, "standard input is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runWith(t, env, strings.NewReader(c.stdin), "send", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--to", "echo", "-")
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
				t.Fatalf("exit %d, want %d and %q\nstdout %.300s\nstderr %s", r.code, c.code, c.want, r.stdout, r.stderr)
			}
		})
	}
}

// probeAgent is an agent of the test's own over MQTT: "parts" completes
// with a line per part received (kind, name, media type, size), "auth"
// asks for authentication, "reject" rejects.
func probeAgent(t *testing.T, brokerURL, unit, id string) chan []a2a.Part {
	t.Helper()
	got := make(chan []a2a.Part, 4)
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
		switch strings.TrimSpace(turn.Text()) {
		case "auth":
			return turn.AskAuth(ctx, "sign in first")
		case "reject":
			return turn.Reject(ctx, "not today")
		}
		got <- turn.Message.Parts
		var lines []string
		for _, p := range turn.Message.Parts {
			switch c := p.Content.(type) {
			case a2a.PartRaw:
				lines = append(lines, fmt.Sprintf("file %s %s %d bytes", p.Filename, p.MediaType, len(c)))
			case a2a.PartText:
				lines = append(lines, fmt.Sprintf("text %d bytes", len(c)))
			}
		}
		return turn.Complete(ctx, strings.Join(lines, "; "))
	}))
	t.Cleanup(func() { srv.Close(context.Background()) })
	yes := true
	card := &a2a.AgentCard{Name: id, Description: "records parts", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2amqtt.Interface(brokerURL)},
		Capabilities:        &a2a.AgentCapabilities{Streaming: &yes},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "parts", Name: "Parts", Description: "records parts", Tags: []string{"test"}}}}
	ag, err := a2amqtt.NewAgent(t.Context(), a2amqtt.AgentConfig{Connection: a2amqtt.Connection{Broker: brokerURL}, Org: "acme", Unit: unit, ID: id, Card: card, Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ag.Close(context.Background()) })
	return got
}

// TestSendFile: --file sends the file's bytes as a file part with its
// name and the media type of its extension, beside the text; a file over
// the bound is refused before anything is sent.
func TestSendFile(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	got := probeAgent(t, b.URL(), unit, "files")
	dir := t.TempDir()
	png := make([]byte, 100<<10)
	rand.Read(png)
	pngPath := filepath.Join(dir, "chart.png")
	os.WriteFile(pngPath, png, 0o600)
	oddPath := writeFile(t, dir, "notes.zzunknown", "plain words")
	bigPath := filepath.Join(dir, "big.bin")
	os.WriteFile(bigPath, make([]byte, maxFileBytes+1), 0o600)
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	send := func(args ...string) result {
		return runCLI(t, env, append([]string{"send", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--to", "files"}, args...)...)
	}
	t.Run("a file and a text", func(t *testing.T) {
		r := send("--file", pngPath, "see the chart")
		if r.code != 0 || !strings.Contains(r.stdout, "text 13 bytes; file chart.png image/png 102400 bytes") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		parts := <-got
		if raw, ok := parts[1].Content.(a2a.PartRaw); !ok || !bytes.Equal(raw, png) {
			t.Fatalf("the agent did not get the file's bytes")
		}
	})
	t.Run("a file alone, of an unknown extension", func(t *testing.T) {
		r := send("--file", oddPath)
		if r.code != 0 || !strings.Contains(r.stdout, "file notes.zzunknown application/octet-stream 11 bytes") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		<-got
	})
	t.Run("a file over the bound", func(t *testing.T) {
		r := send("--file", bigPath, "too big")
		if r.code != exitFailed || !strings.Contains(r.stderr, "--file "+bigPath+": the files of a send are at most 3145728 bytes") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("a file that is not there", func(t *testing.T) {
		r := send("--file", filepath.Join(dir, "nope"), "hi")
		if r.code != exitFailed || !strings.Contains(r.stderr, "--file: open "+filepath.Join(dir, "nope")) {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestFollowUps: the follow-up hint is printed for a task waiting for
// the requester (INPUT_REQUIRED, AUTH_REQUIRED) only; --task alone, with no
// --context, resumes the task (the agent takes its context).
func TestFollowUps(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo")
	ag.waitFor(t, "online")
	probeAgent(t, b.URL(), unit, "probe")
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	send := func(to string, args ...string) result {
		return runCLI(t, env, append([]string{"send", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--to", to}, args...)...)
	}
	cases := []struct {
		name, to, text string
		code           int
		followUp       bool
		next           bool
	}{
		{"INPUT_REQUIRED", "echo", "ask me", 0, true, false},
		{"AUTH_REQUIRED", "probe", "auth", 0, true, false},
		{"COMPLETED", "echo", "hello", 0, false, true},
		{"FAILED", "echo", "fail now", exitFailed, false, false},
		{"REJECTED", "probe", "reject", exitFailed, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := send(c.to, c.text)
			if r.code != c.code || !strings.Contains(r.stdout, "ended       TASK_STATE_"+c.name) ||
				strings.Contains(r.stdout, "follow up   --task") != c.followUp || strings.Contains(r.stdout, "next turn   --context") != c.next {
				t.Fatalf("exit %d, want %d; follow-up hint %v, next-turn hint %v\n%s%s", r.code, c.code, c.followUp, c.next, r.stdout, r.stderr)
			}
		})
	}
	t.Run("--task without --context resumes the task", func(t *testing.T) {
		first := lastLine(t, send("echo", "--json", "ask me"))
		r := send("echo", "--json", "--task", first.TaskID, "blue")
		last := lastLine(t, r)
		if r.code != 0 || last.State != "TASK_STATE_COMPLETED" || last.TaskID != first.TaskID || last.ContextID != first.ContextID || !strings.Contains(r.stdout, "answer received: blue") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestWatchOnceAndJSON: watch --once prints the table after the retained
// cards and exits; --json prints one JSON object per agent (--once) or per
// change.
func TestWatchOnceAndJSON(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	ag := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo")
	ag.waitFor(t, "online")
	watch := []string{"watch", "--broker", b.URL(), "--org", "acme", "--unit", unit}
	t.Run("--once prints the table and exits", func(t *testing.T) {
		r := runCLI(t, nil, append(watch, "--once")...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "AGENT ") || !regexpMatch(`(?m)^echo +online +agent `, r.stdout) || strings.Contains(r.stdout, "\x1b[") {
			t.Fatalf("exit %d\n%q%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("--once --json prints one object per agent", func(t *testing.T) {
		r := runCLI(t, nil, append(watch, "--once", "--json")...)
		var e struct{ Org, Unit, Agent, Status, Source, Card string }
		if r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 || json.Unmarshal([]byte(r.stdout), &e) != nil ||
			e.Org != "acme" || e.Unit != unit || e.Agent != "echo" || e.Status != "online" || e.Source != "agent" || e.Card != "echo" {
			t.Fatalf("exit %d, %+v\n%s%s", r.code, e, r.stdout, r.stderr)
		}
	})
	t.Run("--json prints one object per change", func(t *testing.T) {
		w := start(t, append(watch, "--json")...)
		w.waitFor(t, `"agent":"echo","status":"online"`)
		second := start(t, "agent", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "second")
		w.waitFor(t, `"agent":"second","status":"online"`)
		second.cmd.Process.Signal(syscall.SIGTERM)
		w.waitFor(t, `"agent":"second","status":"offline"`)
		for _, l := range strings.Split(strings.TrimSpace(w.output()), "\n") {
			if !json.Valid([]byte(l)) {
				t.Fatalf("not a JSON line: %q", l)
			}
		}
	})
	t.Run("--json error on an unreachable broker", func(t *testing.T) {
		r := runCLI(t, nil, "watch", "--broker", "mqtt://127.0.0.1:1", "--org", "acme", "--unit", unit, "--once", "--json", "--connect-timeout", "1s")
		if e := readJSONError(t, r.stdout); r.code != exitUnreachable || e.Error.Token != "unreachable" || e.Error.Code != exitUnreachable {
			t.Fatalf("exit %d, %+v\n%s", r.code, e, r.stderr)
		}
	})
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// TestMessagesDoNotDoubleTheirPrefix: "a2a broker: broker: ..." was.
func TestMessagesDoNotDoubleTheirPrefix(t *testing.T) {
	r := runCLI(t, nil, "broker", "--listen", "256.0.0.1:99999")
	if r.code != exitFailed || !strings.HasPrefix(r.stderr, "a2a broker: ") || strings.Contains(r.stderr, "a2a broker: broker:") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
