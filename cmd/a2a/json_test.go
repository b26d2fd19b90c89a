package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// The --json output of agent, broker, demo, db, passwd and webhook, each
// line decoded strictly into the shape its -h documents.

// decodeStrict decodes line into v, failing the test on a member v does
// not document, on trailing data, or on a line that is not JSON.
func decodeStrict(t *testing.T, line string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if dec.More() {
		t.Fatalf("%q: more than one object on the line", line)
	}
}

// decodeLines decodes every line of out strictly as a T.
func decodeLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var all []T
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var v T
		decodeStrict(t, l, &v)
		all = append(all, v)
	}
	return all
}

// eventOf is the "event" member of a line.
func eventOf(t *testing.T, line string) string {
	t.Helper()
	var e struct{ Event string }
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return e.Event
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startStdout is start with stdout alone in the process's output, stderr
// kept apart in the returned buffer.
func startStdout(t *testing.T, args ...string) (*process, *lockedBuffer) {
	t.Helper()
	p := &process{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	stderr := new(lockedBuffer)
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	go func() { p.cmd.Wait(); pw.Close(); <-scanned; close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p, stderr
}

// stop sends sig to p and waits for its end, failing the test unless it
// exits 0.
func (p *process) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after %v\n%s", code, sig, p.output())
	}
}

// TestJSONErrorsOfEveryCommand: with --json, a failure of each command
// that had none is one error object on stdout, and nothing else, whose
// token and code are the exit status's; the message is on stderr too.
func TestJSONErrorsOfEveryCommand(t *testing.T) {
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	if r := runCLI(t, nil, "passwd", "-b", passwd, "acme/lab/echo", "pw"); r.code != 0 {
		t.Fatalf("passwd: exit %d\n%s", r.code, r.stderr)
	}
	noDSN := []string{envDSN + "="}
	cases := []struct {
		name  string
		env   []string
		args  []string
		code  int
		token string
		msg   string
	}{
		{"agent: an unknown flag", nil, []string{"agent", "--json", "--nope"}, exitUsage, "usage", "flag provided but not defined: -nope"},
		{"agent: --id missing", nil, []string{"agent", "--org", "o", "--unit", "u", "--json"}, exitUsage, "usage", "--id is required"},
		{"agent: an HTTP address it cannot listen on", nil, []string{"agent", "--http", "256.0.0.1:99999", "--id", "x", "--json"}, exitFailed, "failed", "--http: "},
		{"broker: an argument", nil, []string{"broker", "extra", "--json"}, exitUsage, "usage", `unexpected argument "extra"`},
		{"broker: an address it cannot listen on", nil, []string{"broker", "--listen", "256.0.0.1:99999", "--json"}, exitFailed, "failed", "listen tcp: "},
		{"demo: the broker unreachable", nil, []string{"demo", "--json", "--broker", "mqtt://127.0.0.1:1", "--connect-timeout", "200ms"}, exitUnreachable, "unreachable",
			"broker mqtt://127.0.0.1:1 unreachable within 200ms"},
		{"db: no subcommand", noDSN, []string{"db", "--json"}, exitUsage, "usage", `unknown subcommand "--json"`},
		{"db status: no DSN", noDSN, []string{"db", "status", "--json"}, exitUsage, "usage", "--dsn is required"},
		{"db migrate: a database that does not answer", noDSN, []string{"db", "migrate", "--json", "--dsn", "postgres://a2a@127.0.0.1:1/a2a?connect_timeout=1"}, exitFailed, "failed", "127.0.0.1"},
		{"passwd: USER missing", nil, []string{"passwd", "--json", passwd}, exitUsage, "usage", "want FILE USER, got 1 arguments"},
		{"passwd -D: no such user", nil, []string{"passwd", "-D", "--json", passwd, "acme/lab/nobody"}, exitFailed, "failed", "acme/lab/nobody"},
		{"webhook: --listen missing", nil, []string{"webhook", "--json"}, exitUsage, "usage", "--listen is required"},
		{"webhook: an address it cannot listen on", nil, []string{"webhook", "--json", "--listen", "256.0.0.1:99999"}, exitFailed, "failed", "--listen: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.env, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if n := strings.Count(r.stdout, "\n"); n != 1 {
				t.Fatalf("stdout holds %d lines, want the error object alone:\n%s", n, r.stdout)
			}
			var e jsonError
			decodeStrict(t, r.stdout, &e)
			if e.Error.Token != tc.token || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
				t.Fatalf("error object %+v, want token %q, code %d, a message with %q", e.Error, tc.token, tc.code, tc.msg)
			}
			if !strings.Contains(r.stderr, tc.msg) {
				t.Fatalf("stderr does not say %q:\n%s", tc.msg, r.stderr)
			}
		})
	}
}

