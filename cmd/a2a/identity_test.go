package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2abind/a2abind/transport/mqtt/broker"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// The tests of the Client IDs the commands derive from a user name: a
// broker with a password file admits a user only under its own Client ID
// (docs/protocol.md §13.1), on the embedded broker and on mosquitto with
// use_username_as_clientid.

// identityUsers are the users of the identity tests, each with the
// password "pw-" + its last level.
var identityUsers = []string{"acme/lab/echo", "acme/lab/echo-c1", "acme/lab/solo", "acme/lab/alice", "acme/lab/watcher"}

// identityFiles writes the password file of identityUsers and a password
// file per user (its password on the first line), by user.
func identityFiles(t *testing.T) (passwd string, pw map[string]string) {
	t.Helper()
	dir := t.TempDir()
	var f broker.PasswordFile
	pw = map[string]string{}
	for _, u := range identityUsers {
		secret := "pw-" + u[strings.LastIndex(u, "/")+1:]
		if err := f.Set(u, secret, 101); err != nil {
			t.Fatal(err)
		}
		pw[u] = writeFile(t, dir, strings.ReplaceAll(u, "/", "_")+".pw", secret+"\n")
	}
	passwd = filepath.Join(dir, "passwd")
	if err := f.WriteFile(passwd); err != nil {
		t.Fatal(err)
	}
	return passwd, pw
}

