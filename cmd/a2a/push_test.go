package main

import (
	"context"
	"encoding/json"
	"flag"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"

	a2ahttp "github.com/a2abind/a2abind/transport/http"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// hookRE finds the webhook URL in a2a webhook's start line.
var hookRE = regexp.MustCompile(`give a2a send --webhook (http://\S+)`)

// taskRE finds the task id in a2a send's first line.
var taskRE = regexp.MustCompile(`(?m)^task        (\S+)  context`)

// startWebhook runs a2a webhook on a free loopback port and returns it with
// its URL (from its start line, or its listening object with --json).
func startWebhook(t *testing.T, args ...string) (*process, string) {
	t.Helper()
	p := start(t, append([]string{"webhook", "--listen", "127.0.0.1:0"}, args...)...)
	if wantsJSON(args) {
		p.waitFor(t, `"event":"listening"`)
		var l struct{ URL string }
		if err := json.Unmarshal([]byte(strings.Split(p.output(), "\n")[0]), &l); err != nil || l.URL == "" {
			t.Fatalf("no URL in:\n%s", p.output())
		}
		return p, l.URL
	}
	p.waitFor(t, "give a2a send --webhook ")
	m := hookRE.FindStringSubmatch(p.output())
	if m == nil {
		t.Fatalf("no URL in:\n%s", p.output())
	}
	return p, m[1]
}

// sentTask is the task id a2a send printed.
func sentTask(t *testing.T, r result) string {
	t.Helper()
	m := taskRE.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no task in:\n%s%s", r.stdout, r.stderr)
	}
	return m[1]
}

// TestWebhookReceivesPushes: a2a send --webhook to a2a agent --http (on
// loopback, so loopback webhooks are taken) has the agent push the task's
// updates to a2a webhook, which prints them in order; send prints the
// agent's delivery report. A push with another token than the webhook's
// --token is refused 403, and the agent reports the webhook dead.
func TestWebhookReceivesPushes(t *testing.T) {
	ag, _, base := startHTTPAgent(t, "--http", "127.0.0.1:0", "--id", "echo")
	if !strings.Contains(ag.output(), "agent echo sends push notifications to https webhooks and webhooks on loopback addresses") {
		t.Fatalf("start lines:\n%s", ag.output())
	}
	card, _, err := a2ahttp.FetchCard(context.Background(), nil, base+a2ahttp.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	if p := card.Capabilities.PushNotifications; p == nil || !*p {
		t.Fatalf("the card does not declare pushNotifications: %+v", card.Capabilities)
	}
	hook, url := startWebhook(t, "--token", "s3cret")

	t.Run("pushed, printed, delivered", func(t *testing.T) {
		r := runCLI(t, nil, "send", "--url", base, "--webhook", url, "--webhook-token", "s3cret", "hello push")
		if r.code != 0 || !strings.Contains(r.stdout, "push        "+url+": delivered\n") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		id := sentTask(t, r)
		hook.waitFor(t, "task "+id+"  status    TASK_STATE_COMPLETED\n")
		var got []string
		for _, l := range strings.Split(hook.output(), "\n") {
			if strings.HasPrefix(l, "task "+id+"  ") {
				got = append(got, strings.TrimPrefix(l, "task "+id+"  "))
			}
		}
		want := []string{
			"status    TASK_STATE_WORKING: working on it",
			"artifact  result: echo: hello push",
			"artifact+ result:  (earlier tasks in this context: 0)",
			"status    TASK_STATE_COMPLETED",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("the webhook printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if strings.Contains(hook.output()+r.stdout+r.stderr, "s3cret") {
			t.Fatal("the token was printed")
		}
	})
	t.Run("another token is refused 403: dead", func(t *testing.T) {
		r := runCLI(t, nil, "send", "--url", base, "--json", "--webhook", url, "--webhook-token", "guess", "hello again")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var push struct {
			Push struct {
				URL, State string
				Status     int
			}
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-2]), &push); err != nil {
			t.Fatal(err)
		}
		if push.Push.URL != url || push.Push.State != "dead" || push.Push.Status != 403 {
			t.Fatalf("report %+v\n%s", push, r.stdout)
		}
		if last := lastLine(t, r); last.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("summary %+v", last)
		}
		hook.waitFor(t, "a2a webhook: refused a push for task "+lastLine(t, r).TaskID+": not the --token (answered 403)")
		if strings.Contains(hook.output(), "guess") {
			t.Fatal("the token was printed")
		}
	})
	t.Run("a streamed send, a random token, a webhook without --token, --json", func(t *testing.T) {
		open, openURL := startWebhook(t, "--json")
		r := runCLI(t, nil, "send", "--url", base, "--stream", "--webhook", openURL, "streamed")
		if r.code != 0 || !strings.Contains(r.stdout, "push        "+openURL+": delivered\n") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		id := sentTask(t, r)
		open.waitFor(t, `"state":"TASK_STATE_COMPLETED"`)
		var kinds []string
		for _, l := range strings.Split(strings.TrimSpace(open.output()), "\n")[1:] {
			var p struct{ TaskID, Kind, State string }
			if err := json.Unmarshal([]byte(l), &p); err != nil {
				t.Fatalf("not JSON: %q", l)
			}
			if p.TaskID != id {
				t.Fatalf("a push for task %s, want %s", p.TaskID, id)
			}
			kinds = append(kinds, p.Kind+":"+p.State)
		}
		if got := strings.Join(kinds, " "); got != "status:TASK_STATE_WORKING artifact: artifact+: status:TASK_STATE_COMPLETED" {
			t.Fatalf("pushes %s", got)
		}
	})
	t.Run("SIGINT stops the webhook", func(t *testing.T) {
		hook.cmd.Process.Signal(syscall.SIGINT)
		<-hook.done
		if hook.cmd.ProcessState.ExitCode() != 0 || !strings.HasSuffix(hook.output(), "webhook stopped\n") {
			t.Fatalf("exit %d\n%s", hook.cmd.ProcessState.ExitCode(), hook.output())
		}
	})
}