// agentLine is the shape a2a agent -h documents for --json.
type agentLine struct {
	Event        string   `json:"event"`
	Agent        string   `json:"agent"`
	Store        string   `json:"store"`
	Tokens       int      `json:"tokens"`
	File         string   `json:"file"`
	Address      string   `json:"address"`
	Endpoint     string   `json:"endpoint"`
	Card         string   `json:"card"`
	Loopback     bool     `json:"loopback"`
	Broker       string   `json:"broker"`
	Spawned      string   `json:"spawned"`
	Connection   string   `json:"connection"`
	Reason       string   `json:"reason"`
	Component    string   `json:"component"`
	From         int      `json:"from"`
	To           int      `json:"to"`
	Mode         string   `json:"mode"`
	Queue        string   `json:"queue"`
	MaxMessages  int      `json:"maxMessages"`
	MaxBytes     int64    `json:"maxBytes"`
	MaxPerCaller int      `json:"maxPerCaller"`
	KeptSeconds  float64  `json:"keptSeconds"`
	Recovery     string   `json:"recovery"`
	Method       string   `json:"method"`
	Task         string   `json:"task"`
	State        string   `json:"state"`
	Error        string   `json:"error"`
	DurationMs   *float64 `json:"durationMs"`
}

// TestAgentJSON: a2a agent --json prints its start, each request (the
// method, the task, the state or the error token, the duration; never the
// bearer token), the broker's loss and return, and its stop, as JSON
// lines on stdout; the request log is not on stderr.
func TestAgentJSON(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	dir := t.TempDir()
	const token = "s3cret-json-token"
	tokens := writeFile(t, dir, "tokens", token+" alice\n")
	unit := uxUnit(t)
	ag, agErr := startStdout(t, "agent", "--json", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--id", "echo",
		"--http", "127.0.0.1:0", "--tokens", tokens, "--store", "bolt://"+filepath.Join(dir, "tasks.db"))
	ag.waitFor(t, `"event":"online"`)
	env := []string{"XDG_STATE_HOME=" + dir, envToken + "=" + token}
	mq := []string{"--broker", b.URL(), "--org", "acme", "--unit", unit, "--to", "echo"}
	if r := runCLI(t, env, append([]string{"send", "hello"}, mq...)...); r.code != 0 {
		t.Fatalf("send: exit %d\n%s", r.code, r.stderr)
	}
	ag.waitFor(t, `"state":"TASK_STATE_COMPLETED"`)
	if r := runCLI(t, env, append([]string{"get", "00000000-0000-4000-8000-000000000000"}, mq...)...); r.code != exitFailed {
		t.Fatalf("get: exit %d\n%s", r.code, r.stderr)
	}
	ag.waitFor(t, `"error":"task_not_found"`)
	b.Stop()
	ag.waitFor(t, `"connection":"lost"`)
	b.Restart()
	ag.waitFor(t, `"connection":"back"`)
	ag.stop(t, syscall.SIGTERM)

	lines := decodeLines[agentLine](t, ag.output())
	events := map[string][]agentLine{}
	var order []string
	for _, l := range lines {
		events[l.Event] = append(events[l.Event], l)
		order = append(order, l.Event)
	}
	name := "acme/" + unit + "/echo"
	checks := []struct {
		name string
		ok   func() bool
	}{
		{"the store", func() bool {
			return len(events["store"]) == 1 && events["store"][0].Store == "bolt://"+filepath.Join(dir, "tasks.db")
		}},
		{"the tokens", func() bool { e := events["tokens"]; return len(e) == 1 && e[0].Tokens == 1 && e[0].File == tokens }},
		{"listening over HTTP", func() bool {
			e := events["listening"]
			return len(e) == 1 && strings.HasPrefix(e[0].Endpoint, "http://127.0.0.1:") && strings.HasSuffix(e[0].Card, "/.well-known/agent-card.json")
		}},
		{"push, loopback webhooks taken", func() bool { e := events["push"]; return len(e) == 1 && e[0].Loopback }},
		{"online on the broker", func() bool {
			e := events["online"]
			return len(e) == 1 && e[0].Agent == name && e[0].Broker == b.URL() && e[0].Spawned == name+"-c1"
		}},
		{"the message: SendMessage, its task, COMPLETED, a duration", func() bool {
			for _, e := range events["request"] {
				if e.Agent == "echo" && e.Method == "SendMessage" && e.Task != "" && e.State == "TASK_STATE_COMPLETED" && e.DurationMs != nil && *e.DurationMs >= 0 {
					return true
				}
			}
			return false
		}},
		{"GetTask of an unknown task: its error token", func() bool {
			for _, e := range events["request"] {
				if e.Method == "GetTask" && e.Task == "00000000-0000-4000-8000-000000000000" && e.Error == "task_not_found" && e.State == "" {
					return true
				}
			}
			return false
		}},
		{"the broker lost, with why, then back", func() bool {
			lost, back := events["broker"], 0
			for _, e := range lost {
				if e.Connection == "back" && e.Broker == b.URL() {
					back++
				}
			}
			return len(lost) == 2 && lost[0].Connection == "lost" && lost[0].Broker == b.URL() && back == 1
		}},
		{"offline, last", func() bool { return order[len(order)-1] == "offline" && events["offline"][0].Agent == name }},
	}
	for _, c := range checks {
		if !c.ok() {
			t.Errorf("%s: not in\n%s", c.name, ag.output())
		}
	}
	if strings.Contains(ag.output()+agErr.String(), token) {
		t.Fatalf("the token is printed:\n%s%s", ag.output(), agErr.String())
	}
	if strings.Contains(agErr.String(), "msg=request") {
		t.Fatalf("the request log is on stderr with --json:\n%s", agErr.String())
	}
}

