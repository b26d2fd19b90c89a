//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the controlling side and the
// terminal a child process sees.
func openPTY(t *testing.T) (ctl, term *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ctl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ctl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal: %v", err)
	}
	t.Cleanup(func() { ctl.Close(); term.Close() })
	return ctl, term
}

// TestPasswdPromptsWithoutEcho: on a terminal, a2a passwd prompts twice
// with the echo off: what is typed never shows on the terminal.
func TestPasswdPromptsWithoutEcho(t *testing.T) {
	ctl, term := openPTY(t)
	path := filepath.Join(t.TempDir(), "broker.passwd")
	cmd := exec.Command(binary, "passwd", "-I", "101", path, "acme/lab/echo")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	screen := make(chan string, 64)
	go func() {
		r := bufio.NewReader(ctl)
		buf := make([]byte, 256)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				screen <- string(buf[:n])
			}
			if err != nil {
				close(screen)
				return
			}
		}
	}()
	var seen strings.Builder
	expect := func(s string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(seen.String(), s) {
			select {
			case chunk, ok := <-screen:
				if !ok {
					t.Fatalf("terminal closed; screen so far: %q", seen.String())
				}
				seen.WriteString(chunk)
			case <-deadline:
				t.Fatalf("no %q on the terminal; screen so far: %q", s, seen.String())
			}
		}
	}
	expect("Password: ")
	if _, err := ctl.WriteString("typed-s3cret\n"); err != nil {
		t.Fatal(err)
	}
	expect("Reenter password: ")
	if _, err := ctl.WriteString("typed-s3cret\n"); err != nil {
		t.Fatal(err)
	}
	expect("set the password of acme/lab/echo")
	if err := <-done; err != nil {
		t.Fatalf("a2a passwd: %v; screen: %q", err, seen.String())
	}
	if strings.Contains(seen.String(), "typed-s3cret") {
		t.Errorf("the password was echoed: %q", seen.String())
	}
	if f := readPasswords(t, path); !f.Verify("acme/lab/echo", "typed-s3cret") {
		t.Errorf("the file does not hold the typed password")
	}
}
