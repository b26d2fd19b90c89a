package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

func TestParseStore(t *testing.T) {
	cases := []struct {
		raw, kind, path, err string
	}{
		{"memory", storeMemory, "", ""},
		{"bolt:///var/lib/a2a/tasks.db", storeBolt, "/var/lib/a2a/tasks.db", ""},
		{"bolt://data/tasks.db", storeBolt, "data/tasks.db", ""},
		{"bolt://tasks.db", storeBolt, "tasks.db", ""},
		{"BOLT://my%20data/tasks.db", storeBolt, "my data/tasks.db", ""},
		{"postgres://agent@db/a2a", storePostgres, "", ""},
		{"postgresql://agent@db/a2a", storePostgres, "", ""},
		{"bolt://", "", "", "no path"},
		{"bolt:///tasks.db?mode=ro", "", "", "a path only"},
		{"bolt://%zz", "", "", "percent-encoded"},
		{"ftp://x", "", "", `unknown kind of task store "ftp"`},
		{"", "", "", "is not a task store"},
		{"tasks.db", "", "", "is not a task store"},
		{"host=db password=SEKRET", "", "", "is not a task store"},
		{"mysql://a:SEKRET@db/a2a", "", "", "mysql://a:xxxxx@db/a2a"},
	}
	for _, c := range cases {
		s, err := parseStore("--store", c.raw)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--store") || strings.Contains(err.Error(), "SEKRET") {
				t.Errorf("parseStore(%q): %v, want an error naming --store with %q", c.raw, err, c.err)
			}
			continue
		}
		if err != nil || s.kind != c.kind || s.path != c.path {
			t.Errorf("parseStore(%q) = %s %q, %v; want %s %q", c.raw, s.kind, s.path, err, c.kind, c.path)
		}
	}
}

// TestStoreUsageErrors: a store that cannot be used stops a2a agent with
// a clear one-line error naming --store (or --data, or $A2A_STORE), exit 2
// for what is wrong on the command line, 1 for a database that cannot be
// reached; the password is never printed.
func TestStoreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	agent := []string{"agent", "--http", "127.0.0.1:0", "--id", "x"}
	unreachable := "postgres://postgres:" + dbSecret + "@127.0.0.1:1/none?sslmode=disable"
	checkUsageErrors(t, []usageCase{
		{"an unknown kind", nil, append(agent, "--store", "ftp://u:"+dbSecret+"@x"), 2, []string{"--store ftp://u:xxxxx@x: unknown kind of task store"}},
		{"not a URL", nil, append(agent, "--store", "host=db password="+dbSecret), 2, []string{"--store", "password=xxxxx", "is not a task store"}},
		{"bolt with no path", nil, append(agent, "--store", "bolt://"), 2, []string{"--store bolt://: no path"}},
		{"bolt on a directory", nil, append(agent, "--store", "bolt://"+dir), 2, []string{"--store", "is a directory"}},
		{"postgres unreachable", nil, append(agent, "--store", unreachable), 1, []string{"--store postgres://postgres:xxxxx@127.0.0.1:1/none", "connect"}},
		{"postgres that does not parse", nil, append(agent, "--store", "postgres://u:"+dbSecret+"@%zz/db"), 2, []string{"--store", "cannot parse"}},
		{"--store and --data", nil, append(agent, "--store", "memory", "--data", dir), 2, []string{"give one of --store and --data"}},
		{"--migrate in memory", nil, append(agent, "--migrate"), 2, []string{"--migrate goes with a postgres:// store"}},
		{"--migrate with bolt", nil, append(agent, "--store", "bolt://"+dir+"/t.db", "--migrate"), 2, []string{"--migrate goes with a postgres:// store"}},
		{"$A2A_STORE of an unknown kind", []string{envStore + "=ftp://x"}, agent, 2, []string{"$A2A_STORE ftp://x: unknown kind"}},
		{"$A2A_STORE bolt with no path", []string{envStore + "=bolt://"}, agent, 2, []string{"$A2A_STORE bolt://: no path"}},
	})
}

