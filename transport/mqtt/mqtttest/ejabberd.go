package mqtttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NameEjabberd names ejabberd's broker (mod_mqtt) in subtests.
const NameEjabberd = "ejabberd"

const (
	// debianEjabberdctl is where Debian's package installs the script
	// (/usr/sbin is often missing from a non-root PATH).
	debianEjabberdctl = "/usr/sbin/ejabberdctl"
	// ejabberdInstallHint ends the failure when the script is missing.
	ejabberdInstallHint = "install it: apt-get install -y ejabberd " +
		"(the ejabberd tests are mandatory; .ci/run installs it)"
	// ejabberdctlTimeout bounds an ejabberdctl command (stop).
	ejabberdctlTimeout = 20 * time.Second
)

// Ejabberd is an ejabberd node started for a test, serving MQTT v5 through
// mod_mqtt and nothing else.
//
// Its node is private: the configuration, the Mnesia spool, the logs and
// the Erlang cookie (HOME) are in a temporary directory, the node name is
// unique, and Erlang distribution listens on a loopback port of its own
// (ERL_DIST_PORT) so no epmd is started or used: parallel test binaries do
// not clash, and nothing is left running once Stop returns.
//
// Startup takes about a second. ejabberd is not one of Brokers: the tests
// that measure it share one node by running as subtests of one test.
type Ejabberd struct {
	t       testing.TB
	ctl     string // ejabberdctl as found
	run     string // ctl or its private copy, see ejabberdctlFor
	dir     string // HOME: ejabberd.yml, ejabberdctl.cfg, spool/, logs/
	node    string
	addr    string // MQTT listener
	logPath string // the node's stdout and stderr

	mu      sync.Mutex
	cmd     *exec.Cmd     // ejabberdctl foreground; nil when stopped
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd's exit, valid once exited is closed
}

var _ Broker = (*Ejabberd)(nil)

// The login a test gives ejabberd: its configuration (EjabberdConfig)
// admits any user name without / with any non-empty password, and refuses
// an empty password (0x87) and a user name with / (0x86), so an A2A Client
// ID cannot be the user name there.
const (
	EjabberdUsername = "a2a"
	EjabberdPassword = "anonymous"
)

// EjabberdRoot is the topic root A2A clients use on ejabberd: it refuses
// client topics beginning with $ (PUBACK and CONNACK 0x90), so the
// profile's $a2a/v1 cannot be used there (docs/protocol.md §1.5).
const EjabberdRoot = "a2a/v1"

// findEjabberdctl returns ejabberdctl: ctl if set, else the one on PATH,
// else Debian's.
func findEjabberdctl(ctl string) (string, error) {
	if ctl != "" {
		if _, err := os.Stat(ctl); err != nil {
			return "", fmt.Errorf("ejabberdctl %s: %w", ctl, err)
		}
		return ctl, nil
	}
	if p, err := exec.LookPath("ejabberdctl"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(debianEjabberdctl); err == nil {
		return debianEjabberdctl, nil
	}
	return "", errors.New("ejabberdctl not found on PATH nor at " + debianEjabberdctl)
}

// StartEjabberd starts an ejabberd node with mod_mqtt on a free loopback
// port (see EjabberdConfig) and waits until it accepts connections; it is
// stopped (ejabberdctl stop, then killed if need be) when the test ends,
// and its log is shown if the test failed. A missing ejabberd fails the
// test, like a missing mosquitto.
func StartEjabberd(t testing.TB) *Ejabberd {
	t.Helper()
	return startEjabberd(t, "")
}

func startEjabberd(t testing.TB, ctl string) *Ejabberd {
	t.Helper()
	ctl, err := findEjabberdctl(ctl)
	if err != nil {
		t.Fatalf("mqtttest: %v; %s", err, ejabberdInstallHint)
	}
	dir := t.TempDir()
	e := &Ejabberd{t: t, dir: dir, node: ejabberdNodeName(), logPath: filepath.Join(dir, "logs", "console.log")}
	e.ctl = ctl
	if e.run, err = ejabberdctlFor(ctl, dir); err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	for _, sub := range []string{"spool", "logs"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatalf("mqtttest: %v", err)
		}
	}
	// inet_config complains on every start without it.
	if err := os.WriteFile(filepath.Join(dir, "inetrc"), []byte("{lookup,[\"file\",\"native\"]}.\n"), 0o600); err != nil {
		t.Fatalf("mqtttest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ejabberd log (%s):\n%s", e.logPath, e.log())
		}
	})
	for attempt := 1; ; attempt++ {
		e.addr = freeLoopbackAddr(t)
		dist := freeLoopbackAddr(t)
		_, distPort, _ := net.SplitHostPort(dist)
		if err := e.writeConfig(distPort); err != nil {
			t.Fatalf("mqtttest: %v", err)
		}
		err := e.start()
		if err == nil {
			break
		}
		if !errors.Is(err, errAddrInUse) || attempt == bindAttempts {
			t.Fatalf("mqtttest: %v\nejabberd log:\n%s", err, e.log())
		}
	}
	t.Cleanup(e.Stop)
	return e
}