// brokerLine is the shape a2a broker -h documents for --json.
type brokerLine struct {
	Event              string   `json:"event"`
	URL                string   `json:"url"`
	Status             *bool    `json:"status"`
	TopicRoot          string   `json:"topicRoot"`
	Authentication     *bool    `json:"authentication"`
	PasswordFile       string   `json:"passwordFile"`
	Users              *int     `json:"users"`
	ClientCertificates bool     `json:"clientCertificates"`
	ACLFile            string   `json:"aclFile"`
	TrustedJKU         []string `json:"trustedJku"`
}

// TestBrokerJSON: a2a broker --json prints where it listens, whether it
// manages status, how it authenticates, and its stop.
func TestBrokerJSON(t *testing.T) {
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	if r := runCLI(t, nil, "passwd", "-b", passwd, "acme/lab/echo", "pw"); r.code != 0 {
		t.Fatalf("passwd: exit %d\n%s", r.code, r.stderr)
	}
	cases := []struct {
		name   string
		args   []string
		status bool
		users  int // -1: no password file
		root   string
	}{
		{"no authentication, status off", nil, false, -1, "$a2a/v1"},
		{"a password file, status on, a topic root", []string{"--status", "--password-file", passwd, "--topic-root", "a2a/v1"}, true, 1, "a2a/v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := startStdout(t, append([]string{"broker", "--listen", "127.0.0.1:0", "--json"}, tc.args...)...)
			p.waitFor(t, `"event":"security"`)
			p.stop(t, syscall.SIGTERM)
			lines := decodeLines[brokerLine](t, p.output())
			if len(lines) != 3 || lines[0].Event != "listening" || lines[1].Event != "security" || lines[2].Event != "stopped" {
				t.Fatalf("want listening, security, stopped:\n%s", p.output())
			}
			l, s := lines[0], lines[1]
			if !strings.HasPrefix(l.URL, "mqtt://127.0.0.1:") || l.Status == nil || *l.Status != tc.status || l.TopicRoot != tc.root {
				t.Fatalf("listening: %+v", l)
			}
			if s.Authentication == nil || *s.Authentication != (tc.users >= 0) {
				t.Fatalf("security: %+v", s)
			}
			if tc.users >= 0 && (s.PasswordFile != passwd || s.Users == nil || *s.Users != tc.users) {
				t.Fatalf("security: %+v", s)
			}
		})
	}
}