// TestAgentStorePostgresSurvivesARestart: a2a agent --store postgres://
// refuses a new database without --migrate, pointing at a2a db migrate;
// with --migrate it applies them and serves over MQTT. Killed (SIGKILL)
// and started again on the same database, another process answers a2a
// send --get with the completed task and completes the task that waited
// for input. No output holds the DSN's password.
func TestAgentStorePostgresSurvivesARestart(t *testing.T) {
	dsn := withPassword(t, pgtest.NewDatabase(t))
	shown, _ := redactDSN(dsn)
	env := []string{envStore + "=", "PGPASSWORD="}
	r := runCLI(t, env, "agent", "--broker", "mqtt://127.0.0.1:1", "--org", "acme", "--unit", "pg", "--id", "keeper", "--store", dsn)
	if r.code != 1 || !strings.Contains(r.stderr, "--store "+shown+": the database's task store schema is version 0, this a2a needs version") ||
		!strings.Contains(r.stderr, "a2a db migrate --dsn "+shown) {
		t.Fatalf("a new database without --migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noSecret(t, r.stdout, r.stderr)
	restartKeepsTasks(t, env, []string{"--store", dsn, "--migrate"}, []string{"--store", dsn},
		fmt.Sprintf("agent keeper: schema taskstore: version 0 -> %d", pgstore.SchemaVersion), "agent keeper keeps its tasks in "+shown,
		"a2a agent: warning: the --store DSN holds a password")
}

// TestAgentRefusesANewerSchema: a database whose schema is newer than
// the binary knows is refused, with --migrate or without (exit 1), naming
// both versions; the agent never comes online.
func TestAgentRefusesANewerSchema(t *testing.T) {
	plain := pgtest.NewDatabase(t)
	setSchemaVersion(t, plain, pgstore.SchemaVersion+98)
	dsn := withPassword(t, plain)
	want := fmt.Sprintf("the database's task store schema is version %d, newer than version %d, the newest this a2a knows", pgstore.SchemaVersion+98, pgstore.SchemaVersion)
	for _, migrate := range []bool{false, true} {
		args := []string{"agent", "--http", "127.0.0.1:0", "--id", "x", "--store", dsn}
		if migrate {
			args = append(args, "--migrate")
		}
		r := runCLI(t, []string{envStore + "=", "PGPASSWORD="}, args...)
		if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "listening") {
			t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		noSecret(t, r.stdout, r.stderr)
	}
}

// TestAgentStoreBoltSurvivesARestart: the bbolt store, by --store
// bolt:///PATH, by $A2A_STORE and by --data, keeps tasks across a
// restart; a file another agent has open is refused (exit 1).
func TestAgentStoreBoltSurvivesARestart(t *testing.T) {
	t.Run("store", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "new dir", "tasks.db")
		store := "bolt://" + (&url.URL{Path: file}).EscapedPath()
		restartKeepsTasks(t, nil, []string{"--store", store}, []string{"--store", store}, "agent keeper keeps its tasks in "+store)
	})
	t.Run("env", func(t *testing.T) {
		store := "bolt://" + filepath.Join(t.TempDir(), "tasks.db")
		restartKeepsTasks(t, []string{envStore + "=" + store}, nil, nil, "agent keeper keeps its tasks in "+store)
	})
	t.Run("a file another agent has open", func(t *testing.T) {
		store := "bolt://" + filepath.Join(t.TempDir(), "tasks.db")
		args := []string{"agent", "--http", "127.0.0.1:0", "--id", "x", "--store", store}
		ag := start(t, args...)
		ag.waitFor(t, "listening on")
		r := runCLI(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "a2a agent: --store "+store+": ") || !strings.Contains(r.stderr, "another process has the file open") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("data", func(t *testing.T) {
		dir := t.TempDir()
		restartKeepsTasks(t, []string{envStore + "=memory"}, []string{"--data", dir}, []string{"--data", dir},
			"agent keeper keeps its tasks in bolt://"+dir+"/tasks.db")
	})
}

// restartKeepsTasks runs a2a agent with first's store flags on an
// embedded broker, completes a task and leaves one waiting for input
// through a2a send, kills the agent (SIGKILL), starts it again with
// again's, and checks that the new process serves both tasks: --get
// finds the completed one, the follow-up completes the other. The
// agents' output must hold each of want, and no output dbSecret.
func restartKeepsTasks(t *testing.T, env, first, again []string, want ...string) {
	t.Helper()
	b := mqtttest.StartEmbedded(t)
	agentArgs := []string{"agent", "--broker", b.URL(), "--org", "acme", "--unit", "kept", "--id", "keeper"}
	sendEnv := []string{"XDG_STATE_HOME=" + t.TempDir()}
	send := func(args ...string) result {
		t.Helper()
		r := runCLI(t, sendEnv, append([]string{"send", "--broker", b.URL(), "--org", "acme", "--unit", "kept", "--to", "keeper", "--json"}, args...)...)
		noSecret(t, r.stdout, r.stderr)
		return r
	}
	ag := startEnv(t, env, append(agentArgs, first...)...)
	ag.waitFor(t, "online")
	done := send("hello")
	completed := lastLine(t, done)
	if done.code != 0 || completed.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("hello: exit %d\n%s%s", done.code, done.stdout, done.stderr)
	}
	asked := send("ask me")
	waiting := lastLine(t, asked)
	if asked.code != 0 || waiting.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("ask me: exit %d\n%s%s", asked.code, asked.stdout, asked.stderr)
	}
	ag.cmd.Process.Signal(syscall.SIGKILL)
	<-ag.done
	out := ag.output()

	ag = startEnv(t, env, append(agentArgs, again...)...)
	ag.waitFor(t, "online")
	got := send("--get", completed.TaskID)
	if got.code != 0 || !strings.Contains(got.stdout, "TASK_STATE_COMPLETED") || !strings.Contains(got.stdout, "echo: hello") {
		t.Fatalf("--get after the restart: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
	follow := send("--task", waiting.TaskID, "--context", waiting.ContextID, "blue")
	if last := lastLine(t, follow); follow.code != 0 || last.State != "TASK_STATE_COMPLETED" || last.TaskID != waiting.TaskID || !strings.Contains(follow.stdout, "answer received: blue") {
		t.Fatalf("the follow-up after the restart: exit %d\n%s%s", follow.code, follow.stdout, follow.stderr)
	}
	ag.cmd.Process.Signal(syscall.SIGTERM)
	<-ag.done
	out += ag.output()
	if code := ag.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the second agent exited %d:\n%s", code, out)
	}
	t.Logf("the agents printed:\n%s", out)
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("the agents did not print %q:\n%s", w, out)
		}
	}
	if strings.Count(out, " -> ") > 1 {
		t.Fatalf("migrated twice:\n%s", out)
	}
	noSecret(t, out)
}

// TestAgentPostgresPasswordFromTheEnvironment: a2a agent --store with a
// DSN without a password connects with $PGPASSWORD, and warns of nothing;
// without it the agent is refused (exit 1), naming --store.
func TestAgentPostgresPasswordFromTheEnvironment(t *testing.T) {
	dsn, _, none := passwordNode(t)
	args := []string{"agent", "--http", "127.0.0.1:0", "--id", "x", "--store", dsn, "--migrate"}
	r := runCLI(t, []string{envStore + "=", "PGPASSWORD=", "PGPASSFILE=" + none}, args...)
	if r.code != 1 || !strings.Contains(r.stderr, "a2a agent: --store "+dsn+": ") {
		t.Fatalf("without a password: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ag := startEnv(t, []string{envStore + "=", "PGPASSWORD=" + dbSecret, "PGPASSFILE=" + none}, args...)
	ag.waitFor(t, "listening on")
	if out := ag.output(); strings.Contains(out, "warning") || !strings.Contains(out, "keeps its tasks in "+dsn+"\n") {
		t.Fatalf("output:\n%s", out)
	}
	noSecret(t, r.stdout, r.stderr, ag.output())
}
