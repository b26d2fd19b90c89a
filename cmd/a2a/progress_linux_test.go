//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestSendProgress: a send that waits shows on a terminal what it waits
// for, the time and the attempt, and erases the line before its error;
// with stderr not a terminal it shows nothing.
func TestSendProgress(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	unit := uxUnit(t)
	args := []string{"send", "--broker", b.URL(), "--org", "acme", "--unit", unit, "--to", "nobody", "--card-wait", "0",
		"--attempts", "2", "--reply-timeout", "1s", "--retry-backoff", "10ms", "hi"}
	env := append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	t.Run("on a terminal", func(t *testing.T) {
		master, tty := openPTY(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = env
		cmd.Stderr = tty
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		var mu sync.Mutex
		var screen bytes.Buffer
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := master.Read(buf)
				mu.Lock()
				screen.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		err := cmd.Run()
		tty.Close()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUnreachable {
			t.Fatalf("exit %v, want %d", err, exitUnreachable)
		}
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		out := screen.String()
		mu.Unlock()
		for _, want := range []string{"waiting for acme/" + unit + "/nobody", "attempt 1/2", "attempt 2/2", "\r\x1b[K" + "a2a send: acme/" + unit + "/nobody did not answer: responder unreachable after 2 attempts"} {
			if !strings.Contains(out, want) {
				t.Errorf("the terminal does not show %q:\n%q", want, out)
			}
		}
	})
	t.Run("not on a terminal", func(t *testing.T) {
		r := runCLI(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, args...)
		if r.code != exitUnreachable || strings.Contains(r.stderr, "attempt 1/") || strings.Contains(r.stderr, "\r") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}
