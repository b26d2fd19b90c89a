package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/a2abind/a2abind/agent/sealed"
)

// writeKeyFile writes a --secrets-key-file of one fresh key.
func writeKeyFile(t *testing.T) string {
	t.Helper()
	k, err := sealed.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte("k1 "+base64.StdEncoding.EncodeToString(k.Secret)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAgentSealsPushSecretsAtRest: a2a agent --store bolt://… with
// --secrets-key-file keeps a webhook's token out of the database file (as
// it is, in base64 and in hex), and serves the task again after a restart
// with the same key file; without one the token is in the file, which
// shows that the check finds it.
func TestAgentSealsPushSecretsAtRest(t *testing.T) {
	const token = "tok-0123456789-abcdef-sealed"
	hook, hookURL := startWebhook(t, "--token", token)
	cases := []struct {
		name   string
		sealed bool
	}{
		{"with a key file, the token is sealed", true},
		{"without, it is in clear", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "tasks.db")
			args := []string{"--http", "127.0.0.1:0", "--id", "keeper", "--store", "bolt://" + file}
			if c.sealed {
				args = append(args, "--secrets-key-file", writeKeyFile(t))
			}
			ag, _, base := startHTTPAgent(t, args...)
			r := runCLI(t, nil, "send", "--url", base, "--webhook", hookURL, "--webhook-token", token, "--json", "ask me")
			if r.code != 0 {
				t.Fatalf("send: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			id := lastLine(t, r).TaskID
			hook.waitFor(t, "task "+id+"  status    TASK_STATE_INPUT_REQUIRED")
			ag.cmd.Process.Signal(syscall.SIGTERM)
			<-ag.done
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, form := range []string{token, base64.StdEncoding.EncodeToString([]byte(token)), hex.EncodeToString([]byte(token))} {
				found = found || bytes.Contains(raw, []byte(form))
			}
			if found == c.sealed {
				t.Fatalf("token in the database file: %v, want %v", found, !c.sealed)
			}
			if !c.sealed {
				return
			}
			// The same key file reads the task again.
			ag, _, base = startHTTPAgent(t, args...)
			got := runCLI(t, nil, "send", "--url", base, "--get", id)
			if got.code != 0 || !strings.Contains(got.stdout, "TASK_STATE_INPUT_REQUIRED") {
				t.Fatalf("--get after the restart: exit %d\n%s%s", got.code, got.stdout, got.stderr)
			}
			ag.cmd.Process.Signal(syscall.SIGTERM)
			<-ag.done
		})
	}
}

func TestSecretsKeyFileErrors(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("k1 "+base64.StdEncoding.EncodeToString([]byte("too short"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"a key too short", nil, []string{"--secrets-key-file", short}, "a2a agent: --secrets-key-file " + short + ": "},
		{"a file that is not there", nil, []string{"--secrets-key-file", missing}, "a2a agent: --secrets-key-file " + missing + ": "},
		{"from the environment", []string{envSecretsKeyFile + "=" + missing}, nil, "a2a agent: $" + envSecretsKeyFile + " " + missing + ": "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := "bolt://" + filepath.Join(t.TempDir(), "tasks.db")
			r := runCLI(t, c.env, append([]string{"agent", "--http", "127.0.0.1:0", "--id", "x", "--store", store}, c.args...)...)
			if r.code != 1 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, want 1 with %q\n%s%s", r.code, c.want, r.stdout, r.stderr)
			}
		})
	}
}