// ejabberdNodeName returns a node name no other test uses.
func ejabberdNodeName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("a2abind-mqtttest-%d-%s@localhost", os.Getpid(), hex.EncodeToString(b[:]))
}

// ejabberdctlFor returns the ejabberdctl to run. Debian's script runs the
// node as the user ejabberd when called by root (ejabberdctl.cfg's
// EXEC_CMD undoes that, see EjabberdctlConfig) and refuses any other user:
// for those it returns a copy in dir without that check.
func ejabberdctlFor(ctl, dir string) (string, error) {
	if os.Geteuid() == 0 {
		return ctl, nil
	}
	if u, err := user.Current(); err == nil && u.Username == "ejabberd" {
		return ctl, nil
	}
	b, err := os.ReadFile(ctl)
	if err != nil {
		return "", err
	}
	const check = "\nINSTALLUSER=ejabberd\n"
	if !strings.Contains(string(b), check) {
		return ctl, nil // not Debian's: let it run
	}
	copyPath := filepath.Join(dir, "ejabberdctl")
	script := strings.Replace(string(b), check, "\nINSTALLUSER=\n", 1)
	if err := os.WriteFile(copyPath, []byte(script), 0o700); err != nil {
		return "", err
	}
	return copyPath, nil
}

// EjabberdConfig returns the ejabberd.yml StartEjabberd writes: one virtual
// host, localhost; anonymous authentication with login_anon, so a CONNECT
// with any user name and a non-empty password is accepted; one listener,
// mod_mqtt on addr; the module mod_mqtt with its defaults and no other.
func EjabberdConfig(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return `# generated by internal/mqtttest
hosts:
  - localhost
loglevel: info
auth_method: anonymous
anonymous_protocol: login_anon
listen:
  -
    port: ` + port + `
    ip: "` + host + `"
    module: mod_mqtt
    backlog: 1024
modules:
  mod_mqtt: {}
`
}

// EjabberdctlConfig returns the ejabberdctl.cfg StartEjabberd writes for
// node: Erlang distribution on 127.0.0.1:distPort without epmd, the pid
// file in dir, and the node run by the calling user (Debian's script
// would switch root to the user ejabberd, who cannot read the test's
// directories).
func EjabberdctlConfig(dir, node, distPort string) string {
	return `# generated by internal/mqtttest
ERLANG_NODE=` + node + `
INET_DIST_INTERFACE=127.0.0.1
ERL_DIST_PORT=` + distPort + `
ERL_OPTIONS="-env ERL_CRASH_DUMP_BYTES 0"
EJABBERD_PID_PATH=` + filepath.Join(dir, "ejabberd.pid") + `
EJABBERD_BYPASS_WARNINGS=true
EXEC_CMD=as_current_user
`
}

func (e *Ejabberd) writeConfig(distPort string) error {
	if err := os.WriteFile(e.Config(), []byte(EjabberdConfig(e.addr)), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.dir, "ejabberdctl.cfg"), []byte(EjabberdctlConfig(e.dir, e.node, distPort)), 0o600)
}

// command returns ejabberdctl with the node's private directories and args.
func (e *Ejabberd) command(ctx context.Context, args ...string) *exec.Cmd {
	args = append([]string{
		"--config-dir", e.dir,
		"--ctl-config", filepath.Join(e.dir, "ejabberdctl.cfg"),
		"--config", e.Config(),
		"--spool", filepath.Join(e.dir, "spool"),
		"--logs", filepath.Join(e.dir, "logs"),
	}, args...)
	cmd := exec.CommandContext(ctx, e.run, args...)
	// HOME holds the Erlang cookie shared by the node and ejabberdctl;
	// SCRIPT is the script's own path even when a copy runs.
	cmd.Env = append(os.Environ(), "HOME="+e.dir, "SCRIPT="+e.ctl)
	cmd.Dir = e.dir
	// Were ctx to end, the script's Erlang child could keep the output
	// pipes open.
	cmd.WaitDelay = time.Second
	return cmd
}