// identityScenario runs, against a broker with the identity users, the
// reference agent with a user for each of its connections, then a2a send
// and a2a watch given nothing but their user: they take their org, unit
// and own id, or Client ID, from it.
func identityScenario(t *testing.T, url string, pw map[string]string) {
	ag := start(t, "agent", "--broker", url, "--org", "acme", "--unit", "lab", "--id", "echo",
		"--username", "acme/lab/echo", "--password-file", pw["acme/lab/echo"], "--spawned-password-file", pw["acme/lab/echo-c1"])
	ag.waitFor(t, "agent acme/lab/echo online")
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}

	t.Run("send takes org, unit and --as from the user name", func(t *testing.T) {
		r := runCLI(t, env, "send", "--broker", url, "--to", "echo", "--json", "--timeout", "30s",
			"--username", "acme/lab/alice", "--password-file", pw["acme/lab/alice"], "hello as alice")
		if r.code != 0 || !strings.Contains(r.stdout, "echo: hello as alice") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		// The same from the environment, with the flags it implies given
		// as they are.
		r = runCLI(t, append([]string{envUsername + "=acme/lab/alice", envPassword + "=pw-alice"}, env...),
			"send", "--broker", url, "--org", "acme", "--unit", "lab", "--as", "alice", "--to", "echo", "--json", "--timeout", "30s", "hello again")
		if r.code != 0 || !strings.Contains(r.stdout, "echo: hello again") {
			t.Fatalf("from the environment: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("handover reaches echo-c1, logged in as its own user", func(t *testing.T) {
		send := func(args ...string) result {
			return runCLI(t, env, append([]string{"send", "--broker", url, "--to", "echo", "--json", "--timeout", "30s",
				"--username", "acme/lab/alice", "--password-file", pw["acme/lab/alice"]}, args...)...)
		}
		r := send("handover please")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		first := lastLine(t, r)
		if first.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(r.stdout, `"responder":"echo-c1"`) {
			t.Fatalf("handover:\n%s", r.stdout)
		}
		r = send("--task", first.TaskID, "--context", first.ContextID, "size M")
		if last := lastLine(t, r); r.code != 0 || last.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("follow-up: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("watch connects as its user and watches its unit", func(t *testing.T) {
		w := start(t, "watch", "--broker", url, "--username", "acme/lab/watcher", "--password-file", pw["acme/lab/watcher"])
		w.waitFor(t, "watching $a2a/v1/discovery/acme/lab/+")
		w.waitFor(t, "agent=echo status=online")
	})
}

// TestIdentityFromUsername: on the embedded broker with a password file,
// the reference agent, a2a send and a2a watch work given their users
// alone; the Client IDs the default rules refuse are refused with a
// message that says why, and conflicting flags are usage errors.
func TestIdentityFromUsername(t *testing.T) {
	passwd, pw := identityFiles(t)
	b, err := broker.Start(context.Background(), broker.Config{PasswordFile: passwd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	identityScenario(t, b.URL(), pw)
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}

	// A refused first connection is retried until the connect timeout
	// (10 s): the two refusals wait in parallel.
	t.Run("the spawned instance with the agent's credentials is refused", func(t *testing.T) {
		t.Parallel()
		before := b.Denials().ClientID
		r := runCLI(t, nil, "agent", "--broker", b.URL(), "--org", "acme", "--unit", "lab", "--id", "solo",
			"--username", "acme/lab/solo", "--password-file", pw["acme/lab/solo"])
		if r.code != 1 || !strings.Contains(r.stderr, "the Client ID acme/lab/solo-c1 is not the user name") ||
			!strings.Contains(r.stderr, "--spawned-password-file") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if b.Denials().ClientID == before {
			t.Fatal("the broker counted no Client ID refusal")
		}
	})
	t.Run("a watch under another Client ID is refused", func(t *testing.T) {
		t.Parallel()
		r := runCLI(t, nil, "watch", "--broker", b.URL(), "--client-id", "acme/lab/watch-1",
			"--username", "acme/lab/watcher", "--password-file", pw["acme/lab/watcher"])
		if r.code != 1 || !strings.Contains(r.stderr, "not authorized") || !strings.Contains(r.stderr, "the Client ID acme/lab/watch-1 is not the user name") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("conflicting flags", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--as", "bob"}, "--as bob conflicts with the user name acme/lab/alice"},
			{[]string{"--org", "other"}, "--org other conflicts with the user name acme/lab/alice"},
			{[]string{"--unit", "ops"}, "--unit ops conflicts with the user name acme/lab/alice"},
		} {
			r := runCLI(t, env, append(append([]string{"send", "--broker", b.URL(), "--to", "echo",
				"--username", "acme/lab/alice", "--password-file", pw["acme/lab/alice"]}, c.args...), "hi")...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Errorf("%v: exit %d, want 2 and %q\n%s", c.args, r.code, c.want, r.stderr)
			}
		}
		r := runCLI(t, nil, "agent", "--broker", b.URL(), "--org", "acme", "--unit", "lab", "--id", "x", "--spawned-username", "acme/lab/x-c1")
		if r.code != 2 || !strings.Contains(r.stderr, "--spawned-username goes with --spawned-password-file") {
			t.Errorf("--spawned-username alone: exit %d\n%s", r.code, r.stderr)
		}
		r = runCLI(t, nil, "agent", "--http", "127.0.0.1:0", "--id", "x", "--spawned-password-file", pw["acme/lab/echo-c1"])
		if r.code != 2 || !strings.Contains(r.stderr, "--spawned-password-file goes with --broker") {
			t.Errorf("--spawned-password-file over HTTP: exit %d\n%s", r.code, r.stderr)
		}
	})
	t.Run("help", func(t *testing.T) {
		for cmd, want := range map[string][]string{
			"agent": {"--spawned-password-file FILE", `"clientid ORG/UNIT/ID-c1"`},
			"send":  {"A user name of the form ORG/UNIT/ID is the requester's Client ID"},
			"watch": {"--client-id", "the watch connects as that\nuser"},
		} {
			r := runCLI(t, nil, cmd, "-h")
			for _, w := range want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("a2a %s -h does not say %q", cmd, w)
				}
			}
		}
	})
}

// TestIdentityFromUsernameOnMosquitto: the same on mosquitto with
// password_file, use_username_as_clientid and the identity rules'
// acl_file (mqtttest.WithPasswordFile, docs/protocol.md §13.4), where a
// Client ID that is not the user name is replaced, not refused: the
// spawned instance needs a user of its own there too.
func TestIdentityFromUsernameOnMosquitto(t *testing.T) {
	passwd, pw := identityFiles(t)
	m := mqtttest.StartMosquitto(t, mqtttest.WithPasswordFile(passwd))
	identityScenario(t, m.URL(), pw)
}