// TestPushOff: a2a agent --push=false declares no push notifications and
// refuses a send carrying a webhook, which is not run.
func TestPushOff(t *testing.T) {
	ag, _, base := startHTTPAgent(t, "--http", "127.0.0.1:0", "--id", "echo", "--push=false")
	if strings.Contains(ag.output(), "push notifications") {
		t.Fatalf("start lines:\n%s", ag.output())
	}
	card, _, err := a2ahttp.FetchCard(context.Background(), nil, base+a2ahttp.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	if p := card.Capabilities.PushNotifications; p != nil && *p {
		t.Fatal("the card declares pushNotifications")
	}
	_, url := startWebhook(t)
	r := runCLI(t, nil, "send", "--url", base, "--webhook", url, "hello")
	if r.code != 1 || !strings.Contains(r.stderr, "push_notification_not_supported") || r.stdout != "" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestPushOverMQTT: over MQTT alone push notifications are off unless
// --push, and a webhook on loopback is taken only with
// --allow-loopback-webhooks (no HTTP listener on loopback vouches for it).
func TestPushOverMQTT(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}
	for _, a := range []struct{ id, flags string }{{"plain", ""}, {"strict", "--push"}, {"local", "--push --allow-loopback-webhooks"}} {
		ag := start(t, append([]string{"agent", "--broker", b.URL(), "--org", "acme", "--unit", "push", "--id", a.id}, strings.Fields(a.flags)...)...)
		ag.waitFor(t, "agent acme/push/"+a.id+" online")
	}
	hook, url := startWebhook(t)
	send := func(to string) result {
		return runCLI(t, env, "send", "--broker", b.URL(), "--org", "acme", "--unit", "push", "--to", to, "--webhook", url, "over mqtt")
	}
	if r := send("plain"); r.code != 1 || !strings.Contains(r.stderr, "push_notification_not_supported") {
		t.Fatalf("without --push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := send("strict"); r.code != 1 || !strings.Contains(r.stderr, "invalid_params") || !strings.Contains(r.stderr, "https") {
		t.Fatalf("--push, a loopback webhook: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := send("local")
	if r.code != 0 || !strings.Contains(r.stdout, "push        "+url+": delivered\n") {
		t.Fatalf("--push --allow-loopback-webhooks: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	hook.waitFor(t, "task "+sentTask(t, r)+"  status    TASK_STATE_COMPLETED\n")
}

// TestLoopbackRule: loopback webhooks follow the agent's HTTP listener
// (a loopback address takes them, any other does not) unless
// --allow-loopback-webhooks; push notifications are on with --http unless
// --push=false, off without it unless --push.
func TestLoopbackRule(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{{"127.0.0.1:80", true}, {"127.9.9.9:80", true}, {"[::1]:80", true}, {"0.0.0.0:80", false}, {"[::]:80", false}, {"192.0.2.7:80", false}} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := onLoopback(a); got != tc.want {
			t.Errorf("onLoopback(%s) = %v", tc.addr, got)
		}
	}
	for _, tc := range []struct {
		args     []string
		http     string
		want     bool
		usageErr bool
	}{
		{nil, "127.0.0.1:0", true, false},
		{[]string{"--push=false"}, "127.0.0.1:0", false, false},
		{nil, "", false, false},
		{[]string{"--push"}, "", true, false},
		{[]string{"--push", "--allow-loopback-webhooks"}, "", true, false},
		{[]string{"--allow-loopback-webhooks"}, "", false, true},
		{[]string{"--push=false", "--allow-loopback-webhooks"}, "127.0.0.1:0", false, true},
	} {
		fs := flag.NewFlagSet("agent", flag.ContinueOnError)
		push := fs.Bool("push", false, "")
		allow := fs.Bool("allow-loopback-webhooks", false, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := pushFlag(fs, *push, *allow, tc.http)
		if (err != nil) != tc.usageErr || got != tc.want {
			t.Errorf("%v with --http %q: push %v, err %v", tc.args, tc.http, got, err)
		}
	}
}

// TestPushUsageErrors: the push flags' usage errors are exit 2.
func TestPushUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"send", "--url", "http://127.0.0.1:1", "--webhook-token", "t", "hi"}, "--webhook-token goes with --webhook"},
		{[]string{"send", "--url", "http://127.0.0.1:1", "--webhook", "http://127.0.0.1:2/", "--get", "x"}, "--get reads a task: it takes no --webhook"},
		{[]string{"send", "--url", "http://127.0.0.1:1", "--webhook", "ftp://h/x", "hi"}, "--webhook: \"ftp://h/x\" is not an http:// or https:// URL"},
		{[]string{"send", "--url", "http://127.0.0.1:1", "--webhook", "https://u:p@h/x", "hi"}, "--webhook: the URL holds credentials"},
		{[]string{"agent", "--http", "127.0.0.1:0", "--id", "x", "--push=false", "--allow-loopback-webhooks"}, "--allow-loopback-webhooks goes with push notifications"},
		{[]string{"agent", "--broker", "mqtt://127.0.0.1:1", "--org", "o", "--unit", "u", "--id", "x", "--allow-loopback-webhooks"}, "--allow-loopback-webhooks goes with push notifications"},
		{[]string{"webhook"}, "--listen is required"},
		{[]string{"webhook", "--listen", "127.0.0.1:0", "extra"}, "unexpected argument"},
	} {
		r := runCLI(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if r := runCLI(t, nil, "webhook", "-h"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "example:") || !strings.Contains(r.stdout+r.stderr, "a2a webhook") {
		t.Fatalf("webhook -h: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