// start runs the node in the foreground (ejabberdctl, a child of the test,
// runs it as its child) and waits until mod_mqtt accepts connections.
func (e *Ejabberd) start() error {
	logFile, err := os.OpenFile(e.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	offset, _ := logFile.Seek(0, io.SeekEnd)
	cmd := e.command(context.Background(), "foreground")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", e.run, err)
	}
	exited := make(chan struct{})
	e.mu.Lock()
	e.cmd, e.exited = cmd, exited
	e.mu.Unlock()
	go func() {
		err := cmd.Wait()
		e.mu.Lock()
		e.waitErr = err
		e.mu.Unlock()
		close(exited)
	}()

	// The listener's own line, so that a port taken by someone else is
	// not mistaken for ejabberd's.
	accepting := "Start accepting TCP connections at " + e.addr + " for mod_mqtt"
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-exited:
			e.mu.Lock()
			err := e.waitErr
			e.cmd = nil
			e.mu.Unlock()
			e.killLeftovers()
			if strings.Contains(e.logSince(offset), "eaddrinuse") {
				return fmt.Errorf("ejabberd on %s: %w", e.addr, errAddrInUse)
			}
			return fmt.Errorf("ejabberd exited before accepting connections: %v", err)
		default:
		}
		if strings.Contains(e.logSince(offset), accepting) {
			conn, err := net.DialTimeout("tcp", e.addr, time.Second)
			if err == nil {
				return conn.Close()
			}
		}
		if time.Now().After(deadline) {
			e.kill()
			return fmt.Errorf("ejabberd did not accept connections on %s within %v", e.addr, readyTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killNode kills ejabberdctl and the node (see killLeftovers).
func (e *Ejabberd) killNode(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	e.killLeftovers()
}

// killLeftovers kills, by pid, any process left that names the node (its
// name is unique to this test).
func (e *Ejabberd) killLeftovers() {
	for pid := range nodeProcesses(e.node) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// nodeProcesses returns the processes whose command line names node, by
// pid (from /proc: none elsewhere than on Linux).
func nodeProcesses(node string) map[int]string {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	found := make(map[int]string)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone
		}
		cmdline := " " + strings.ReplaceAll(string(b), "\x00", " ")
		if !strings.Contains(cmdline, node) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			found[pid] = cmdline
		}
	}
	return found
}

// kill ends a node that never became ready.
func (e *Ejabberd) kill() {
	e.mu.Lock()
	cmd, exited := e.cmd, e.exited
	e.cmd = nil
	e.mu.Unlock()
	if cmd != nil {
		e.killNode(cmd)
		<-exited
	}
}

// log returns the node's log so far.
func (e *Ejabberd) log() string { return e.logSince(0) }

func (e *Ejabberd) logSince(offset int64) string {
	b, err := os.ReadFile(e.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if offset > int64(len(b)) {
		offset = 0
	}
	return string(b[offset:])
}

// Name returns NameEjabberd.
func (e *Ejabberd) Name() string { return NameEjabberd }

// Addr returns "127.0.0.1:PORT".
func (e *Ejabberd) Addr() string { return e.addr }

// URL returns "mqtt://127.0.0.1:PORT".
func (e *Ejabberd) URL() string { return "mqtt://" + e.addr }

// Config returns the path of the generated ejabberd.yml.
func (e *Ejabberd) Config() string { return filepath.Join(e.dir, "ejabberd.yml") }

// Node returns the Erlang node's name.
func (e *Ejabberd) Node() string { return e.node }

// Stop stops the node with ejabberdctl stop and waits for it to exit;
// after stopTimeout it kills it and fails the test. Either way no process
// naming the node is left.
func (e *Ejabberd) Stop() {
	e.t.Helper()
	e.mu.Lock()
	cmd, exited := e.cmd, e.exited
	e.cmd = nil
	e.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited: // on its own: its exit is reported below
	default:
		ctx, cancel := context.WithTimeout(context.Background(), ejabberdctlTimeout)
		out, err := e.command(ctx, "stop").CombinedOutput()
		cancel()
		if err != nil {
			e.t.Errorf("mqtttest: ejabberdctl stop: %v\n%s", err, out)
		}
	}
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		e.killNode(cmd)
		<-exited
		e.t.Errorf("mqtttest: ejabberd did not exit within %v of ejabberdctl stop and was killed", stopTimeout)
		return
	}
	// Erlang's helpers (erl_child_setup, inet_gethost) end with the node.
	e.killLeftovers()
	e.mu.Lock()
	err := e.waitErr
	e.mu.Unlock()
	if err != nil {
		e.t.Errorf("mqtttest: ejabberd exited with %v", err)
	}
}

// Restart stops the node and starts it again on the same ports with the
// same spool (retained messages are kept).
func (e *Ejabberd) Restart() {
	e.t.Helper()
	e.Stop()
	deadline := time.Now().Add(readyTimeout)
	for {
		err := e.start()
		if err == nil {
			return
		}
		if !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			e.t.Fatalf("mqtttest: restart: %v\nejabberd log:\n%s", err, e.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