// demoStoryLine and demoSummaryLine are the shapes a2a demo -h documents
// for --json.
type demoStoryLine struct {
	Event   string `json:"event"`
	ID      string `json:"id"`
	Title   string `json:"title"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Detail  string `json:"detail"`
}

type demoSummaryLine struct {
	Event   string   `json:"event"`
	Passed  int      `json:"passed"`
	Failed  []string `json:"failed"`
	Skipped []struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	NotRun []struct {
		ID   string `json:"id"`
		What string `json:"what"`
	} `json:"notRun"`
	NotRunAfterRefusal int     `json:"notRunAfterRefusal"`
	DurationMs         float64 `json:"durationMs"`
	Line               string  `json:"line"`
}

// TestDemoJSON: a2a demo --json prints one object per story, in the
// demo's order, then the summary, last; no transcript.
func TestDemoJSON(t *testing.T) {
	r := runCLI(t, []string{envPG + "="}, "demo", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := []struct{ id, verdict string }{{"02", "pass"}, {"03", "pass"}, {"05", "pass"}, {"07", "pass"}, {"08", "pass"}, {"09", "pass"},
		{"H02", "pass"}, {"H03", "pass"}, {"H08", "pass"}, {"O01", "pass"}, {"P01", "pass"}, {"S11", "pass"}, {"F01", "skip"}}
	if len(lines) != len(want)+1 {
		t.Fatalf("%d lines, want %d stories and the summary:\n%s", len(lines), len(want), r.stdout)
	}
	for i, w := range want {
		var s demoStoryLine
		decodeStrict(t, lines[i], &s)
		if s.Event != "story" || s.ID != w.id || s.Verdict != w.verdict || s.Title == "" {
			t.Fatalf("line %d: %+v, want story %s %s", i+1, s, w.id, w.verdict)
		}
		if w.verdict == "skip" && s.Reason != "no PostgreSQL given: --pg DSN" {
			t.Fatalf("story %s: reason %q", s.ID, s.Reason)
		}
		if w.verdict == "pass" && (s.Detail == "" || s.Reason != "") {
			t.Fatalf("story %s: %+v", s.ID, s)
		}
	}
	var sum demoSummaryLine
	decodeStrict(t, lines[len(lines)-1], &sum)
	if sum.Event != "summary" || sum.Passed != 12 || len(sum.Failed) != 0 || len(sum.Skipped) != 1 || sum.Skipped[0].ID != "F01" ||
		len(sum.NotRun) != 3 || sum.NotRun[0].ID != "01" || sum.Line != demoPassedNoPG {
		t.Fatalf("summary %+v", sum)
	}
}

// dbMigrateLine and dbStatusLine are the shapes a2a db -h documents for
// --json.
type dbMigrateLine struct {
	Component string `json:"component"`
	Database  string `json:"database"`
	From      int    `json:"from"`
	To        int    `json:"to"`
	Applied   bool   `json:"applied"`
}

type dbStatusLine struct {
	Component string `json:"component"`
	Database  string `json:"database"`
	Version   int    `json:"version"`
	Known     int    `json:"known"`
	State     string `json:"state"`
}

// TestDBJSON: a2a db status --json and migrate --json print one object
// per component, in order; status's exit 3 ends with the
// migration_needed error object.
func TestDBJSON(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	shown, _ := redactDSN(dsn)
	env := []string{envDSN + "=" + dsn}
	known := map[string]int{"taskstore": pgstore.SchemaVersion, "inbox": pginbox.SchemaVersion}
	components := []string{"taskstore", "inbox"}

	t.Run("status of a new database: migration needed, exit 3", func(t *testing.T) {
		r := runCLI(t, env, "db", "status", "--json")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != exitMigrationNeeded || len(lines) != 3 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for i, c := range components {
			var s dbStatusLine
			decodeStrict(t, lines[i], &s)
			if s != (dbStatusLine{c, shown, 0, known[c], "migration_needed"}) {
				t.Fatalf("%+v", s)
			}
		}
		var e jsonError
		decodeStrict(t, lines[2], &e)
		if e.Error.Token != "migration_needed" || e.Error.Code != exitMigrationNeeded {
			t.Fatalf("%+v", e)
		}
	})
	steps := []struct {
		name    string
		applied bool
	}{{"migrate: applied from 0", true}, {"migrate again: nothing applied", false}}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r := runCLI(t, env, "db", "migrate", "--json")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			lines := decodeLines[dbMigrateLine](t, r.stdout)
			if len(lines) != len(components) {
				t.Fatalf("%s", r.stdout)
			}
			for i, c := range components {
				from := known[c]
				if st.applied {
					from = 0
				}
				if lines[i] != (dbMigrateLine{c, shown, from, known[c], st.applied}) {
					t.Fatalf("%+v", lines[i])
				}
			}
		})
	}
	t.Run("status once migrated: current, exit 0", func(t *testing.T) {
		r := runCLI(t, env, "db", "status", "--json")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		lines := decodeLines[dbStatusLine](t, r.stdout)
		for i, c := range components {
			if lines[i] != (dbStatusLine{c, shown, known[c], known[c], "current"}) {
				t.Fatalf("%+v", lines[i])
			}
		}
	})
}

// passwdLine is the shape a2a passwd -h documents for --json.
type passwdLine struct {
	Action     string `json:"action"`
	User       string `json:"user"`
	File       string `json:"file"`
	Created    bool   `json:"created"`
	Iterations int    `json:"iterations"`
	Identity   bool   `json:"identity"`
}

// TestPasswdJSON: a2a passwd --json prints what it changed.
func TestPasswdJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "passwd")
	cases := []struct {
		name  string
		args  []string
		stdin string
		want  passwdLine
	}{
		{"a new file", []string{"-b", "--json", file, "acme/lab/echo", "pw"}, "", passwdLine{"set", "acme/lab/echo", file, true, 10000, true}},
		{"a second user, from stdin, 101 iterations", []string{"--json", "-I", "101", file, "admin"}, "pw2\n", passwdLine{"set", "admin", file, false, 101, false}},
		{"-c replaces the file", []string{"-b", "-c", "--json", file, "acme/lab/other", "pw"}, "", passwdLine{"set", "acme/lab/other", file, true, 10000, true}},
		{"-D deletes", []string{"-D", "--json", file, "acme/lab/other"}, "", passwdLine{"deleted", "acme/lab/other", file, false, 0, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, nil, strings.NewReader(tc.stdin), append([]string{"passwd"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			lines := decodeLines[passwdLine](t, r.stdout)
			if len(lines) != 1 || lines[0] != tc.want {
				t.Fatalf("%+v, want %+v", lines, tc.want)
			}
		})
	}
}

// webhookLine and webhookPushLine are the shapes a2a webhook -h documents
// for --json.
type webhookLine struct {
	Event   string `json:"event"`
	Address string `json:"address"`
	URL     string `json:"url"`
	TaskID  string `json:"taskId"`
	Status  int    `json:"status"`
}

type webhookPushLine struct {
	Event        string          `json:"event"`
	TaskID       string          `json:"taskId"`
	Kind         string          `json:"kind"`
	State        string          `json:"state"`
	Text         string          `json:"text"`
	TokenChecked bool            `json:"tokenChecked"`
	Item         json.RawMessage `json:"item"`
}

// TestWebhookJSON: a2a webhook --json prints where it listens, each push
// (token checked), a push refused for its token, and its stop.
func TestWebhookJSON(t *testing.T) {
	hook, _ := startStdout(t, "webhook", "--listen", "127.0.0.1:0", "--token", "s3cret", "--json")
	hook.waitFor(t, `"event":"listening"`)
	var listening webhookLine
	decodeStrict(t, strings.TrimSpace(hook.output()), &listening)
	ag := startJSONHTTPAgent(t)
	r := runCLI(t, nil, "send", "--url", ag, "--json", "--webhook", listening.URL, "--webhook-token", "s3cret", "hello push")
	if r.code != 0 {
		t.Fatalf("send: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	task := lastLine(t, r).TaskID
	hook.waitFor(t, `"state":"TASK_STATE_COMPLETED"`)
	r = runCLI(t, nil, "send", "--url", ag, "--json", "--webhook", listening.URL, "--webhook-token", "guess", "hello again")
	refused := lastLine(t, r).TaskID
	hook.waitFor(t, `"event":"refused","taskId":"`+refused+`"`)
	hook.stop(t, syscall.SIGINT)

	lines := strings.Split(strings.TrimSpace(hook.output()), "\n")
	var kinds []string
	for i, l := range lines {
		switch ev := eventOf(t, l); ev {
		case "push":
			var p webhookPushLine
			decodeStrict(t, l, &p)
			if p.TaskID != task || !p.TokenChecked || len(p.Item) == 0 {
				t.Fatalf("push %+v", p)
			}
			kinds = append(kinds, p.Kind+":"+p.State)
		case "listening", "refused", "stopped":
			var w webhookLine
			decodeStrict(t, l, &w)
			if (ev == "listening") != (i == 0) || (ev == "stopped") != (i == len(lines)-1) {
				t.Fatalf("line %d is %s:\n%s", i+1, ev, hook.output())
			}
			if ev == "refused" && (w.TaskID != refused || w.Status != 403) {
				t.Fatalf("refused %+v", w)
			}
		default:
			t.Fatalf("event %q:\n%s", ev, hook.output())
		}
	}
	if got := strings.Join(kinds, " "); got != "status:TASK_STATE_WORKING artifact: artifact+: status:TASK_STATE_COMPLETED" {
		t.Fatalf("pushes %s\n%s", got, hook.output())
	}
}

// startJSONHTTPAgent runs a2a agent --http on a free loopback port (loopback webhooks
// taken) and returns its URL.
func startJSONHTTPAgent(t *testing.T) string {
	t.Helper()
	ag, _ := startStdout(t, "agent", "--http", "127.0.0.1:0", "--id", "echo", "--json")
	ag.waitFor(t, `"event":"listening"`)
	var l agentLine
	decodeStrict(t, strings.Split(ag.output(), "\n")[0], &l)
	return "http://" + l.Address
}

// TestEveryCommandTakesJSON: each command's -h documents --json, and its
// errors are JSON objects with it (jsonCommands; validate prints its own
// JSON document).
func TestEveryCommandTakesJSON(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			args := []string{c.name, "-h"}
			if c.name == "db" {
				args = []string{"db", "status", "-h"}
			}
			r := runCLI(t, nil, args...)
			if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "-json") {
				t.Fatalf("exit %d; -h does not mention --json:\n%s%s", r.code, r.stdout, r.stderr)
			}
			if !jsonCommands[c.name] && c.name != "validate" {
				t.Fatalf("%s --json does not print its errors as JSON (jsonCommands)", c.name)
			}
		})
	}
}
